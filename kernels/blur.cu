// Blur filter: box (mean) filter over a square window of (2 * radius + 1) pixels a side, with
// replicated borders (a window index outside the frame is clamped to the nearest edge pixel).
// Integer sums, rounded to nearest: out = (sum + n / 2) / n with n = (2 * radius + 1)^2 (odd, so
// no ties), the same bits as the CPU reference and cv2.blur. Two separable passes; the row pass keeps exact sums in
// 16 bits (at most 31 * 255 = 7905).

#include "batch.cuh"

__global__ void md_box_rows_u8(const unsigned char* __restrict__ src,
                               unsigned short* __restrict__ rows,
                               int width, int height, int radius)
{
    MD_IMAGE(src, width * height);
    MD_IMAGE(rows, width * height);
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height) return;
    const unsigned char* row = src + (size_t)y * width;
    unsigned int sum = 0;
    for (int i = x - radius; i <= x + radius; ++i) sum += row[min(max(i, 0), width - 1)];
    rows[(size_t)y * width + x] = (unsigned short)sum;
}

__global__ void md_box_cols_u8(const unsigned short* __restrict__ rows,
                               unsigned char* __restrict__ dst,
                               int width, int height, int radius)
{
    MD_IMAGE(rows, width * height);
    MD_IMAGE(dst, width * height);
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height) return;
    unsigned int sum = 0;
    for (int j = y - radius; j <= y + radius; ++j) sum += rows[(size_t)min(max(j, 0), height - 1) * width + x];
    unsigned int n = (2 * radius + 1) * (2 * radius + 1);
    dst[(size_t)y * width + x] = (unsigned char)((sum + n / 2) / n);
}
