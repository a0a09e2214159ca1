"""GPU kernels of the detection-quality filters against their CPU references, bit for bit.

Every new kernel runs on fresh random frames of 1x1, 7x13, 479x641 and 1080x1920 with its
output poisoned first (``run_on_gpu``), with parameter cases that reach each branch (factors
with and without remainders, windows larger than the frame, warm-up and steady learning
rates, foreground and background pixels). Background models run over frame sequences and
their device state is compared with the CPU model's. Then whole pipelines: the default one and
one with every new filter, on real clips, and ``motiondetect evaluate`` on CDnet with both
backends. Marker ``gpu``: skipped without PyCUDA and a device. Run with
``python -m pytest -m gpu tests/test_gpu_quality.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from helpers import (
    GAUSSIAN_BOOTSTRAP,
    GAUSSIAN_BOOTSTRAP_CANCELLED,
    GAUSSIAN_BOOTSTRAP_GREY,
    GAUSSIAN_CHROMA,
    GAUSSIAN_EXPOSURE,
    GAUSSIAN_EXPOSURE_ALL,
    GAUSSIAN_FAST,
    GAUSSIAN_FROZEN,
    GAUSSIAN_GREY,
    GAUSSIAN_GROW,
    GAUSSIAN_GROW_SHADOW,
    GAUSSIAN_LIGHT,
    GAUSSIAN_LIGHT_STILL_CHROMA,
    GAUSSIAN_QUIET,
    GAUSSIAN_RECENT,
    GAUSSIAN_RECENT_BOOTSTRAP,
    GAUSSIAN_RECENT_LIGHT,
    GAUSSIAN_SATURATED,
    GAUSSIAN_SHADOW,
    GAUSSIAN_SHADOW_CHROMA,
    GAUSSIAN_UNGATED,
    SHARED_SAMPLES,
    chroma_for,
    gaussian_model,
    same_image,
    with_exposure,
    with_light_switch,
)

from motiondetect.evaluation.tuning import config_for
from motiondetect.filters import (
    Blur,
    Dilation,
    DispersionThreshold,
    Downscale,
    Equalize,
    Erosion,
    GaussianBackground,
    Gray,
    Kind,
    Median,
    RedBlend,
    RunningAverage,
    Upscale,
)
from motiondetect.filters.base import WEAK
from motiondetect.pipeline.config import build_filters, default_config
from motiondetect.pipeline.detector import MotionDetector
from tests.test_gpu import POISON, random_image, run_on_gpu

pytestmark = pytest.mark.gpu

SIZES = [(1, 1), (7, 13), (479, 641), (1080, 1920)]
SIZE_IDS = [f"{w}x{h}" for h, w in SIZES]
ROOT = Path(__file__).resolve().parent.parent
SAMPLES = SHARED_SAMPLES


def assert_same(got, expected):
    assert got.shape == expected.shape and got.dtype == expected.dtype
    mismatches = int(np.count_nonzero(got != expected))
    assert mismatches == 0, f"{mismatches} of {expected.size} values differ"


def small_downscale(height):
    """A Downscale whose working height may be below the config's minimum (tiny test frames)."""
    flt = Downscale()
    flt.params["height"] = height
    return flt


# -- stateless filters ------------------------------------------------------------------------

STATELESS = [
    Blur(kernel_size=1),
    Blur(kernel_size=3),
    Blur(kernel_size=7),
    Blur(kernel_size=31),
    Median(kernel_size=1),
    Median(kernel_size=3),
    Median(kernel_size=5),
    Median(kernel_size=31),
    Dilation(kernel_size=1),
    Dilation(kernel_size=3),
    Dilation(kernel_size=5, iterations=2),
    Dilation(kernel_size=7, iterations=3),
    Equalize(),
    DispersionThreshold(),
    DispersionThreshold(kernel_size=3, sigma_background=1.0, sigma_strong=0.5),
    DispersionThreshold(kernel_size=31, sigma_background=0.0, sigma_strong=0.0, threshold=100),
    Downscale(),
    Downscale(height=16),
    Downscale(height=100),
    small_downscale(1),
    small_downscale(3),
]


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
@pytest.mark.parametrize("flt", STATELESS, ids=lambda f: f"{f!r}-h{f.params.get('height', '')}")
def test_stateless_kernel_matches_reference(cuda, rng, flt, size):
    src = random_image(rng, flt.INPUT, size)
    assert_same(run_on_gpu(cuda, flt, src, None), flt.reference(src))


def sparse_counts(rng, size):
    """A difference-like image: Poisson noise (mean 2) with a few bright spots and a bright block."""
    image = rng.poisson(2.0, size)
    spots = max(1, image.size // 2000)
    image[rng.integers(0, size[0], spots), rng.integers(0, size[1], spots)] += rng.integers(20, 200, spots)
    image[: size[0] // 3, : size[1] // 3] += 60
    return np.clip(image, 0, 255).astype(np.uint8)


def on_weak_level(flt):
    flt.weak_level = True
    return flt


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
@pytest.mark.parametrize(
    "flt",
    [
        Median(kernel_size=1),
        Median(kernel_size=9),
        Median(kernel_size=31),
        on_weak_level(Erosion(kernel_size=3)),
        on_weak_level(Erosion(kernel_size=5, iterations=2)),
        on_weak_level(Dilation(kernel_size=5)),
        on_weak_level(Dilation(kernel_size=3, iterations=2)),
    ],
    ids=lambda f: f"{f!r}-weak_level={getattr(f, 'weak_level', None)}",
)
def test_mask_filters_on_the_weak_level(cuda, rng, flt, size):
    # Masks with the model's weak level (0 / 128 / 255): the median's two votes, the erosion's
    # two planes, the dilation's growth into weak pixels.
    levels = rng.choice(np.array([0, WEAK, 255], np.uint8), size, p=(0.45, 0.35, 0.2))
    assert_same(run_on_gpu(cuda, flt, levels, None), flt.reference(levels))


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
def test_dispersion_on_difference_like_images(cuda, rng, size):
    image = sparse_counts(rng, size)
    for flt in (DispersionThreshold(), DispersionThreshold(kernel_size=5, sigma_background=3.0, sigma_strong=2.0, threshold=5)):
        expected = flt.reference(image)
        assert_same(run_on_gpu(cuda, flt, image, None), expected)
    if size[0] > 100:
        assert expected.any() and not expected.all()  # both outcomes were compared


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
def test_equalize_special_histograms(cuda, rng, size):
    flt = Equalize()
    cases = [
        np.zeros(size, np.uint8),
        np.full(size, 255, np.uint8),
        np.full(size, 77, np.uint8),
        rng.integers(100, 103, size, dtype=np.uint8),  # three levels
        np.clip(rng.normal(60, 10, size), 0, 255).astype(np.uint8),  # skewed, narrow
        np.where(rng.random(size) < 0.999, 0, 255).astype(np.uint8),  # nearly constant
    ]
    for image in cases:
        assert_same(run_on_gpu(cuda, flt, image, None), flt.reference(image))


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
@pytest.mark.parametrize("height", [1, 2, 3, 16, 240, 5000])
def test_upscale_restores_every_downscale_partition(cuda, rng, size, height):
    down = small_downscale(height)
    small = np.where(rng.random(down.output_shape(size)) < 0.5, 255, 0).astype(np.uint8)
    frame = random_image(rng, Kind.BGR, size)
    up = Upscale()
    assert_same(run_on_gpu(cuda, up, small, frame), up.reference(small, frame))


# -- background models over sequences -----------------------------------------------------------


def scene_sequence(rng, size, count=8):
    """A static scene with noise and random jumps: background and foreground pixels both occur."""
    base = rng.integers(0, 256, size)
    frames = []
    for _ in range(count):
        jumps = (rng.random(size) < 0.15) * rng.integers(-150, 150, size)
        frames.append(np.clip(base + rng.normal(0, 4, size) + jumps, 0, 255).astype(np.uint8))
    return frames


def run_sequence_on_gpu(cuda, flt, frames, poison_state=()):
    """Feed frames 1.. with the previous frame as reference (the detector's convention); return outputs."""
    import pycuda.driver as drv
    import pycuda.gpuarray as gpuarray

    for name in poison_state:  # the first call must not read its state buffers
        buf = cuda.buffer(flt.state_key(name), frames[0].shape, np.int32)
        drv.memset_d8(buf.gpudata, POISON, buf.nbytes)
    outputs = []
    for previous, current in zip(frames, frames[1:]):
        d_dst = gpuarray.empty(flt.output_shape(current.shape), np.uint8)
        drv.memset_d8(d_dst.gpudata, POISON, d_dst.nbytes)
        flt.apply(cuda, gpuarray.to_gpu(current), d_dst, gpuarray.to_gpu(previous))
        cuda.synchronize()
        outputs.append(d_dst.get())
    return outputs


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
@pytest.mark.parametrize("alpha", [0.0, 0.01, 0.3, 1.0])
def test_running_average_sequence(cuda, rng, size, alpha):
    frames = scene_sequence(rng, size, count=6)
    cpu, gpu = RunningAverage(alpha=alpha), RunningAverage(alpha=alpha)
    expected = [cpu.reference(frames[i], frames[i - 1]) for i in range(1, len(frames))]
    for got, want in zip(run_sequence_on_gpu(cuda, gpu, frames, ("background",)), expected):
        assert_same(got, want)
    state = cuda.buffer(gpu.state_key("background"), size, np.int32).get()
    np.testing.assert_array_equal(state.astype(np.int64), cpu.background)


#: The grey level alone (the chroma's cases: test_gaussian_background_with_chroma_sequence).
GAUSSIAN_CASES = [
    {**GAUSSIAN_GREY, **params}
    for params in (
        {},
        {"warmup": 3},  # warm-up rates on the first frames, then the steady ones
        {**GAUSSIAN_FAST, "warmup": 2},
        GAUSSIAN_SATURATED,
        GAUSSIAN_FROZEN,
        GAUSSIAN_SHADOW,
        {**GAUSSIAN_FAST, "shadow_floor": 1.0, "warmup": 2},
        {**GAUSSIAN_SHADOW, "relative_floor": 0.06},
        {**GAUSSIAN_FAST, "relative_floor": 0.3, "shadow_floor": 0.1, "warmup": 2},
        GAUSSIAN_LIGHT,
        GAUSSIAN_EXPOSURE,
        GAUSSIAN_BOOTSTRAP_GREY,
        {"lightswitch": 0.0, "exposure": 0.0, "bootstrap": 8},  # the last pair
        GAUSSIAN_QUIET,
        GAUSSIAN_UNGATED,
        GAUSSIAN_RECENT,
        GAUSSIAN_RECENT_BOOTSTRAP,
    )
]


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
@pytest.mark.parametrize("params", GAUSSIAN_CASES, ids=str)
def test_gaussian_background_sequence(cuda, rng, size, params):
    frames = with_exposure(with_light_switch(scene_sequence(rng, size, count=9)), at=7)  # on at frame 3, off at 6, x0.9 from 7
    cpu, gpu = GaussianBackground(**params), GaussianBackground(**params)
    expected = [cpu.reference(frames[i], frames[i - 1]) for i in range(1, len(frames))]
    for got, want in zip(run_sequence_on_gpu(cuda, gpu, frames, ("mean", "variance")), expected):
        assert_same(got, want)
    mean, var = cpu.model
    np.testing.assert_array_equal(cuda.buffer(gpu.state_key("mean"), size, np.int32).get().astype(np.int64), mean)
    np.testing.assert_array_equal(cuda.buffer(gpu.state_key("variance"), size, np.int32).get().astype(np.int64), var)
    if size[0] > 100 and params["min_sigma"] < 64:
        assert any(e.any() for e in expected) and not all(e.all() for e in expected)


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
@pytest.mark.parametrize(
    "params",
    [
        GAUSSIAN_CHROMA,
        {**GAUSSIAN_SATURATED, "chroma_min_sigma": 0.5},
        {"chroma_min_sigma": 8.0},
        GAUSSIAN_LIGHT_STILL_CHROMA,
        GAUSSIAN_EXPOSURE_ALL,
        GAUSSIAN_BOOTSTRAP,
        GAUSSIAN_BOOTSTRAP_CANCELLED,
        GAUSSIAN_RECENT_LIGHT,
    ],
    ids=str,
)
def test_gaussian_background_with_chroma_sequence(cuda, rng, size, params):
    """The model with chroma, frame by frame on the device (each frame's (2, H, W) planes): the
    masks and the grey and chroma state equal the CPU reference's, through light switches."""
    frames = with_exposure(with_light_switch(scene_sequence(rng, size, count=9)), at=7)
    chromas = [np.stack(pair) for pair in zip(scene_sequence(rng, size, count=9), scene_sequence(rng, size, count=9))]
    assert_chroma_sequence_on_device(cuda, size, params, frames, chromas)


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
@pytest.mark.parametrize("params", [GAUSSIAN_SHADOW_CHROMA, {**GAUSSIAN_SHADOW_CHROMA, "shadow_ratio": 0.97}], ids=str)
def test_gaussian_background_shadow_chroma_sequence(cuda, rng, size, params):
    """The chroma's shadow test on the device: with the planes of each frame and its negative,
    small darkenings are shadows (tests/helpers.py, GAUSSIAN_SHADOW_CHROMA), so the test clears
    pixels, and the masks and state equal the CPU reference's."""
    frames = scene_sequence(rng, size, count=9)
    chromas = [chroma_for(GaussianBackground(**params), f) for f in frames]
    assert_chroma_sequence_on_device(cuda, size, params, frames, chromas)
    if frames[0].size < 1000:  # a few pixels need not darken that way
        return
    off = GaussianBackground(**{**params, "shadow_chroma": 0.0})
    on = GaussianBackground(**params)
    assert any(
        (off.reference(frames[i], frames[i - 1], chromas[i]) != on.reference(frames[i], frames[i - 1], chromas[i])).any()
        for i in range(1, 9)
    )


def assert_chroma_sequence_on_device(cuda, size, params, frames, chromas) -> int:
    """The model with chroma, frame by frame on the device, equals the CPU reference: masks,
    grey and chroma state (the device's state buffers poisoned first; the weak level where
    ``params`` name ``grow_sigmas``, :func:`gaussian_model`). Returns the weak pixels written."""
    import pycuda.driver as drv
    import pycuda.gpuarray as gpuarray

    cpu, gpu = gaussian_model(params), gaussian_model(params)
    for name, shape in (("mean", size), ("variance", size), ("chroma_mean", (2, *size)), ("chroma_variance", (2, *size))):
        buf = cuda.buffer(gpu.state_key(name), shape, np.int32)
        drv.memset_d8(buf.gpudata, POISON, buf.nbytes)  # the first call must not read its state
    weak = 0
    for i in range(1, len(frames)):
        want = cpu.reference(frames[i], frames[i - 1], chromas[i])
        planes = gpuarray.to_gpu(chromas[i])
        out = gpuarray.empty(size, np.uint8)
        gpu.apply_kernel(
            cuda, gpuarray.to_gpu(frames[i]), out, gpuarray.to_gpu(frames[i - 1]), chroma=(int(planes.gpudata), frames[i].size)
        )
        cuda.synchronize()
        assert_same(out.get(), want)
        weak += int(np.count_nonzero(want == WEAK))
    for name, want in zip(("mean", "variance"), cpu.model):
        np.testing.assert_array_equal(cuda.buffer(gpu.state_key(name), size, np.int32).get().astype(np.int64), want)
    for name, want in zip(("chroma_mean", "chroma_variance"), cpu.chroma_model):
        np.testing.assert_array_equal(cuda.buffer(gpu.state_key(name), (2, *size), np.int32).get().astype(np.int64), want)
    return weak


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
@pytest.mark.parametrize("params", [GAUSSIAN_GROW, GAUSSIAN_GROW_SHADOW, {**GAUSSIAN_GROW, "grow_sigmas": 0.0}], ids=str)
def test_gaussian_background_weak_level_sequence(cuda, rng, size, params):
    """The weak level (grow_sigmas) on the device: masks with 128 and state equal the CPU's."""
    frames = with_exposure(with_light_switch(scene_sequence(rng, size, count=9)), at=7)
    chromas = [chroma_for(GaussianBackground(**params), f) for f in frames]
    weak = assert_chroma_sequence_on_device(cuda, size, params, frames, chromas)
    if not params["grow_sigmas"]:
        assert weak == 0
    elif frames[0].size >= 1000:
        assert weak > 0


def test_background_models_reset_on_the_gpu(cuda, rng):
    frames = scene_sequence(rng, (61, 83), count=10)
    for make in (RunningAverage, lambda: GaussianBackground(**GAUSSIAN_GREY)):
        flt = make()
        run_sequence_on_gpu(cuda, flt, frames[:6])
        flt.reset()
        fresh = make()
        expected = [fresh.reference(frames[i], frames[i - 1]) for i in range(6, 10)]
        for got, want in zip(run_sequence_on_gpu(cuda, flt, frames[5:]), expected):
            assert_same(got, want)


def test_two_instances_keep_separate_state(cuda, rng):
    a, b = GaussianBackground(**GAUSSIAN_GREY), GaussianBackground(**GAUSSIAN_GREY)
    frames_a, frames_b = scene_sequence(rng, (40, 50)), scene_sequence(rng, (40, 50))
    ref_a, ref_b = GaussianBackground(**GAUSSIAN_GREY), GaussianBackground(**GAUSSIAN_GREY)
    for i in range(1, len(frames_a)):
        got_a = run_sequence_on_gpu(cuda, a, frames_a[i - 1 : i + 1])[0]
        got_b = run_sequence_on_gpu(cuda, b, frames_b[i - 1 : i + 1])[0]
        assert_same(got_a, ref_a.reference(frames_a[i], frames_a[i - 1]))
        assert_same(got_b, ref_b.reference(frames_b[i], frames_b[i - 1]))


# -- whole pipelines -------------------------------------------------------------------------------

EVERY_NEW_FILTER = [
    Gray(),
    Equalize(),
    Blur(kernel_size=3),
    Downscale(height=120),
    RunningAverage(alpha=0.05),
    DispersionThreshold(kernel_size=5, sigma_background=2.0, sigma_strong=1.0, threshold=8),
    Median(kernel_size=3),
    Dilation(kernel_size=3),
    Upscale(),
    RedBlend(),
]


def compare_detectors(cuda, frames, make_filters):
    cpu, gpu = MotionDetector(make_filters()), MotionDetector(make_filters(), cuda=cuda)
    moving = 0
    for index, frame in enumerate(frames):
        want, got = cpu.process(frame), gpu.process(frame)
        assert np.array_equal(got.mask, want.mask), f"mask differs at frame {index}"
        assert same_image(got.frame, want.frame), f"blended frame differs at frame {index}"
        assert got.motion_fraction == want.motion_fraction
        moving += want.motion_fraction > 0
    return moving


def test_default_pipeline_on_random_frames_of_every_size(cuda, rng):
    for size in SIZES:
        frames = scene_sequence(rng, size, count=5)
        frames = [np.stack([f, np.roll(f, 1, 0), np.roll(f, 1, 1)], axis=-1) for f in frames]
        compare_detectors(cuda, frames, lambda: build_filters(default_config()))


def test_default_pipeline_on_the_bundled_clip(cuda, sample_clip):
    from motiondetect.sources.video import VideoHandler

    with VideoHandler(sample_clip) as video:
        frames = [f.image for f in video]
    assert compare_detectors(cuda, frames, lambda: build_filters(default_config())) > 500


def test_every_new_filter_in_one_pipeline_on_real_frames(cuda, sample_frames):
    import copy

    moving = compare_detectors(cuda, sample_frames, lambda: [copy.deepcopy(f) for f in EVERY_NEW_FILTER])
    assert moving > 10


def test_default_pipeline_on_a_downscaled_clip(cuda):
    # cdnet_fall (720x480) runs at 360x240: the resampling pair inside the detector.
    import cv2

    folder = SAMPLES / "cdnet_fall" / "input"
    if not folder.is_dir():
        pytest.skip(f"{folder} not found (set MOTIONDETECT_SAMPLES)")
    frames = [cv2.imread(str(p)) for p in sorted(folder.glob("in*.jpg"))]
    assert compare_detectors(cuda, frames, lambda: build_filters(default_config())) > 40
    shadow = config_for(default_config(), {("gaussian_background", "shadow_floor"): 0.08})
    assert compare_detectors(cuda, frames, lambda: build_filters(shadow)) > 40
    # With chroma: BGR frames' chroma on the device, through the downscale (by 2) and registration.
    chroma = config_for(shadow, {("gaussian_background", "chroma_min_sigma"): 8.0})
    assert compare_detectors(cuda, frames, lambda: build_filters(chroma)) > 40


def test_evaluate_gives_identical_scores_on_both_backends(cuda, tmp_path):
    from motiondetect.apps.cli import main

    clips = [SAMPLES / "cdnet_highway", SAMPLES / "cdnet_fall"]
    if not all(c.is_dir() for c in clips):
        pytest.skip(f"CDnet clips not found in {SAMPLES} (set MOTIONDETECT_SAMPLES)")
    reports = {}
    for backend in ("cpu", "cuda"):
        out = tmp_path / f"{backend}.json"
        assert main(["evaluate", *map(str, clips), "--backend", backend, "-q", "--json", str(out)]) == 0
        reports[backend] = json.loads(out.read_text())
    assert reports["cuda"]["backend"] == "cuda" and reports["cuda"]["device"]
    for cpu, gpu in zip(reports["cpu"]["evaluations"], reports["cuda"]["evaluations"]):
        assert gpu["methods"][0]["pixel"] == cpu["methods"][0]["pixel"]
        assert gpu["methods"][0]["frame"] == cpu["methods"][0]["frame"]
        assert gpu["methods"][0]["events"] == cpu["methods"][0]["events"]
