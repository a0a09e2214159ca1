// Gray filter: BT.601 luma Y = 0.299 R + 0.587 G + 0.114 B (ITU-R BT.601), rounded.
// Integer fixed point with 16 fractional bits, so the CPU reference computes the same bits:
// the weights are round(w * 65536) and sum to exactly 65536; adding 32768 rounds half up.
#include "batch.cuh"

#define MD_B2Y 7471u
#define MD_G2Y 38470u
#define MD_R2Y 19595u

// bgr: count pixels of interleaved B, G, R bytes; gray: count bytes.
__global__ void md_gray_bt601_u8(const unsigned char* __restrict__ bgr,
                                 unsigned char* __restrict__ gray, int count)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count) return;
    const unsigned char* p = bgr + 3 * (size_t)i;
    unsigned int y = p[0] * MD_B2Y + p[1] * MD_G2Y + p[2] * MD_R2Y + 32768u;
    gray[i] = (unsigned char)(y >> 16);
}

// Luma-first grey: gray = lut[Y'], the decoder's luma expanded to full range through the
// 256-entry table of motiondetect.picture.luma_table (the identity for full-range streams).
// Reads `frames` images of width x height whose rows are `pitch` bytes apart and whose images
// are `image` bytes apart (a decoder's padded surfaces, or packed planes), and writes them
// packed. One thread per pixel, blockIdx.z the image.
__global__ void md_luma_to_gray_u8(const unsigned char* __restrict__ luma, int pitch, long long image,
                                   const unsigned char* __restrict__ lut,
                                   unsigned char* __restrict__ gray, int width, int height)
{
    MD_IMAGE(luma, image);
    MD_IMAGE(gray, width * height);
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height) return;
    gray[(size_t)y * width + x] = lut[luma[(size_t)y * pitch + x]];
}
