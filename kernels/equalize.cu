// Equalize filter: histogram equalization of a grey image, the same function as
// cv2.equalizeHist, in three kernels.
//
// 1. md_histogram_u8: a 256-bin histogram per block in shared memory (shared atomicAdd), then
//    one global atomicAdd per non-empty bin (a grid-stride loop: any grid size works). The
//    global histogram must be zeroed before the launch.
// 2. md_equalize_lut: one thread builds the 256-entry table with OpenCV's formula: with i0 the
//    lowest grey level present, lut[i0] = 0 and lut[i] = rint(cdf'(i) * scale) for i > i0, where
//    cdf'(i) = hist[i0 + 1] + ... + hist[i] and scale = 255.f / (total - hist[i0]), in float32
//    (the default -prec-div=true makes "/" correctly rounded, as on the CPU; __fmul_rn forbids
//    contraction); rint is round-half-even, OpenCV's cvRound. A constant image maps to itself.
// 3. md_apply_lut_u8: dst[i] = lut[src[i]].

#define MD_BINS 256

__global__ void md_histogram_u8(const unsigned char* __restrict__ src, int count,
                                unsigned int* __restrict__ hist)
{
    __shared__ unsigned int local[MD_BINS];
    for (int b = threadIdx.x; b < MD_BINS; b += blockDim.x) local[b] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x)
        atomicAdd(&local[src[i]], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < MD_BINS; b += blockDim.x)
        if (local[b]) atomicAdd(&hist[b], local[b]);
}

__global__ void md_equalize_lut(const unsigned int* __restrict__ hist, int total,
                                unsigned char* __restrict__ lut)
{
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    int i = 0;
    while (i < MD_BINS - 1 && hist[i] == 0) ++i;
    if ((int)hist[i] == total) {                 // a constant image: every pixel stays i
        for (int b = 0; b < MD_BINS; ++b) lut[b] = (unsigned char)i;
        return;
    }
    float scale = 255.0f / (float)(total - (int)hist[i]);
    for (int b = 0; b <= i; ++b) lut[b] = 0;     // levels below i0 do not occur
    int sum = 0;
    for (int b = i + 1; b < MD_BINS; ++b) {
        sum += (int)hist[b];
        float v = rintf(__fmul_rn((float)sum, scale));
        lut[b] = (unsigned char)fminf(fmaxf(v, 0.0f), 255.0f);
    }
}

__global__ void md_apply_lut_u8(const unsigned char* __restrict__ src,
                                const unsigned char* __restrict__ lut,
                                unsigned char* __restrict__ dst, int count)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count) return;
    dst[i] = lut[src[i]];
}
