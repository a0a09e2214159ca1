// Conversions between the uint8 images of the pipeline and the float32 matrices of the cuBLAS
// engine. Integers 0..255 and the engine's sums are exact in float32, so no rounding is lost.

__global__ void md_u8_to_f32(const unsigned char* __restrict__ src, float* __restrict__ dst, int count)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count) return;
    dst[i] = (float)src[i];
}

// floor(v + 0.5), clamped to 0..255: rounds half up, like the fixed-point kernels.
__global__ void md_f32_round_to_u8(const float* __restrict__ src, unsigned char* __restrict__ dst, int count)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count) return;
    dst[i] = (unsigned char)fminf(fmaxf(floorf(src[i] + 0.5f), 0.0f), 255.0f);
}

// |v| clamped to 0..255 (for differences, which are whole numbers).
__global__ void md_f32_abs_to_u8(const float* __restrict__ src, unsigned char* __restrict__ dst, int count)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count) return;
    dst[i] = (unsigned char)fminf(fabsf(src[i]), 255.0f);
}
