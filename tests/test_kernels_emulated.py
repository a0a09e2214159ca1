"""The CUDA kernels run on the host, thread by thread, against the CPU references.

Where there is no GPU, the kernels' arithmetic and indexing can still be checked: each
``kernels/*.cu`` file of a filter is compiled with the host C++ compiler, with ``__global__``
and the thread indices defined as plain code, and a launcher that runs every thread of the grid
that :meth:`CUDAHandler.launch_1d <motiondetect.gpu.cuda_handler.CUDAHandler.launch_1d>` and
``launch_2d`` would launch (guards included; ``gridDim.z`` images for a batch, kernels/batch.cuh),
one after another, into poisoned outputs. That is
faithful for kernels whose threads do not cooperate; the histogram kernel, which syncs a block
through shared memory, is run with one thread per block. It does not replace the GPU tests
(tests/test_gpu*.py: nvcc's code generation, real concurrency), which run on a CUDA machine.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess

import cv2
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
    GAUSSIAN_GROW_GREY,
    GAUSSIAN_GROW_SHADOW,
    GAUSSIAN_LIGHT,
    GAUSSIAN_LIGHT_FIELD,
    GAUSSIAN_LIGHT_STILL_CHROMA,
    GAUSSIAN_QUIET,
    GAUSSIAN_RECENT,
    GAUSSIAN_RECENT_BOOTSTRAP,
    GAUSSIAN_RECENT_LIGHT,
    GAUSSIAN_SATURATED,
    GAUSSIAN_SHADOW,
    GAUSSIAN_SHADOW_CHROMA,
    GAUSSIAN_STILL,
    GAUSSIAN_STILL_CHROMA,
    GAUSSIAN_TIE,
    GAUSSIAN_UNGATED,
    chroma_for,
    darkening_road,
    gaussian_model,
    with_exposure,
    with_ghosts,
    with_light_switch,
    with_night_mode,
)

from motiondetect.core.picture import YUV_Q16, Picture, blend_red_yuv, chroma_shape, chroma_table, luma_table
from motiondetect.filters import (
    Blur,
    Closing,
    Dilation,
    DispersionThreshold,
    Downscale,
    Equalize,
    Erosion,
    GaussianBackground,
    Gray,
    Median,
    RedBlend,
    RunningAverage,
    Subsense,
    Upscale,
    recent_gate,
)
from motiondetect.filters.base import WEAK
from motiondetect.filters.gaussian_background import DRIFT_ONE
from motiondetect.filters.gray import bgr_chroma
from motiondetect.filters.light_field import explained, queue_light_field
from motiondetect.filters.recent_gate import queue_gate
from motiondetect.gpu.kernel_sources import kernel_dir

CXX = shutil.which("g++") or shutil.which("clang++")
pytestmark = pytest.mark.skipif(CXX is None, reason="no host C++ compiler (g++ or clang++)")
POISON = 0xAB
SIZES = [(1, 1), (7, 13), (33, 65), (9, 300), (97, 130)]

PRELUDE = r"""
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdlib>
struct D3 { unsigned x, y, z; };
static D3 blockIdx, threadIdx, blockDim, gridDim;
#define __global__ static
#define __restrict__
#define __shared__ static
#define __device__ static
#define __forceinline__ inline
using std::min; using std::max;
static inline float __fmul_rn(float a, float b) { volatile float r = a * b; return r; }
static inline void __syncthreads() {}
static inline int __syncthreads_or(int p) { return p; }   // one thread per block where it is used
static inline void __threadfence() {}   // threads run one after another: every write is seen
template <typename T> static inline T __ldcg(const T* p) { return *p; }
static inline unsigned atomicAdd(unsigned* p, unsigned v) { unsigned o = *p; *p += v; return o; }
// Launched with one thread per block (see light_counts below), a warp is one lane: nothing to add.
static inline unsigned __shfl_down_sync(unsigned, unsigned, int) { return 0; }
static inline unsigned __match_any_sync(unsigned, int) { return 1u; }   // the lane alone: lane 0's bit
static inline int __ffs(unsigned v) { return __builtin_ffs((int)v); }
static inline int __popc(unsigned v) { return __builtin_popcount(v); }
"""

LAUNCHERS = r"""
template <typename F> static void grid2d(int w, int h, int k, F f) {   // CUDAHandler.launch_2d: blocks of 32 x 8, k images
    blockDim = {32, 8, 1}; gridDim = {(unsigned)((w + 31) / 32), (unsigned)((h + 7) / 8), (unsigned)k};
    for (unsigned bz = 0; bz < gridDim.z; ++bz) for (unsigned by = 0; by < gridDim.y; ++by) for (unsigned bx = 0; bx < gridDim.x; ++bx)
    for (unsigned ty = 0; ty < 8; ++ty) for (unsigned tx = 0; tx < 32; ++tx) { blockIdx = {bx, by, bz}; threadIdx = {tx, ty, 0}; f(); }
}
template <typename F> static void grid1d(int n, F f) {          // CUDAHandler.launch_1d: blocks of 256
    blockDim = {256, 1, 1}; gridDim = {(unsigned)std::max(1, (n + 255) / 256), 1, 1};
    for (unsigned b = 0; b < gridDim.x; ++b) for (unsigned t = 0; t < 256; ++t) { blockIdx = {b, 0, 0}; threadIdx = {t, 0, 0}; f(); }
}
typedef unsigned char u8;
extern "C" {
// 2-D launchers: k images (k = 1: one image, gridDim.z = 1, blockIdx.z = 0), stored one after another.
void dilate(const u8* s, u8* t, u8* d, int w, int h, int r, int k, int weak) {   // weak: grow into the weak level, gated by s
    grid2d(w, h, k, [&] { md_dilate_rows_u8(s, t, w, h, r, weak); }); grid2d(w, h, k, [&] { md_dilate_cols_u8(t, weak ? s : nullptr, d, w, h, r); }); }
void erode(const u8* s, u8* t, u8* d, int w, int h, int r, int k, int weak) {   // weak: the two planes, what is removed kept weak
    grid2d(w, h, k, [&] { md_erode_rows_u8(s, t, w, h, r, weak); }); grid2d(w, h, k, [&] { md_erode_cols_u8(t, weak ? s : nullptr, d, w, h, r); }); }
void close(const u8* s, u8* d, int w, int h, int r, int k) {   // one thread per block: its loops cover the tile, phase after phase
    blockDim = {1, 1, 1}; gridDim = {(unsigned)((w + 31) / 32), (unsigned)((h + 31) / 32), (unsigned)k};   // Closing.TILE
    for (unsigned bz = 0; bz < gridDim.z; ++bz) for (unsigned by = 0; by < gridDim.y; ++by) for (unsigned bx = 0; bx < gridDim.x; ++bx) {
        blockIdx = {bx, by, bz}; threadIdx = {0, 0, 0}; md_close_u8(s, d, w, h, r); } }
void blur(const u8* s, unsigned short* t, u8* d, int w, int h, int r, int k) { grid2d(w, h, k, [&] { md_box_rows_u8(s, t, w, h, r); }); grid2d(w, h, k, [&] { md_box_cols_u8(t, d, w, h, r); }); }
void median(const u8* s, unsigned short* t, u8* d, int w, int h, int r, int k) { grid2d(w, h, k, [&] { md_count_rows_u8(s, t, w, h, r); }); grid2d(w, h, k, [&] { md_majority_cols_u8(t, d, w, h, r); }); }
void downscale(const u8* s, u8* d, int w, int h, int ow, int oh, int k) { grid2d(ow, oh, k, [&] { md_downscale_area_u8(s, d, w, h, ow, oh); }); }
void upscale(const u8* s, u8* d, int iw, int ih, int w, int h, int k) { grid2d(w, h, k, [&] { md_upscale_nearest_u8(s, d, iw, ih, w, h); }); }
void dispersion(const u8* s, unsigned* s1, unsigned* s2, const int* c, u8* d, int w, int h, int r, int t, int q, int k) {
    grid2d(w, h, k, [&] { md_window_sums_rows_u8(s, s1, s2, w, h, r); }); grid2d(w, h, k, [&] { md_dispersion_cols_u8(s, s1, s2, c, d, w, h, r, t, q); }); }
void luma_to_gray(const u8* y, int pitch, long long image, const u8* lut, u8* d, int w, int h, int ow, int oh, int k) {
    grid2d(ow, oh, k, [&] { md_luma_to_gray_u8(y, pitch, image, lut, d, w, h, ow, oh); }); }
void red_blend_yuv(const u8* y, int yp, long long yi, const u8* u, const u8* v, int cp, int cs, long long ci, const u8* m, const u8* lut, u8* o,
                   int w, int h, int k, int off, int ry, int rcr, int dy, int du, int dv) {     // one thread per chroma sample
    grid2d((w + 1) / 2, (h + 1) / 2, k, [&] { md_red_blend_yuv_u8(y, yp, yi, u, v, cp, cs, ci, m, lut, o, w, h, off, ry, rcr, dy, du, dv); }); }
void gray_bt601(const u8* s, u8* d, int n) { grid1d(n, [&] { md_gray_bt601_u8(s, d, n); }); }
void running_average(const u8* s, const u8* ref, int* bg, u8* d, int n, int a, int init) { grid1d(n, [&] { md_running_average_u8(s, ref, bg, d, n, a, init); }); }
void gaussian(const u8* s, const u8* ref, int* m, int* v, u8* d, int n, int frames, int first_pair, int warmup, int k2, int mv, int sh, int rel, int a, int afg, int r, int rfg,
              const u8* c, long long cp, int* cm, int* cv, int cmv, int sc, int sr, int gk, u8* last, int* still, int sf, int st, const unsigned* lc, int lcount,
              const int* ratios, int eq8, const int* drift_in, int* drift_out, u8* compared, u8* hist, int boot, int quiet, int vmin,
              u8* recent, short* rdiff, int rgate, int rvar) {
    grid1d(n, [&] { md_gaussian_background_u8(s, ref, m, v, d, n, frames, first_pair, warmup, k2, mv, sh, rel, a, afg, r, rfg, c, cp, cm, cv, cmv, sc, sr, gk,
                                              last, still, sf, st, lc, lcount, ratios, eq8, drift_in, drift_out, compared, hist, boot, quiet, vmin,
                                              recent, rdiff, rgate, rvar); }); }
void light_counts(const u8* s, const u8* before, int n, int change, int rel, const int* ratios, unsigned* counts, int k) {   // one thread per block, 7 blocks a frame
    blockDim = {1, 1, 1}; gridDim = {7, (unsigned)k, 1};
    for (unsigned by = 0; by < gridDim.y; ++by) for (unsigned bx = 0; bx < gridDim.x; ++bx) {
        blockIdx = {bx, by, 0}; threadIdx = {0, 0, 0}; md_light_change_count_u8(s, before, n, change, rel, ratios, counts); } }
void exposure(const u8* s, const u8* before, int n, unsigned* hist, unsigned* tickets, int* ratios, unsigned* counts, int k) {
    blockDim = {1, 1, 1}; gridDim = {5, (unsigned)k, 1};   // one thread per block, 5 a frame; the last takes the median
    for (unsigned by = 0; by < gridDim.y; ++by) for (unsigned bx = 0; bx < gridDim.x; ++bx) {
        blockIdx = {bx, by, 0}; threadIdx = {0, 0, 0}; md_exposure_histogram_u8(s, before, n, hist, tickets, ratios, counts); } }
void bgr_chroma(const u8* s, u8* d, int w, int h, int ow, int oh) { grid2d(ow, oh, 1, [&] { md_bgr_chroma_blocks_u8(s, d, w, h, ow, oh); }); }
void chroma_420(const u8* cb, const u8* cr, int pitch, int step, long long image, int x0, int y0, const u8* lut, u8* d, int w, int h, int ow, int oh,
                long long plane, int k) {
    grid2d(ow, oh, k, [&] { md_chroma_420_blocks_u8(cb, cr, pitch, step, image, x0, y0, lut, d, w, h, ow, oh, plane); }); }
void histogram(const u8* s, int n, unsigned* h) {               // one thread per block: phases in order
    blockDim = {1, 1, 1}; gridDim = {3, 1, 1};
    for (unsigned b = 0; b < 3; ++b) { blockIdx = {b, 0, 0}; threadIdx = {0, 0, 0}; md_histogram_u8(s, n, h); } }
void equalize_lut(const unsigned* h, int n, u8* lut) { blockIdx = {0, 0, 0}; threadIdx = {0, 0, 0}; md_equalize_lut(h, n, lut); }
void apply_lut(const u8* s, const u8* lut, u8* d, int n) { grid1d(n, [&] { md_apply_lut_u8(s, lut, d, n); }); }
typedef unsigned short u16;
// The Subsense kernels with their own argument lists, for a stand-in CUDAHandler that launches
// them as Subsense.apply_kernel does (2-D grids over width x height).
void md_subsense_init_u8_launch(const u8* ref, u8* col, u16* des, int* r, int* t, int* v, int* dm, int* sa, int* dl, u8* last, u8* lc, u16* desc,
                                int w, int h, int n, int tr, int tl, int vi) {
    grid2d(w, h, 1, [&] { md_subsense_init_u8(ref, col, des, r, t, v, dm, sa, dl, last, lc, desc, w, h, n, tr, tl, vi); }); }
void md_subsense_classify_u8_launch(const u8* s, u8* col, u16* des, int* r, int* t, int* v, int* dm, int* sa, int* dl, u8* last, u8* lc, u16* desc,
                                    u8* push, u8* d, int w, int h, int n, int mm, int pair, int tr, int cr, int lr, int a, int ast, int tl, int tu,
                                    int ti, int td, int vi, int vd, int vy, int vm, int rv, int bd) {
    grid2d(w, h, 1, [&] { md_subsense_classify_u8(s, col, des, r, t, v, dm, sa, dl, last, lc, desc, push, d, w, h, n, mm, pair, tr, cr, lr, a, ast, tl, tu, ti, td, vi, vd, vy, vm, rv, bd); }); }
void md_subsense_spread_u8_launch(const u8* s, const u16* desc, const u8* push, const int* sa, const int* dl, u8* col, u16* des, int w, int h, int n, int pair, int gs, int gd) {
    grid2d(w, h, 1, [&] { md_subsense_spread_u8(s, desc, push, sa, dl, col, des, w, h, n, pair, gs, gd); }); }
// The light field's kernels launched on the grid a caller asks for (width x height threads in
// blocks of 32 x 8, k images), as CUDAHandler.launch_2d makes it, so queue_light_field's
// geometry is what the test checks.
void md_light_field_ratio_u8_grid(int gw, int gh, int k, const u8* x, const u8* b, int* r, int w, int h) {
    grid2d(gw, gh, k, [&] { md_light_field_ratio_u8(x, b, r, w, h); }); }
void md_light_field_blocks_grid(int gw, int gh, int k, const int* r, int* g, int w, int h, int bw, int bh) {
    grid2d(gw, gh, k, [&] { md_light_field_blocks(r, g, w, h, bw, bh); }); }
void md_light_field_smooth_grid(int gw, int gh, int k, const int* g, int* s, int bw, int bh) {
    grid2d(gw, gh, k, [&] { md_light_field_smooth(g, s, bw, bh); }); }
void md_recent_gate_u8_grid(int gw, int gh, int k, const short* diff, u8* m, int w, int h, int level) {
    grid2d(gw, gh, k, [&] { md_recent_gate_u8(diff, m, w, h, level); }); }
void md_light_field_veto_u8_grid(int gw, int gh, int k, const u8* x, const u8* b, const int* s, u8* m, int w, int h, int bw, int bh, int t, int mc) {
    grid2d(gw, gh, k, [&] { md_light_field_veto_u8(x, b, s, m, w, h, bw, bh, t, mc); }); }
void subsense_init(const u8* ref, u8* col, u16* des, int* r, int* t, int* v, int* dm, int* sa, int* dl, u8* last, u8* lc, u16* desc,
                   int w, int h, int n, int tr, int tl, int vi) {
    grid2d(w, h, 1, [&] { md_subsense_init_u8(ref, col, des, r, t, v, dm, sa, dl, last, lc, desc, w, h, n, tr, tl, vi); }); }
void subsense_frame(const u8* s, u8* col, u16* des, int* r, int* t, int* v, int* dm, int* sa, int* dl, u8* last, u8* lc, u16* desc, u8* push, u8* d,
                    int gs, int gd, int w, int h, int n, int mm, int pair, int tr, int cr, int lr, int a, int ast, int tl, int tu, int ti, int td,
                    int vi, int vd, int vy, int vm, int rv, int bd) {
    grid2d(w, h, 1, [&] { md_subsense_classify_u8(s, col, des, r, t, v, dm, sa, dl, last, lc, desc, push, d, w, h, n, mm, pair, tr, cr, lr, a, ast, tl, tu, ti, td, vi, vd, vy, vm, rv, bd); });
    grid2d(w, h, 1, [&] { md_subsense_spread_u8(s, desc, push, sa, dl, col, des, w, h, n, pair, gs, gd); }); }
}
"""

KERNELS = [
    "dilation",
    "erosion",
    "closing",
    "blur",
    "median",
    "downscale",
    "upscale",
    "running_average",
    "gaussian_background",
    "light_field",
    "recent_gate",
    "dispersion_threshold",
    "equalize",
    "gray",
    "red_blend",
    "subsense",
]


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    folder = tmp_path_factory.mktemp("emulated")
    sources = "".join(f'#line 1 "{name}.cu"\n' + (kernel_dir() / f"{name}.cu").read_text() + "\n" for name in KERNELS)
    cpp = folder / "kernels.cpp"
    cpp.write_text(PRELUDE + 'extern "C" {\n' + sources + "}\n" + LAUNCHERS)
    so = folder / "kernels.so"
    # -ffp-contract=off: no fused multiply-add, as __fmul_rn promises on the GPU. -I: the shared
    # headers (batch.cuh), found as CUDAHandler's include_dirs finds them.
    command = [CXX, "-O1", "-std=c++17", "-shared", "-fPIC", "-ffp-contract=off", "-I", str(kernel_dir()), "-o", str(so), str(cpp)]
    result = subprocess.run(command, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return ctypes.CDLL(str(so))


def ptr(array):
    return None if array is None else array.ctypes.data_as(ctypes.c_void_p)


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
    levels = rng.choice(np.array([0, WEAK, 255], np.uint8), size)  # a mask with the weak level
    for k, iterations in [(1, 1), (3, 1), (5, 2), (31, 1)]:
        flt, out = Dilation(kernel_size=k, iterations=iterations), poisoned(size)
        lib.dilate(ptr(grey), ptr(poisoned(size)), ptr(out), w, h, flt.radius, 1, 0)
        assert_same(out, flt.reference(grey))
        flt.weak_level = True
        for image in (grey, levels):
            out = poisoned(size)
            lib.dilate(ptr(image), ptr(poisoned(size)), ptr(out), w, h, flt.radius, 1, 1)
            assert_same(out, flt.reference(image))
        flt, out = Erosion(kernel_size=k, iterations=iterations), poisoned(size)
        lib.erode(ptr(grey), ptr(poisoned(size)), ptr(out), w, h, flt.radius, 1, 0)
        assert_same(out, flt.reference(grey))
        flt.weak_level = True
        for image in (grey, levels):
            out = poisoned(size)
            lib.erode(ptr(image), ptr(poisoned(size)), ptr(out), w, h, flt.radius, 1, 1)
            assert_same(out, flt.reference(image))
        sparse = np.zeros(size, np.uint8)  # most tiles empty: the kernel's early way out
        sparse[h // 2 : h // 2 + 3, w // 3 : w // 3 + 2] = 255
        for image in (mask, grey, sparse):
            flt, out = Closing(kernel_size=k), poisoned(size)
            lib.close(ptr(image), ptr(out), w, h, flt.radius, 1)
            assert_same(out, flt.reference(image))
        flt, out = Blur(kernel_size=k), poisoned(size)
        lib.blur(ptr(grey), ptr(poisoned(size, np.uint16)), ptr(out), w, h, k // 2, 1)
        assert_same(out, flt.reference(grey))
        for image in (mask, levels, grey):
            flt, out = Median(kernel_size=k), poisoned(size)
            lib.median(ptr(image), ptr(poisoned(size, np.uint16)), ptr(out), w, h, k // 2, 1)
            assert_same(out, flt.reference(image))


@pytest.mark.parametrize("size", SIZES)
def test_downscale_and_upscale(lib, rng, size):
    h, w = size
    grey = rng.integers(0, 256, size, dtype=np.uint8)
    for height in (1, 2, 3, 5, 16, 1000):
        down = Downscale()
        down.params["height"] = height  # below the config minimum, to reach large factors on tiny frames
        oh, ow = down.output_shape(size)
        out = poisoned((oh, ow))
        lib.downscale(ptr(grey), ptr(out), w, h, ow, oh, 1)
        assert_same(out, down.reference(grey))
        small = np.where(rng.random((oh, ow)) < 0.5, 255, 0).astype(np.uint8)
        up = poisoned(size)
        lib.upscale(ptr(small), ptr(up), ow, oh, w, h, 1)
        assert_same(up, Upscale().reference(small, np.zeros((h, w, 3), np.uint8)))


@pytest.mark.parametrize("size", SIZES)
def test_dispersion_threshold(lib, rng, size):
    h, w = size
    images = [
        rng.integers(0, 256, size, dtype=np.uint8),
        np.clip(rng.poisson(2.0, size) + (rng.random(size) < 0.01) * 100, 0, 255).astype(np.uint8),
    ]
    for k, n_b, n_s, t in [(7, 6.0, 3.0, 0), (3, 1.0, 0.5, 0), (31, 0.0, 0.0, 100), (5, 3.0, 2.0, 5)]:
        flt = DispersionThreshold(kernel_size=k, sigma_background=n_b, sigma_strong=n_s, threshold=t)
        for image in images:
            out = poisoned(size)
            lib.dispersion(
                ptr(image),
                ptr(poisoned(size, np.uint32)),
                ptr(poisoned(size, np.uint32)),
                ptr(flt.c_table),
                ptr(out),
                w,
                h,
                k // 2,
                t,
                flt.s2_q16,
                1,
            )
            assert_same(out, flt.reference(image))


@pytest.mark.parametrize("size", SIZES)
def test_equalize(lib, rng, size):
    for image in (
        rng.integers(0, 256, size, dtype=np.uint8),
        np.full(size, 77, np.uint8),
        np.zeros(size, np.uint8),
        np.clip(rng.normal(60, 10, size), 0, 255).astype(np.uint8),
    ):
        hist = np.zeros(256, np.uint32)
        lib.histogram(ptr(image), image.size, ptr(hist))
        np.testing.assert_array_equal(hist, np.bincount(image.ravel(), minlength=256))
        lut, out = np.zeros(256, np.uint8), poisoned(size)
        lib.equalize_lut(ptr(hist), image.size, ptr(lut))
        lib.apply_lut(ptr(image), ptr(lut), ptr(out), image.size)
        assert_same(out, Equalize().reference(image))


def gaussian_constants(
    flt, chroma=None, chroma_state=None, still_state=None, light=None, compared=None, history=None, drift=None, recent=None
):
    """The Gaussian kernel's arguments after ``warmup``, in its order: the integer constants,
    then the chroma (``chroma``: the first frame's Cb plane and the Cb-to-Cr distance in bytes, an
    array and an int; ``chroma_state``: the (2, H, W) int32 means and variances), NULL without,
    and the chroma's shadow test's tolerance and ratio and the weak level's limit (0 unless
    :attr:`~GaussianBackground.writes_weak`), then the still-foreground state (``still_state``: the (H, W) uint8 previous frame and int32
    counts, passed whatever ``still_frames`` is) and parameters, then the light's measures
    (``light``: :func:`light_counts`' counts and ratios, NULL without), the light switch's
    threshold, the exposure's margin and its drift (``drift``: a :class:`Drift`; NULL without),
    then ``compared`` (uint8 like the frames: the means
    each frame is compared with, for the light field; NULL without), then the bootstrap's history
    (:func:`history_state`; NULL without), ``bootstrap``, ``quiet_tolerance`` and ``variance_min_change``,
    then the recent-background gate's state and deviations (``recent``: a :class:`Recent`; NULL
    without), its level and its variance."""
    c = flt.constants
    constants = tuple(
        c[name]
        for name in ("k2_q8", "min_var_q8", "shadow_q16", "relative_q16", "alpha_q16", "alpha_fg_q16", "var_alpha_q16", "var_alpha_fg_q16")
    )
    shadow = (c["shadow_chroma_q8"], c["shadow_ratio_q16"], c["grow_k2_q8"] if flt.writes_weak else 0)
    pixels = still_state[0].size
    counts, ratios = (None, None) if light is None else light
    slots = (None, None) if drift is None or ratios is None else drift.launch()
    measures = (
        ptr(counts),
        flt.light_count(pixels),
        ptr(ratios),
        c["exposure_q8"],
        *(ptr(slot) for slot in slots),
        ptr(compared),
        ptr(history),
        flt.params["bootstrap"],
        flt.params["quiet_tolerance"],
        flt.params["variance_min_change"],
        *((None, None) if recent is None else (ptr(recent.state), ptr(recent.diff))),
        flt.params["recent_gate"],
        recent_gate.min_var_q8(),
    )
    still = (*(ptr(a) for a in still_state), flt.params["still_frames"], flt.params["still_tolerance"], *measures)
    if chroma is None:
        return (*constants, None, ctypes.c_longlong(0), None, None, 0, *shadow, *still)
    planes, plane = chroma
    mean, var = chroma_state
    return (*constants, ptr(planes), ctypes.c_longlong(plane), ptr(mean), ptr(var), c["chroma_min_var_q8"], *shadow, *still)


def light_counts(lib, flt, batch, before):
    """The light's measures of ``batch`` ((K, H, W) or (H, W) uint8; ``before`` the frame before
    its first) from the emulated md_light_change_count_u8 (uint32 (K, 4)) and, with ``exposure``
    on, md_exposure_histogram_u8 (int32 (K,), else ``None``); ``None`` with
    neither ``lightswitch`` nor ``exposure``. Checked against :meth:`GaussianBackground.light_measures`."""
    if not flt.follows_light:
        return None
    frames = batch.reshape(-1, *before.shape)
    ratios = None
    counts = np.zeros((len(frames), 4), np.uint32)
    if flt.constants["exposure_q8"]:
        hist, ratios = np.zeros((len(frames), 1024), np.uint32), np.full(len(frames), -1, np.int32)
        tickets = np.zeros(len(frames), np.uint32)
        counts[...] = 0xDEADBEEF  # the frame's last block zeroes them (the host queues no memset)
        lib.exposure(ptr(frames), ptr(before), before.size, ptr(hist), ptr(tickets), ptr(ratios), ptr(counts), len(frames))
        assert not hist.any(), "the last block leaves the histogram zero for the next batch"
        assert not tickets.any(), "the last block leaves its ticket zero for the next batch"
        assert not counts.any()
    lib.light_counts(
        ptr(frames), ptr(before), before.size, flt.light_change, flt.constants["light_relative_q16"], ptr(ratios), ptr(counts), len(frames)
    )
    previous = [before, *frames[:-1]]
    want = [flt.light_measures(now, last) for now, last in zip(frames, previous)]
    np.testing.assert_array_equal(counts, [(b, d, e, u) for b, d, _, e, u in want])
    if ratios is not None:
        np.testing.assert_array_equal(ratios, [r for _, _, r, _, _ in want])
    return counts, ratios


class Drift:
    """The exposure's drift on the device: two int32 slots (poisoned) that the Gaussian kernel
    reads from and writes to, swapped each launch as the host swaps them."""

    def __init__(self, value=-7):
        self.slots = [np.full(1, value, np.int32), np.full(1, 2 * value, np.int32)]

    def launch(self):
        """The (read, write) slots of the next launch."""
        self.slots.reverse()
        return self.slots[1], self.slots[0]

    @property
    def value(self) -> int:
        """The drift the last launch stored (Q16)."""
        return int(self.slots[0][0])


def compared_means(flt, shape):
    """Poisoned room for the means the Gaussian kernel compares each frame with, when the
    filter's light field is on (else ``None``: the kernel writes none)."""
    return poisoned(shape) if flt.constants["light_field_q16"] else None


def light_field(lib, flt, frames, compared, out):
    """Run queue_light_field (its launches, on the emulated kernels) on the kernel's ``out``
    masks ((K, H, W) or (H, W) uint8, changed in place) of ``frames``, when ``compared`` holds
    the compared means."""
    if compared is not None:
        arrays = (_HostArray(a) for a in (frames, compared, out))
        queue_light_field(_HostCuda(lib), lambda name: ("test", name), *arrays, flt.constants["light_field_q16"])


class Recent:
    """The recent-background gate's device state (uint8 (H, W), poisoned until pair 1 starts it)
    and the deviations of a launch's ``frames`` (int16, poisoned), or ``None`` where the filter's
    ``recent_gate`` is 0; :meth:`gate` runs queue_gate (its launch, on the emulated kernel)."""

    def __init__(self, size, value=0x5C):
        self.size, self.state, self.diff = size, np.full(size, value, np.uint8), None

    @classmethod
    def of(cls, flt, size, value=0x5C):
        return cls(size, value) if flt.params["recent_gate"] else None

    def launch(self, frames):
        self.diff = np.full((frames, *self.size) if frames > 1 else self.size, -12345, np.int16)
        return self

    def gate(self, lib, flt, out):
        queue_gate(_HostCuda(lib), _HostArray(self.diff), _HostArray(out), flt.params["recent_gate"])


def launch_recent(recent, frames=1):
    return None if recent is None else recent.launch(frames)


def gate_recent(lib, flt, recent, out):
    if recent is not None:
        recent.gate(lib, flt, out)


def history_state(flt, size, value=0xA5):
    """Poisoned uint8 planes for the bootstrap's history (kernels/gaussian_background.cu: N + 2
    planes, 3N + 2 with chroma), or ``None`` with ``bootstrap`` 0."""
    n = flt.params["bootstrap"]
    return np.full(((3 * n + 2) if flt.needs_chroma else (n + 2), *size), value, np.uint8) if n else None


def still_state(size, value=7):
    """Poisoned still-foreground state for the Gaussian kernel: previous frame and counts."""
    return [np.full(size, value % 256, np.uint8), np.full(size, -value, np.int32)]


def check_still(flt, cpu, got):
    """The kernel's still-foreground state equals the CPU model's where the filter keeps one."""
    if flt.params["still_frames"]:
        for want, have in zip(cpu.still_model, got):
            np.testing.assert_array_equal(have, want)


def scene(rng, size, count=8):
    base = rng.integers(0, 256, size)
    return [
        np.clip(base + rng.normal(0, 4, size) + (rng.random(size) < 0.15) * rng.integers(-150, 150, size), 0, 255).astype(np.uint8)
        for _ in range(count)
    ]


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


#: Parameters of the Gaussian model's state beyond mean and variance, for the sequence and batch
#: tests: the still count (on, off) and the light's measures (switch, exposure, both with chroma).
GAUSSIAN_FRAME_STATE_PARAMS = [
    GAUSSIAN_BOOTSTRAP,
    GAUSSIAN_BOOTSTRAP_GREY,
    GAUSSIAN_BOOTSTRAP_CANCELLED,
    GAUSSIAN_STILL,
    GAUSSIAN_STILL_CHROMA,
    {"still_frames": 0},
    GAUSSIAN_LIGHT,
    GAUSSIAN_LIGHT_STILL_CHROMA,
    GAUSSIAN_EXPOSURE,
    GAUSSIAN_EXPOSURE_ALL,
    GAUSSIAN_LIGHT_FIELD,
    GAUSSIAN_QUIET,
    GAUSSIAN_UNGATED,
    GAUSSIAN_RECENT,
    GAUSSIAN_RECENT_LIGHT,
    GAUSSIAN_RECENT_BOOTSTRAP,
]


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize(
    "params",
    [
        {},  # the default: chroma on
        GAUSSIAN_GREY,
        {"warmup": 3},
        {**GAUSSIAN_FAST, "warmup": 2},
        GAUSSIAN_SATURATED,
        GAUSSIAN_FROZEN,
        GAUSSIAN_TIE,  # rounding ties
        GAUSSIAN_SHADOW,
        {**GAUSSIAN_FAST, "shadow_floor": 1.0, "warmup": 2},
        {**GAUSSIAN_SHADOW, "relative_floor": 0.06},  # the relative floor under the shadow floor
        {**GAUSSIAN_FAST, "relative_floor": 0.3, "shadow_floor": 0.1, "warmup": 2},  # and over it
        GAUSSIAN_SHADOW_CHROMA,  # the chroma's shadow test (chroma_for's planes make shadows of small darkenings)
        GAUSSIAN_GROW,  # the weak level
        GAUSSIAN_GROW_GREY,
        GAUSSIAN_GROW_SHADOW,
        {**GAUSSIAN_STILL_CHROMA, "grow_sigmas": 1.0},
        *GAUSSIAN_FRAME_STATE_PARAMS,
    ],
    ids=str,
)
def test_gaussian_background_sequence(lib, rng, size, params):
    frames = with_exposure(with_light_switch(with_ghosts(rng, scene(rng, size, count=9)), off=5), at=7)
    chromas = with_night_mode(rng, chroma_planes(rng, params, frames))
    cpu, device = gaussian_model(params), gaussian_model(params)
    mean, var = np.full(size, -7, np.int32), np.full(size, -7, np.int32)  # poisoned state
    weak = 0
    chroma_state = [np.full((2, *size), -7, np.int32), np.full((2, *size), -7, np.int32)]
    still, history = still_state(size), history_state(device, size)
    drift = Drift()  # poisoned: pair 1 starts it
    recent = Recent.of(device, size)
    ungated, fired = gaussian_model({**params, "recent_gate": 0}), 0  # the gate changes the mask alone
    colour = device.needs_chroma
    for i in range(1, len(frames)):
        out, compared = poisoned(size), compared_means(device, size)
        # One frame per launch, pair i of the stream (the kernel computes the warm-up rates).
        lib.gaussian(
            ptr(frames[i]),
            ptr(frames[i - 1]),
            ptr(mean),
            ptr(var),
            ptr(out),
            frames[i].size,
            1,
            i,
            device.params["warmup"],
            *gaussian_constants(
                device,
                (chromas[i], frames[i].size) if colour else None,
                chroma_state,
                still,
                light_counts(lib, device, frames[i], frames[i - 1]),
                compared,
                history,
                drift,
                launch_recent(recent),
            ),
        )
        gate_recent(lib, device, recent, out)
        light_field(lib, device, frames[i], compared, out)  # last, as the filter queues it
        assert_same(out, cpu.reference(frames[i], frames[i - 1], chromas[i]) if colour else cpu.reference(frames[i], frames[i - 1]))
        if recent is not None:
            plain = ungated.reference(frames[i], frames[i - 1], chromas[i]) if colour else ungated.reference(frames[i], frames[i - 1])
            assert np.all(out[plain == 255] == 255)
            fired += np.count_nonzero(out != plain)
        weak += np.count_nonzero(out == WEAK)
    if not device.writes_weak:
        assert weak == 0
    elif frames[0].size >= 1000:  # the weak level was tested
        assert weak > 0
    np.testing.assert_array_equal(mean.astype(np.int64), cpu.model[0])
    np.testing.assert_array_equal(var.astype(np.int64), cpu.model[1])
    check_still(device, cpu, still)
    if recent is not None:
        np.testing.assert_array_equal(recent.state, cpu._recent)
        assert fired > 0 or frames[0].size < 1000 or "recent_gate" not in params  # the gate was tested
    if colour:
        np.testing.assert_array_equal(chroma_state[0].astype(np.int64), cpu.chroma_model[0])
        np.testing.assert_array_equal(chroma_state[1].astype(np.int64), cpu.chroma_model[1])


def chroma_planes(rng, params, frames):
    """Cb and Cr planes for ``frames``: random scenes, or with the chroma's shadow test on, each
    frame and its negative (chroma_for's), on which small darkenings are shadows."""
    if "shadow_chroma" in params:
        return [chroma_for(GaussianBackground(**params), f) for f in frames]
    return [np.stack(pair) for pair in zip(scene(rng, frames[0].shape, count=len(frames)), scene(rng, frames[0].shape, count=len(frames)))]


GAUSSIAN_BATCH_PARAMS = [
    {},  # warm-up (50 pairs) through both launches
    {"warmup": 6},  # warm-up ends inside the second launch of the (5, 3) split
    {"warmup": 5, **GAUSSIAN_FAST},
    GAUSSIAN_SATURATED,
    GAUSSIAN_SHADOW,
    GAUSSIAN_CHROMA,
    {**GAUSSIAN_SATURATED, "chroma_min_sigma": 0.5},
    GAUSSIAN_SHADOW_CHROMA,
    GAUSSIAN_GROW,
    GAUSSIAN_GROW_SHADOW,
    *GAUSSIAN_FRAME_STATE_PARAMS,
]


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("params", GAUSSIAN_BATCH_PARAMS, ids=str)
@pytest.mark.parametrize("splits", [(5, 3), (8,), (1, 2, 4, 1)], ids=str)
def test_gaussian_background_batches(lib, rng, size, params, splits):
    """Launches of several consecutive frames (``frames`` = K, pairs first_pair.., the model in
    registers) equal launches of one frame each and the CPU sequence, bit for bit: masks, and
    the stored mean and variance after every launch, warm-up included."""
    frames = with_exposure(with_light_switch(with_ghosts(rng, scene(rng, size, count=1 + sum(splits))), off=5), at=7)
    chromas = with_night_mode(rng, chroma_planes(rng, params, frames))
    n = frames[0].size
    flt = gaussian_model(params)
    colour = flt.needs_chroma

    cpu, expected, models, drifts, recents = gaussian_model(params), [], {}, {}, {}
    exposure = bool(flt.constants["exposure_q8"])
    for t in range(1, len(frames)):
        expected.append(cpu.reference(frames[t], frames[t - 1], chromas[t]) if colour else cpu.reference(frames[t], frames[t - 1]))
        # In the order of the state lists below; None where the filter keeps no chroma.
        models[t] = (*cpu.model, *(cpu.chroma_model or (None, None)), *(cpu.still_model or ()))
        recents[t] = None if cpu._recent is None else cpu._recent.copy()
        drifts[t] = cpu._drift

    def state(value):  # poisoned device state: means and variances, grey then chroma, then still
        return [
            np.full(size, value, np.int32),
            np.full(size, -value, np.int32),
            np.full((2, *size), value, np.int32),
            np.full((2, *size), -value, np.int32),
            *still_state(size, value),
        ]

    def check_state(model, got):
        for want, have in zip(model, got):
            if want is not None:
                np.testing.assert_array_equal(have.astype(np.int64), want)

    single_state, single, single_history, single_drift = state(7), [], history_state(flt, size), Drift(7)
    single_recent = Recent.of(flt, size)
    for t in range(1, len(frames)):
        out, compared = poisoned(size), compared_means(flt, size)
        chroma = (chromas[t], n) if colour else None
        light = light_counts(lib, flt, frames[t], frames[t - 1])
        args = (
            flt.params["warmup"],
            *gaussian_constants(
                flt,
                chroma,
                single_state[2:4],
                single_state[4:],
                light,
                compared,
                single_history,
                single_drift,
                launch_recent(single_recent),
            ),
        )
        lib.gaussian(ptr(frames[t]), ptr(frames[t - 1]), ptr(single_state[0]), ptr(single_state[1]), ptr(out), n, 1, t, *args)
        gate_recent(lib, flt, single_recent, out)
        light_field(lib, flt, frames[t], compared, out)
        single.append(out)
        if single_recent is not None:
            np.testing.assert_array_equal(single_recent.state, recents[t])
        check_state(models[t], single_state)
        assert not exposure or single_drift.value == drifts[t]

    batch_state, batch_history, batch_drift = state(12345), history_state(flt, size, 0x5A), Drift(12345)
    batch_recent = Recent.of(flt, size, 0x33)
    first = 1
    for k in splits:
        batch = np.ascontiguousarray(np.stack(frames[first : first + k]))
        # Plane-major, as the batched path lays them out: the K frames' Cb planes, then their Cr.
        planes = np.ascontiguousarray(np.stack(chromas[first : first + k], axis=1))
        # Only pair 1 reads the reference (the stream's first frame); later launches get poison,
        # and the light switch's counts start from the kernel's own previous frame, as on the GPU.
        reference = frames[0] if first == 1 else poisoned(size)
        light = light_counts(lib, flt, batch, frames[0] if first == 1 else batch_state[4])
        compared = compared_means(flt, (k, *size))
        args = (
            flt.params["warmup"],
            *gaussian_constants(
                flt,
                (planes, k * n) if colour else None,
                batch_state[2:4],
                batch_state[4:],
                light,
                compared,
                batch_history,
                batch_drift,
                launch_recent(batch_recent, k),
            ),
        )
        out = poisoned((k, *size))
        lib.gaussian(ptr(batch), ptr(reference), ptr(batch_state[0]), ptr(batch_state[1]), ptr(out), n, k, first, *args)
        gate_recent(lib, flt, batch_recent, out)
        light_field(lib, flt, batch, compared, out)
        for j in range(k):
            assert_same(out[j], single[first - 1 + j])
            assert_same(out[j], expected[first - 1 + j])
        check_state(models[first + k - 1], batch_state)
        if batch_recent is not None:
            np.testing.assert_array_equal(batch_recent.state, recents[first + k - 1])
        assert not exposure or batch_drift.value == drifts[first + k - 1]
        first += k


@pytest.mark.parametrize("splits", [(60,), (1,) * 60, (7, 23, 30)], ids=str)
def test_exposure_drift_through_the_model_kernel(lib, rng, splits):
    """The Gaussian kernel's exposure drift (md_exposure_step, carried between launches in two
    slots) equals the CPU's exposure_gain walked frame by frame, on made-up light counts and
    ratios: light switches (and switches a followed gain explains), gains taken, swings the margin misses (explained more often than no
    change), moving objects' ratios (explained less), and ratios at the bins' ends that drive
    the drift to its bounds."""
    flt = GaussianBackground(lightswitch=0.5, exposure=1.25, chroma_min_sigma=0.0)
    size, total = (25, 40), sum(splits)
    pixels, need = 1000, flt.light_count(1000)
    ratios = rng.choice([256, 250, 262, 240, 1, 1023], total).astype(np.int32)
    ratios[20:30] = 1023  # missed swings up to the drift's upper bound, then taken
    unchanged = rng.integers(1, pixels, total)
    explained = np.minimum(unchanged * rng.choice([0.5, 1.0, 1.1, 1.3, 3.0], total), pixels).astype(np.int64)
    unchanged[20:30], explained[20:29], explained[29] = 400, 440, 900  # 1.1 times: missed; 2.25: taken
    switch = rng.random(total) < 0.05
    # Two light switches with a followed gain: one explaining half the pixels that changed or more
    # (no restart, the gain is taken), one fewer (a restart).
    # A swing the margin misses before each, so the drift taken or restarted differs from 1.0.
    switch[[40, 45]], ratios[[40, 45]], unchanged[[40, 45]], explained[[40, 45]] = True, 240, 100, [need // 2, need // 2 - 1]
    switch[[39, 44]], ratios[[39, 44]], unchanged[[39, 44]], explained[[39, 44]] = False, 250, 400, 440
    counts = np.stack([np.where(switch, need, rng.integers(0, 100, total)), rng.integers(0, 100, total), explained, unchanged], axis=1)
    counts = counts.astype(np.uint32)
    frames = [rng.integers(0, 256, size, dtype=np.uint8) for _ in range(total + 1)]
    mean, var, still, drift = np.zeros(size, np.int32), np.zeros(size, np.int32), still_state(size), Drift()
    walked, gains, drifts, first = DRIFT_ONE, [], [], 1
    for k in splits:
        batch = slice(first - 1, first - 1 + k)
        light = (np.ascontiguousarray(counts[batch]), np.ascontiguousarray(ratios[batch]))
        args = (flt.params["warmup"], *gaussian_constants(flt, None, [None, None], still, light, None, None, drift))
        out = poisoned((k, *size))
        stack = np.ascontiguousarray(np.stack(frames[first : first + k]))
        lib.gaussian(ptr(stack), ptr(frames[0]), ptr(mean), ptr(var), ptr(out), frames[0].size, k, first, *args)
        for (brighter, darker, matched, same), ratio in zip(light[0].tolist(), light[1].tolist()):
            gain, walked = flt.exposure_gain(walked, brighter, darker, ratio, matched, same, need)
            gains.append(gain)
            drifts.append(walked)
        assert drift.value == walked
        first += k
    assert 0 in gains and 256 in gains and 1023 in gains  # a switch, no gain, the drift at its bound
    assert gains[40] not in (0, 256) and drifts[40] != DRIFT_ONE and gains[45] == 0 and drifts[45] == DRIFT_ONE
    assert len(set(gains) - {0, 256, 1023}) > 3


def sunlit_scene(rng, size, count=12):
    """Grey frames of a textured scene (about 30 grey levels of texture on 130, noise of 2) that
    a cloud's shadow darkens from frame 6 on, by a gain that falls from 1 at the left edge to
    0.55 at the right, and a dark object (grey level 20, flat) that walks in from frame 8."""
    h, w = size
    texture = np.clip(130 + rng.normal(0, 30, size), 0, 255)
    gain = np.linspace(1.0, 0.55, w)[None, :]
    frames = []
    for t in range(count):
        frame = texture * (gain if t >= 6 else 1.0) + rng.normal(0, 2, size)
        if t >= 8:
            frame[h // 4 : h // 4 + max(1, h // 3), (t - 8) * 3 : (t - 8) * 3 + max(1, w // 5)] = 20
        frames.append(np.clip(frame, 0, 255).astype(np.uint8))
    return frames


@pytest.mark.parametrize("size", [(7, 13), (33, 65), (97, 130), (120, 160)])
@pytest.mark.parametrize("splits", [(11,), (1,) * 11, (6, 5)], ids=str)
def test_light_field_through_the_model(lib, rng, size, splits):
    """The Gaussian kernel's compared means and the light field's four kernels after it, one
    frame or a batch a launch, equal the CPU model with ``light_field`` bit for bit, on a scene
    where the field clears the shadow's flood and keeps the object."""
    params = {**GAUSSIAN_GREY, "exposure": 0.0, "lightswitch": 0.0, "still_frames": 0, "warmup": 4, "light_field": 12.0}
    flt = GaussianBackground(**params)
    frames = sunlit_scene(rng, size)
    cpu, plain = GaussianBackground(**params), GaussianBackground(**{**params, "light_field": 0.0})
    expected = [cpu.reference(frames[t], frames[t - 1]) for t in range(1, len(frames))]
    without = [plain.reference(frames[t], frames[t - 1]) for t in range(1, len(frames))]
    n = frames[0].size
    mean, var, still = np.full(size, 7, np.int32), np.full(size, -7, np.int32), still_state(size)
    first = 1
    for k in splits:
        batch = np.ascontiguousarray(np.stack(frames[first : first + k]))
        reference = frames[0] if first == 1 else poisoned(size)
        compared, out = compared_means(flt, (k, *size)), poisoned((k, *size))
        args = (flt.params["warmup"], *gaussian_constants(flt, None, [None, None], still, None, compared, history_state(flt, size)))
        lib.gaussian(ptr(batch), ptr(reference), ptr(mean), ptr(var), ptr(out), n, k, first, *args)
        light_field(lib, flt, batch, compared, out)
        for j in range(k):
            assert_same(out[j], expected[first - 1 + j])
        first += k
    if size[1] >= 65:  # enough blocks for the field to spread across the shadow
        shadow = slice(6 - 1, 8 - 1)  # the frames of the shadow before the object comes
        assert sum(np.count_nonzero(m) for m in without[shadow]) > 0.3 * n
        assert sum(np.count_nonzero(m) for m in expected[shadow]) < 0.02 * n
        h, w = size
        object_pixels = expected[-1][h // 4 : h // 4 + h // 3, 9 : 9 + w // 5]
        assert np.count_nonzero(object_pixels) > 0.9 * object_pixels.size


@pytest.mark.parametrize("splits", [(1,) * 68, (32, 32, 4)], ids=["one", "batches"])
def test_recent_gate_then_light_field(lib, splits):
    """On :func:`helpers.darkening_road`, where the recent-background gate fires on pixels the
    light field explains, the kernel, the gate's launch and then the field's four, one frame or a
    batch a launch, equal the CPU model with both bit for bit (the field is the mask's last
    step on both backends)."""
    params = {**GAUSSIAN_GREY, "exposure": 0.0, "lightswitch": 0.0, "light_field": 24.0, "recent_gate": 15, "ghost_frames": 0}
    flt, cpu = GaussianBackground(**params), GaussianBackground(**params)
    frames = darkening_road()
    size, n = frames[0].shape, frames[0].size
    expected = [cpu.reference(frames[t], frames[t - 1]) for t in range(1, len(frames))]
    mean, var, still = np.full(size, 7, np.int32), np.full(size, -7, np.int32), still_state(size)
    recent, history = Recent.of(flt, size), history_state(flt, size)
    first = 1
    for k in splits:
        batch = np.ascontiguousarray(np.stack(frames[first : first + k]))
        reference = frames[0] if first == 1 else poisoned(size)
        compared, out = compared_means(flt, (k, *size)), poisoned((k, *size))
        launch = launch_recent(recent, k)
        args = (flt.params["warmup"], *gaussian_constants(flt, None, [None, None], still, None, compared, history, None, launch))
        lib.gaussian(ptr(batch), ptr(reference), ptr(mean), ptr(var), ptr(out), n, k, first, *args)
        gate_recent(lib, flt, recent, out)
        light_field(lib, flt, batch, compared, out)
        for j in range(k):
            assert_same(out[j], expected[first - 1 + j])
        first += k
    assert first == len(frames)


@pytest.mark.parametrize("size", SIZES)
def test_bgr_chroma_blocks(lib, rng, size):
    """md_bgr_chroma_blocks_u8 equals bgr_chroma at the frame's size, extremes included (pure
    blue and red clip to 255), and bgr_chroma followed by Downscale's blocks (equal and unequal)
    when shrunk."""
    h, w = size
    bgr = rng.integers(0, 256, (*size, 3), dtype=np.uint8)
    extremes = np.array([(255, 0, 0), (0, 0, 255)], np.uint8)
    bgr.reshape(-1, 3)[:2] = extremes[: h * w]
    full = bgr_chroma(bgr)
    for height in (None, 3, 2):  # the frame's size, then shrunk as Downscale(height) shrinks
        down = Downscale()
        if height is not None:
            down.params["height"] = height  # below the config minimum, to reach large factors on tiny frames
        oh, ow = size if height is None else down.output_shape(size)
        out = poisoned((2, oh, ow))
        lib.bgr_chroma(ptr(bgr), ptr(out), w, h, ow, oh)
        assert_same(out, full if height is None else down.reference_planes(full))


@pytest.mark.parametrize("size", [(1, 1), (2, 2), (7, 13), (8, 12), (33, 65)], ids=str)
@pytest.mark.parametrize("c_step", [1, 2], ids=["planar", "nv12"])
@pytest.mark.parametrize("full_range", [False, True], ids=["limited", "full"])
def test_chroma_420_blocks(lib, rng, size, c_step, full_range):
    """md_chroma_420_blocks_u8 on K pictures' chroma (padded rows, planar or NV12) equals
    Picture.chroma, whole and cropped at an odd corner, at the crop's size and shrunk by
    Downscale's blocks (equal and unequal), written plane-major."""
    h, w = size
    ch, cw = chroma_shape(h, w)
    k, pitch = 3, c_step * cw + 5
    image = 2 * ch * pitch + 3  # Cb rows, then Cr rows (planar); NV12 reads Cr at Cb + 1
    memory = rng.integers(0, 256, k * image, dtype=np.uint8)
    pictures = []
    for z in range(k):
        at = z * image
        rows = memory[at : at + ch * pitch].reshape(ch, pitch)
        if c_step == 2:
            u, v = rows[:, 0 : 2 * cw : 2], rows[:, 1 : 2 * cw : 2]
        else:
            u, v = rows[:, :cw], memory[at + ch * pitch : at + 2 * ch * pitch].reshape(ch, pitch)[:, :cw]
        pictures.append(Picture(rng.integers(0, 256, size, dtype=np.uint8), np.ascontiguousarray(u), np.ascontiguousarray(v), full_range))
    cr_offset = 1 if c_step == 2 else ch * pitch
    table = chroma_table(full_range)
    base = memory.ctypes.data
    for x0, y0 in ((0, 0), (w // 2 | 1 if w > 2 else 0, h // 3 | 1 if h > 2 else 0)):
        cw_, ch_ = w - x0, h - y0
        for height in (None, 3, 2):  # the crop's size, then shrunk as Downscale(height) shrinks
            down = Downscale()
            if height is not None:
                down.params["height"] = height  # below the config minimum, to reach large factors on tiny frames
            oh, ow = (ch_, cw_) if height is None else down.output_shape((ch_, cw_))
            out = poisoned((2, k, oh, ow))
            lib.chroma_420(
                ctypes.c_void_p(base), ctypes.c_void_p(base + cr_offset), pitch, c_step, ctypes.c_longlong(image), x0, y0, ptr(table),
                ptr(out), cw_, ch_, ow, oh, ctypes.c_longlong(k * oh * ow), k,
            )  # fmt: skip
            for z, picture in enumerate(pictures):
                want = np.ascontiguousarray(picture.chroma()[:, y0:, x0:])
                assert_same(out[:, z], want if height is None else down.reference_planes(want))


def check_batch(launch, images, out_shape, reference=None):
    """``launch(src, dst, k)`` on the K stacked images at once (gridDim.z = K) equals K launches
    of one image (and ``reference`` of each image, when given), bit for bit."""
    images = np.ascontiguousarray(images)
    batch = poisoned((len(images), *out_shape))
    launch(images, batch, len(images))
    for i, image in enumerate(images):
        single = poisoned(out_shape)
        launch(np.ascontiguousarray(image), single, 1)
        assert_same(batch[i], single)
        if reference is not None:
            assert_same(batch[i], reference(image))


@pytest.mark.parametrize("size", SIZES)
def test_2d_kernels_batched_on_blockidx_z(lib, rng, size):
    """A 2-D kernel launched with gridDim.z = K on K images stored one after another (each
    buffer, temporaries included, moves by one image per blockIdx.z) computes what K single
    launches compute."""
    h, w = size
    k = 4
    greys = rng.integers(0, 256, (k, h, w), dtype=np.uint8)
    masks = np.where(rng.random((k, h, w)) < 0.5, 255, 0).astype(np.uint8)
    levels = rng.choice(np.array([0, WEAK, 255], np.uint8), (k, h, w))
    for kernel_size, iterations in [(3, 1), (5, 2)]:
        flt = Erosion(kernel_size=kernel_size, iterations=iterations)
        erode = lambda s, d, n: lib.erode(ptr(s), ptr(poisoned(s.shape)), ptr(d), w, h, flt.radius, n, 0)
        check_batch(erode, greys, size, flt.reference)
        check_batch(erode, masks, size, flt.reference)
        keep = Erosion(kernel_size=kernel_size, iterations=iterations)
        keep.weak_level = True
        erode_weak = lambda s, d, n: lib.erode(ptr(s), ptr(poisoned(s.shape)), ptr(d), w, h, keep.radius, n, 1)
        check_batch(erode_weak, levels, size, keep.reference)
        flt = Dilation(kernel_size=kernel_size, iterations=iterations)
        dilate = lambda s, d, n: lib.dilate(ptr(s), ptr(poisoned(s.shape)), ptr(d), w, h, flt.radius, n, 0)
        check_batch(dilate, masks, size, flt.reference)
        grow = Dilation(kernel_size=kernel_size, iterations=iterations)
        grow.weak_level = True
        dilate_weak = lambda s, d, n: lib.dilate(ptr(s), ptr(poisoned(s.shape)), ptr(d), w, h, grow.radius, n, 1)
        check_batch(dilate_weak, levels, size, grow.reference)
        flt = Blur(kernel_size=kernel_size)
        blur = lambda s, d, n: lib.blur(ptr(s), ptr(poisoned(s.shape, np.uint16)), ptr(d), w, h, kernel_size // 2, n)
        check_batch(blur, greys, size, flt.reference)
        flt = Median(kernel_size=kernel_size)
        median = lambda s, d, n: lib.median(ptr(s), ptr(poisoned(s.shape, np.uint16)), ptr(d), w, h, kernel_size // 2, n)
        check_batch(median, masks, size, flt.reference)
        check_batch(median, levels, size, flt.reference)
        flt = DispersionThreshold(kernel_size=kernel_size, sigma_background=1.0, sigma_strong=0.5, threshold=0)
        dispersion = lambda s, d, n: lib.dispersion(
            ptr(s),
            ptr(poisoned(s.shape, np.uint32)),
            ptr(poisoned(s.shape, np.uint32)),
            ptr(flt.c_table),
            ptr(d),
            w,
            h,
            kernel_size // 2,
            0,
            flt.s2_q16,
            n,
        )
        check_batch(dispersion, greys, size, flt.reference)
    for height in (1, 3, 16, 1000):
        down = Downscale()
        down.params["height"] = height
        oh, ow = down.output_shape(size)
        downscale = lambda s, d, n: lib.downscale(ptr(s), ptr(d), w, h, ow, oh, n)
        check_batch(downscale, greys, (oh, ow), down.reference)
        small = np.where(rng.random((k, oh, ow)) < 0.5, 255, 0).astype(np.uint8)
        upscale = lambda s, d, n: lib.upscale(ptr(s), ptr(d), ow, oh, w, h, n)
        check_batch(upscale, small, size, lambda m: Upscale().reference(m, np.zeros((h, w, 3), np.uint8)))


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("full_range", [False, True], ids=["limited", "full"])
def test_luma_to_gray(lib, rng, size, full_range):
    """md_luma_to_gray_u8 reads padded rows (pitch > width) of K images ``image`` bytes apart
    and writes packed grey images: luma_table(full_range)[Y'] (Gray.reference_luma), and shrunk
    by Downscale's blocks (equal and unequal) that image followed by Downscale.reference."""
    h, w = size
    pitch, k = w + 7, 3
    image = pitch * h + 11
    luma = rng.integers(0, 256, k * image, dtype=np.uint8)
    table = luma_table(full_range)
    planes = [luma[z * image : z * image + h * pitch].reshape(h, pitch)[:, :w] for z in range(k)]
    out = poisoned((k, h, w))
    lib.luma_to_gray(ptr(luma), pitch, ctypes.c_longlong(image), ptr(table), ptr(out), w, h, w, h, k)
    for z, plane in enumerate(planes):
        assert_same(out[z], table[plane])
        chroma = np.full(chroma_shape(h, w), 128, np.uint8)
        assert_same(out[z], Gray().reference_luma(Picture(np.ascontiguousarray(plane), chroma, chroma, full_range)))
    single = poisoned((h, w))
    lib.luma_to_gray(ptr(luma), pitch, ctypes.c_longlong(0), ptr(table), ptr(single), w, h, w, h, 1)
    assert_same(single, out[0])
    for height in (3, 2):  # shrunk as Downscale(height) shrinks
        down = Downscale()
        down.params["height"] = height  # below the config minimum, to reach large factors on tiny frames
        oh, ow = down.output_shape((h, w))
        shrunk = poisoned((k, oh, ow))
        lib.luma_to_gray(ptr(luma), pitch, ctypes.c_longlong(image), ptr(table), ptr(shrunk), w, h, ow, oh, k)
        for z, plane in enumerate(planes):
            assert_same(shrunk[z], down.reference(table[plane]))


@pytest.mark.parametrize("size", [(1, 1), (2, 2), (7, 13), (8, 12), (13, 8), (33, 65)], ids=str)
@pytest.mark.parametrize("c_step", [1, 2], ids=["planar", "nv12"])
@pytest.mark.parametrize("full_range", [False, True], ids=["limited", "full"])
def test_red_blend_yuv(lib, rng, size, c_step, full_range):
    """md_red_blend_yuv_u8 on K random pictures (odd and even sizes, padded rows, planar or NV12
    chroma with v = u + 1) and random masks equals motiondetect.core.picture.blend_red_yuv, bit for bit,
    written as K packed I420 images."""
    h, w = size
    ch, cw = chroma_shape(h, w)
    k = 3
    y_pitch, c_pitch = w + 5, cw * c_step + 3
    y_image, c_image = y_pitch * h + 3, c_pitch * ch + 7
    luma = rng.integers(0, 256, k * y_image, dtype=np.uint8)
    if c_step == 1:
        cb, cr = rng.integers(0, 256, k * c_image, dtype=np.uint8), rng.integers(0, 256, k * c_image, dtype=np.uint8)
        v_base = 0  # Cr's offset in its buffer
    else:
        cb = cr = rng.integers(0, 256, k * c_image + 1, dtype=np.uint8)  # one interleaved CbCr plane
        v_base = 1
    u_addr, v_addr = cb.ctypes.data, cr.ctypes.data + v_base

    def picture(z):
        y = luma[z * y_image : z * y_image + h * y_pitch].reshape(h, y_pitch)[:, :w]
        at = z * c_image
        u = cb[at : at + ch * c_pitch].reshape(ch, c_pitch)[:, : cw * c_step : c_step]
        v = cr[at + v_base : at + v_base + ch * c_pitch].reshape(ch, c_pitch)[:, : cw * c_step : c_step]
        return Picture(y, u, v, full_range)

    masks = np.stack([np.where(rng.random((h, w)) < density, 255, 0).astype(np.uint8) for density in (0.5, 0.1, 1.0)])
    out_image = h * w + 2 * ch * cw
    for alpha in (0.5, 1.0, 0.2):
        lut = RedBlend(alpha=alpha).lut
        out = poisoned(k * out_image)
        lib.red_blend_yuv(
            ptr(luma),
            y_pitch,
            ctypes.c_longlong(y_image),
            ctypes.c_void_p(u_addr),
            ctypes.c_void_p(v_addr),
            c_pitch,
            c_step,
            ctypes.c_longlong(c_image),
            ptr(masks),
            ptr(lut),
            ptr(out),
            w,
            h,
            k,
            *YUV_Q16[full_range],
        )
        for z in range(k):
            blended = blend_red_yuv(masks[z], picture(z), lut)
            expected = np.concatenate([blended.y.ravel(), blended.u.ravel(), blended.v.ravel()])
            assert_same(out[z * out_image : (z + 1) * out_image], expected)


@pytest.mark.parametrize("size", SIZES)
def test_gray_bt601(lib, rng, size):
    bgr = rng.integers(0, 256, (*size, 3), dtype=np.uint8)
    out = poisoned(size)
    lib.gray_bt601(ptr(bgr), ptr(out), out.size)
    assert_same(out, Gray().reference(bgr))


SUBSENSE_PARAMS = [
    {},
    {
        "samples": 7,
        "min_matches": 3,
        "color_threshold": 4,
        "lbsp_threshold": 0.05,
        "lbsp_offset": 0,
        "dmin_frames": 3,
        "ghost_share": 0.5,
        "ghost_distance": 0.2,
        "blink_decay": 0.3,  # the steps a source at a third of the tuned rate gets (tuned_fps)
        "threshold_step": 0.03,
    },
    {"samples": 2, "min_matches": 1, "color_threshold": 255, "lbsp_threshold": 1.0, "lbsp_offset": 16, "t_lower": 1.0, "t_upper": 1.0},
    {
        "samples": 100,
        "min_matches": 100,
        "color_threshold": 1,
        "lbsp_threshold": 0.0,
        "t_lower": 4096.0,
        "t_upper": 4096.0,
        "dmin_frames": 1,
    },
]


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("params", SUBSENSE_PARAMS, ids=str)
def run_subsense(lib, frames, params):
    """Run the kernels frame after frame on ``frames`` (grey (H, W) uint8) next to the CPU
    reference and assert, after every frame, equal masks and equal models; return the masks and
    the samples just after the start."""
    from motiondetect.filters.subsense import V_INIT

    h, w = frames[0].shape
    cpu, flt = Subsense(**params), Subsense(**params)
    n, count = flt.params["samples"], h * w
    state = {
        "colours": poisoned((n, count)),
        "descs": poisoned((n, count), np.uint16),
        **{name: np.full(count, -7, np.int32) for name in ("r", "t", "v", "dmin", "savg", "dlast")},
        "last": poisoned(count),
        "last_colour": poisoned(count),
        "desc": poisoned(count, np.uint16),
    }
    pointers = [ptr(a) for a in state.values()]
    c = flt.constants()
    lib.subsense_init(ptr(frames[0]), *pointers, w, h, n, c["tr_q16"], c["t_lower_q16"], V_INIT)
    started, masks = state["colours"].copy(), []
    for i in range(1, len(frames)):
        out = poisoned((h, w))
        args = [ctypes.c_int(x) for x in flt.frame_arguments(i)]
        lib.subsense_frame(ptr(frames[i]), *pointers, ptr(poisoned(count)), ptr(out), c["ghost_s_q16"], c["ghost_d_q16"], w, h, *args)
        assert_same(out, cpu.reference(frames[i], frames[i - 1]))
        masks.append(out)
        model = cpu.model
        for name, got in state.items():
            np.testing.assert_array_equal(got, model[name].reshape(got.shape).astype(got.dtype), err_msg=f"{name} after frame {i}")
    return masks, started, state["colours"]


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("params", SUBSENSE_PARAMS, ids=str)
def test_subsense_sequence(lib, rng, size, params):
    """The three kernels, frame after frame, equal the CPU reference bit for bit: the masks and
    the whole model (samples, descriptors, R, T, v, D_min, s_avg, d_last, last decision, grey
    level and descriptor) after every frame."""
    frames = scene(rng, size, count=12)
    frames[6:9] = [frames[5]] * 3  # a still stretch: ghost statistics move
    masks, started, colours = run_subsense(lib, frames, params)
    if not params and frames[0].size > 100:  # the paper's defaults: the sequence had both decisions and sample updates
        assert 0 < np.mean(np.array(masks) == 255) < 0.5
        assert np.count_nonzero(colours != started) > frames[0].size // 10


def test_subsense_on_the_real_clip(lib, sample_frames):
    """60 frames of the bundled highway clip (320x240, cars passing): kernels == CPU reference,
    masks and models, with the preset's parameters and with fast-changing ones."""
    greys = [cv2.cvtColor(f, cv2.COLOR_BGR2GRAY) for f in sample_frames]
    for params in ({}, {"samples": 20, "t_upper": 8.0, "ghost_share": 0.5, "ghost_distance": 0.1, "dmin_frames": 8}):
        masks, started, colours = run_subsense(lib, greys, params)
        assert 0.001 < np.mean(np.array(masks[10:]) == 255) < 0.2  # the cars, not noise or nothing


class _HostArray:
    """A host array standing in for a GPUArray: ``gpudata`` is its address."""

    def __init__(self, array: np.ndarray) -> None:
        self.array = array
        self.shape, self.dtype = array.shape, array.dtype
        self.gpudata = array.ctypes.data

    def reshape(self, *shape):
        return _HostArray(self.array.reshape(*shape))


class _HostCuda:
    """The parts of CUDAHandler that Subsense.apply_kernel and queue_light_field use, running the
    emulated kernels: so the argument lists and grids they build are checked against the kernels'
    signatures on the CPU."""

    def __init__(self, lib) -> None:
        self.lib, self.buffers = lib, {}

    def buffer(self, key, shape, dtype=np.uint8):
        held = self.buffers.get(key)
        if held is None or held.shape != tuple(shape) or held.dtype != np.dtype(dtype):
            held = self.buffers[key] = _HostArray(poisoned(shape, dtype))
        return held

    def function(self, kernel, entry, arg_types, defines=None):
        try:  # a launcher on the caller's grid (size and frames)
            return getattr(self.lib, entry + "_grid"), arg_types, True
        except AttributeError:  # a launcher whose grid comes from the kernel's arguments, one image
            return getattr(self.lib, entry + "_launch"), arg_types, False

    def launch_2d(self, fn, size, *args, frames=1):
        launch, types, gridded = fn
        assert len(types) == len(args) and (gridded or frames == 1)
        values = [ctypes.c_void_p(int(a)) if t == "P" else ctypes.c_int(int(a)) for t, a in zip(types, args)]
        if gridded:
            values = [ctypes.c_int(size[1]), ctypes.c_int(size[0]), ctypes.c_int(frames), *values]
        launch(*values)


@pytest.mark.parametrize("splits", [(1,) * 12, (5, 7), (12,)], ids=str)
def test_subsense_apply_kernel_batches_on_the_real_clip(lib, sample_frames, splits):
    """Subsense.apply_kernel's launches (on the emulated kernels) in batches of K frames equal
    the CPU reference frame by frame, masks and the model, with a new stream started midway."""
    greys = [cv2.cvtColor(f, cv2.COLOR_BGR2GRAY) for f in sample_frames[:13]]
    cuda, gpu, cpu = _HostCuda(lib), Subsense(samples=12, dmin_frames=8), Subsense(samples=12, dmin_frames=8)
    for stream in range(2):
        first = 1
        for k in splits:
            src = np.ascontiguousarray(np.stack(greys[first : first + k]))
            side = np.ascontiguousarray(np.stack(greys[first - 1 : first - 1 + k]))
            out = poisoned(src.shape)
            gpu.apply_kernel(cuda, _HostArray(src), _HostArray(out), _HostArray(side))
            for j in range(k):
                assert_same(out[j], cpu.reference(greys[first + j], greys[first + j - 1]))
            first += k
        model = cpu.model
        for name in ("colours", "descs", "r", "t", "v", "dmin", "savg", "dlast", "last", "last_colour", "desc"):
            got = cuda.buffers[gpu.state_key(name)].array
            np.testing.assert_array_equal(got.reshape(model[name].shape).astype(np.int64), model[name].astype(np.int64), err_msg=name)
        gpu.reset()
        cpu.reset()


@pytest.mark.parametrize("size", [(7, 13), (33, 65), (97, 130)])
def test_queue_light_field_on_a_batch(lib, rng, size):
    """queue_light_field's four launches (their arguments and grids) on a batch of frames, each
    darkened by its own smooth gain, clear what :func:`explained` finds in every frame of it."""
    h, w = size
    texture = np.clip(130 + rng.normal(0, 30, size), 16, 240).astype(np.uint8)
    gains = [1.0, 0.6, 0.8, 1.3]
    frames = np.stack([np.clip(texture * np.linspace(1.0, g, w)[None, :], 0, 255).astype(np.uint8) for g in gains])
    means = np.stack([texture] * len(gains))
    masks = np.full(frames.shape, 255, np.uint8)
    tolerance = 12 << 16
    queue_light_field(_HostCuda(lib), lambda name: ("test", name), _HostArray(frames), _HostArray(means), _HostArray(masks), tolerance)
    for k in range(len(gains)):
        assert_same(masks[k], np.where(explained(frames[k], means[k], tolerance), 0, 255).astype(np.uint8))
    if w >= 65:
        assert all(np.mean(masks[k] == 0) > 0.3 for k in (1, 2, 3))  # every frame's light is followed
