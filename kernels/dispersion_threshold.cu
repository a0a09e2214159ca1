// Dispersion threshold filter: the local index-of-dispersion test of X-ray spot finders
// (XDS, Kabsch 1988; DIALS "dispersion"), in exact integer arithmetic.
// Over the window of (2 * radius + 1) pixels a side clipped to the frame (n pixels, sums S1 of
// x and S2 of x^2), a pixel is set when all of:
//   x > threshold;
//   the window is over-dispersed: var / mean > 1 + n_b * sqrt(2 / (n - 1)), with the sample
//     variance var = (n S2 - S1^2) / (n (n - 1)) and mean = S1 / n, i.e.
//     (n S2 - S1^2) * 2^16 > S1 * c[n], where the host tabulates
//     c[n] = round(((n - 1) + n_b * sqrt(2 (n - 1))) * 2^16);
//   the pixel stands out: x > mean + n_s * sqrt(mean), i.e. x n - S1 > 0 and
//     (x n - S1)^2 * 2^16 > s2 * S1 * n, with s2 = round(n_s^2 * 2^16);
// and n >= 2. Products are 64-bit (at most about 2^57 for a 31 x 31 window).

#include "batch.cuh"

__global__ void md_window_sums_rows_u8(const unsigned char* __restrict__ src,
                                       unsigned int* __restrict__ sum1,
                                       unsigned int* __restrict__ sum2,
                                       int width, int height, int radius)
{
    MD_IMAGE(src, width * height);
    MD_IMAGE(sum1, width * height);
    MD_IMAGE(sum2, width * height);
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height) return;
    const unsigned char* row = src + (size_t)y * width;
    int lo = max(x - radius, 0), hi = min(x + radius, width - 1);
    unsigned int s1 = 0, s2 = 0;
    for (int i = lo; i <= hi; ++i) {
        unsigned int v = row[i];
        s1 += v;
        s2 += v * v;
    }
    sum1[(size_t)y * width + x] = s1;
    sum2[(size_t)y * width + x] = s2;
}

__global__ void md_dispersion_cols_u8(const unsigned char* __restrict__ src,
                                      const unsigned int* __restrict__ sum1,
                                      const unsigned int* __restrict__ sum2,
                                      const int* __restrict__ c_table,
                                      unsigned char* __restrict__ dst,
                                      int width, int height, int radius,
                                      int threshold, int s2_q16)
{
    MD_IMAGE(src, width * height);
    MD_IMAGE(sum1, width * height);
    MD_IMAGE(sum2, width * height);
    MD_IMAGE(dst, width * height);
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height) return;
    int lo = max(y - radius, 0), hi = min(y + radius, height - 1);
    long long s1 = 0, s2 = 0;
    for (int j = lo; j <= hi; ++j) {
        s1 += sum1[(size_t)j * width + x];
        s2 += sum2[(size_t)j * width + x];
    }
    long long n = (long long)(hi - lo + 1) * (min(x + radius, width - 1) - max(x - radius, 0) + 1);
    long long v = src[(size_t)y * width + x];
    long long excess = v * n - s1;
    int set = v > threshold && n >= 2
        && (n * s2 - s1 * s1) * 65536 > s1 * (long long)c_table[n]
        && excess > 0 && excess * excess * 65536 > (long long)s2_q16 * s1 * n;
    dst[(size_t)y * width + x] = set ? 255 : 0;
}
