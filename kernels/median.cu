// Median filter of a binary mask: 255 where more than half of the pixels of the square window
// of (2 * radius + 1) pixels a side are set (non-zero), else 0, with replicated borders (window
// indices clamped to the frame). For a 0/255 mask this is the median (majority vote). Two
// separable passes: the row pass counts set pixels (at most 31, one byte), the column pass sums
// the counts and compares with half the window.

#include "batch.cuh"

__global__ void md_count_rows_u8(const unsigned char* __restrict__ src,
                                 unsigned char* __restrict__ rows,
                                 int width, int height, int radius)
{
    MD_IMAGE(src, width * height);
    MD_IMAGE(rows, width * height);
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height) return;
    const unsigned char* row = src + (size_t)y * width;
    unsigned int n = 0;
    for (int i = x - radius; i <= x + radius; ++i) n += row[min(max(i, 0), width - 1)] != 0;
    rows[(size_t)y * width + x] = (unsigned char)n;
}

__global__ void md_majority_cols_u8(const unsigned char* __restrict__ rows,
                                    unsigned char* __restrict__ dst,
                                    int width, int height, int radius)
{
    MD_IMAGE(rows, width * height);
    MD_IMAGE(dst, width * height);
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height) return;
    unsigned int n = 0;
    for (int j = y - radius; j <= y + radius; ++j) n += rows[(size_t)min(max(j, 0), height - 1) * width + x];
    unsigned int side = 2 * radius + 1;
    dst[(size_t)y * width + x] = 2 * n > side * side ? 255 : 0;
}
