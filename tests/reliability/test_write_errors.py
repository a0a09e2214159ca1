"""A video that cannot be finished (the disk fills up, any write error) is not left under the name
asked for: an MP4 cut short has no index and does not play. The run removes it, says so in its one
error line, and names it nowhere as an output (summary line, report); the outputs written whole
stay. Simulated ENOSPC in process (tests/full_disk.py), and a real write error from the file system
(a file-size limit: EFBIG) in a real process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import error_line, process_env, report, run_main
from full_disk import fill_disk

CPU = ("--backend", "cpu")
TESTS = Path(__file__).resolve().parents[1]


def names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def summary_line(err: str) -> str:
    return next(line for line in err.splitlines() if " frames in " in line)


def test_a_full_disk_while_writing_removes_the_unfinished_video(tmp_path, monkeypatch, capsys, sample_clip):
    """Before, out.mp4 stayed (it did not play), the summary line and the report named it, and the
    failure was printed twice."""
    fill_disk(monkeypatch, room=20)
    rc, err = run_main(monkeypatch, capsys, tmp_path, sample_clip, *CPU, "--end", "100f", "-o", "out.mp4", "--events", "out.json")
    assert rc == 1
    line = error_line(err)
    assert "No space left on device" in line and "out.mp4" in line and "removed" in line
    assert err.count("No space left on device") == 1, err
    assert "out.mp4" not in summary_line(err) and "out.json" in summary_line(err)
    assert names(tmp_path) == ["out.json"]  # the report, written whole, stays
    events = report(tmp_path / "out.json")
    assert events["output_video"] is None and events["complete"] is False
    assert 0 < events["frame_count"] < 100 and f"after {events['frame_count']} frames" in line


def test_a_full_disk_while_finishing_removes_the_unfinished_video(tmp_path, monkeypatch, capsys, sample_clip):
    fill_disk(monkeypatch, room=None)  # every frame fits, the index does not
    rc, err = run_main(monkeypatch, capsys, tmp_path, sample_clip, *CPU, "--end", "60f", "-o", "out.mp4", "--events", "out.json")
    assert rc == 1
    line = error_line(err)
    assert "No space left on device" in line and "out.mp4" in line and "removed" in line
    assert "out.mp4" not in summary_line(err)
    assert names(tmp_path) == ["out.json"]
    events = report(tmp_path / "out.json")
    assert events["output_video"] is None and events["complete"] is False and events["frame_count"] == 60


def test_a_full_disk_on_the_motion_only_video_removes_it(tmp_path, monkeypatch, capsys, sample_clip):
    fill_disk(monkeypatch, room=10)
    argv = ("--end", "100f", "-o", "out.mp4", "--only-motion", "--events", "out.json")
    rc, err = run_main(monkeypatch, capsys, tmp_path, sample_clip, *CPU, *argv)
    assert rc == 1 and "removed" in error_line(err) and "out.mp4" not in summary_line(err)
    assert names(tmp_path) == ["out.json"]
    assert report(tmp_path / "out.json")["output_video"] is None


def test_a_full_disk_on_the_mask_video_removes_it(tmp_path, monkeypatch, capsys, sample_clip):
    fill_disk(monkeypatch, room=10)
    argv = ("--end", "100f", "--no-video", "--mask-out", "masks.mp4", "--events", "out.json")
    rc, err = run_main(monkeypatch, capsys, tmp_path, sample_clip, *CPU, *argv)
    assert rc == 1 and "removed" in error_line(err) and "masks.mp4" not in summary_line(err)
    assert names(tmp_path) == ["out.json"]


def test_a_full_disk_on_a_clip_removes_it(tmp_path, monkeypatch, capsys, sample_clip):
    fill_disk(monkeypatch, room=10)
    rc, err = run_main(
        monkeypatch, capsys, tmp_path, sample_clip, *CPU, "--end", "100f", "--no-video", "--clips", "c", "--events", "out.json"
    )
    assert rc == 1
    line = error_line(err)
    assert "No space left on device" in line and "_event0001.mp4" in line and "removed" in line
    assert "0 clips in c" in summary_line(err)
    assert names(tmp_path / "c") == []


#: Runs the command with a file-size limit: a write past it fails with EFBIG (SIGXFSZ ignored), a
#: real error from the file system, as a full disk's ENOSPC is.
LIMITED = r"""
import resource, signal, sys
from motiondetect.apps.cli import main

limit = int(sys.argv[1])
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX file-size limit")
def test_a_write_error_from_the_file_system_removes_the_unfinished_video(tmp_path, sample_clip):
    argv = [sample_clip, *CPU, "--end", "200f", "-o", "out.mp4", "--events", "out.json"]
    proc = subprocess.run(
        [sys.executable, "-c", LIMITED, "40000", *map(str, argv)],
        cwd=tmp_path,
        env=process_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stderr
    line = error_line(proc.stderr)
    assert "File too large" in line and "out.mp4" in line and "removed" in line
    assert names(tmp_path) == ["out.json"]
    events = report(tmp_path / "out.json")
    assert events["output_video"] is None and events["complete"] is False


#: Ctrl-C as the video starts its final flush, on a disk with no room for the video's index.
INTERRUPTED = r"""
import os, signal, sys
import pytest
from full_disk import fill_disk
import motiondetect.outputs.writer as writer
from motiondetect.apps.cli import main

close = writer.VideoWriter.close

def interrupted_close(self):
    os.kill(os.getpid(), signal.SIGINT)
    return close(self)

writer.VideoWriter.close = interrupted_close
with pytest.MonkeyPatch.context() as monkeypatch:
    fill_disk(monkeypatch, room=None)
    sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_with_a_video_that_cannot_be_finished_says_so(tmp_path, sample_clip):
    """Before, the run said "outputs hold what was processed" and nothing of the video."""
    env = process_env(PYTHONPATH=os.pathsep.join([process_env()["PYTHONPATH"], str(TESTS)]))
    argv = [sample_clip, *CPU, "--end", "60f", "-o", "out.mp4", "--events", "out.json"]
    proc = subprocess.run(
        [sys.executable, "-c", INTERRUPTED, *map(str, argv)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 128 + signal.SIGINT, proc.stderr
    line = error_line(proc.stderr)
    assert "No space left on device" in line and "out.mp4" in line and "removed" in line
    assert "outputs hold what was processed" not in proc.stderr
    assert names(tmp_path) == ["out.json"]
    events = report(tmp_path / "out.json")
    assert events["output_video"] is None and events["complete"] is False and events["frame_count"] == 60
