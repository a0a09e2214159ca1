// Erosion filter: grey-level erosion (minimum) with a square structuring element of
// (2 * radius + 1) pixels a side, as two separable passes (rows, then columns).
// Pixels outside the frame count as 255, the identity of min, which is why clamping the window
// to the frame gives the same result as cv2.erode's default constant border.
// n iterations of a k x k element equal one pass of radius n * (k - 1) / 2 (erosion by B then B
// is erosion by the Minkowski sum B + B), so the host passes that radius.
// A mask with the weak level (128, before a dilation that grows into it; levels != 0): the row
// pass writes two bits per pixel, 1 where its whole row window is set and 2 where it is all
// above 128, and the column pass ANDs them: 255 where the window is all above 128 (the foreground
// eroded), else 128 where it is all set or the pixel itself is above 128 (the weak pixels eroded,
// and the foreground the erosion removes, which the dilation may grow back into), else 0.

#include "batch.cuh"

__global__ void md_erode_rows_u8(const unsigned char* __restrict__ src,
                                 unsigned char* __restrict__ dst,
                                 int width, int height, int radius, int levels)
{
    MD_IMAGE(src, width * height);
    MD_IMAGE(dst, width * height);
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height) return;
    const unsigned char* row = src + (size_t)y * width;
    int lo = max(x - radius, 0), hi = min(x + radius, width - 1);
    unsigned char m = 255;
    if (levels) {
        m = 3;
        for (int i = lo; i <= hi; ++i) m &= (row[i] != 0) | ((row[i] > 128) << 1);
    } else {
        for (int i = lo; i <= hi; ++i) m = min(m, row[i]);
    }
    dst[(size_t)y * width + x] = m;
}

__global__ void md_erode_cols_u8(const unsigned char* __restrict__ src,
                                 const unsigned char* __restrict__ levels,
                                 unsigned char* __restrict__ dst,
                                 int width, int height, int radius)
{
    MD_IMAGE(src, width * height);
    MD_IMAGE(dst, width * height);
    if (levels != NULL) MD_IMAGE(levels, width * height);
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height) return;
    int lo = max(y - radius, 0), hi = min(y + radius, height - 1);
    const size_t at = (size_t)y * width + x;
    if (levels != NULL) {  // the row pass's bits; levels: the mask it read
        unsigned char bits = 3;
        for (int j = lo; j <= hi; ++j) bits &= src[(size_t)j * width + x];
        dst[at] = (bits & 2) ? 255 : ((bits & 1) || levels[at] > 128) ? 128 : 0;
        return;
    }
    unsigned char m = 255;
    for (int j = lo; j <= hi; ++j) m = min(m, src[(size_t)j * width + x]);
    dst[at] = m;
}
