"""The register filter on the GPU (cuFFT through scikit-cuda and its kernels) against the CPU
reference on real footage with camera jitter: every frame's shift, the moved frame and the
moved-back comparison, one frame per call and in batches; then configs/jitter.yaml through the
frame-at-a-time GPU detector and the GPU-resident BatchDetector against the CPU detector.

Marker ``gpu``: skipped (via the ``cuda`` fixture) where PyCUDA or a device is missing.
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from motiondetect.core.picture import Picture, as_bgr
from motiondetect.core.types import Frame
from motiondetect.filters import Register
from motiondetect.pipeline.batch import BatchDetector
from motiondetect.pipeline.config import build_filters, load_config
from motiondetect.pipeline.detector import MotionDetector
from motiondetect.sources.video import VideoHandler

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parent.parent
PRESET = ROOT / "configs" / "jitter.yaml"
MARGIN = 8


def jittered_clip(path, count: int, amp: int = 4, seed: int = 7) -> tuple[list[np.ndarray], list[tuple[int, int]]]:
    """The clip's first ``count`` BGR frames, each moved by a random shift of up to ``amp``
    pixels (the first by none) and cropped by MARGIN on every side; and the shifts."""
    rng = np.random.default_rng(seed)
    with VideoHandler(path) as video:
        frames = [as_bgr(f.image) for _, f in zip(range(count), video)]
    shifts = [(0, 0)] + [tuple(int(v) for v in rng.integers(-amp, amp + 1, 2)) for _ in frames[1:]]
    out = []
    for frame, (dx, dy) in zip(frames, shifts):
        height, width = frame.shape[:2]
        warped = cv2.warpAffine(
            frame, np.float32([[1, 0, dx], [0, 1, dy]]), (width, height), flags=cv2.INTER_NEAREST, borderMode=cv2.BORDER_REPLICATE
        )
        out.append(np.ascontiguousarray(warped[MARGIN:-MARGIN, MARGIN:-MARGIN]))
    return out, shifts


@pytest.mark.parametrize("batch", [1, 7])
def test_kernels_equal_the_cpu_on_a_jittered_clip(cuda, sample_clip, batch):
    """300 jittered frames of the bundled clip: the device shifts equal the CPU's and the
    applied ones, and the moved frames and moved-back images are identical."""
    import pycuda.gpuarray as gpuarray

    frames, shifts = jittered_clip(sample_clip, 300)
    greys = [cv2.cvtColor(f, cv2.COLOR_BGR2GRAY) for f in frames]
    cpu, gpu = Register(), Register()
    shape = greys[0].shape
    for start in range(0, len(greys), batch):
        stop = min(len(greys), start + batch)
        src = gpuarray.to_gpu(np.ascontiguousarray(np.stack(greys[start:stop])))
        dst = gpuarray.empty(src.shape, np.uint8)
        back = gpuarray.empty(src.shape, np.uint8)
        gpu.apply(cuda, src if batch > 1 else src.reshape(shape), dst if batch > 1 else dst.reshape(shape))
        gpu.unshift(cuda, src if batch > 1 else src.reshape(shape), back if batch > 1 else back.reshape(shape))
        device_shifts = cuda.buffer(gpu.state_key("shift"), (1024, 2), np.int32).get()
        cuda.synchronize()
        moved, moved_back = dst.get(), back.get()
        for j, i in enumerate(range(start, stop)):
            want = cpu.reference(greys[i])
            assert tuple(device_shifts[j]) == cpu.shift == shifts[i], f"frame {i}"
            np.testing.assert_array_equal(moved[j], want, err_msg=f"frame {i}")
            np.testing.assert_array_equal(moved_back[j], cpu.unshift_reference(greys[i]), err_msg=f"frame {i}")


@pytest.mark.parametrize("batch", [1, 32])
def test_preset_pipeline_gpu_equals_cpu_on_a_jittered_clip(cuda, sample_clip, batch):
    """configs/jitter.yaml on 300 jittered frames (as decoded pictures): the CPU detector, the
    frame-at-a-time GPU detector and the BatchDetector give the same masks and fractions."""
    frames, _ = jittered_clip(sample_clip, 300)
    pictures = [Picture.from_bgr(f) for f in frames]
    config = load_config(PRESET)
    cpu = MotionDetector(build_filters(config))
    one = MotionDetector(build_filters(config), cuda=cuda)
    batched = BatchDetector(build_filters(config), cuda, batch=batch, annotate=False)
    stream = list(batched.stream(Frame(i, i / 25, p) for i, p in enumerate(pictures)))
    moving = 0
    for (frame, got), picture in zip(stream, pictures):
        want = cpu.process(picture)
        single = one.process(picture)
        assert np.array_equal(single.mask, want.mask), f"frame {frame.index} (one at a time)"
        assert np.array_equal(got.mask, want.mask), f"frame {frame.index} (batch {batch})"
        assert got.motion_fraction == single.motion_fraction == want.motion_fraction
        moving += want.motion_fraction > 0.001
    assert moving > 100
