"""The CUDA kernels run on the host, thread by thread, against the CPU references.

Where there is no GPU, the kernels' arithmetic and indexing can still be checked: each
``kernels/*.cu`` file of a filter is compiled with the host C++ compiler, with ``__global__``
and the thread indices defined as plain code, and a launcher that runs every thread of the grid
that :meth:`CUDAHandler.launch_1d <motiondetect.cuda_handler.CUDAHandler.launch_1d>` and
``launch_2d`` would launch (guards included), one after another, into poisoned outputs. That is
faithful for kernels whose threads do not cooperate; the histogram kernel, which syncs a block
through shared memory, is run with one thread per block. It does not replace the GPU tests
(tests/test_gpu*.py: nvcc's code generation, real concurrency), which run on a CUDA machine.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess

import numpy as np
import pytest

from motiondetect.filters import (
    Blur,
    Dilation,
    DispersionThreshold,
    Downscale,
    Equalize,
    GaussianBackground,
    Median,
    RunningAverage,
    Upscale,
)
from motiondetect.kernel_sources import kernel_dir

CXX = shutil.which("g++") or shutil.which("clang++")
pytestmark = pytest.mark.skipif(CXX is None, reason="no host C++ compiler (g++ or clang++)")
POISON = 0xAB
SIZES = [(1, 1), (7, 13), (33, 65), (9, 300), (97, 130)]

PRELUDE = r"""
#include <algorithm>
#include <cmath>
#include <cstddef>
struct D3 { unsigned x, y, z; };
static D3 blockIdx, threadIdx, blockDim, gridDim;
#define __global__ static
#define __restrict__
#define __shared__ static
using std::min; using std::max;
static inline float __fmul_rn(float a, float b) { volatile float r = a * b; return r; }
static inline void __syncthreads() {}
static inline unsigned atomicAdd(unsigned* p, unsigned v) { unsigned o = *p; *p += v; return o; }
"""

LAUNCHERS = r"""
template <typename F> static void grid2d(int w, int h, F f) {   // CUDAHandler.launch_2d: blocks of 32 x 8
    blockDim = {32, 8, 1}; gridDim = {(unsigned)((w + 31) / 32), (unsigned)((h + 7) / 8), 1};
    for (unsigned by = 0; by < gridDim.y; ++by) for (unsigned bx = 0; bx < gridDim.x; ++bx)
    for (unsigned ty = 0; ty < 8; ++ty) for (unsigned tx = 0; tx < 32; ++tx) { blockIdx = {bx, by, 0}; threadIdx = {tx, ty, 0}; f(); }
}
template <typename F> static void grid1d(int n, F f) {          // CUDAHandler.launch_1d: blocks of 256
    blockDim = {256, 1, 1}; gridDim = {(unsigned)std::max(1, (n + 255) / 256), 1, 1};
    for (unsigned b = 0; b < gridDim.x; ++b) for (unsigned t = 0; t < 256; ++t) { blockIdx = {b, 0, 0}; threadIdx = {t, 0, 0}; f(); }
}
typedef unsigned char u8;
extern "C" {
void dilate(const u8* s, u8* t, u8* d, int w, int h, int r) { grid2d(w, h, [&] { md_dilate_rows_u8(s, t, w, h, r); }); grid2d(w, h, [&] { md_dilate_cols_u8(t, d, w, h, r); }); }
void blur(const u8* s, unsigned short* t, u8* d, int w, int h, int r) { grid2d(w, h, [&] { md_box_rows_u8(s, t, w, h, r); }); grid2d(w, h, [&] { md_box_cols_u8(t, d, w, h, r); }); }
void median(const u8* s, u8* t, u8* d, int w, int h, int r) { grid2d(w, h, [&] { md_count_rows_u8(s, t, w, h, r); }); grid2d(w, h, [&] { md_majority_cols_u8(t, d, w, h, r); }); }
void downscale(const u8* s, u8* d, int w, int h, int ow, int oh) { grid2d(ow, oh, [&] { md_downscale_area_u8(s, d, w, h, ow, oh); }); }
void upscale(const u8* s, u8* d, int iw, int ih, int w, int h) { grid2d(w, h, [&] { md_upscale_nearest_u8(s, d, iw, ih, w, h); }); }
void running_average(const u8* s, const u8* ref, int* bg, u8* d, int n, int a, int init) { grid1d(n, [&] { md_running_average_u8(s, ref, bg, d, n, a, init); }); }
void gaussian(const u8* s, const u8* ref, int* m, int* v, u8* d, int n, int init, int k2, int mv, int a, int afg, int r, int rfg) {
    grid1d(n, [&] { md_gaussian_background_u8(s, ref, m, v, d, n, init, k2, mv, a, afg, r, rfg); }); }
void dispersion(const u8* s, unsigned* s1, unsigned* s2, const int* c, u8* d, int w, int h, int r, int t, int q) {
    grid2d(w, h, [&] { md_window_sums_rows_u8(s, s1, s2, w, h, r); }); grid2d(w, h, [&] { md_dispersion_cols_u8(s, s1, s2, c, d, w, h, r, t, q); }); }
void histogram(const u8* s, int n, unsigned* h) {               // one thread per block: phases in order
    blockDim = {1, 1, 1}; gridDim = {3, 1, 1};
    for (unsigned b = 0; b < 3; ++b) { blockIdx = {b, 0, 0}; threadIdx = {0, 0, 0}; md_histogram_u8(s, n, h); } }
void equalize_lut(const unsigned* h, int n, u8* lut) { blockIdx = {0, 0, 0}; threadIdx = {0, 0, 0}; md_equalize_lut(h, n, lut); }
void apply_lut(const u8* s, const u8* lut, u8* d, int n) { grid1d(n, [&] { md_apply_lut_u8(s, lut, d, n); }); }
}
"""

KERNELS = ["dilation", "blur", "median", "downscale", "upscale", "running_average", "gaussian_background", "dispersion_threshold", "equalize"]


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    folder = tmp_path_factory.mktemp("emulated")
    sources = "".join(f'#line 1 "{name}.cu"\n' + (kernel_dir() / f"{name}.cu").read_text() + "\n" for name in KERNELS)
    cpp = folder / "kernels.cpp"
    cpp.write_text(PRELUDE + 'extern "C" {\n' + sources + "}\n" + LAUNCHERS)
    so = folder / "kernels.so"
    # -ffp-contract=off: no fused multiply-add, as __fmul_rn promises on the GPU.
    result = subprocess.run([CXX, "-O1", "-std=c++17", "-shared", "-fPIC", "-ffp-contract=off", "-o", str(so), str(cpp)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return ctypes.CDLL(str(so))


def ptr(array):
    return array.ctypes.data_as(ctypes.c_void_p)


def poisoned(shape, dtype=np.uint8):
    return np.full(shape, POISON, dtype)


def assert_same(got, expected):
    assert got.shape == expected.shape
    assert np.count_nonzero(got != expected) == 0, f"{np.count_nonzero(got != expected)} of {expected.size} differ"


@pytest.mark.parametrize("size", SIZES)
def test_morphology_blur_and_median(lib, rng, size):
    h, w = size
    grey = rng.integers(0, 256, size, dtype=np.uint8)
    mask = np.where(rng.random(size) < 0.5, 255, 0).astype(np.uint8)
    for k, iterations in [(1, 1), (3, 1), (5, 2), (31, 1)]:
        flt, out = Dilation(kernel_size=k, iterations=iterations), poisoned(size)
        lib.dilate(ptr(grey), ptr(poisoned(size)), ptr(out), w, h, flt.radius)
        assert_same(out, flt.reference(grey))
        flt, out = Blur(kernel_size=k), poisoned(size)
        lib.blur(ptr(grey), ptr(poisoned(size, np.uint16)), ptr(out), w, h, k // 2)
        assert_same(out, flt.reference(grey))
        flt, out = Median(kernel_size=k), poisoned(size)
        lib.median(ptr(mask), ptr(poisoned(size)), ptr(out), w, h, k // 2)
        assert_same(out, flt.reference(mask))


@pytest.mark.parametrize("size", SIZES)
def test_downscale_and_upscale(lib, rng, size):
    h, w = size
    grey = rng.integers(0, 256, size, dtype=np.uint8)
    for height in (1, 2, 3, 5, 16, 1000):
        down = Downscale()
        down.params["height"] = height  # below the config minimum, to reach large factors on tiny frames
        oh, ow = down.output_shape(size)
        out = poisoned((oh, ow))
        lib.downscale(ptr(grey), ptr(out), w, h, ow, oh)
        assert_same(out, down.reference(grey))
        small = np.where(rng.random((oh, ow)) < 0.5, 255, 0).astype(np.uint8)
        up = poisoned(size)
        lib.upscale(ptr(small), ptr(up), ow, oh, w, h)
        assert_same(up, Upscale().reference(small, np.zeros((h, w, 3), np.uint8)))


@pytest.mark.parametrize("size", SIZES)
def test_dispersion_threshold(lib, rng, size):
    h, w = size
    images = [rng.integers(0, 256, size, dtype=np.uint8), np.clip(rng.poisson(2.0, size) + (rng.random(size) < 0.01) * 100, 0, 255).astype(np.uint8)]
    for k, n_b, n_s, t in [(7, 6.0, 3.0, 0), (3, 1.0, 0.5, 0), (31, 0.0, 0.0, 100), (5, 3.0, 2.0, 5)]:
        flt = DispersionThreshold(kernel_size=k, sigma_background=n_b, sigma_strong=n_s, threshold=t)
        for image in images:
            out = poisoned(size)
            lib.dispersion(ptr(image), ptr(poisoned(size, np.uint32)), ptr(poisoned(size, np.uint32)), ptr(flt.c_table), ptr(out), w, h, k // 2, t, flt.s2_q16)
            assert_same(out, flt.reference(image))


@pytest.mark.parametrize("size", SIZES)
def test_equalize(lib, rng, size):
    for image in (rng.integers(0, 256, size, dtype=np.uint8), np.full(size, 77, np.uint8), np.zeros(size, np.uint8), np.clip(rng.normal(60, 10, size), 0, 255).astype(np.uint8)):
        hist = np.zeros(256, np.uint32)
        lib.histogram(ptr(image), image.size, ptr(hist))
        np.testing.assert_array_equal(hist, np.bincount(image.ravel(), minlength=256))
        lut, out = np.zeros(256, np.uint8), poisoned(size)
        lib.equalize_lut(ptr(hist), image.size, ptr(lut))
        lib.apply_lut(ptr(image), ptr(lut), ptr(out), image.size)
        assert_same(out, Equalize().reference(image))


def scene(rng, size, count=8):
    base = rng.integers(0, 256, size)
    return [np.clip(base + rng.normal(0, 4, size) + (rng.random(size) < 0.15) * rng.integers(-150, 150, size), 0, 255).astype(np.uint8) for _ in range(count)]


@pytest.mark.parametrize("size", SIZES)
def test_running_average_sequence(lib, rng, size):
    frames = scene(rng, size)
    for alpha in (0.0, 0.01, 0.3, 1.0):
        cpu, background = RunningAverage(alpha=alpha), np.full(size, -12345, np.int32)  # poisoned state
        for i in range(1, len(frames)):
            out = poisoned(size)
            lib.running_average(ptr(frames[i]), ptr(frames[i - 1]), ptr(background), ptr(out), frames[i].size, cpu.alpha_q16, int(i == 1))
            assert_same(out, cpu.reference(frames[i], frames[i - 1]))
        np.testing.assert_array_equal(background.astype(np.int64), cpu.background)


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize(
    "params",
    [
        {},
        {"warmup": 3},
        {"sigmas": 2.0, "min_sigma": 1.0, "alpha": 0.1, "alpha_foreground": 0.05, "variance_alpha": 0.2, "variance_alpha_foreground": 0.1, "warmup": 2},
        {"sigmas": 10.0, "min_sigma": 64.0, "alpha": 1.0, "alpha_foreground": 1.0, "variance_alpha": 1.0, "variance_alpha_foreground": 1.0, "warmup": 0},
        {"sigmas": 0.5, "min_sigma": 0.5, "alpha": 0.0, "alpha_foreground": 0.0, "variance_alpha": 0.0, "variance_alpha_foreground": 0.0, "warmup": 0},
        {"sigmas": 0.5, "min_sigma": 0.5078125, "variance_alpha": 0.5, "variance_alpha_foreground": 1.0, "warmup": 0},  # rounding ties
    ],
    ids=str,
)
def test_gaussian_background_sequence(lib, rng, size, params):
    frames = scene(rng, size)
    cpu, device = GaussianBackground(**params), GaussianBackground(**params)
    mean, var = np.full(size, -7, np.int32), np.full(size, -7, np.int32)  # poisoned state
    c = device.constants
    for i in range(1, len(frames)):
        out = poisoned(size)
        lib.gaussian(ptr(frames[i]), ptr(frames[i - 1]), ptr(mean), ptr(var), ptr(out), frames[i].size, int(i == 1), c["k2_q8"], c["min_var_q8"], *device.rates(i))
        assert_same(out, cpu.reference(frames[i], frames[i - 1]))
    np.testing.assert_array_equal(mean.astype(np.int64), cpu.model[0])
    np.testing.assert_array_equal(var.astype(np.int64), cpu.model[1])
