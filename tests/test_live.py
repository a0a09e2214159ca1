"""The live path without a camera: a file played as a live source through the reader thread,
stream reconnects with a stand-in capture, and timestamped recordings."""

from __future__ import annotations

import logging
import threading
import time

import cv2
import numpy as np
import pytest

from motiondetect.core.errors import VideoOpenFailure
from motiondetect.core.types import Frame
from motiondetect.outputs.writer import VideoWriter
from motiondetect.sources.live import LatestFrameReader
from motiondetect.sources.video import VideoHandler


def synthetic_frames(count, fail_at=None):
    for index in range(count):
        if index == fail_at:
            raise VideoOpenFailure("decoder failed")
        yield Frame(index, index / 100, np.full((4, 4, 3), index % 256, np.uint8))


def test_slow_consumer_gets_the_newest_frames_and_drops_are_counted(sample_clip):
    with VideoHandler(sample_clip) as video, LatestFrameReader(video, pace_fps=video.fps * 8) as reader:
        seen = []
        for frame in reader:
            seen.append(frame.index)
            time.sleep(3 / (video.fps * 8))  # three source frame periods per frame taken
    assert seen == sorted(set(seen))  # in order, never repeated
    assert seen[-1] == 747  # the newest frame wins, so the last one is delivered
    assert reader.dropped == 748 - len(seen)
    assert reader.dropped > 300


def test_consumer_that_keeps_up_gets_every_frame_at_the_paced_rate():
    # The source hands the reader frame n + 1 only once the consumer has taken frame n, so the
    # consumer always keeps up, however late a busy CI machine wakes it (at 25 and 100 frames/s
    # a free-running source once lost frames there, as a reader should when its consumer is
    # late). A reader that dropped or repeated a frame anyway fails the first assertion; one
    # that missed a wake-up and waited out its 0.5 s poll instead takes about 5 s for the 20.
    taken = threading.Event()

    def frames_after_each_is_taken():
        for frame in synthetic_frames(20):
            yield frame
            assert taken.wait(timeout=10), "the consumer never took the frame"
            taken.clear()

    started = time.monotonic()
    with LatestFrameReader(frames_after_each_is_taken(), pace_fps=25) as reader:
        seen = []
        for frame in reader:
            seen.append(frame.index)
            taken.set()
    elapsed = time.monotonic() - started
    assert seen == list(range(20)) and reader.dropped == 0
    assert 0.74 <= elapsed < 3.0  # 20 frames at 25 fps take at least 0.76 s


def test_wallclock_restamps_frame_times():
    with LatestFrameReader(synthetic_frames(5), pace_fps=50, wallclock=True) as reader:
        times = [frame.time for frame in reader]
    assert times == sorted(times) and times[0] < 0.05 and times[-1] == pytest.approx(4 / 50, abs=0.05)


def test_source_error_is_raised_on_the_consumer_thread():
    with LatestFrameReader(synthetic_frames(10, fail_at=3), pace_fps=200) as reader:
        with pytest.raises(VideoOpenFailure, match="decoder failed"):
            for _ in reader:
                pass


def test_stop_ends_the_reader_thread_early():
    reader = LatestFrameReader(synthetic_frames(10_000), pace_fps=100)
    next(iter(reader))
    reader.stop()
    assert not reader._thread.is_alive()


class FakeCapture:
    """Stands in for cv2.VideoCapture: delivers ``frames`` reads, then fails; counts opens."""

    opens = 0
    frames_per_open = [3]

    def __init__(self, *args, **kwargs):
        FakeCapture.opens += 1
        plan = FakeCapture.frames_per_open
        self.remaining = plan[min(FakeCapture.opens - 1, len(plan) - 1)]

    def isOpened(self):
        return self.remaining >= 0

    def read(self):
        if self.remaining <= 0:
            return False, None
        self.remaining -= 1
        return True, np.zeros((4, 6, 3), np.uint8)

    def get(self, prop):
        return {cv2.CAP_PROP_FRAME_WIDTH: 6, cv2.CAP_PROP_FRAME_HEIGHT: 4, cv2.CAP_PROP_FPS: 25}.get(prop, 0)

    def release(self):
        pass


@pytest.fixture
def fake_capture(monkeypatch):
    monkeypatch.setattr("motiondetect.sources.video.cv2.VideoCapture", FakeCapture)
    monkeypatch.setattr(VideoHandler, "reconnect_delay", 0.0)
    FakeCapture.opens = 0
    return FakeCapture


def test_lost_stream_is_reconnected_and_resumes(fake_capture, caplog):
    fake_capture.frames_per_open = [3, -1, 2]  # 3 frames, a failed reopen, then 2 more
    with caplog.at_level(logging.WARNING, logger="motiondetect"), VideoHandler("rtsp://camera.invalid/stream") as video:
        # after the 2 frames of the last open the stream fails again and every retry gets 2 more
        frames = [f for _, f in zip(range(5), video)]
    assert [f.index for f in frames] == [0, 1, 2, 3, 4]
    assert "reconnect attempt 1 of 5" in caplog.text and "reconnect attempt 2 of 5" in caplog.text


def test_lost_stream_gives_up_after_bounded_attempts(fake_capture, caplog):
    fake_capture.frames_per_open = [2, -1]
    with caplog.at_level(logging.WARNING, logger="motiondetect"), VideoHandler("http://camera.invalid/mjpg") as video:
        with pytest.raises(VideoOpenFailure, match="5 reconnect attempts failed"):
            list(video)
    assert caplog.text.count("reconnect attempt") == 5
    assert fake_capture.opens == 1 + 5


def test_camera_that_stops_is_a_clear_failure(fake_capture):
    fake_capture.frames_per_open = [2]
    with VideoHandler(0) as video, pytest.raises(VideoOpenFailure, match="camera 0 stopped delivering frames after 2"):
        list(video)


def test_a_camera_is_scanned_without_a_window_with_no_preview(fake_capture, monkeypatch, capsys, tmp_path):
    """Cameras and streams open a preview window by default; --no-preview scans one on a machine
    without a display (before, docs/scanning.md's stream recipe failed there: no display)."""
    import json

    from helpers import run_cli

    from motiondetect.apps import preview

    def no_window(*args, **kwargs):
        raise AssertionError("a preview window was opened")

    monkeypatch.setattr(preview.PreviewSink, "__init__", no_window)
    fake_capture.frames_per_open = [3]
    args = ("--camera", "0", "--no-preview", "--no-video", "--events", "cam.json", "--backend", "cpu")
    rc, _, err = run_cli(monkeypatch, capsys, tmp_path, *args)
    assert rc == 1 and "camera 0 stopped delivering frames after 3" in err  # the stand-in's end
    report = json.loads((tmp_path / "cam.json").read_text())
    assert report["frame_count"] >= 1 and report["frame_count"] + report["dropped_frames"] == 3  # only the newest kept


def test_unopenable_camera_and_stream(monkeypatch):
    class Closed(FakeCapture):
        def isOpened(self):
            return False

    monkeypatch.setattr("motiondetect.sources.video.cv2.VideoCapture", Closed)
    with pytest.raises(VideoOpenFailure, match="cannot open camera '3'"):
        VideoHandler(3)
    with pytest.raises(VideoOpenFailure, match="cannot open stream"):
        VideoHandler("rtsp://camera.invalid/x")


def test_timestamped_recording_keeps_gaps_of_dropped_frames(tmp_path):
    import av

    path = tmp_path / "live.mp4"
    times = [0.0, 0.04, 0.2, 0.24, 0.6]  # at 25 fps: frame slots 0, 1, 5, 6, 15
    writer = VideoWriter(path, 25.0, (32, 16))
    for i, t in enumerate(times):
        writer.write(np.full((16, 32, 3), 40 * i, np.uint8), time=t)
    writer.close()
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        slots = [round(float(f.pts * stream.time_base) * 25) for f in container.decode(stream)]
    assert slots == [0, 1, 5, 6, 15]
