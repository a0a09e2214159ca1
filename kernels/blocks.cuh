// The partition of the downscale filter (kernels/downscale.cu), which the chroma's shrink
// (md_chroma_420_blocks_u8, kernels/gray.cu) shares: output index i of n stands for the input
// indices md_block_start(i) .. md_block_start(i + 1) - 1 of size, ceil(i * size / n).
#pragma once
__device__ __forceinline__ int md_block_start(int i, int size, int n) { return (i * size + n - 1) / n; }
