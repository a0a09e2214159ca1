// The partition of the downscale filter (kernels/downscale.cu), which the grey and chroma
// conversions that shrink as they read (kernels/gray.cu) share: output index i of n stands for
// the input indices md_block_start(i) .. md_block_start(i + 1) - 1 of size, ceil(i * size / n).
#pragma once
__device__ __forceinline__ int md_block_start(int i, int size, int n) { return (i * size + n - 1) / n; }

// The block of output pixel (i, j) of an out_width x out_height image over a width x height one:
// columns x0 .. x1 - 1, rows y0 .. y1 - 1.
struct MdBlock {
    int x0, x1, y0, y1;
};
__device__ __forceinline__ MdBlock md_block(int i, int j, int width, int height, int out_width, int out_height)
{
    return {md_block_start(i, width, out_width), md_block_start(i + 1, width, out_width),
            md_block_start(j, height, out_height), md_block_start(j + 1, height, out_height)};
}
