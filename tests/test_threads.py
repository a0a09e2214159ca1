"""Decode-ahead and background-encode threads: order, bounded memory, errors on the main thread."""

from __future__ import annotations

import threading
import time

import cv2
import numpy as np
import pytest

from motiondetect.core.errors import VideoOpenFailure
from motiondetect.core.types import Frame
from motiondetect.outputs.writer import VideoWriter
from motiondetect.sources.threads import HEAD_START_BYTES, BackgroundWriter, PrefetchReader, head_start_frames


def frames(count, fail_at=None, produced=None):
    for index in range(count):
        if index == fail_at:
            raise VideoOpenFailure("corrupt packet")
        if produced is not None:
            produced.append(index)
        yield Frame(index, index / 25, np.full((2, 2, 3), index % 256, np.uint8))


def test_prefetch_yields_every_frame_in_order():
    assert [f.index for f in PrefetchReader(frames(500), depth=4)] == list(range(500))


def test_prefetch_stays_bounded_when_the_consumer_is_slow():
    produced = []
    reader = PrefetchReader(frames(100, produced=produced), depth=4)
    iterator = iter(reader)
    next(iterator)
    time.sleep(0.3)
    assert len(produced) <= 1 + 4 + 1  # the taken frame, a full queue, one waiting to be put
    reader.stop()


def test_prefetch_reraises_source_errors_after_the_good_frames():
    seen = []
    with pytest.raises(VideoOpenFailure, match="corrupt packet"):
        for frame in PrefetchReader(frames(10, fail_at=6)):
            seen.append(frame.index)
    assert seen == list(range(6))


def test_prefetch_stop_releases_a_blocked_thread():
    reader = PrefetchReader(frames(10_000), depth=2)
    time.sleep(0.1)
    reader.stop()
    assert not reader._thread.is_alive()


def test_background_writer_writes_every_frame(tmp_path):
    writer = BackgroundWriter(VideoWriter(tmp_path / "out.mp4", 25.0, (32, 16)), depth=3)
    for i in range(40):
        writer.write(np.full((16, 32, 3), i * 5, np.uint8))
    writer.close()
    capture, count = cv2.VideoCapture(str(tmp_path / "out.mp4")), 0
    while capture.read()[0]:
        count += 1
    assert count == 40


def test_background_writer_reraises_encoder_errors_on_the_caller(tmp_path):
    class Failing:
        path = "x.mp4"
        closed = threading.Event()

        def write(self, frame, time=None):
            raise VideoOpenFailure("disk full")

        def close(self):
            self.closed.set()

    writer = BackgroundWriter(Failing(), depth=2)
    writer.write(np.zeros((2, 2, 3), np.uint8))
    with pytest.raises(VideoOpenFailure, match="disk full"):
        for _ in range(100):  # the error surfaces at a later write, or at close
            writer.write(np.zeros((2, 2, 3), np.uint8))
            time.sleep(0.01)
        writer.close()
    with pytest.raises(VideoOpenFailure):
        writer.close()
    assert Failing.closed.is_set()


def wait_for(condition, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def test_head_start_reads_ahead_before_the_first_frame_is_taken():
    reader = PrefetchReader(frames(1000), depth=4, head_start=50)
    wait_for(lambda: reader.held == 50)
    time.sleep(0.1)
    assert reader.held == 50  # its bound, not the whole source
    reader.stop()


def test_head_start_is_paid_back_one_frame_per_frame_taken():
    """A consumer slower than the decoder: each frame taken lowers the bound by one, so the
    frames held fall back to ``depth`` and stay there."""
    reader = PrefetchReader(frames(1000), depth=4, head_start=20)
    wait_for(lambda: reader.held == 20)
    iterator = iter(reader)
    for taken in range(1, 21):
        assert next(iterator).index == taken - 1
        time.sleep(0.01)  # room for the reader to refill, were it allowed to
        assert reader.held == max(4, 20 - taken)
    reader.stop()


def test_head_start_keeps_every_frame_in_order_and_the_errors():
    assert [f.index for f in PrefetchReader(frames(500), depth=4, head_start=100)] == list(range(500))
    seen = []
    with pytest.raises(VideoOpenFailure, match="corrupt packet"):
        for frame in PrefetchReader(frames(300, fail_at=250), depth=2, head_start=100):
            seen.append(frame.index)
    assert seen == list(range(250))


def test_stop_releases_a_full_head_start():
    reader = PrefetchReader(frames(10_000), depth=2, head_start=64)
    wait_for(lambda: reader.held == 64)
    reader.stop()
    assert not reader._thread.is_alive()


@pytest.mark.parametrize(
    "size, bytes_per_pixel, expected",
    [((1920, 1080), 1.5, 86), ((3840, 2160), 1.5, 21), ((1920, 1080), 3, 43), ((320, 240), 1.5, 256), ((15360, 8640), 3, 8)],
)
def test_head_start_frames_fill_the_memory_bound(size, bytes_per_pixel, expected):
    assert head_start_frames(size, bytes_per_pixel) == expected
    if 8 < expected < 256:
        assert expected * size[0] * size[1] * bytes_per_pixel <= HEAD_START_BYTES
        assert (expected + 1) * size[0] * size[1] * bytes_per_pixel > HEAD_START_BYTES
