// Median filter of a binary mask: 255 where more than half of the pixels of the square window
// of (2 * radius + 1) pixels a side are set (non-zero), else 0, with replicated borders (window
// indices clamped to the frame). For a 0/255 mask this is the median (majority vote). A mask with
// the weak level (128) is voted plane by plane, the pixels above 128 and the set pixels: 255
// where the first are the majority, else 128 where the second are, else 0 (the three-level
// median, by threshold decomposition). Two separable passes: the row pass counts both planes (at
// most 31 each: the set pixels in the low byte, those above 128 in the high byte), the column
// pass sums the counts and compares them with half the window.

#include "batch.cuh"

__global__ void md_count_rows_u8(const unsigned char* __restrict__ src,
                                 unsigned short* __restrict__ rows,
                                 int width, int height, int radius)
{
    MD_IMAGE(src, width * height);
    MD_IMAGE(rows, width * height);
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height) return;
    const unsigned char* row = src + (size_t)y * width;
    unsigned int n = 0;
    for (int i = x - radius; i <= x + radius; ++i) {
        const unsigned char v = row[min(max(i, 0), width - 1)];
        n += (v != 0) + ((v > 128) << 8);
    }
    rows[(size_t)y * width + x] = (unsigned short)n;
}

__global__ void md_majority_cols_u8(const unsigned short* __restrict__ rows,
                                    unsigned char* __restrict__ dst,
                                    int width, int height, int radius)
{
    MD_IMAGE(rows, width * height);
    MD_IMAGE(dst, width * height);
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height) return;
    unsigned int set = 0, strong = 0;
    for (int j = y - radius; j <= y + radius; ++j) {
        const unsigned int n = rows[(size_t)min(max(j, 0), height - 1) * width + x];
        set += n & 0xFF;
        strong += n >> 8;
    }
    const unsigned int side = 2 * radius + 1;
    dst[(size_t)y * width + x] = 2 * strong > side * side ? 255 : 2 * set > side * side ? 128 : 0;
}
