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
from motiondetect.sources.threads import BackgroundWriter, PrefetchReader


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
