"""Long runs: resident memory stays flat over a 100,000-frame input, and file handles and threads
do not leak across many inputs (and failures) in one process."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np
import pytest
from conftest import report, run_main, small_frames

import motiondetect.apps.cli as cli
from motiondetect.core.types import Frame
from motiondetect.outputs.writer import VideoWriter
from motiondetect.pipeline.detector import MotionDetector

pytestmark = pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="reads /proc (Linux)")

FRAMES = 100_000
PAGE = os.sysconf("SC_PAGE_SIZE")


def resident_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * PAGE


class SyntheticSource:
    """Stands in for a VideoHandler: ``FRAMES`` 32x24 frames made on the fly (a block that moves
    for 20 frames in every 100, so events open and close all along), sampling resident memory."""

    fps, size, frame_count = 25.0, (32, 24), FRAMES
    is_live = is_stream = inter_coded = False
    decode_errors = 0
    samples: dict[int, int] = {}

    def __init__(self, source, fps=None, decode_first=True):
        self.source = self.name = str(source)
        base = np.full((24, 32, 3), 50, np.uint8)
        self._frames = []
        for step in range(20):  # a 10x10 block jumping between two places
            moving = base.copy()
            x = 2 if step % 2 else 18
            moving[6:16, x : x + 10] = 210
            self._frames.append(moving)
        self._still = base

    def __iter__(self):
        for index in range(FRAMES):
            if index in (10_000, FRAMES - 1):  # after the warm-up of every cache, and at the end
                SyntheticSource.samples[index] = resident_bytes()
            phase = index % 100
            yield Frame(index, index / self.fps, self._frames[phase] if phase < 20 else self._still)

    def skip(self, count):
        return 0

    def check_decodable(self):
        pass

    def writer(self, path):
        return VideoWriter(path, self.fps, self.size)

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass


def test_memory_stays_flat_over_100000_frames(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(cli, "VideoHandler", SyntheticSource)
    monkeypatch.setattr(cli, "missing_inputs", lambda inputs: [])  # "synthetic" names no file
    SyntheticSource.samples = {}
    rc, err = run_main(
        monkeypatch,
        capsys,
        tmp_path,
        "synthetic",
        "--backend",
        "cpu",
        "--no-video",
        "--events",
        "long.json",
        "--events",
        "long.csv",
        # The case study's frame pairs: every burst is an event from the first frame on (the
        # default's background model would warm up over the first bursts).
        "-c",
        str(Path(__file__).resolve().parents[2] / "configs" / "seed.yaml"),
    )
    assert rc == 0, err
    events = report(tmp_path / "long.json")
    assert events["frame_count"] == FRAMES and events["complete"] is True
    assert len(events["events"]) == FRAMES // 100  # one per burst: the run really went through
    growth = SyntheticSource.samples[FRAMES - 1] - SyntheticSource.samples[10_000]
    # A leak of anything per frame (a 2,304-byte frame, a result object) would pass 50 MB here.
    assert growth < 12 * 2**20, f"resident memory grew by {growth / 2**20:.1f} MiB over {FRAMES - 10_000} frames"


def open_handles() -> list[str]:
    folder = Path("/proc/self/fd")
    targets = []
    for entry in folder.iterdir():
        try:
            targets.append(os.readlink(entry))
        except OSError:
            pass  # the listing's own handle, closed meanwhile
    return sorted(targets)


@pytest.fixture
def clips(tmp_path) -> list[Path]:
    paths = []
    for n in range(12):
        path = tmp_path / f"clip{n:02d}.mp4"
        with VideoWriter(path, 25, (32, 24)) as writer:
            for frame in small_frames(8):
                writer.write(frame)
        paths.append(path)
    return paths


def test_no_handles_or_threads_leak_across_many_inputs(tmp_path, monkeypatch, capsys, clips):
    def all_outputs(round_):
        return (
            "--backend",
            "cpu",
            "-o",
            f"r{round_}_{{stem}}.mp4",
            "--events",
            f"r{round_}_{{stem}}.json",
            "--events",
            f"r{round_}_{{stem}}.csv",
            "--mask-out",
            f"r{round_}_{{stem}}_mask.mp4",
            "--masks",
            f"masks{round_}",
            "--clips",
            f"clips{round_}",
            "--min-area",
            "0.01",
        )

    rc, err = run_main(monkeypatch, capsys, tmp_path, *clips, *all_outputs(0))  # first use loads libraries
    assert rc == 0, err
    handles, threads = open_handles(), threading.active_count()
    for round_ in (1, 2, 3):
        rc, err = run_main(monkeypatch, capsys, tmp_path, *clips, *all_outputs(round_))
        assert rc == 0, err
    assert all(report(tmp_path / f"r3_clip{n:02d}.json")["frame_count"] == 8 for n in range(12))
    assert open_handles() == handles
    assert threading.active_count() == threads


def test_no_handles_leak_on_failures_and_interrupts(tmp_path, monkeypatch, capsys, clips, sequence):
    rc, _ = run_main(monkeypatch, capsys, tmp_path, clips[0], "--backend", "cpu", "-o", "warm.mp4", "--events", "warm.json")
    assert rc == 0
    handles, threads = open_handles(), threading.active_count()
    (tmp_path / "bad.mp4").write_bytes(b"\x00\x00\x00\x18ftypmp42" + bytes(5000))
    real = MotionDetector.process
    calls = []

    def interrupted(self, frame):
        calls.append(1)
        if len(calls) % 5 == 0:
            raise KeyboardInterrupt
        return real(self, frame)

    for n in range(5):
        assert run_main(monkeypatch, capsys, tmp_path, tmp_path / "bad.mp4", "--backend", "cpu")[0] == 1
        assert run_main(monkeypatch, capsys, tmp_path, clips[n], "--backend", "cpu", "-c", "missing.yaml")[0] == 2
        (sequence / "in000003.png").write_bytes(b"not a png")  # undecodable: skipped
        assert run_main(monkeypatch, capsys, tmp_path, sequence, "--backend", "cpu", "-o", f"s{n}.mp4", "--events", f"s{n}.json")[0] == 0
        with monkeypatch.context() as patch:
            patch.setattr(MotionDetector, "process", interrupted)
            rc, _ = run_main(
                monkeypatch, capsys, tmp_path, clips[n], "--backend", "cpu", "--live", "-o", f"i{n}.mp4", "--events", f"i{n}.json"
            )
        assert rc == 130 and report(tmp_path / f"i{n}.json")["complete"] is False
    assert open_handles() == handles
    assert threading.active_count() == threads
