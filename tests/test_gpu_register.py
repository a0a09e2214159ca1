"""The register filter on the GPU (cuFFT through scikit-cuda and its kernels) against the CPU
reference on real footage with camera jitter: every frame's shift, the moved frame and the
moved-back comparison, one frame per call and in batches; the guards (``min_peak``, the tiles'
consensus) on frames that trip them; then the default pipeline (which registers) through the
frame-at-a-time GPU detector and the GPU-resident BatchDetector against the CPU detector.

Marker ``gpu``: skipped (via the ``cuda`` fixture) where PyCUDA or a device is missing.
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest
from helpers import assert_gpu_paths_equal_cpu, jitter, square_frames

from motiondetect.core.picture import Picture, as_bgr
from motiondetect.filters import Register
from motiondetect.filters.register import block_sums
from motiondetect.pipeline.config import load_config
from motiondetect.sources.video import VideoHandler

pytestmark = pytest.mark.gpu

DEFAULT = Path(__file__).resolve().parent.parent / "configs" / "default.yaml"
MARGIN = 8


def jittered_clip(path, count: int, amp: int = 4, seed: int = 7) -> tuple[list[np.ndarray], list[tuple[int, int]]]:
    """The clip's first ``count`` BGR frames, jittered by :func:`helpers.jitter` (cropped by
    MARGIN); and the shifts."""
    with VideoHandler(path) as video:
        frames = [as_bgr(f.image) for _, f in zip(range(count), video)]
    return jitter(frames, amp, seed, MARGIN)


@pytest.mark.parametrize(
    "batch, odd, max_splits, taper", [(1, False, 8, 0.25), (7, True, 8, 0.25), (7, False, 1, 0.25), (7, False, 8, 1.0)]
)
def test_kernels_equal_the_cpu_on_a_jittered_clip(cuda, sample_clip, monkeypatch, batch, odd, max_splits, taper):
    """300 jittered frames of the bundled clip (also cropped to an odd height and width, whose
    shrunk image repeats the last row and column): the device shifts equal the CPU's, which are
    the applied ones but on frame 194 ((-1, 1) for (-2, 1): its coarse peak a hair under
    ``peak_ratio`` times no shift's, tests/filters/test_register.py), and the moved frames and
    moved-back images are identical, whether the tiles' sums are split over 8 row bands each or
    none, and with the Hann window (``taper`` 1) too."""
    import pycuda.gpuarray as gpuarray

    monkeypatch.setattr("motiondetect.filters.register.MAX_SPLITS", max_splits)

    frames, shifts = jittered_clip(sample_clip, 300)
    greys = [np.ascontiguousarray(cv2.cvtColor(f, cv2.COLOR_BGR2GRAY)[: -1 if odd else None, : -1 if odd else None]) for f in frames]
    cpu, gpu = Register(taper=taper), Register(taper=taper)
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
            assert tuple(device_shifts[j]) == cpu.shift, f"frame {i}"
            assert cpu.shift == shifts[i] or (i, cpu.shift) == (194, (-1, 1)), f"frame {i}"
            np.testing.assert_array_equal(moved[j], want, err_msg=f"frame {i}")
            np.testing.assert_array_equal(moved_back[j], cpu.unshift_reference(greys[i]), err_msg=f"frame {i}")


def _shifts(cuda, flt: Register, greys: list[np.ndarray]) -> list[tuple[int, int]]:
    """The device shifts of one batched call on ``greys`` (the first is the anchor)."""
    import pycuda.gpuarray as gpuarray

    src = gpuarray.to_gpu(np.ascontiguousarray(np.stack(greys)))
    flt.apply(cuda, src, gpuarray.empty(src.shape, np.uint8))
    device = cuda.buffer(flt.state_key("shift"), (1024, 2), np.int32).get()
    cuda.synchronize()
    return [tuple(int(v) for v in device[k]) for k in range(len(greys))]


def test_guards_equal_the_cpu(cuda, sample_frames, rng, monkeypatch):
    """A square moving on a plain background (the peak alone would follow it) and noise after a
    real frame (random peaks that beat no shift): no shift on the device, as on the CPU; with the
    guards off, the device follows the square and takes a random peak, as the CPU does."""
    from motiondetect.filters import register as register_module

    squares = [cv2.cvtColor(f, cv2.COLOR_BGR2GRAY) for f in square_frames()]
    grey = cv2.cvtColor(sample_frames[30], cv2.COLOR_BGR2GRAY)
    noisy = [grey] + [rng.integers(0, 256, grey.shape, dtype=np.uint8) for _ in range(8)]
    for guarded in (True, False):
        if not guarded:
            monkeypatch.setattr(register_module, "MIN_VOTES", 0)
        for greys, params in ((squares, {}), (noisy, {} if guarded else {"min_peak": 0.0})):
            cpu = Register(**params)
            want = [(cpu.reference(g), cpu.shift)[1] for g in greys]
            assert _shifts(cuda, Register(**params), greys) == want
            assert (want == [(0, 0)] * len(greys)) == guarded


def test_peak_kernel_equals_the_cpu_on_planted_peaks(cuda, rng):
    """md_peak_shift_f32 against peak_shift on 400 noisy surfaces with a near and a far peak of
    random heights (either may win, or give way to the other or to no shift), exact ties and NaN:
    the same (dx, dy) and found flag for every reach, ratio and far_ratio tried."""
    import pycuda.gpuarray as gpuarray

    from motiondetect.filters.register import peak_shift

    height, width, count = 36, 44, 400
    surfaces = rng.normal(0.0, 1.0, (count, height, width)).astype(np.float32)
    for surface in surfaces:
        for reach in (3, 12):
            dx, dy = (int(v) for v in rng.integers(-reach, reach + 1, 2))
            surface[dy % height, dx % width] = np.float32(rng.choice([2.0, 3.0, 4.0, 6.0]))
    surfaces[1] = surfaces[0]
    surfaces[1, 2, 3] = surfaces[1, -9, 11] = surfaces[1].max()  # a tie of a near and a far peak
    surfaces[2, 5, 5] = np.nan
    peak = cuda.function(Register.KERNEL, "md_peak_shift_f32", "PPiiifff")
    device = gpuarray.to_gpu(surfaces)
    found = gpuarray.empty((count, 3), np.int32)
    for reach, ratio, floor, far_ratio in ((8, 1.0, 0.0, 1.0), (8, 3.0, 2.5, 2.0), (16, 1.5, 0.0, 1.5), (6, 3.0, 0.0, 4.0)):
        peak.prepared_async_call(
            (count, 1),
            (256, 1, 1),
            cuda.stream,
            device.gpudata,
            found.gpudata,
            np.int32(width),
            np.int32(height),
            np.int32(reach),
            np.float32(ratio),
            np.float32(floor),
            np.float32(far_ratio),
        )
        cuda.synchronize()
        got = found.get()
        for surface, (dx, dy, ok) in zip(surfaces, got):
            want = peak_shift(surface, reach, ratio, floor, far_ratio)
            assert (want is not None) == bool(ok)
            if want is not None:
                assert (dx, dy) == want, (reach, ratio, floor, far_ratio)


@pytest.mark.parametrize("batch", [1, 7])
def test_light_changes_are_matched_as_on_the_cpu(cuda, sample_clip, rng, batch):
    """200 jittered frames whose levels are times 0.4 from frame 60, 1.3 from 120 and 1.01 (within
    the 2 % left alone) from 170, with noise frames (no correlation peak, so no refinement) at 50,
    100 and 150: every device shift equals the CPU's (matched_levels), the device holds the
    anchor's brightness the CPU measured, and each call leaves the frames' brightness sums at 0
    for the next, whether a frame was refined or not."""
    import pycuda.gpuarray as gpuarray

    from motiondetect.filters import register as register_module

    frames, _ = jittered_clip(sample_clip, 200)
    gains = [1.0] * 60 + [0.4] * 60 + [1.3] * 50 + [1.01] * 30
    greys = [cv2.convertScaleAbs(cv2.cvtColor(f, cv2.COLOR_BGR2GRAY), alpha=g) for f, g in zip(frames, gains)]
    for i in (50, 100, 150):
        greys[i] = rng.integers(0, 256, greys[0].shape, dtype=np.uint8)
    cpu, gpu = Register(), Register()
    want = [(cpu.reference(g), cpu.shift)[1] for g in greys]
    got = []
    for start in range(0, len(greys), batch):
        src = gpuarray.to_gpu(np.ascontiguousarray(np.stack(greys[start : start + batch])))
        images = src if batch > 1 else src.reshape(src.shape[1:])
        gpu.apply(cuda, images, gpuarray.empty(images.shape, np.uint8))
        device = cuda.buffer(gpu.state_key("shift"), (register_module.MAX_FRAMES, 2), np.int32).get()
        left = cuda.buffer(("register_brightness",), (register_module.MAX_FRAMES,), np.uint64).get()
        cuda.synchronize()
        got += [tuple(int(v) for v in device[k]) for k in range(src.shape[0])]
        assert not left.any(), f"brightness left after frame {start}"
    assert got == want
    anchor = cuda.buffer(gpu.state_key("anchor_brightness"), (1,), np.uint64).get()
    assert int(anchor[0]) == int(block_sums(greys[0]).sum(dtype=np.float64))
    assert sum(s != (0, 0) for s in want) > 150  # the shifts are real, not all refused


@pytest.mark.parametrize("batch", [1, 32])
@pytest.mark.parametrize("chroma", [0.0, 8.0], ids=["grey", "chroma"])
def test_default_pipeline_gpu_equals_cpu_on_a_jittered_clip(cuda, sample_clip, batch, chroma):
    """The default pipeline on 300 jittered frames (as decoded pictures): the CPU detector, the
    frame-at-a-time GPU detector and the BatchDetector give the same masks and fractions; with
    chroma, the chroma planes are moved by each frame's shift as the grey image is."""
    from motiondetect.evaluation.tuning import config_for

    frames, _ = jittered_clip(sample_clip, 300)
    config = config_for(load_config(DEFAULT), {("gaussian_background", "chroma_min_sigma"): chroma})
    assert_gpu_paths_equal_cpu(cuda, config, [Picture.from_bgr(f) for f in frames], batch)
