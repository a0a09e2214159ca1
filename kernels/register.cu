// Registration of a grey frame to the stream's first frame (the anchor), global whole-pixel
// translation, in two steps. Phase correlation (Kuglin and Hines 1975) on the frame shrunk by 2
// each way: the 2 x 2 block sums are windowed (a Tukey window the host computes), transformed
// with cuFFT, their cross-power spectrum with the anchor's normalised to unit magnitude,
// transformed back, and the peak of that correlation surface within the coarse reach is the
// coarse shift. Then the sums of absolute differences of the full frame to the anchor (its levels
// at the frame's brightness when a gain moved that by more than 2 %), per tile, choose among the
// 3 x 3 shifts around twice the coarse one, and the tiles vote on the choice.
// Every kernel takes a batch through blockIdx.z (batch.cuh), blockIdx.y (md_register_shift_u8:
// the peak, the sums and the choice) or blockIdx.x (md_peak_shift_f32, the peak alone).

#include "batch.cuh"

// dst = the sum of src's 2 x 2 block (last row and column repeated where the size is odd) *
// window, float32, over the shrunk (coarse_height, coarse_width) image, for the forward FFT; and
// brightness[image] += the sum of those block sums (the image's brightness, which the refinement
// compares with the anchor's: the CPU reference's matched_levels), one atomic add per block, so
// brightness[image] must be 0 before (md_register_shift_u8 leaves it 0). Blocks of whole warps,
// at most MD_WINDOW_WARPS (BLOCK_2D: 8): every lane takes part in the sums.
#define MD_WINDOW_WARPS 32
__global__ void md_coarse_window_u8_f32(const unsigned char* __restrict__ src,
                                        const float* __restrict__ window,
                                        float* __restrict__ dst,
                                        unsigned long long* __restrict__ brightness,
                                        int width, int height, int coarse_width, int coarse_height)
{
    MD_IMAGE(src, width * height);
    MD_IMAGE(dst, coarse_width * coarse_height);
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    unsigned int sum = 0;
    if (x < coarse_width && y < coarse_height) {
        size_t y0 = (size_t)(2 * y) * width, y1 = (size_t)min(2 * y + 1, height - 1) * width;
        int x0 = 2 * x, x1 = min(2 * x + 1, width - 1);
        sum = src[y0 + x0] + src[y1 + x0] + src[y0 + x1] + src[y1 + x1];  // exact in float32
        size_t i = (size_t)y * coarse_width + x;
        dst[i] = (float)sum * window[i];
    }
    // The block's sum (<= 1024 * 1020), then one atomic add a block: a frame's blocks all add to
    // one address, and an add a warp took the batched register (64 frames of 426 x 240, H200) from
    // 3.23 to 3.75 us a frame; an add a block 3.31.
    __shared__ unsigned int warp_sums[MD_WINDOW_WARPS];
    const int thread = threadIdx.y * blockDim.x + threadIdx.x, warps = blockDim.x * blockDim.y / 32;
    for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
    if (thread % 32 == 0) warp_sums[thread / 32] = sum;
    __syncthreads();
    if (thread == 0) {
        unsigned int total = 0;
        for (int w = 0; w < warps; ++w) total += warp_sums[w];
        if (total) atomicAdd(&brightness[blockIdx.z], (unsigned long long)total);
    }
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

// The coarse peak: the largest value of the correlation surface over shifts dx, dy in
// [-max_shift, max_shift] (indices wrap around), ties to (0, 0), then to the first in row-major
// order of (dy, dx); NaN counts as -infinity. A peak beyond the near window (|dx| or |dy| >
// min(ceil(max_shift / 2), MD_NEAR_MAX)) that is less than `far_ratio` times the near window's
// largest value gives way to that near peak (1: the plain peak). Then a peak that does not exceed `ratio` times the
// value at (0, 0) gives (0, 0); a largest value that does not exceed `floor` (the smallest peak
// height taken, on the unnormalised surface) gives no shift at all: (dx, dy, 1), or found = 0 for
// no shift (the CPU reference's `peak_shift`). (value, rank) is a total order, so the order of
// the block's reduction does not change the result.
#define MD_PEAK_THREADS 256
#define MD_NEAR_MAX 4  // the near window's largest half-width (the CPU reference's NEAR_MAX)
__device__ __forceinline__ int md_rank(int k, int centre) { return k == centre ? -1 : k; }

// Whether (v, k) beats (value, index): larger, or equal and ranked first.
__device__ __forceinline__ bool md_beats(float v, int k, float value, int index, int centre)
{
    return v > value || (v == value && md_rank(k, centre) < md_rank(index, centre));
}

// The search itself, by a whole block of MD_PEAK_THREADS threads: the surface `corr` of one
// image; the result lands in found[0..2] (shared), the same for every thread after it returns.
__device__ void md_peak_search(const float* __restrict__ corr, int width, int height, int max_shift,
                               float ratio, float floor, float far_ratio, int* found)
{
    __shared__ float best[MD_PEAK_THREADS], near_best[MD_PEAK_THREADS];
    __shared__ int where[MD_PEAK_THREADS], near_where[MD_PEAK_THREADS];
    int side = 2 * max_shift + 1;
    int count = side * side, centre = count / 2;
    int near = min((max_shift + 1) / 2, MD_NEAR_MAX);
    float value = -INFINITY, near_value = -INFINITY;
    int index = count, near_index = count;  // rank after every candidate
    for (int k = threadIdx.x; k < count; k += MD_PEAK_THREADS) {
        int dy = k / side - max_shift, dx = k % side - max_shift;
        float v = corr[(size_t)((dy + height) % height) * width + (dx + width) % width];
        if (md_beats(v, k, value, index, centre)) { value = v; index = k; }
        if (abs(dx) <= near && abs(dy) <= near && md_beats(v, k, near_value, near_index, centre)) { near_value = v; near_index = k; }
    }
    best[threadIdx.x] = value;
    where[threadIdx.x] = index;
    near_best[threadIdx.x] = near_value;
    near_where[threadIdx.x] = near_index;
    __syncthreads();
    for (int half = MD_PEAK_THREADS / 2; half > 0; half /= 2) {
        if (threadIdx.x < half) {
            int other = threadIdx.x + half;
            if (md_beats(best[other], where[other], best[threadIdx.x], where[threadIdx.x], centre)) {
                best[threadIdx.x] = best[other];
                where[threadIdx.x] = where[other];
            }
            if (md_beats(near_best[other], near_where[other], near_best[threadIdx.x], near_where[threadIdx.x], centre)) {
                near_best[threadIdx.x] = near_best[other];
                near_where[threadIdx.x] = near_where[other];
            }
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        float peak = best[0];
        int k = where[0];
        int dy = k / side - max_shift, dx = k % side - max_shift;
        if ((abs(dx) > near || abs(dy) > near) && !(peak >= __fmul_rn(far_ratio, near_best[0]))) {
            peak = near_best[0];
            k = near_where[0];
        }
        float still = corr[0];  // the value at (0, 0)
        k = peak > __fmul_rn(ratio, still) ? k : centre;
        found[0] = k % side - max_shift;
        found[1] = k / side - max_shift;
        found[2] = best[0] > floor;
    }
    __syncthreads();
}

// The search alone, one block per image (blockIdx.x) of width x height surfaces: writes
// shift[3 * image] = dx, [.. + 1] = dy, [.. + 2] = found (md_register_shift_u8 runs the same
// search in its own blocks; this kernel lets the tests plant peaks).
__global__ void md_peak_shift_f32(const float* __restrict__ corr,
                                  int* __restrict__ shift,
                                  int width, int height, int max_shift, float ratio, float floor, float far_ratio)
{
    __shared__ int found[3];
    md_peak_search(corr + (size_t)blockIdx.x * width * height, width, height, max_shift, ratio, floor, far_ratio, found);
    if (threadIdx.x < 3) shift[3 * blockIdx.x + threadIdx.x] = found[threadIdx.x];
}

// The refinement's candidates: shifts 2 * coarse + (a, b), b and a in -1, 0, 1 (row-major), each
// coordinate clamped to +-reach, then (0, 0) (the CPU reference's `candidates`). `coarse` points
// at an image's (dx, dy, found) from md_peak_search.
#define MD_CANDIDATES 10
#define MD_CENTRE 4  // twice the coarse shift itself, the 3 x 3's centre: ties go to it
__device__ __forceinline__ int md_clamp_shift(int v, int reach) { return min(max(v, -reach), reach); }
__device__ __forceinline__ int2 md_candidate(const int* coarse, int j, int reach)
{
    if (j == MD_CANDIDATES - 1) return make_int2(0, 0);
    return make_int2(md_clamp_shift(2 * coarse[0] + j % 3 - 1, reach), md_clamp_shift(2 * coarse[1] + j / 3 - 1, reach));
}

// The shift of each image, both steps after the inverse FFT in one launch: grid
// (tiles * tiles * splits, images), MD_PEAK_THREADS threads. Every block of image k runs the
// coarse peak search on its surface `corr` (md_peak_search: each finds the same peak, 289 values
// at the default reach, so no launch waits for another); an image whose peak was not found gets
// (0, 0) and no sums. Else block (t * splits + s, k) sums |src_k(x + dx, y + dy) - anchor(x, y)|
// (coordinates clamped) over band s of `splits` row bands of tile t, for each candidate shift:
// sads[((k * tiles * tiles + t) * splits + s) * 10 + j]. Tile t holds rows i * height / tiles ..
// (i + 1) * height / tiles (i = t / tiles; columns alike with t % tiles). The image's last block
// to finish (a ticket counter per image, tickets[k], zero before and left zero: the CUDA
// programming guide's last-block pattern) adds the bands into each tile's sums (integers, the CPU
// reference's tile_sads) and makes the choice: of the 3 x 3 candidates, the lowest sum over all
// tiles (ties to the centre, then to the first in row-major order), kept when at least min_votes
// tiles have a lower sum with it than with no shift, else (0, 0) (the CPU reference's
// refine_shift). The anchor is compared at the image's brightness: levels v -> round(v *
// brightness[k] / anchor_brightness[0]) (halves up, at most 255) when the two differ by more than
// anchor_brightness[0] / gain_divisor, else as it is (the CPU reference's matched_levels);
// brightness[k] (md_coarse_window_u8_f32's) is left 0 for the next launch, as the tickets are.
// Writes shift[2 * k] = dx, [.. + 1] = dy. The bands only spread the sums over
// more blocks (the host picks `splits` to fill the GPU: 16 blocks for a single frame left most of
// it idle, 20 us a frame); any number gives the same integers. (Three launches before, the peak,
// the sums and the choice: at one frame a launch each cost more in gaps than in work.)
// tiles * tiles * 10 <= MD_PEAK_THREADS.
__global__ void md_register_shift_u8(const float* __restrict__ corr,
                                     const unsigned char* __restrict__ src,
                                     const unsigned char* __restrict__ anchor,
                                     unsigned long long* sads,
                                     unsigned int* tickets,
                                     int* __restrict__ shift,
                                     unsigned long long* brightness,
                                     const unsigned long long* __restrict__ anchor_brightness,
                                     int coarse_width, int coarse_height, int coarse_reach,
                                     float ratio, float floor, float far_ratio,
                                     int width, int height, int tiles, int splits, int reach, int min_votes,
                                     int gain_divisor)
{
    __shared__ int coarse[3];
    __shared__ unsigned char levels[256];  // the anchor's grey levels at the image's brightness
    __shared__ unsigned long long partial[MD_PEAK_THREADS / 32][MD_CANDIDATES];
    __shared__ unsigned long long tile_sums[MD_PEAK_THREADS];  // [tile][candidate]
    __shared__ unsigned long long totals[MD_CANDIDATES];
    __shared__ int last;
    const int tile = blockIdx.x / splits, band = blockIdx.x % splits, image = blockIdx.y;
    const int count_tiles = tiles * tiles;
    md_peak_search(corr + (size_t)image * coarse_width * coarse_height, coarse_width, coarse_height, coarse_reach, ratio, floor,
                   far_ratio, coarse);
    if (!coarse[2]) {  // not registered: every block of the image returns here
        if (blockIdx.x == 0 && threadIdx.x < 2) shift[2 * image + threadIdx.x] = 0;
        if (blockIdx.x == 0 && threadIdx.x == 0) brightness[image] = 0;  // no block reads it
        return;
    }
    const unsigned long long seen = brightness[image], anchored = anchor_brightness[0];
    const bool scale = anchored > 0 && (unsigned long long)gain_divisor * (unsigned long long)llabs((long long)seen - (long long)anchored) > anchored;
    if (scale) {  // the same for every thread of the block: all reach the barrier or none
        for (int v = threadIdx.x; v < 256; v += MD_PEAK_THREADS) {
            levels[v] = (unsigned char)min((2ULL * v * seen + anchored) / (2ULL * anchored), 255ULL);
        }
        __syncthreads();
    }
    src += (size_t)image * width * height;
    sads += (size_t)image * count_tiles * splits * MD_CANDIDATES;
    int2 candidate[MD_CANDIDATES];
    for (int j = 0; j < MD_CANDIDATES; ++j) candidate[j] = md_candidate(coarse, j, reach);
    int row = tile / tiles, col = tile % tiles;
    int y0 = row * height / tiles, y1 = (row + 1) * height / tiles;
    int x0 = col * width / tiles, x1 = (col + 1) * width / tiles;
    int b0 = y0 + band * (y1 - y0) / splits, b1 = y0 + (band + 1) * (y1 - y0) / splits;
    int tile_width = x1 - x0, count = (b1 - b0) * tile_width;
    unsigned long long sum[MD_CANDIDATES] = {0};
    for (int k = threadIdx.x; k < count; k += MD_PEAK_THREADS) {
        int y = b0 + k / tile_width, x = x0 + k % tile_width;
        int a = anchor[(size_t)y * width + x];
        if (scale) a = levels[a];
#pragma unroll
        for (int j = 0; j < MD_CANDIDATES; ++j) {
            int sx = min(max(x + candidate[j].x, 0), width - 1), sy = min(max(y + candidate[j].y, 0), height - 1);
            sum[j] += abs((int)src[(size_t)sy * width + sx] - a);
        }
    }
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
    for (int j = 0; j < MD_CANDIDATES; ++j) {
        for (int offset = 16; offset > 0; offset /= 2) sum[j] += __shfl_down_sync(0xffffffffu, sum[j], offset);
        if (lane == 0) partial[warp][j] = sum[j];
    }
    __syncthreads();
    if (threadIdx.x < MD_CANDIDATES) {
        unsigned long long total = 0;
        for (int w = 0; w < MD_PEAK_THREADS / 32; ++w) total += partial[w][threadIdx.x];
        sads[blockIdx.x * MD_CANDIDATES + threadIdx.x] = total;
        __threadfence();  // the sums reach the device before the ticket says so
    }
    __syncthreads();
    if (threadIdx.x == 0) last = atomicAdd(&tickets[image], 1u) == gridDim.x - 1;
    __syncthreads();
    if (!last) return;
    __threadfence();
    const int t = threadIdx.x / MD_CANDIDATES, j = threadIdx.x % MD_CANDIDATES;
    if (t < count_tiles) {  // tile t's sum for candidate j over its bands, read from L2 (__ldcg)
        unsigned long long total = 0;
        for (int s = 0; s < splits; ++s) total += __ldcg(&sads[(t * splits + s) * MD_CANDIDATES + j]);
        tile_sums[threadIdx.x] = total;
    }
    __syncthreads();
    if (threadIdx.x < MD_CANDIDATES) {
        unsigned long long total = 0;
        for (int u = 0; u < count_tiles; ++u) total += tile_sums[u * MD_CANDIDATES + threadIdx.x];
        totals[threadIdx.x] = total;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        tickets[image] = 0;  // for the next launch
        brightness[image] = 0;  // every block has read it: each took its ticket after
        int best = MD_CENTRE;
        for (int c = 0; c < MD_CANDIDATES - 1; ++c) {
            if (totals[c] < totals[best]) best = c;  // strict: ties keep the centre, then the earlier
        }
        int votes = 0;
        for (int u = 0; u < count_tiles; ++u) {
            votes += tile_sums[u * MD_CANDIDATES + best] < tile_sums[u * MD_CANDIDATES + MD_CANDIDATES - 1];
        }
        int2 chosen = md_candidate(coarse, best, reach);
        if ((chosen.x == 0 && chosen.y == 0) || votes < min_votes) chosen = make_int2(0, 0);
        shift[2 * image] = chosen.x;
        shift[2 * image + 1] = chosen.y;
    }
}

// dst(x, y) = src(x + sign * dx, y + sign * dy) with the shift (dx, dy) of frame z % period,
// z the image: sign +1 moves a frame onto the anchor (replicate = 1: coordinates clamped to the
// frame, like OpenCV's BORDER_REPLICATE); sign -1 moves a comparison back onto the frame
// (replicate = 0: 0 outside). period = the number of frames, or K for planes laid out (P, K):
// the chroma's Cb planes of the K frames, then their Cr planes. Images from `images` on are
// read from planes_src and written to planes_dst (numbered from 0 there), so the K grey frames
// and their chroma planes move in one launch; images = gridDim.z when there are none.
__global__ void md_translate_u8(const unsigned char* __restrict__ src,
                                unsigned char* __restrict__ dst,
                                const int* __restrict__ shift,
                                int width, int height, int sign, int replicate, int period,
                                int images, const unsigned char* __restrict__ planes_src,
                                unsigned char* __restrict__ planes_dst)
{
    int z = blockIdx.z;
    if (z >= images) {
        src = planes_src;
        dst = planes_dst;
        z -= images;
    }
    src += (size_t)z * width * height;
    dst += (size_t)z * width * height;
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height) return;
    int frame = z % period;
    int sx = x + sign * shift[2 * frame], sy = y + sign * shift[2 * frame + 1];
    unsigned char v;
    if (replicate) {
        v = src[(size_t)min(max(sy, 0), height - 1) * width + min(max(sx, 0), width - 1)];
    } else {
        v = (sx >= 0 && sx < width && sy >= 0 && sy < height) ? src[(size_t)sy * width + sx] : 0;
    }
    dst[(size_t)y * width + x] = v;
}
