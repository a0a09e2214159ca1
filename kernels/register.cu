// Registration of a grey frame to the stream's first frame (the anchor) by phase correlation,
// global whole-pixel translation: the frame is windowed (Hann), transformed with cuFFT, its cross-
// power spectrum with the anchor normalised to unit magnitude, transformed back, and the peak of
// that correlation surface within +-max_shift pixels is the frame's shift (Kuglin and Hines
// 1975). Every kernel takes a batch through blockIdx.z (batch.cuh) or blockIdx.x (the peak).

#include "batch.cuh"

// dst = src * window, as float32, for the forward FFT.
__global__ void md_window_u8_f32(const unsigned char* __restrict__ src,
                                 const float* __restrict__ window,
                                 float* __restrict__ dst,
                                 int width, int height)
{
    MD_IMAGE(src, width * height);
    MD_IMAGE(dst, width * height);
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height) return;
    size_t i = (size_t)y * width + x;
    dst[i] = (float)src[i] * window[i];
}

// spectrum = spectrum * conj(anchor) / |spectrum * conj(anchor)| (0 where the product is 0),
// in place, over an image of `bins` complex values; the anchor is one spectrum for every image.
__global__ void md_cross_power_c64(float2* __restrict__ spectrum,
                                   const float2* __restrict__ anchor,
                                   int width, int height)
{
    MD_IMAGE(spectrum, width * height);
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height) return;
    size_t i = (size_t)y * width + x;
    float2 s = spectrum[i], a = anchor[i];
    float re = s.x * a.x + s.y * a.y;  // s * conj(a)
    float im = s.y * a.x - s.x * a.y;
    float mag = sqrtf(re * re + im * im);
    spectrum[i] = mag > 0.0f ? make_float2(re / mag, im / mag) : make_float2(0.0f, 0.0f);
}

// One block of MD_PEAK_THREADS threads per image (blockIdx.x): the largest value of the
// correlation surface over shifts dx, dy in [-max_shift, max_shift] (indices wrap around), ties
// to (0, 0), then to the first in row-major order of (dy, dx); NaN counts as -infinity, and a
// surface with no finite value gives (0, 0), and so does a peak that does not exceed `ratio`
// times the value at (0, 0) or does not exceed `floor` (the smallest peak height taken, on the
// unnormalised surface). Writes shift[2 * image] = dx, [.. + 1] = dy.
#define MD_PEAK_THREADS 256
__device__ __forceinline__ int md_rank(int k, int centre) { return k == centre ? -1 : k; }

__global__ void md_peak_shift_f32(const float* __restrict__ corr,
                                  int* __restrict__ shift,
                                  int width, int height, int max_shift, float ratio, float floor)
{
    __shared__ float best[MD_PEAK_THREADS];
    __shared__ int where[MD_PEAK_THREADS];
    corr += (size_t)blockIdx.x * width * height;
    int side = 2 * max_shift + 1;
    int count = side * side, centre = count / 2;
    float value = -INFINITY;
    int index = count;  // ranks after every candidate
    for (int k = threadIdx.x; k < count; k += MD_PEAK_THREADS) {
        int dy = k / side - max_shift, dx = k % side - max_shift;
        float v = corr[(size_t)((dy + height) % height) * width + (dx + width) % width];
        if (v > value || (v == value && md_rank(k, centre) < md_rank(index, centre))) { value = v; index = k; }
    }
    best[threadIdx.x] = value;
    where[threadIdx.x] = index;
    __syncthreads();
    for (int half = MD_PEAK_THREADS / 2; half > 0; half /= 2) {
        if (threadIdx.x < half) {
            float v = best[threadIdx.x + half];
            int k = where[threadIdx.x + half];
            if (v > best[threadIdx.x] || (v == best[threadIdx.x] && md_rank(k, centre) < md_rank(where[threadIdx.x], centre))) {
                best[threadIdx.x] = v;
                where[threadIdx.x] = k;
            }
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        float still = corr[0];  // the value at (0, 0)
        int k = best[0] > -INFINITY && best[0] > __fmul_rn(ratio, still) && best[0] > floor ? where[0] : centre;
        shift[2 * blockIdx.x] = k % side - max_shift;
        shift[2 * blockIdx.x + 1] = k / side - max_shift;
    }
}

// The consensus check, one block of MD_PEAK_THREADS threads per image (blockIdx.x): a shift
// other than (0, 0) stays only when at least `min_votes` of the tiles x tiles tiles agree with it.
// A tile (rows i * height / tiles .. (i + 1) * height / tiles, columns alike) agrees when its sum of absolute
// differences to the anchor, with the image read at (x + dx, y + dy) (coordinates clamped), is
// lower than the sum with the image where it is. Integer sums: the CPU reference's votes.
__global__ void md_confirm_shift_u8(const unsigned char* __restrict__ src,
                                    const unsigned char* __restrict__ anchor,
                                    int* __restrict__ shift,
                                    int width, int height, int tiles, int min_votes)
{
    __shared__ unsigned long long moved_sum[MD_PEAK_THREADS];
    __shared__ unsigned long long still_sum[MD_PEAK_THREADS];
    int dx = shift[2 * blockIdx.x], dy = shift[2 * blockIdx.x + 1];
    if (dx == 0 && dy == 0) return;  // the same for the whole block
    src += (size_t)blockIdx.x * width * height;
    int votes = 0;
    for (int tile = 0; tile < tiles * tiles; ++tile) {
        int row = tile / tiles, col = tile % tiles;
        int y0 = row * height / tiles, y1 = (row + 1) * height / tiles;
        int x0 = col * width / tiles, x1 = (col + 1) * width / tiles;
        int tile_width = x1 - x0, count = (y1 - y0) * tile_width;
        unsigned long long moved = 0, still = 0;
        for (int k = threadIdx.x; k < count; k += MD_PEAK_THREADS) {
            int y = y0 + k / tile_width, x = x0 + k % tile_width;
            int a = anchor[(size_t)y * width + x];
            int sx = min(max(x + dx, 0), width - 1), sy = min(max(y + dy, 0), height - 1);
            moved += abs((int)src[(size_t)sy * width + sx] - a);
            still += abs((int)src[(size_t)y * width + x] - a);
        }
        moved_sum[threadIdx.x] = moved;
        still_sum[threadIdx.x] = still;
        __syncthreads();
        for (int half = MD_PEAK_THREADS / 2; half > 0; half /= 2) {
            if (threadIdx.x < half) {
                moved_sum[threadIdx.x] += moved_sum[threadIdx.x + half];
                still_sum[threadIdx.x] += still_sum[threadIdx.x + half];
            }
            __syncthreads();
        }
        votes += moved_sum[0] < still_sum[0];
        __syncthreads();  // before the next tile overwrites the sums
    }
    if (threadIdx.x == 0 && votes < min_votes) {
        shift[2 * blockIdx.x] = 0;
        shift[2 * blockIdx.x + 1] = 0;
    }
}

// dst(x, y) = src(x + sign * dx, y + sign * dy) with image blockIdx.z's shift (dx, dy): sign +1
// moves a frame onto the anchor (replicate = 1: coordinates clamped to the frame, like OpenCV's
// BORDER_REPLICATE); sign -1 moves a comparison back onto the frame (replicate = 0: 0 outside).
__global__ void md_translate_u8(const unsigned char* __restrict__ src,
                                unsigned char* __restrict__ dst,
                                const int* __restrict__ shift,
                                int width, int height, int sign, int replicate)
{
    MD_IMAGE(src, width * height);
    MD_IMAGE(dst, width * height);
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height) return;
    int sx = x + sign * shift[2 * blockIdx.z], sy = y + sign * shift[2 * blockIdx.z + 1];
    unsigned char v;
    if (replicate) {
        v = src[(size_t)min(max(sy, 0), height - 1) * width + min(max(sx, 0), width - 1)];
    } else {
        v = (sx >= 0 && sx < width && sy >= 0 && sy < height) ? src[(size_t)sy * width + sx] : 0;
    }
    dst[(size_t)y * width + x] = v;
}
