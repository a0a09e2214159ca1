// Difference filter: per-pixel absolute difference |a - b| of two grey images (absdiff).
__global__ void md_absdiff_u8(const unsigned char* __restrict__ a,
                              const unsigned char* __restrict__ b,
                              unsigned char* __restrict__ out, int count)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count) return;
    int d = (int)a[i] - (int)b[i];
    out[i] = (unsigned char)(d < 0 ? -d : d);
}
