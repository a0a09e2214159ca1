// Threshold filter: 255 where src > threshold, else 0 (OpenCV THRESH_BINARY semantics).
__global__ void md_threshold_u8(const unsigned char* __restrict__ src,
                                unsigned char* __restrict__ dst, int count, int threshold)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count) return;
    dst[i] = src[i] > threshold ? 255 : 0;
}
