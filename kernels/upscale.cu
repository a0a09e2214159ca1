// Upscale filter: brings a mask made after the downscale filter back to the frame's size.
// Pixel (x, y) of the W x H output takes the value of pixel (x * w / W, y * h / H) of the
// w x h input (integer division): the block of kernels/downscale.cu that the pixel belongs to,
// so the pair undoes the partition exactly (nearest neighbour). Products stay below 2^31 for
// frames up to 46340 pixels a side.

#include "batch.cuh"

__global__ void md_upscale_nearest_u8(const unsigned char* __restrict__ src,
                                      unsigned char* __restrict__ dst,
                                      int in_width, int in_height, int width, int height)
{
    MD_IMAGE(dst, width * height);
    MD_IMAGE(src, in_width * in_height);
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height) return;
    int i = x * in_width / width, j = y * in_height / height;
    dst[(size_t)y * width + x] = src[(size_t)j * in_width + i];
}
