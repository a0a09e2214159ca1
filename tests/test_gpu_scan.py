"""Footage scanning on the GPU against the CPU reference, bit for bit: mask statistics (count and
bounding box), the ROI and expansion kernels, the detector with ROI / downscale / frame skip, and
the whole command (events, reports, masks, clips) on both backends.

Marker ``gpu``: skipped (via the ``cuda`` fixture) where PyCUDA or a device is missing. Run on the
GPU machine with ``python3 -m pytest -m gpu``.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import cv2
import numpy as np
import pytest
from helpers import SHARED_VIDEOS, same_image

from motiondetect.pipeline.config import build_filters, default_config
from motiondetect.pipeline.detector import Geometry, MotionDetector, box_from_corners, mask_stats_reference, queue_mask_stats

pytestmark = pytest.mark.gpu

#: Frame sizes (H, W): degenerate, not multiples of any block size, odd, 1080p and 2160p.
GPU_SIZES = [(1, 1), (7, 13), (479, 641), (1080, 1920), (2160, 3840)]
POISON = 0xAB


def poisoned(cuda, key, shape, dtype=np.uint8):
    import pycuda.driver as drv

    buf = cuda.buffer(key, shape, dtype)
    drv.memset_d8(buf.gpudata, POISON, buf.nbytes)
    return buf


def gpu_stats(cuda, mask):
    import pycuda.gpuarray as gpuarray

    poisoned(cuda, "mask_total", (1,), np.uint64)  # accumulators left dirty: the call must reset them
    poisoned(cuda, "mask_box", (1, 4), np.uint32)
    d_mask = gpuarray.to_gpu(np.ascontiguousarray(mask))  # held until the stream has run
    total, box = queue_mask_stats(cuda, d_mask)
    cuda.synchronize()
    count = int(total.get()[0])
    return count, box_from_corners(count, box.get()[0])


def masks_for(rng, size):
    height, width = size
    yield np.zeros(size, np.uint8)
    yield np.full(size, 255, np.uint8)
    for density in (0.0001, 0.01, 0.5):
        yield ((rng.random(size) < density) * 255).astype(np.uint8)
    for y, x in ((0, 0), (height - 1, width - 1), (0, width - 1), (height - 1, 0), (height // 2, width // 3)):
        single = np.zeros(size, np.uint8)
        single[y, x] = 7  # any non-zero value counts
        yield single


@pytest.mark.parametrize("size", GPU_SIZES, ids=lambda s: f"{s[1]}x{s[0]}")
def test_mask_stats_kernel_matches_reference(cuda, rng, size):
    for mask in masks_for(rng, size):
        assert gpu_stats(cuda, mask) == mask_stats_reference(mask)


def test_mask_stats_two_pixels_far_apart(cuda):
    mask = np.zeros((2160, 3840), np.uint8)
    mask[3, 3000] = mask[2000, 17] = 255
    assert gpu_stats(cuda, mask) == (2, (17, 3, 2984, 1998))


@pytest.mark.parametrize("size", GPU_SIZES, ids=lambda s: f"{s[1]}x{s[0]}")
def test_and_mask_kernel(cuda, rng, size):
    import pycuda.gpuarray as gpuarray

    from motiondetect.filters.base import element_count

    mask = ((rng.random(size) < 0.5) * 255).astype(np.uint8)
    roi = ((rng.random(size) < 0.5) * 255).astype(np.uint8)
    out = poisoned(cuda, "test_and", size)
    n = element_count(mask)
    fn = cuda.function("mask_ops", "md_and_mask_u8", "PPPii")
    d_mask, d_roi = gpuarray.to_gpu(mask), gpuarray.to_gpu(roi)  # held until the stream has run
    cuda.launch_1d(fn, int(n), d_mask.gpudata, d_roi.gpudata, out.gpudata, n, n)
    cuda.synchronize()
    np.testing.assert_array_equal(out.get(), cv2.bitwise_and(mask, roi))


@pytest.mark.parametrize("size", [(1, 1), (7, 13), (479, 641), (1080, 1920)], ids=lambda s: f"{s[1]}x{s[0]}")
@pytest.mark.parametrize("factor", [1, 2, 3])
def test_expand_kernel_matches_opencv_nearest(cuda, rng, size, factor):
    import pycuda.gpuarray as gpuarray

    from motiondetect.pipeline.detector import _CudaExecutor

    height, width = size
    roi = np.zeros(size, np.uint8)
    roi[height // 4 :, width // 5 :] = 255
    try:
        geo = Geometry.build(size, roi, factor, halo=1)
    except ValueError:
        pytest.skip("the ROI vanishes at this size")
    w, h = geo.work_size
    mask = ((rng.random((h, w)) < 0.3) * 255).astype(np.uint8)
    poisoned(cuda, "full_mask", size)
    d_mask = gpuarray.to_gpu(mask)  # held until the stream has run
    got = _CudaExecutor(cuda).expand(d_mask, geo)
    cuda.synchronize()
    x0, y0, x1, y1 = geo.crop
    expected = np.zeros(size, np.uint8)
    expected[y0:y1, x0:x1] = cv2.resize(mask, (x1 - x0, y1 - y0), interpolation=cv2.INTER_NEAREST)
    np.testing.assert_array_equal(got.get(), expected)


def triangle_roi(shape=(240, 320)):
    roi = np.zeros(shape, np.uint8)
    cv2.fillPoly(roi, [np.array([[60, 70], [250, 90], [150, 200]], np.int32)], 255)
    return roi


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"roi": "triangle"},
        {"downscale": 2},
        {"downscale": 3, "roi": "triangle"},
        {"annotate": False},
        {"downscale": 2, "annotate": False},
    ],
    ids=repr,
)
def test_detector_on_real_clip_identical_to_cpu(cuda, sample_clip, options):
    from motiondetect.sources.video import VideoHandler

    options = {**options, "roi": triangle_roi() if options.get("roi") else None}
    cpu = MotionDetector(build_filters(default_config()), **options)
    gpu = MotionDetector(build_filters(default_config()), cuda=cuda, **options)
    moving = 0
    with VideoHandler(sample_clip) as video:
        for frame in video:
            if frame.index == 300:
                break
            want, got = cpu.process(frame.image), gpu.process(frame.image)
            assert np.array_equal(got.mask, want.mask), f"mask differs at frame {frame.index}"
            assert same_image(got.frame, want.frame), f"frame differs at frame {frame.index}"
            assert got.motion_fraction == want.motion_fraction
            assert got.bbox == want.bbox
            moving += want.bbox is not None
    assert (
        moving > 30
    )  # the comparison covered motion: 46 moving frames measured (H200) at downscale 3 with the triangle ROI, more elsewhere


def test_prime_and_repeat_identical_to_cpu(cuda, sample_frames):
    from motiondetect.core.types import Frame
    from motiondetect.outputs.sinks import Sink
    from motiondetect.pipeline.runner import Runner

    class Keep(Sink):
        def __init__(self):
            self.results = []

        def consume(self, frame, result):
            self.results.append(result)

        def close(self, summary):
            pass

    frames = [Frame(i, i / 25, f) for i, f in enumerate(sample_frames)]
    runs = {}
    for backend, handler in (("cpu", None), ("cuda", cuda)):
        keep = Keep()
        Runner(frames, MotionDetector(build_filters(default_config()), cuda=handler, downscale=2), [keep], frame_skip=2).run()
        runs[backend] = keep.results
    for want, got in zip(runs["cpu"], runs["cuda"], strict=True):
        assert np.array_equal(got.mask, want.mask) and same_image(got.frame, want.frame)
        assert (got.motion_fraction, got.bbox) == (want.motion_fraction, want.bbox)


def test_buffers_reused_with_roi_and_downscale(cuda, sample_frames):
    detector = MotionDetector(build_filters(default_config()), cuda=cuda, roi=triangle_roi(), downscale=2)
    for frame in sample_frames[:3]:
        detector.process(frame)
    before = {key: int(buf.gpudata) for key, buf in cuda._buffers.items()}
    for frame in sample_frames[3:10]:
        detector.process(frame)
    after = {key: int(buf.gpudata) for key, buf in cuda._buffers.items()}
    # Same keys and the same allocations; the reference and the grey stage swap theirs each
    # frame (the zero-copy ping-pong), so compare the sets of pointers, not key by key.
    assert set(after) == set(before) and set(after.values()) == set(before.values())


ROOT = Path(__file__).resolve().parent.parent
#: The team's shared sample (tests/helpers.py says where it is looked for).
SHARED_CLIP = SHARED_VIDEOS / "bgslibrary_video.avi" if SHARED_VIDEOS and (SHARED_VIDEOS / "bgslibrary_video.avi").is_file() else None


@pytest.mark.parametrize("clip", ["bundled", "shared"])
def test_cli_scan_identical_on_both_backends(cuda, sample_clip, tmp_path, monkeypatch, clip):
    from motiondetect.apps.cli import main

    if clip == "shared" and SHARED_CLIP is None:
        pytest.skip("shared/samples/videos/bgslibrary_video.avi is not present")
    # Event counts with the default pipeline: the bundled highway's traffic never stops (one
    # event over the whole clip); the shared road clip has gaps.
    source, frame_count, least_events = (sample_clip, 748, 1) if clip == "bundled" else (SHARED_CLIP, 374, 1)

    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    split = ["--min-area", "0.01", "--min-event-length", "0.2", "--merge-gap", "0.5", "--time-before", "0.3", "--time-after", "0.5"]
    try:
        for backend in ("cpu", "cuda"):
            folder = tmp_path / backend
            folder.mkdir()
            monkeypatch.chdir(folder)
            argv = [
                str(source),
                "--backend",
                backend,
                "--boxes",
                "--timecode",
                "--events",
                "r.json",
                "--events",
                "r.csv",
                "--clips",
                "clips",
                "--masks",
                "masks",
                *split,
                "-q",
            ]
            assert main(argv) == 0
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
    cpu, gpu = (json.loads((tmp_path / b / "r.json").read_text()) for b in ("cpu", "cuda"))
    assert gpu["backend"] == "cuda" and gpu["device"]
    assert gpu["events"] == cpu["events"]
    assert len(cpu["events"]) >= least_events  # the comparison covered real events
    assert (tmp_path / "cuda" / "r.csv").read_bytes() == (tmp_path / "cpu" / "r.csv").read_bytes()
    masks = sorted(p.name for p in (tmp_path / "cpu" / "masks").iterdir())
    assert masks == sorted(p.name for p in (tmp_path / "cuda" / "masks").iterdir()) and len(masks) == frame_count
    for name in masks:
        a = cv2.imread(str(tmp_path / "cpu" / "masks" / name), cv2.IMREAD_UNCHANGED)
        b = cv2.imread(str(tmp_path / "cuda" / "masks" / name), cv2.IMREAD_UNCHANGED)
        assert np.array_equal(a, b), name
    clips = sorted(p.name for p in (tmp_path / "cpu" / "clips").iterdir())
    assert clips == sorted(p.name for p in (tmp_path / "cuda" / "clips").iterdir()) and len(clips) == len(cpu["events"])
