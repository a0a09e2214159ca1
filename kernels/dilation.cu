// Dilation filter: grey-level dilation (maximum) with a square structuring element of
// (2 * radius + 1) pixels a side, as two separable passes (rows, then columns).
// Pixels outside the frame count as 0, the identity of max, which is why clamping the window to
// the frame gives the same result as cv2.dilate's default border.
// n iterations of a k x k element equal one pass of radius n * (k - 1) / 2 (dilation by B then B
// is dilation by the Minkowski sum B + B), so the host passes that radius.
// Growing into the weak level (a background model's 128, kernels/gaussian_background.cu): the row
// pass reads the pixels above 128 as 255 and the others as 0 (`strong`), and the column pass
// keeps the result only where `gate`, the input, is set (not NULL: the dilation grows the
// foreground into the weak pixels alone, and writes 0 or 255).

#include "batch.cuh"

__global__ void md_dilate_rows_u8(const unsigned char* __restrict__ src,
                                  unsigned char* __restrict__ dst,
                                  int width, int height, int radius, int strong)
{
    MD_IMAGE(src, width * height);
    MD_IMAGE(dst, width * height);
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height) return;
    const unsigned char* row = src + (size_t)y * width;
    int lo = max(x - radius, 0), hi = min(x + radius, width - 1);
    unsigned char m = 0;
    if (strong) {
        for (int i = lo; i <= hi; ++i) m = max(m, (unsigned char)(row[i] > 128 ? 255 : 0));
    } else {
        for (int i = lo; i <= hi; ++i) m = max(m, row[i]);
    }
    dst[(size_t)y * width + x] = m;
}

__global__ void md_dilate_cols_u8(const unsigned char* __restrict__ src,
                                  const unsigned char* __restrict__ gate,
                                  unsigned char* __restrict__ dst,
                                  int width, int height, int radius)
{
    MD_IMAGE(src, width * height);
    MD_IMAGE(dst, width * height);
    if (gate != NULL) MD_IMAGE(gate, width * height);
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height) return;
    int lo = max(y - radius, 0), hi = min(y + radius, height - 1);
    unsigned char m = 0;
    for (int j = lo; j <= hi; ++j) m = max(m, src[(size_t)j * width + x]);
    dst[(size_t)y * width + x] = gate == NULL || gate[(size_t)y * width + x] != 0 ? m : 0;
}
