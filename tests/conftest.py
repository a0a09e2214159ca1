"""Shared fixtures: the bundled real clip, random frames, the CUDA handler for GPU tests, a
jittered H.264 copy of the clip, and the root logger restored after a test that runs the command."""

from __future__ import annotations

import logging
from pathlib import Path

import cv2
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLE_CLIP = ROOT / "samples" / "highway_traffic_320x240.avi"


@pytest.fixture(scope="session")
def sample_clip() -> Path:
    """The real clip bundled in samples/ (320x240, 25 fps, 748 decodable frames)."""
    assert SAMPLE_CLIP.is_file(), f"missing bundled sample {SAMPLE_CLIP}"
    return SAMPLE_CLIP


@pytest.fixture(scope="session")
def sample_frames(sample_clip) -> list[np.ndarray]:
    """The first 60 decoded frames of the bundled clip, (240, 320, 3) uint8 BGR."""
    from motiondetect.core.picture import as_bgr
    from motiondetect.sources.video import VideoHandler

    with VideoHandler(sample_clip) as video:
        return [as_bgr(f.image) for _, f in zip(range(60), video)]


@pytest.fixture
def restored_logging():
    """The root logger's handlers and level put back after the test: ``motiondetect.apps.cli.main``
    rebinds them to the (captured) stderr."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


@pytest.fixture
def rng() -> np.random.Generator:
    """A fresh random generator per test, seeded so failures reproduce."""
    return np.random.default_rng(20261122)


@pytest.fixture(params=["one band", "many bands"])
def bands(request, monkeypatch):
    """Run the CPU references' row bands (:mod:`motiondetect.filters.bands`) first on the calling
    thread alone, then split into as many bands as the image has rows (at most 4) on the pool,
    each done in chunks of one row, so a test using it checks that both give its expected bits."""
    import cv2

    from motiondetect.filters import bands as module

    threads = cv2.getNumThreads()
    if request.param == "many bands":
        monkeypatch.setattr(module, "MIN_BAND_PIXELS", 1)
        monkeypatch.setattr(module, "CHUNK_PIXELS", 1)
        cv2.setNumThreads(4)
    else:
        cv2.setNumThreads(1)
    yield request.param
    cv2.setNumThreads(threads)


@pytest.fixture(scope="session")
def cuda():
    """An entered CUDAHandler; skips the test when PyCUDA or a device is missing."""
    from motiondetect.gpu.platform import cuda_device_error

    reason = cuda_device_error()
    if reason:
        pytest.skip(f"no CUDA: {reason}")
    from motiondetect.gpu.cuda_handler import CUDAHandler

    with CUDAHandler() as handler:
        yield handler


@pytest.fixture(scope="module")
def jittered_video(tmp_path_factory, sample_clip) -> Path:
    """The bundled clip (748 frames) jittered by up to 4 pixels each way (:func:`helpers.jitter`,
    cropped by 8 on every side), as H.264 (x264 veryfast: a keyframe every 250 frames, so chunks
    start 250 and 500 frames after the anchor)."""
    from helpers import jitter

    from motiondetect.outputs.writer import VideoWriter

    capture = cv2.VideoCapture(str(sample_clip))
    frames = []
    while (read := capture.read())[0]:
        frames.append(read[1])
    capture.release()
    moved, _ = jitter(frames, seed=11)
    path = tmp_path_factory.mktemp("jitter") / "jittered.mp4"
    with VideoWriter(path, 25.0, (moved[0].shape[1], moved[0].shape[0])) as writer:
        for frame in moved:
            writer.write(frame)
    return path
