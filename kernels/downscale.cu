// Downscale filter; the upscale filter (kernels/upscale.cu) undoes it. The two work on the
// same partition of the frame:
// output row i of the small image (h rows) stands for the input rows y with y * h / H == i
// (integer division), that is rows ceil(i * H / h) .. ceil((i + 1) * H / h) - 1; columns alike.
// With H = f * h these are the blocks of f rows; otherwise blocks have floor(H / h) or
// ceil(H / h) rows. Downscale averages each block (integer sum, rounded half up); upscale gives
// every pixel of a block the block's value (nearest neighbour), so it undoes the partition
// exactly. Products such as y * h stay below 2^31 for frames up to 46340 pixels a side.

#include "batch.cuh"
#include "blocks.cuh"

__global__ void md_downscale_area_u8(const unsigned char* __restrict__ src,
                                     unsigned char* __restrict__ dst,
                                     int width, int height, int out_width, int out_height)
{
    MD_IMAGE(dst, out_width * out_height);
    MD_IMAGE(src, width * height);
    int i = blockIdx.x * blockDim.x + threadIdx.x;  // output column
    int j = blockIdx.y * blockDim.y + threadIdx.y;  // output row
    if (i >= out_width || j >= out_height) return;
    const MdBlock b = md_block(i, j, width, height, out_width, out_height);
    const int x0 = b.x0, x1 = b.x1, y0 = b.y0, y1 = b.y1;
    unsigned int sum = 0;
    for (int y = y0; y < y1; ++y) {
        const unsigned char* row = src + (size_t)y * width;
        for (int x = x0; x < x1; ++x) sum += row[x];
    }
    unsigned int n = (unsigned int)((x1 - x0) * (y1 - y0));
    dst[(size_t)j * out_width + i] = (unsigned char)((sum + n / 2) / n);
}
