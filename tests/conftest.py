"""Shared fixtures: the bundled real clip, random frames, and the CUDA handler for GPU tests."""

from __future__ import annotations

from pathlib import Path

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
    from motiondetect.video import VideoHandler, as_bgr

    with VideoHandler(sample_clip) as video:
        return [as_bgr(f.image) for _, f in zip(range(60), video)]


@pytest.fixture
def rng() -> np.random.Generator:
    """A fresh random generator per test, seeded so failures reproduce."""
    return np.random.default_rng(20261122)


@pytest.fixture(scope="session")
def cuda():
    """An entered CUDAHandler; skips the test when PyCUDA or a device is missing."""
    from motiondetect.platform import cuda_device_error

    reason = cuda_device_error()
    if reason:
        pytest.skip(f"no CUDA: {reason}")
    from motiondetect.cuda_handler import CUDAHandler

    with CUDAHandler() as handler:
        yield handler
