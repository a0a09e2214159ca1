"""The Subsense kernels on the GPU against the CPU reference, bit for bit, on real footage over
many frames: the masks and the whole model, one frame per call and in batches, alone and in the
preset pipeline (frame at a time and the GPU-resident BatchDetector).

Marker ``gpu``: skipped (via the ``cuda`` fixture) where PyCUDA or a device is missing.
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest
from helpers import assert_gpu_paths_equal_cpu

from motiondetect.core.picture import Picture, as_bgr
from motiondetect.filters import Subsense
from motiondetect.pipeline.config import load_config
from motiondetect.sources.video import VideoHandler

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parent.parent
PRESET = ROOT / "configs" / "subsense.yaml"
#: Parameters: the preset's, fast-changing ones (short windows, frequent ghosts and spreads), and
#: the defaults as a 5 frames/s source gets them (tuned_fps: periods / 5, steps x 5).
PARAMS = [
    {},
    {"samples": 20, "t_upper": 8.0, "ghost_share": 0.5, "ghost_distance": 0.1, "dmin_frames": 8},
    {"t_lower": 1.0, "t_upper": 51.2, "dmin_frames": 20, "blink_decay": 0.5, "threshold_step": 0.05},
]


def clip_greys(path, count: int | None = None) -> list[np.ndarray]:
    with VideoHandler(path) as video:
        return [cv2.cvtColor(as_bgr(f.image), cv2.COLOR_BGR2GRAY) for _, f in zip(range(count or 10**9), video)]


def device_model(cuda, flt: Subsense, shape) -> dict[str, np.ndarray]:
    """The kernel's model buffers, downloaded, shaped as :attr:`Subsense.model`."""
    height, width = shape
    n, count = flt.params["samples"], height * width
    layout = {
        "colours": ((n, count), np.uint8),
        "descs": ((n, count), np.uint16),
        "last": ((count,), np.uint8),
        "last_colour": ((count,), np.uint8),
        "desc": ((count,), np.uint16),
    }
    layout.update({name: ((count,), np.int32) for name in ("r", "t", "v", "dmin", "savg", "dlast")})
    out = {}
    for name, (buffer_shape, dtype) in layout.items():
        value = cuda.buffer(flt.state_key(name), buffer_shape, dtype).get()  # the filter's buffer (same shape: not reallocated)
        out[name] = value.reshape(n, height, width) if name in ("colours", "descs") else value.reshape(height, width)
    return out


def assert_models_equal(cpu: dict, gpu: dict, what: str) -> None:
    for name, value in gpu.items():
        np.testing.assert_array_equal(value.astype(np.int64), cpu[name].astype(np.int64), err_msg=f"{name}, {what}")


@pytest.mark.parametrize("params", PARAMS, ids=str)
@pytest.mark.parametrize("batch", [1, 7])
def test_kernels_equal_the_cpu_on_the_real_clip(cuda, sample_clip, params, batch):
    """All 748 frames of the bundled highway clip (320x240): every mask, and the whole model
    after every call, identical to the CPU reference; K frames per call equal K calls."""
    import pycuda.gpuarray as gpuarray

    greys = clip_greys(sample_clip)
    cpu, gpu = Subsense(**params), Subsense(**params)
    shape = greys[0].shape
    moving = 0
    for start in range(1, len(greys), batch):
        stop = min(len(greys), start + batch)
        src = gpuarray.to_gpu(np.ascontiguousarray(np.stack(greys[start:stop])))
        side = gpuarray.to_gpu(np.ascontiguousarray(np.stack(greys[start - 1 : stop - 1])))
        dst = gpuarray.empty(src.shape, np.uint8)
        dst.fill(0xAB)
        gpu.apply(
            cuda,
            src if batch > 1 else src.reshape(shape),
            dst if batch > 1 else dst.reshape(shape),
            side if batch > 1 else side.reshape(shape),
        )
        cuda.synchronize()
        got = dst.get()
        for j, i in enumerate(range(start, stop)):
            want = cpu.reference(greys[i], greys[i - 1])
            assert np.array_equal(got[j], want), f"mask of frame {i}: {np.count_nonzero(got[j] != want)} pixels differ"
            moving += np.count_nonzero(want) > 0.001 * want.size
        assert_models_equal(cpu.model, device_model(cuda, gpu, shape), f"after frame {stop - 1}")
    assert moving > 300  # cars pass through most of the clip: the comparison covers real motion


def test_kernels_equal_the_cpu_at_1080p(cuda, sample_clip):
    """Real frames resized to 1920x1080 (the model at full size, 2M pixels x 50 samples), 12 frames."""
    import pycuda.gpuarray as gpuarray

    greys = [cv2.resize(g, (1920, 1080), interpolation=cv2.INTER_LINEAR) for g in clip_greys(sample_clip, 13)]
    cpu, gpu = Subsense(), Subsense()
    dst = gpuarray.empty((1080, 1920), np.uint8)
    for i in range(1, len(greys)):
        gpu.apply(cuda, gpuarray.to_gpu(greys[i]), dst, gpuarray.to_gpu(greys[i - 1]))
        want = cpu.reference(greys[i], greys[i - 1])
        assert np.array_equal(dst.get(), want), f"frame {i}"
    assert_models_equal(cpu.model, device_model(cuda, gpu, (1080, 1920)), "at the end")


@pytest.mark.parametrize("batch", [1, 32])
def test_preset_pipeline_gpu_equals_cpu(cuda, sample_clip, batch):
    """configs/subsense.yaml on the bundled clip: the CPU detector, the frame-at-a-time GPU
    detector and the BatchDetector (K frames per batch) give the same masks and fractions."""
    with VideoHandler(sample_clip) as video:
        frames = [f.image for _, f in zip(range(300), video)]
    assert_gpu_paths_equal_cpu(cuda, load_config(PRESET), frames, batch)


@pytest.mark.parametrize("batch", [1, 32])
def test_preset_pipeline_gpu_equals_cpu_on_a_jittered_clip(cuda, sample_clip, batch):
    """configs/subsense.yaml registers each frame before the model: on 300 frames of the bundled
    clip shaken by up to 4 pixels, the CPU detector, the frame-at-a-time GPU detector and the
    BatchDetector give the same masks and fractions."""
    from helpers import jitter

    with VideoHandler(sample_clip) as video:
        frames = [as_bgr(f.image) for _, f in zip(range(300), video)]
    moved, _ = jitter(frames, amp=4, seed=7)
    assert_gpu_paths_equal_cpu(cuda, load_config(PRESET), [Picture.from_bgr(f) for f in moved], batch)
