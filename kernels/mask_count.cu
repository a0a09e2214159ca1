// Count the non-zero pixels of a mask, for the motion fraction: a grid-stride loop, a warp
// reduction with shuffles, then one 64-bit atomicAdd per warp. *total must be zeroed first.
__global__ void md_count_nonzero_u8(const unsigned char* __restrict__ mask, int count,
                                    unsigned long long* total)
{
    unsigned int local = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x)
        local += mask[i] != 0;
    for (int offset = 16; offset > 0; offset >>= 1)
        local += __shfl_down_sync(0xffffffffu, local, offset);
    if ((threadIdx.x & 31) == 0 && local) atomicAdd(total, (unsigned long long)local);
}
