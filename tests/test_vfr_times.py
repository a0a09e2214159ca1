"""A variable-frame-rate file's frames, events and copied clips follow its own timestamps.

The test file is 25 fps (40 ms steps) for 150 frames, then half that (80 ms steps) for 150
more: 300 frames in 18 s, read at the 16.7 fps average. Frame n of the second half is at
6 + 0.08 (n - 150) s, where n / 16.7 put frame 175 at 10.5 s instead of 8.0 s.
"""

from __future__ import annotations

import csv
import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from helpers import run_cli

from motiondetect.outputs.events import EventSegmenter, format_timecode
from motiondetect.sources.video import VideoHandler

av = pytest.importorskip("av")
pytestmark = pytest.mark.usefixtures("restored_logging")

SIZE = (160, 120)
GOP = 10  # a keyframe every 10 frames: copied clips start near their events
#: Frames with a moving square: one event before the rate halves, one after.
MOVING = (range(40, 56), range(200, 216))


def halving_times_ms() -> list[int]:
    """300 timestamps (ms): 150 frames 40 ms apart, then 150 frames 80 ms apart (to 17.92 s)."""
    return [40 * i for i in range(150)] + [6000 + 80 * i for i in range(150)]


def scene(count: int, background: np.ndarray) -> list[np.ndarray]:
    """The bundled clip's first frame, still, with a square crossing it in the MOVING frames."""
    frames = []
    for i in range(count):
        image = background.copy()
        for moving in MOVING:
            if i in moving:
                x = 8 + 6 * (i - moving.start)
                image[30:70, x : x + 30] = (40, 220, 240)
        frames.append(image)
    return frames


def encode(path: Path, times_ms: list[int], background: np.ndarray) -> Path:
    """libx264 with B-frames, a keyframe every GOP frames, at these timestamps (ms)."""
    with av.open(str(path), "w") as container:
        options = {"g": str(GOP), "keyint_min": str(GOP), "sc_threshold": "0", "bf": "2", "preset": "veryfast"}
        stream = container.add_stream("libx264", options=options)
        stream.width, stream.height, stream.pix_fmt = *SIZE, "yuv420p"
        stream.codec_context.time_base = Fraction(1, 1000)
        for t, image in zip(times_ms, scene(len(times_ms), background)):
            frame = av.VideoFrame.from_ndarray(image, format="bgr24")
            frame.pts, frame.time_base = t, Fraction(1, 1000)
            container.mux(stream.encode(frame))
        container.mux(stream.encode())
    return path


@pytest.fixture(scope="module")
def background(sample_clip) -> np.ndarray:
    with av.open(str(sample_clip)) as container:
        first = next(container.decode(video=0))
    import cv2

    return cv2.resize(first.to_ndarray(format="bgr24"), SIZE, interpolation=cv2.INTER_AREA)


@pytest.fixture(scope="module")
def halving(tmp_path_factory, background) -> Path:
    return encode(tmp_path_factory.mktemp("vfr") / "phone.mp4", halving_times_ms(), background)


def decoded(path: Path) -> list:
    """(pts in seconds, luma) of every frame, in presentation order."""
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        return [(float(f.pts * stream.time_base), f.to_ndarray(format="gray")) for f in container.decode(stream)]


def test_frames_carry_the_files_own_timestamps(halving):
    times = halving_times_ms()
    with VideoHandler(halving) as video:
        assert video.timestamped and video.fps == pytest.approx(300 / 18, rel=0.01)
        frames = list(video)
    assert len(frames) == 300
    assert [f.time for f in frames] == [t / 1000 for t in times]
    # Before: n / fps, 2.5 s off at frame 175.
    assert abs(175 / video.fps - times[175] / 1000) > 2


def test_a_rate_given_or_a_constant_rate_keeps_index_over_fps(tmp_path, halving, background):
    with VideoHandler(halving, fps=20) as video:
        assert not video.timestamped
        assert [f.time for f in video] == [i / 20 for i in range(300)]
    steady = encode(tmp_path / "steady.mp4", [40 * i for i in range(60)], background)
    with VideoHandler(steady) as video:
        assert not video.timestamped and video.fps == 25
        assert [f.time for f in video] == [i / 25 for i in range(60)]


def test_the_segmenter_takes_the_frames_times():
    # 10 fps on average; frames 0-9 at 0.05 s steps, the rest at 0.2 s steps.
    times = [0.05 * i for i in range(10)] + [0.5 + 0.2 * i for i in range(30)]
    fractions = [0.0] * 40
    fractions[20:23] = [0.5] * 3
    kw = dict(min_area=0.1, min_event_length=0.0, merge_gap=0.5, time_before=0.3, time_after=0.3)
    timed = EventSegmenter(10.0, frame_times=True, **kw)
    plain = EventSegmenter(10.0, **kw)
    for i, (f, t) in enumerate(zip(fractions, times)):
        timed.update(i, f, time=t)
        plain.update(i, f, time=t)  # without frame_times the time is not taken
        if i == 20:  # open: its end, frame 23, not read yet, is put at fps from frame 20
            assert timed.events[0].end_time == pytest.approx(times[20] + 0.3)
    (event,) = timed.finish()
    (before,) = plain.finish()
    assert (event.start_frame, event.end_frame) == (before.start_frame, before.end_frame) == (17, 25)
    assert (event.start_time, event.end_time) == (times[17], times[25])
    assert event.duration == pytest.approx(times[25] - times[17] + 0.1)
    assert (before.start_time, before.end_time) == (1.7, 2.5)
    assert event.as_dict()["start_timecode"] == format_timecode(times[17])


def _events(folder: Path, stem: str = "phone") -> list[dict]:
    return json.loads((folder / f"{stem}_motion.json").read_text(encoding="utf-8"))["events"]


def test_events_report_the_files_timestamps(halving, tmp_path, monkeypatch, capsys):
    rc, _, err = run_cli(monkeypatch, capsys, tmp_path, halving, "--backend", "cpu", "--events", "phone_motion.json", "--events", "e.csv")
    assert rc == 0, err
    times = halving_times_ms()
    events = _events(tmp_path)
    assert [(e["motion_start_frame"], e["motion_end_frame"]) for e in events] == [(m.start, m.stop - 1) for m in MOVING]
    with open(tmp_path / "e.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    for event, row in zip(events, rows):
        start, end = times[event["start_frame"]] / 1000, times[event["end_frame"]] / 1000
        assert event["start_time"] == pytest.approx(start, abs=1e-3) and event["end_time"] == pytest.approx(end, abs=1e-3)
        assert (event["start_timecode"], event["end_timecode"]) == (format_timecode(start), format_timecode(end))
        assert float(row["start_time"]) == pytest.approx(start, abs=1e-3) and float(row["end_time"]) == pytest.approx(end, abs=1e-3)
    # The event after the change: frame / fps was seconds off.
    late = events[1]
    fps = 300 / 18
    assert late["start_time"] == pytest.approx(8.0, abs=1e-3) and abs(late["start_frame"] / fps - late["start_time"]) > 2


def test_copied_clips_hold_the_events_frames(halving, tmp_path, monkeypatch, capsys):
    rc, _, err = run_cli(monkeypatch, capsys, tmp_path, halving, "--backend", "cpu", "--clips", "clips", "--clip-mode", "copy", "-o", "")
    assert rc == 0, err
    events = _events(tmp_path)
    frames = decoded(halving)
    for event in events:
        clip = decoded(tmp_path / "clips" / f"phone_event{event['index']:04d}.mp4")
        first = event["start_frame"] // GOP * GOP  # the keyframe at or before the event's first frame
        wanted = frames[first : event["end_frame"] + 1]
        assert len(clip) == len(wanted)
        for (_, got), (_, expected) in zip(clip, wanted):
            assert np.array_equal(got, expected)
        # Its timeline is the input's, moved to start at 0.
        assert [t for t, _ in clip] == pytest.approx([t - wanted[0][0] for t, _ in wanted], abs=1e-3)


def test_chunked_run_reports_what_a_sequential_run_reports(halving, tmp_path, monkeypatch, capsys):
    args = [halving, "--backend", "cpu", "--events", "report.json", "--clips", "clips", "--clip-mode", "copy", "--chunk", "2", "-q"]
    reports = {}
    for name, extra in (("seq", []), ("jobs", ["--jobs", "2"])):
        (tmp_path / name).mkdir()
        rc, _, err = run_cli(monkeypatch, capsys, tmp_path / name, *args, *extra)
        assert rc == 0, err
        reports[name] = json.loads((tmp_path / name / "report.json").read_text(encoding="utf-8"))
        for key in ("elapsed_seconds", "output_video"):
            reports[name].pop(key)
    assert reports["jobs"] == reports["seq"]
    times = halving_times_ms()
    assert [e["start_time"] for e in reports["jobs"]["events"]] == [times[e["start_frame"]] / 1000 for e in reports["jobs"]["events"]]
    for event in reports["seq"]["events"]:
        name = f"phone_event{event['index']:04d}.mp4"
        assert len(decoded(tmp_path / "jobs" / "clips" / name)) == len(decoded(tmp_path / "seq" / "clips" / name))


def test_nvdec_is_told_the_time_base_of_a_variable_rate_file_only(halving, background, tmp_path):
    """The NVDEC path reads the stream's facts with PyAV as the CPU decoder does: a variable-rate
    file's time base (its frames are then timed by their timestamps on the GPU too: the GPU
    test compares the reports), none for a constant-rate one."""
    from motiondetect.sources.nvdec import _metadata

    assert _metadata(str(halving)).varying_time_base is not None
    steady = encode(tmp_path / "steady.mp4", [40 * i for i in range(60)], background)
    assert _metadata(str(steady)).varying_time_base is None


def _times_of(path: Path) -> list[float]:
    return [t for t, _ in decoded(path)]


def _only_motion_times(events: list[dict], times: list[float], fps: float) -> list[float]:
    """Where ``--only-motion`` puts the events' frames: at their own times, each event one
    period (1 / fps) after the last frame of the one before."""
    placed: list[float] = []
    for event in events:
        own = times[event["start_frame"] : event["end_frame"] + 1]
        shift = own[0] - (placed[-1] + 1 / fps if placed else 0.0)
        placed += [t - shift for t in own]
    return placed


@pytest.mark.parametrize("jobs", [[], ["--jobs", "2", "--chunk", "2"]], ids=["sequential", "jobs"])
def test_the_videos_written_keep_the_frames_times(halving, tmp_path, monkeypatch, capsys, jobs):
    """The annotated video, the mask video and the re-encoded clips place each frame at its
    time in the input (less the first frame's, or the clip's), to 1/90,000 s; before, frame n
    was at n / fps, 2.5 s early at frame 175 (a joined --jobs video too)."""
    args = [halving, "--backend", "cpu", "-o", "out.mp4", "--mask-out", "mask.mp4", "--clips", "clips", "-q", *jobs]
    rc, _, err = run_cli(monkeypatch, capsys, tmp_path, *args)
    assert rc == 0, err
    times = [t / 1000 for t in halving_times_ms()]
    for name in ("out.mp4", "mask.mp4"):
        assert _times_of(tmp_path / name) == pytest.approx(times, abs=2e-5), name
    events = _events(tmp_path)
    assert len(events) == 2
    for event in events:
        clip = _times_of(tmp_path / "clips" / f"phone_event{event['index']:04d}.mp4")
        own = times[event["start_frame"] : event["end_frame"] + 1]
        assert clip == pytest.approx([t - own[0] for t in own], abs=2e-5)
    # The second event lies in the half at 12.5 fps: its clip's frames are 80 ms apart.
    late = _times_of(tmp_path / "clips" / "phone_event0002.mp4")
    assert np.diff(late) == pytest.approx(0.08, abs=2e-5)


@pytest.mark.parametrize("jobs", [[], ["--jobs", "2", "--chunk", "2"]], ids=["sequential", "jobs"])
def test_only_motion_keeps_the_frames_steps(halving, tmp_path, monkeypatch, capsys, jobs):
    rc, _, err = run_cli(monkeypatch, capsys, tmp_path, halving, "--backend", "cpu", "-o", "m.mp4", "--only-motion", "-q", *jobs)
    assert rc == 0, err
    times = [t / 1000 for t in halving_times_ms()]
    events = _events(tmp_path)
    assert len(events) == 2
    with VideoHandler(halving) as video:
        fps = video.fps
    assert _times_of(tmp_path / "m.mp4") == pytest.approx(_only_motion_times(events, times, fps), abs=2e-5)


def test_a_window_of_a_live_file_starts_its_video_at_zero(tmp_path, monkeypatch, capsys, sample_clip):
    """``--live --start 20``: the frames keep their media times (20 s on); the recording still
    starts at 0 (it began with 20 s of nothing)."""
    args = [sample_clip, "--backend", "cpu", "--live", "--no-preview", "--start", "20", "--end", "22", "-o", "lv.mp4", "-q"]
    rc, _, err = run_cli(monkeypatch, capsys, tmp_path, *args)
    assert rc == 0, err
    times = _times_of(tmp_path / "lv.mp4")
    assert times[0] == 0 and len(times) > 10


def test_start_and_end_in_seconds_pick_the_frames_at_those_times(halving, tmp_path, monkeypatch, capsys):
    """``--start 9 --end 11`` in the half at 12.5 fps: frames 188 (9.04 s, the first at or
    after 9 s) to 212 (10.96 s); at n / fps they were frames 150 to 183 (9 and 11 x 16.7),
    which miss the square crossing from frame 200 (10.0 s). A timecode and frame numbers give
    the same window; frames stay numbered as in the whole file."""
    times = [t / 1000 for t in halving_times_ms()]
    for start, end in (("9", "11"), ("0:09", "00:00:11.000"), ("188f", "213f")):
        args = ["--backend", "cpu", "--start", start, "--end", end, "-o", "w.mp4", "--overwrite"]
        rc, _, err = run_cli(monkeypatch, capsys, tmp_path, halving, *args)
        assert rc == 0, err
        report = json.loads((tmp_path / "phone_motion.json").read_text(encoding="utf-8"))
        assert (report["start_frame"], report["frame_count"]) == (188, 25), (start, end)
        (event,) = report["events"]
        assert event["motion_start_frame"] == MOVING[1].start
        assert event["start_time"] == pytest.approx(times[event["start_frame"]], abs=1e-3)
        assert _times_of(tmp_path / "w.mp4") == pytest.approx([t - times[188] for t in times[188:213]], abs=2e-5)
