"""VideoWriter and join_videos when the file cannot be written (a full disk): the unfinished file,
which would not play (an MP4's index is written last), is removed rather than left under the name
asked for, and the error says so; a file finished normally plays every frame."""

from __future__ import annotations

import json
import os
import time

import av
import numpy as np
import pytest
from full_disk import fill_disk

from motiondetect.core.errors import VideoOpenFailure
from motiondetect.core.types import Frame, FrameResult
from motiondetect.outputs.events import EventSegmenter, MotionEvent
from motiondetect.outputs.sinks import EventsSink, RunSummary, VideoSink
from motiondetect.outputs.writer import VideoWriter, join_videos
from motiondetect.sources.threads import BackgroundWriter

SIZE = (32, 24)


@pytest.fixture
def full_disk(monkeypatch):
    """``full_disk(room)``: videos written from now on fill the disk after ``room`` packets."""
    return lambda room: fill_disk(monkeypatch, room)


def frames(count):
    return [np.full((SIZE[1], SIZE[0], 3), 7 * i % 256, np.uint8) for i in range(count)]


def decoded(path) -> int:
    with av.open(str(path)) as container:
        return sum(1 for _ in container.decode(video=0))


def test_a_finished_video_plays_every_frame_under_its_name(tmp_path):
    path = tmp_path / "out.mp4"
    with VideoWriter(path, 25.0, SIZE) as writer:
        for frame in frames(30):
            writer.write(frame)
    assert not writer.removed
    assert decoded(path) == 30
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.mp4"]


def test_a_full_disk_while_writing_removes_the_unfinished_video(tmp_path, full_disk):
    """Before, the file stayed under its name, without its index: it did not play."""
    full_disk(room=3)
    path = tmp_path / "out.mp4"
    writer = VideoWriter(path, 25.0, SIZE, preset="ultrafast")
    with pytest.raises(VideoOpenFailure) as failure:
        for frame in frames(60):
            writer.write(frame)
    message = str(failure.value)
    assert "No space left on device" in message and "out.mp4" in message and "removed" in message
    writer.close()  # nothing more to do, and no second error
    assert writer.removed
    assert list(tmp_path.iterdir()) == []


def test_a_full_disk_while_finishing_removes_the_unfinished_video(tmp_path, full_disk):
    """The frames fit, the index written at close does not."""
    full_disk(room=None)
    path = tmp_path / "out.mp4"
    writer = VideoWriter(path, 25.0, SIZE)
    for frame in frames(20):
        writer.write(frame)
    with pytest.raises(VideoOpenFailure, match="No space left on device.*removed"):
        writer.close()
    assert writer.removed
    assert list(tmp_path.iterdir()) == []


def test_a_device_output_is_never_removed(tmp_path):
    # /dev/full fails every write with ENOSPC; the name links to it: the link and the device stay.
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    link = tmp_path / "out.mp4"
    link.symlink_to("/dev/full")
    writer = VideoWriter(link, 25.0, SIZE)
    with pytest.raises(VideoOpenFailure, match="No space left on device"):
        for frame in frames(400):
            writer.write(frame)
        writer.close()
    writer.close()
    assert not writer.removed and link.is_symlink() and os.path.exists("/dev/full")


def test_a_removed_video_is_not_the_reports_output_video(tmp_path, full_disk):
    """The report's ``output_video`` names only a video that plays; the failure that already
    stopped the run is not raised again when the sink closes (one error line)."""
    full_disk(room=2)
    sink = VideoSink(BackgroundWriter(VideoWriter(tmp_path / "out.mp4", 25.0, SIZE, preset="ultrafast")))
    summary = RunSummary()
    with pytest.raises(VideoOpenFailure) as failure:
        for frame in frames(60):
            sink.consume(Frame(0, 0.0, frame), FrameResult(None, frame, 0.0))
            time.sleep(0.002)  # the encoder's thread fails meanwhile
    summary.error = failure.value
    sink.close(summary)
    assert sink.removed
    report = EventsSink(tmp_path / "e.json", EventSegmenter(25.0), {}, video=sink)
    report.close(summary)
    assert json.loads((tmp_path / "e.json").read_text())["output_video"] is None
    assert names_in(tmp_path) == ["e.json"]


def test_a_full_disk_while_joining_removes_the_joined_video(tmp_path, full_disk):
    parts = []
    for n in range(2):
        parts.append(tmp_path / f"part{n}.mp4")
        with VideoWriter(parts[-1], 25.0, SIZE) as writer:
            for frame in frames(40):
                writer.write(frame)
    full_disk(room=50)
    with pytest.raises(VideoOpenFailure, match="No space left on device.*removed"):
        join_videos(parts, tmp_path / "joined.mp4")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["part0.mp4", "part1.mp4"]


def test_a_clip_cut_short_by_a_full_disk_is_removed_and_not_counted(tmp_path, full_disk):
    from motiondetect.outputs.clips import ClipSink

    events = EventSegmenter(25.0)
    sink = ClipSink(tmp_path, "x", events, 25.0, SIZE)
    first, second = (MotionEvent(i, start, start + 9, start, start + 9, 25.0) for i, start in ((1, 0), (2, 20)))
    sink._begin(first)
    for frame in frames(10):
        sink._write(first, frame, 0.0)
    sink._end(first)
    full_disk(room=1)
    sink._begin(second)
    with pytest.raises(VideoOpenFailure, match="x_event0002.mp4.*removed"):
        for frame in frames(60):
            sink._write(second, frame, 0.0)
    sink._end(second)  # as the run's close does: nothing more to finish, no second error
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x_event0001.mp4"]
    assert decoded(tmp_path / "x_event0001.mp4") == 10
    assert sink.describe() == f"1 clip in {tmp_path}"


def test_a_clip_that_cannot_be_finished_when_its_event_ends_stops_the_run_cleanly(tmp_path, full_disk):
    """Before, the run's close finished the ended event a second time and crashed (a traceback)."""
    from helpers import seed_config

    from motiondetect.outputs.clips import ClipSink
    from motiondetect.pipeline.config import build_filters
    from motiondetect.pipeline.detector import MotionDetector
    from motiondetect.pipeline.runner import Runner

    images = []
    for i in range(20):  # a square moves for 6 frames, then nothing does
        image = np.full((SIZE[1], SIZE[0], 3), 40, np.uint8)
        x = 2 + 3 * min(i, 5)
        image[4:12, x : x + 8] = 200
        images.append(image)
    events = EventSegmenter(25.0, min_event_length=0, merge_gap=0, time_before=0, time_after=0)
    clips = ClipSink(tmp_path, "x", events, 25.0, SIZE)
    report = EventsSink(tmp_path / "e.json", events, {})
    full_disk(room=None)  # the index of the clip, written when its event ends, does not fit
    frames = [Frame(i, i / 25.0, image) for i, image in enumerate(images)]
    summary = Runner(frames, MotionDetector(build_filters(seed_config())), [clips, report], events=events).run()
    assert isinstance(summary.error, VideoOpenFailure) and "removed" in str(summary.error)
    assert summary.frames < 20 and not summary.complete
    assert names_in(tmp_path) == ["e.json"] and clips.describe() == f"0 clips in {tmp_path}"


def names_in(folder):
    return sorted(p.name for p in folder.iterdir())
