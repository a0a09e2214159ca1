// SuBSENSE-family background model (St-Charles, Bilodeau, Bergevin, IEEE TIP 2015): per pixel,
// N samples of grey level and LBSP texture, a sample-consensus decision, and a distance
// threshold R(x) and update period T(x) driven by the dynamic-background measure D_min(x) and
// the blinking accumulator v(x). The CPU reference (motiondetect/filters/subsense.py) defines
// the arithmetic; everything here is integer, so the two agree bit for bit:
//   R, T, v, D_min in Q16 (value * 2^16, int); 64-bit products and quotients of non-negative
//   values (C truncation = NumPy's floor); ">>" of a negative 64-bit value is an arithmetic
//   shift (floor) in nvcc, as in NumPy; adding 2^15 before ">> 16" rounds half up.
// Randomness is a counter-based hash of (frame pair, pixel index, purpose), md_hash below.
//
// Buffers: samples are planar, sample n of pixel i at [n * count + i] (count = width * height),
// so a warp reads consecutive bytes of one sample plane.

#define MD_SUBSENSE_Q16 65536

// murmur3's 32-bit finaliser (Appleby, MurmurHash3 fmix32): a bijection with full avalanche.
__device__ __forceinline__ unsigned int md_fmix32(unsigned int h)
{
    h ^= h >> 16;
    h *= 0x85EBCA6Bu;
    h ^= h >> 13;
    h *= 0xC2B2AE35u;
    h ^= h >> 16;
    return h;
}

// The random number of (frame, pixel, purpose): the same function as counter_hash() in
// subsense.py (unsigned 32-bit arithmetic, wrapping).
__device__ __forceinline__ unsigned int md_hash(unsigned int frame, unsigned int pixel, unsigned int purpose)
{
    return md_fmix32(pixel * 0x9E3779B1u + md_fmix32(frame * 0x632BE5ABu + purpose));
}

// Bits set in a 16-bit word (portable: the same code runs in the host emulation of the tests).
__device__ __forceinline__ int md_popcount16(unsigned int x)
{
    x = x - ((x >> 1) & 0x5555u);
    x = (x & 0x3333u) + ((x >> 2) & 0x3333u);
    x = (x + (x >> 4)) & 0x0F0Fu;
    return (int)((x + (x >> 8)) & 0x1Fu);
}

// The 16-point LBSP pattern in a 5x5 window (Bilodeau et al. 2013): the 8 neighbours at
// distance 1, then the 8 at distance 2 along the rows, columns and diagonals; bit k of the
// descriptor is pattern point k. Must match LBSP_PATTERN in subsense.py.
__device__ __forceinline__ unsigned int md_lbsp(const unsigned char* __restrict__ img, int x, int y, int width, int height, int tr_q16)
{
    const int dy[16] = {-1, -1, -1, 0, 0, 1, 1, 1, -2, -2, -2, 0, 0, 2, 2, 2};
    const int dx[16] = {-1, 0, 1, -1, 1, -1, 0, 1, -2, 0, 2, -2, 2, -2, 0, 2};
    int centre = img[y * width + x];
    int threshold = (centre * tr_q16 + 32768) >> 16;  // round(T_r * centre), half up
    unsigned int desc = 0;
    for (int k = 0; k < 16; ++k) {
        int yy = min(max(y + dy[k], 0), height - 1), xx = min(max(x + dx[k], 0), width - 1);
        int d = (int)img[yy * width + xx] - centre;
        desc |= (unsigned int)((d < 0 ? -d : d) > threshold) << k;
    }
    return desc;
}

// Start the model from the stream's first frame: sample n of pixel (x, y) is the grey level and
// LBSP descriptor of the 3x3 neighbour picked by md_hash(0, i, 2 + n) % 9 (clamped at the
// borders); R = 1, T = t_lower, v = v_init, D_min = s_avg = d_last = 0, no pixel foreground,
// and the first frame is the "last" frame (grey level and descriptor) of the next comparison.
__global__ void md_subsense_init_u8(const unsigned char* __restrict__ reference,
                                    unsigned char* __restrict__ colours,
                                    unsigned short* __restrict__ descs,
                                    int* __restrict__ r, int* __restrict__ t, int* __restrict__ v, int* __restrict__ dmin,
                                    int* __restrict__ savg, int* __restrict__ dlast,
                                    unsigned char* __restrict__ last,
                                    unsigned char* __restrict__ last_colour,
                                    unsigned short* __restrict__ desc,
                                    int width, int height, int samples, int tr_q16, int t_lower_q16, int v_init_q16)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height) return;
    int i = y * width + x, count = width * height;
    for (int n = 0; n < samples; ++n) {
        unsigned int k = md_hash(0u, (unsigned int)i, 2u + (unsigned int)n) % 9u;
        int yy = min(max(y + (int)(k / 3u) - 1, 0), height - 1), xx = min(max(x + (int)(k % 3u) - 1, 0), width - 1);
        colours[(size_t)n * count + i] = reference[yy * width + xx];
        descs[(size_t)n * count + i] = (unsigned short)md_lbsp(reference, xx, yy, width, height, tr_q16);
    }
    r[i] = MD_SUBSENSE_Q16;
    t[i] = t_lower_q16;
    v[i] = v_init_q16;
    dmin[i] = 0;
    savg[i] = 0;
    dlast[i] = 0;
    last[i] = 0;
    last_colour[i] = reference[i];
    desc[i] = (unsigned short)md_lbsp(reference, x, y, width, height, tr_q16);
}

// The normalised distance (|a - b| / 255 + hamming / 16) / 2 in units of 1 / 8160.
__device__ __forceinline__ int md_distance(int c, int h)
{
    return 16 * c + 255 * h;
}

// One frame, phase 1: compare each pixel with its samples (foreground when fewer than
// min_matches samples lie within R_color in grey level and R_lbsp in LBSP Hamming distance),
// update D_min, T, v and R (SuBSENSE's feedback loop; formulas in subsense.py) and
// the ghost statistics s_avg and d_last, replace one of the pixel's own samples with
// probability 1/T where it is background, and record in push[i] the neighbour this pixel's value
// may spread to: direction 0..7 in bits 0..2, bit 3 set when drawn with probability 1/T (else it
// was drawn with probability 1/t_lower and only a ghost pixel takes it), 255 for none.
// Each thread reads and writes only its own pixel's model, so threads never race.
__global__ void md_subsense_classify_u8(const unsigned char* __restrict__ src,
                                        unsigned char* __restrict__ colours,
                                        unsigned short* __restrict__ descs,
                                        int* __restrict__ r, int* __restrict__ t, int* __restrict__ v, int* __restrict__ dmin,
                                        int* __restrict__ savg, int* __restrict__ dlast,
                                        unsigned char* __restrict__ last,
                                        unsigned char* __restrict__ last_colour,
                                        unsigned short* __restrict__ desc_io,
                                        unsigned char* __restrict__ push,
                                        unsigned char* __restrict__ dst,
                                        int width, int height, int samples, int min_matches, int pair,
                                        int tr_q16, int color_r0, int lbsp_r0, int alpha_q16, int alpha_st_q16,
                                        int t_lower_q16, int t_upper_q16, int t_incr_q16, int t_decr_q16,
                                        int v_incr_q16, int v_decr_q16, int v_decay_q16, int v_max_q16, int r_var_q16,
                                        int blink_dmin_q16)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height) return;
    int i = y * width + x, count = width * height;
    int pixel = src[i];
    unsigned int desc = md_lbsp(src, x, y, width, height, tr_q16);
    int rr = r[i], tt = t[i], vv = v[i], dd = dmin[i];

    // Sample consensus: thresholds from R(x), R_color = floor(R * R0_color) and
    // R_lbsp = 2^round(R) + R0_lbsp.
    int r_color = (int)(((long long)rr * color_r0) >> 16);
    int shift = min((rr + 32768) >> 16, 16);
    int r_lbsp = (1 << shift) + lbsp_r0;
    int matches = 0, best = md_distance(255, 16);
    for (int n = 0; n < samples; ++n) {
        size_t at = (size_t)n * count + i;
        int c = (int)colours[at] - pixel;
        c = c < 0 ? -c : c;
        int h = md_popcount16(desc ^ (unsigned int)descs[at]);
        matches += (c <= r_color && h <= r_lbsp);
        best = min(best, md_distance(c, h));
    }
    int foreground = matches < min_matches;
    dst[i] = foreground ? 255 : 0;

    // Model update with probability 1 / T(x) (the T of the previous frame), background only.
    unsigned char spread = 255;
    if (!foreground) {
        unsigned int own = md_hash((unsigned int)pair, (unsigned int)i, 0u);
        if ((unsigned long long)(own & 0xFFFFu) * (unsigned long long)tt < (1ULL << 32)) {
            size_t at = (size_t)((own >> 16) % (unsigned int)samples) * count + i;
            colours[at] = (unsigned char)pixel;
            descs[at] = (unsigned short)desc;
        }
        unsigned int nb = md_hash((unsigned int)pair, (unsigned int)i, 1u);
        unsigned long long u = nb & 0xFFFFu;
        if (u * (unsigned long long)t_lower_q16 < (1ULL << 32))
            spread = (unsigned char)(((nb >> 16) & 7u) | (u * (unsigned long long)tt < (1ULL << 32) ? 8u : 0u));
    }
    push[i] = spread;

    // Ghost statistics: s_avg, the running share of foreground decisions, and d_last, the
    // running normalised distance to the last frame, both at the short-term rate.
    int c_last = pixel - (int)last_colour[i];
    c_last = c_last < 0 ? -c_last : c_last;
    int d_last = md_distance(c_last, md_popcount16(desc ^ (unsigned int)desc_io[i]));
    int dl_q16 = (int)(((long long)d_last * 65536 + 4080) / 8160);
    int sa = savg[i], dl = dlast[i];
    sa += (int)(((long long)((foreground ? MD_SUBSENSE_Q16 : 0) - sa) * alpha_st_q16 + 32768) >> 16);
    dl += (int)(((long long)(dl_q16 - dl) * alpha_st_q16 + 32768) >> 16);
    savg[i] = sa;
    dlast[i] = dl;
    last_colour[i] = (unsigned char)pixel;
    desc_io[i] = (unsigned short)desc;

    // D_min(x): running mean of the minimal normalised distance at rate alpha.
    int d_q16 = (int)(((long long)best * 65536 + 4080) / 8160);
    dd += (int)(((long long)(d_q16 - dd) * alpha_q16 + 32768) >> 16);
    long long dsafe = dd > 1 ? dd : 1;
    // T(x): up by t_incr / (D_min v) where foreground, down by t_decr v / D_min elsewhere (old v).
    long long tn = foreground ? (long long)tt + ((long long)t_incr_q16 << 32) / (dsafe * vv)
                              : (long long)tt - ((long long)t_decr_q16 * vv) / dsafe;
    tn = tn < t_lower_q16 ? t_lower_q16 : (tn > t_upper_q16 ? t_upper_q16 : tn);
    // v(x): up by v_incr on a blink (the raw decision changed) where D_min > blink_dmin, else down
    // by v_decay (per frame: it follows the frame rate), never below v_decr.
    int blink = foreground != (last[i] != 0) && dd > blink_dmin_q16;
    vv = blink ? min(vv + v_incr_q16, v_max_q16) : max(vv - v_decay_q16, v_decr_q16);
    // R(x): up by r_var (v - v_decr) while below (1 + 2 D_min)^2, else down by r_var / v, >= 1.
    long long bound = ((long long)(MD_SUBSENSE_Q16 + 2 * dd) * (long long)(MD_SUBSENSE_Q16 + 2 * dd)) >> 16;
    if (rr < bound)
        rr += (int)(((long long)r_var_q16 * (vv - v_decr_q16) + 32768) >> 16);
    else
        rr = max(rr - (int)(((long long)r_var_q16 << 16) / vv), MD_SUBSENSE_Q16);
    r[i] = rr;
    t[i] = (int)tn;
    v[i] = vv;
    dmin[i] = dd;
    last[i] = (unsigned char)foreground;
}

// One frame, phase 2 (after phase 1 has finished everywhere): each pixel takes the values its
// neighbours spread to it (ViBe's spatial diffusion, kept by SuBSENSE): for each direction k in
// order 0..7, if the neighbour x at -offset(k) chose k, with bit 3 set or this pixel a ghost
// (s_avg > ghost_s and d_last < ghost_d: foreground almost always, yet static), sample
// md_hash(pair, x, 1) >> 19 mod N of this pixel becomes x's grey level and descriptor (a later
// direction overwrites an earlier one). A gather, so each thread writes only its own pixel's
// samples: deterministic.
__global__ void md_subsense_spread_u8(const unsigned char* __restrict__ src,
                                      const unsigned short* __restrict__ desc,
                                      const unsigned char* __restrict__ push,
                                      const int* __restrict__ savg,
                                      const int* __restrict__ dlast,
                                      unsigned char* __restrict__ colours,
                                      unsigned short* __restrict__ descs,
                                      int width, int height, int samples, int pair, int ghost_s_q16, int ghost_d_q16)
{
    const int dy[8] = {-1, -1, -1, 0, 0, 1, 1, 1};
    const int dx[8] = {-1, 0, 1, -1, 1, -1, 0, 1};
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height) return;
    int i = y * width + x, count = width * height;
    int ghost = savg[i] > ghost_s_q16 && dlast[i] < ghost_d_q16;
    for (int k = 0; k < 8; ++k) {
        int sy = y - dy[k], sx = x - dx[k];
        if (sy < 0 || sy >= height || sx < 0 || sx >= width) continue;
        int s = sy * width + sx;
        int p = push[s];
        if (p == 255 || (p & 7) != k || !((p & 8) || ghost)) continue;
        size_t at = (size_t)((md_hash((unsigned int)pair, (unsigned int)s, 1u) >> 19) % (unsigned int)samples) * count + i;
        colours[at] = src[s];
        descs[at] = desc[s];
    }
}
