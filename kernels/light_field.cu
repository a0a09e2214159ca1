// Light field: foreground that a smooth gain over the background explains (a cloud's shadow, a
// sunlit patch) is background. The CPU reference is motiondetect/filters/light_field.py; its
// docstring gives the method and the sources. Integer arithmetic throughout, so both compute the
// same bits. Four launches a batch, none of whose threads cooperate: K frames of H x W pixels at
// x (the frame's grey levels), b (the background mean each was compared with, rounded) and mask
// (the model's output, changed in place), one after another; the block grid of each frame is
// blocks_y x blocks_x blocks of LF_BLOCK x LF_BLOCK pixels (the last row and column partial).
#include "batch.cuh"

#define LF_BLOCK 8            // side of a block, pixels
#define LF_RADIUS 2           // the correlation window is 5 x 5
#define LF_SPREAD 2           // the block grid is smoothed over 5 x 5 blocks
#define LF_MIN_EVIDENCE 8     // evidence pixels a block needs for a gain of its own
#define LF_UNKNOWN (-1)       // a pixel that is no evidence, a block without a gain

// cv2.BORDER_REFLECT (fedcba|abcdef), for windows that reach past the edge.
__device__ __forceinline__ int md_reflect(int i, int n)
{
    if (n == 1) return 0;
    while (i < 0 || i >= n) i = i < 0 ? -i - 1 : 2 * n - i - 1;
    return i;
}

// Step 1, a thread per pixel: the Q8 ratio round(256 x / b) where the pixel is evidence (the
// frame and the background correlate over the 5 x 5 window: Pearson r >= 0.9, i.e. cov > 0 and
// 100 cov^2 >= 81 var_x var_b with every moment times 25^2 so that it is an integer; the
// background's window has a standard deviation of at least 3 grey levels, the frame's 1.5;
// b >= 16 and 1 <= x <= 254), else LF_UNKNOWN, into ratio (int, K x H x W).
__global__ void md_light_field_ratio_u8(const unsigned char* __restrict__ x, const unsigned char* __restrict__ b,
                                        int* __restrict__ ratio, int width, int height)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y * blockDim.y + threadIdx.y;
    if (col >= width || row >= height) return;
    size_t plane = (size_t)width * height;
    MD_IMAGE(x, plane);
    MD_IMAGE(b, plane);
    MD_IMAGE(ratio, plane);
    const int i = row * width + col, xi = x[i], bi = b[i];
    int out = LF_UNKNOWN;
    if (bi >= 16 && xi >= 1 && xi <= 254) {
        long long sx = 0, sb = 0, sxx = 0, sbb = 0, sxb = 0;
        for (int dy = -LF_RADIUS; dy <= LF_RADIUS; ++dy) {
            const int r = md_reflect(row + dy, height) * width;
            for (int dx = -LF_RADIUS; dx <= LF_RADIUS; ++dx) {
                const int j = r + md_reflect(col + dx, width), u = x[j], v = b[j];
                sx += u; sb += v; sxx += u * u; sbb += v * v; sxb += u * v;
            }
        }
        const long long n = (2 * LF_RADIUS + 1) * (2 * LF_RADIUS + 1);
        const long long vx = n * sxx - sx * sx, vb = n * sbb - sb * sb, cov = n * sxb - sx * sb;
        if (vb >= 9 * n * n && 4 * vx >= 9 * n * n && cov > 0 && 100 * cov * cov >= 81 * vx * vb)
            out = (xi * 256 + bi / 2) / bi;
    }
    ratio[i] = out;
}

// Step 2, a thread per block: the lower median of its evidence ratios (the ((n - 1) / 2)-th
// smallest of n), when n >= LF_MIN_EVIDENCE, else LF_UNKNOWN, into gain (int, K x blocks_y x
// blocks_x, Q8).
__global__ void md_light_field_blocks(const int* __restrict__ ratio, int* __restrict__ gain, int width, int height,
                                      int blocks_x, int blocks_y)
{
    int bx = blockIdx.x * blockDim.x + threadIdx.x, by = blockIdx.y * blockDim.y + threadIdx.y;
    if (bx >= blocks_x || by >= blocks_y) return;
    MD_IMAGE(ratio, (size_t)width * height);
    MD_IMAGE(gain, (size_t)blocks_x * blocks_y);
    int values[LF_BLOCK * LF_BLOCK], n = 0;
    for (int row = by * LF_BLOCK; row < min(height, (by + 1) * LF_BLOCK); ++row) {
        for (int col = bx * LF_BLOCK; col < min(width, (bx + 1) * LF_BLOCK); ++col) {
            const int r = ratio[row * width + col];
            if (r == LF_UNKNOWN) continue;
            int at = n++;  // insertion sort: n is at most 64
            while (at > 0 && values[at - 1] > r) { values[at] = values[at - 1]; --at; }
            values[at] = r;
        }
    }
    gain[by * blocks_x + bx] = n >= LF_MIN_EVIDENCE ? values[(n - 1) / 2] : LF_UNKNOWN;
}

// Step 3, a thread per block: the lower median of the known gains in the 5 x 5 blocks around it
// (the grid's edge blocks repeated past its edge, as numpy.pad's "edge" mode), or 256 (a gain of
// 1) when none is known, into smooth (int, K x blocks_y x blocks_x, Q8).
__global__ void md_light_field_smooth(const int* __restrict__ gain, int* __restrict__ smooth, int blocks_x, int blocks_y)
{
    int bx = blockIdx.x * blockDim.x + threadIdx.x, by = blockIdx.y * blockDim.y + threadIdx.y;
    if (bx >= blocks_x || by >= blocks_y) return;
    const size_t plane = (size_t)blocks_x * blocks_y;
    MD_IMAGE(gain, plane);
    MD_IMAGE(smooth, plane);
    int values[(2 * LF_SPREAD + 1) * (2 * LF_SPREAD + 1)], n = 0;
    for (int dy = -LF_SPREAD; dy <= LF_SPREAD; ++dy) {
        const int r = min(max(by + dy, 0), blocks_y - 1);
        for (int dx = -LF_SPREAD; dx <= LF_SPREAD; ++dx) {
            const int g = gain[r * blocks_x + min(max(bx + dx, 0), blocks_x - 1)];
            if (g == LF_UNKNOWN) continue;
            int at = n++;
            while (at > 0 && values[at - 1] > g) { values[at] = values[at - 1]; --at; }
            values[at] = g;
        }
    }
    smooth[by * blocks_x + bx] = n > 0 ? values[(n - 1) / 2] : 256;
}

// The grid cells and weights (sixteenths) that cv2.resize's INTER_LINEAR gives pixel i when it
// enlarges n cells LF_BLOCK times: the source coordinate (i + 1/2) / 8 - 1/2 = (2i - 7) / 16.
__device__ __forceinline__ void md_light_field_taps(int i, int n, int* c0, int* c1, int* w1)
{
    const int t = 2 * i - (LF_BLOCK - 1);              // the coordinate in sixteenths
    int c = t >= 0 ? t / 16 : -1, f = t - 16 * c;       // floor and fraction
    if (c < 0) { c = 0; f = 0; }
    if (c >= n - 1) { c = n - 1; f = 0; }
    *c0 = c; *c1 = min(c + 1, n - 1); *w1 = f;
}

// Step 4, a thread per pixel: the gain g (Q16) interpolated bilinearly between the centres of the
// smoothed blocks; a foreground pixel with |x - g b| <= tolerance (Q16 grey levels) and
// |g - 1| >= min_change (Q16) becomes background (0) in mask.
__global__ void md_light_field_veto_u8(const unsigned char* __restrict__ x, const unsigned char* __restrict__ b,
                                       const int* __restrict__ smooth, unsigned char* __restrict__ mask,
                                       int width, int height, int blocks_x, int blocks_y, int tolerance, int min_change)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y * blockDim.y + threadIdx.y;
    if (col >= width || row >= height) return;
    size_t plane = (size_t)width * height;
    MD_IMAGE(x, plane);
    MD_IMAGE(b, plane);
    MD_IMAGE(mask, plane);
    MD_IMAGE(smooth, (size_t)blocks_x * blocks_y);
    const int i = row * width + col;
    if (mask[i] == 0) return;
    int y0, y1, fy, x0, x1, fx;
    md_light_field_taps(row, blocks_y, &y0, &y1, &fy);
    md_light_field_taps(col, blocks_x, &x0, &x1, &fx);
    const int top = (16 - fx) * smooth[y0 * blocks_x + x0] + fx * smooth[y0 * blocks_x + x1];
    const int bottom = (16 - fx) * smooth[y1 * blocks_x + x0] + fx * smooth[y1 * blocks_x + x1];
    const long long g = (long long)(16 - fy) * top + (long long)fy * bottom;  // Q8 * 256 = Q16
    const long long miss = ((long long)x[i] << 16) - g * b[i];
    if ((miss < 0 ? -miss : miss) <= tolerance && (g - 65536 < 0 ? 65536 - g : g - 65536) >= min_change) mask[i] = 0;
}
