// Gaussian-background filter: a per-pixel background model compared with the current frame.
// Integer fixed point throughout, so the CPU reference computes the same bits: the background
// mean is kept in Q16 (grey level * 2^16, int), variances in Q8 (grey level^2 * 2^8, int),
// learning rates in Q16 (rate * 2^16, 0..65536). Products are 64-bit; ">>" of a negative
// 64-bit value is an arithmetic shift (floor) in nvcc, as in NumPy, and adding 2^(s-1) before a
// shift by s rounds half up.

// The lower median (the element of rank (n - 1) / 2 in ascending order) of the n grey levels at
// v[0], v[stride], ..., v[(n - 1) * stride]: for each value, the values below it and those not
// above it bracket its ranks. O(n^2) reads, once a stream (the bootstrap), n at most 256.
__device__ int md_lower_median(const unsigned char* v, int n, int stride)
{
    const int rank = (n - 1) / 2;
    for (int j = 0; j < n; ++j) {
        const int a = v[(size_t)j * stride];
        int below = 0, upto = 0;
        for (int l = 0; l < n; ++l) {
            const int b = v[(size_t)l * stride];
            below += b < a;
            upto += b <= a;
        }
        if (below <= rank && rank < upto) return a;
    }
    return v[0];  // not reached: some value holds each rank
}

// Whether a difference d (Q16) lies beyond k2_q8 (sigmas^2, Q8) times the variance floor
// floor_q8 (Q8): d^2 > k^2 floor, in the units of the model's comparison (a Q16 limit << 16).
__device__ bool md_beyond(long long d, int k2_q8, int floor_q8)
{
    return d * d > (((long long)k2_q8 * floor_q8) << 16);
}

// The variance floor (Q8) of a standard deviation of fraction_q16 (Q16) of the mean m (Q16):
// the relative and shadow floors (GaussianBackground._relative_var).
__device__ int md_relative_var(int m, int fraction_q16)
{
    const long long s = ((long long)m * fraction_q16 + 32768) >> 16;  // Q16 grey level
    return (int)((s * s + (1LL << 23)) >> 24);
}

// Whether Cb and Cr (levels) are no colour: both within GREY_CHROMA (3) of 128, as a camera's
// night (infrared) mode sends them through an encoder
// (motiondetect.filters.gaussian_background.GREY_CHROMA).
__device__ bool md_grey_chroma(int cb, int cr)
{
    return abs(cb - 128) <= 3 && abs(cr - 128) <= 3;
}

// A frame's pixel has no colour to compare or learn (motiondetect.filters.gaussian_background.
// no_colour): its chroma is grey, or one of R, G, B made back from y, cb and cr (the JFIF inverse
// in Q16, each product floored) reaches 250 (CLIPPED): a clipped channel moves the chroma, not
// the colour.
__device__ bool md_no_colour(int y, int cb, int cr)
{
    if (md_grey_chroma(cb, cr)) return true;
    const int b = cb - 128, r = cr - 128;
    const int top = max(max(y + ((91881 * r) >> 16), y + ((116130 * b) >> 16)), y - ((22554 * b + 46802 * r) >> 16));
    return top >= 250;
}

// Whether a darker grey level is a shadow by its colour (GaussianBackground.chroma_shadow, which
// documents the rule): x (level) at least ratio_q16 (Q16) of the mean m (Q16), the chroma means
// cm (Q16) at least 4 tolerances from grey in all (|Cb - 128| + |Cr - 128|), and each of cb, cr
// (levels) within tolerance_q8 (Q8) of 128 + (x / m) (mean - 128), tested without a division:
// |((c - 128) m - x (cm - 128 * 2^16)) * 256| <= tolerance_q8 * m, 64-bit (below 2^41).
__device__ bool md_chroma_shadow(int x, int m, int cb, int cr, const int* cm, int tolerance_q8, int ratio_q16)
{
    const long long centre = 128LL << 16, mean = m;
    if (((long long)x << 32) < (long long)ratio_q16 * mean) return false;  // darker than the ratio allows
    const long long b = cm[0] - centre, r = cm[1] - centre;
    if (llabs(b) + llabs(r) < ((long long)tolerance_q8 << 10)) return false;  // too near grey to tell
    const long long eb = (long long)(cb - 128) * mean - (long long)x * b, er = (long long)(cr - 128) * mean - (long long)x * r;
    const long long within = (long long)tolerance_q8 * mean;
    return llabs(eb) * 256 <= within && llabs(er) * 256 <= within;
}

// The exposure's gain `ratio` (Q8) is followed: on, not 1.0, and explaining (c[2]) more than
// exposure_q8 / 256 times the pixels that kept their grey level (c[3]) (GaussianBackground.follows_gain).
__device__ bool md_follows_gain(const unsigned int* c, long long ratio, int exposure_q8)
{
    return exposure_q8 > 0 && ratio != 256 && (long long)c[2] * 256 > (long long)exposure_q8 * c[3];
}

// A light switch restarts the model: the larger count of pixels that changed beyond the model's
// smallest threshold (c[0] brighter, c[1] darker) reaches light_count, and the exposure's gain
// does not explain the frame (GaussianBackground.exposure_gain): a gain followed that explains
// (c[2]) half as many pixels or more is a dimmer or an iris, whose objects a restart would take in.
__device__ bool md_light_switch(const unsigned int* c, long long ratio, int light_count, int exposure_q8)
{
    if (light_count <= 0) return false;  // off: c is NULL
    const unsigned int changed = max(c[0], c[1]);
    if (changed < (unsigned int)light_count) return false;
    return !(md_follows_gain(c, ratio, exposure_q8) && 2LL * c[2] >= (long long)changed);
}

// The exposure's step for one frame (GaussianBackground.exposure_gain, which documents the rule):
// from the frame's light counts c (brighter, darker, explained, unchanged), its median ratio
// (Q8) and whether it is a light switch, the gain the means are scaled by (Q8, 256: none; a
// light switch restarts them instead) and the drift (Q16) after the frame, updated in place.
__device__ int md_exposure_step(long long& drift, const unsigned int* c, long long ratio, bool light_switch, int exposure_q8,
                                int alpha_q16)
{
    const long long one = 65536, low = 256, high = 1023LL << 8;
    if (light_switch) {
        drift = one;
        return 256;
    }
    const long long chained = min(max((drift * ratio + 128) >> 8, low), high);  // the drift times this ratio
    if (md_follows_gain(c, ratio, exposure_q8)) {
        const int gain = (int)((chained + 128) >> 8);
        drift = (chained * 256 + gain / 2) / gain;  // what rounding to Q8 left
        return gain;
    }
    if (c[2] > c[3]) drift = chained;                                      // a swing the margin missed
    drift = one + (((drift - one) * (65536 - alpha_q16) + 32768) >> 16);  // the means learn the rest
    return 256;
}

// Per-pixel Gaussian background (running Gaussian average, Wren et al. 1997) with selective
// update (Koller et al. 1994): foreground where (x - mean)^2 > k^2 * max(var, min_var); the
// mean and variance then learn at the background rates where the pixel is background and at
// the (slower) foreground rates where it is foreground; the variance learns from
// min(d^2, k^2 * max(var, min_var)), so one outlier cannot inflate it beyond the threshold.
// The floor is also (relative_q16 * mean)^2 on every pixel (a slow exposure drift changes bright
// pixels most) and, where the pixel is darker than its mean, (shadow_q16 * mean)^2: a darkening
// by a small share of the background (a cast shadow) is not foreground.
//
// With chroma_min_var_q8 > 0 the pixel's Cb and Cr are modelled too (a mean and a variance each,
// floored at chroma_min_var_q8, no shadow floor): the pixel is foreground when the grey level
// or either chroma value is out of its limit, and all three learn with that mask's rates. With
// shadow_chroma_q8 > 0 a darker grey level that md_chroma_shadow calls a shadow (its chroma
// what the mean's becomes when the light dims by x / m, within shadow_chroma_q8) is not foreground
// by the grey level; the chroma's own limits still apply.
// Frame k's Cb is chroma[k * count + i], its Cr chroma[chroma_plane + k * count + i]; the chroma
// state is chroma_mean[p * count + i] and chroma_var[p * count + i] for plane p; pair 1 starts
// the chroma means from that frame's own chroma (the reference's is not kept).
//
// With still_frames > 0 a foreground pixel whose grey level stays within still_tolerance of the
// previous frame's for still_frames frame pairs in a row is absorbed: its mean (and chroma means)
// become the frame's values, after the update. The previous grey level starts as the reference's
// and is kept in `last` between launches, the count of still foreground frames in `still`.
//
// With light_count > 0 (the light switch), frame k restarts the model before it is compared when
// light_counts[2k] (pixels brighter than the previous frame by more than the light change) or
// light_counts[2k + 1] (darker) reaches light_count: the mean (and chroma means) become the
// frame's values, the variance stays, the still count restarts. md_light_change_count_u8 fills
// light_counts for the whole batch first: the decision needs every pixel of the frame, which the
// model's threads, each one pixel through the batch, cannot wait for.
// With `ratios` (not NULL: the exposure on; Q8, from md_exposure_histogram_u8), a frame that is no
// light switch scales the means by the gain md_exposure_step takes from ratios[k], the frame's
// counts and the exposure's drift, when it is not 256. The chroma means' distances from 128 scale
// too. light_counts holds 4 counts a frame. Every thread walks the drift through the batch alike
// (a few integer operations a frame, no launch of its own), from drift_in[0] (1.0 on the
// stream's first pair); thread 0 stores it in drift_out[0]. The host swaps the two between
// launches, so no thread of a launch reads what another has written.
// `last` (when not NULL) keeps the previous grey level between launches, for all three and for
// quiet_tolerance: the means learn from a foreground pixel (at alpha_fg_q16) only on a frame whose
// grey level is within quiet_tolerance of the previous frame's (255, or `last` NULL: every frame),
// so what moves while it stays in view does not draw the background towards itself. After the
// warm-up, a foreground pixel's variances learn (at var_alpha_fg_q16) only on a frame whose grey
// level changed by at least variance_min_change from the previous frame's (0: every frame), so
// what stopped in view does not widen its own limit until it is missed.
// `compared` (when not NULL) receives the mean each frame is compared with, rounded to a grey
// level (after the light switch or the exposure's gain), for the light field
// (kernels/light_field.cu), which runs on the batch's masks after this kernel.
//
// With bootstrap > 0 (`history` not NULL), the means restart from the stream's start once, at
// frame pair `bootstrap` (N), where the start was wrong: after that pair's update, the pixel's
// lower median grey level over the reference and the frames of pairs 1..N and its lower median
// Cb and Cr over pairs 1..N are taken; when one of them lies further from its mean than the
// model's smallest threshold (sigmas times min_sigma, or chroma_min_sigma), the means become the
// medians and the still count restarts, so what passed through the first N frames leaves no
// ghost. history holds the grey levels of pairs 0..N in planes 0..N (pair 0: the reference),
// a flag in plane N + 1, and with chroma pair j's Cb in plane N + 1 + j, its Cr in plane
// 2N + 1 + j (planes of `count` bytes). A light switch or an exposure gain taken on a pair up to
// N sets the flag, which cancels the restart: frames before it no longer describe the background.
//
// Grey pixels have no colour to compare: where the frame's Cb and Cr, or the chroma means
// (rounded), are both within 3 of 128 (md_grey_chroma), or the frame's colour is clipped
// (md_no_colour), the chroma neither flags nor learns, and
// a restart (light switch, still foreground) keeps the chroma means where the frame is grey or
// clipped;
// where the means are grey and the frame is not, they take the frame's Cb and Cr when the grey
// level is background.
//
// One launch runs `frames` consecutive frames (frame k at src + k * count, its mask at
// dst + k * count): each thread keeps its pixel's mean and variance in registers through the
// batch and stores them once, so a batch of K frames equals K launches of one frame bit for bit.
// Frame k is frame pair first_pair + k of the stream; pair 1 starts the model from `reference`
// (the stream's first frame). During the first `warmup` pairs the variance learns at least at
// round(65536 / (pair + 1)) (Q16, rounded half up), computed here in integers.
// Grey levels: a background pixel within this of the previous frame's grey level is its recent
// still background (recent_gate.STILL).
#define MD_RECENT_STILL 6

__global__ void md_gaussian_background_u8(const unsigned char* __restrict__ src,
                                          const unsigned char* __restrict__ reference,
                                          int* __restrict__ mean,
                                          int* __restrict__ var,
                                          unsigned char* __restrict__ dst,
                                          int count, int frames, int first_pair, int warmup,
                                          int k2_q8, int min_var_q8, int shadow_q16, int relative_q16,
                                          int alpha_q16, int alpha_fg_q16,
                                          int var_alpha_q16, int var_alpha_fg_q16,
                                          const unsigned char* __restrict__ chroma,
                                          long long chroma_plane,
                                          int* __restrict__ chroma_mean,
                                          int* __restrict__ chroma_var,
                                          int chroma_min_var_q8,
                                          int shadow_chroma_q8, int shadow_ratio_q16,
                                          int grow_k2_q8,
                                          unsigned char* __restrict__ last,
                                          int* __restrict__ still,
                                          int still_frames, int still_tolerance,
                                          const unsigned int* __restrict__ light_counts,
                                          int light_count,
                                          const int* __restrict__ ratios,
                                          int exposure_q8,
                                          const int* __restrict__ drift_in,
                                          int* __restrict__ drift_out,
                                          unsigned char* __restrict__ compared,
                                          unsigned char* __restrict__ history,
                                          int bootstrap,
                                          int quiet_tolerance,
                                          int variance_min_change,
                                          unsigned char* __restrict__ recent,
                                          short* __restrict__ recent_diff,
                                          int recent_gate,
                                          int recent_var_q8)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count) return;
    int m = first_pair == 1 ? ((int)reference[i] << 16) : mean[i];
    int v = first_pair == 1 ? min_var_q8 : var[i];
    const bool colour = chroma_min_var_q8 > 0;
    int cm[2] = {0, 0}, cv[2] = {0, 0};
    if (colour) {
        for (int p = 0; p < 2; ++p) {
            cm[p] = first_pair == 1 ? ((int)chroma[p * chroma_plane + i] << 16) : chroma_mean[(size_t)p * count + i];
            cv[p] = first_pair == 1 ? chroma_min_var_q8 : chroma_var[(size_t)p * count + i];
        }
    }
    const bool absorb = still_frames > 0, keep_last = last != NULL;
    int previous = keep_last ? (first_pair == 1 ? reference[i] : last[i]) : 0;
    int still_count = absorb && first_pair != 1 ? still[i] : 0;
    // The recent still background (motiondetect/filters/recent_gate.py); NULL: the gate is off.
    const bool keep_recent = recent != NULL;
    int b = keep_recent ? (first_pair == 1 ? reference[i] : recent[i]) : 0;
    // The bootstrap's history is written and read only up to pair N; `cancelled` is its flag.
    const bool boot = history != NULL && bootstrap > 0 && first_pair <= bootstrap;
    const size_t flag_at = (size_t)(bootstrap + 1) * count + i;
    bool cancelled = false;
    if (boot) {
        if (first_pair == 1) history[i] = reference[i];
        else cancelled = history[flag_at] != 0;
    }
    // The frame becomes the background (a light switch, still foreground): the means take its
    // values, the variances stay, the still count restarts.
    auto take_frame = [&](size_t at, int x) {
        m = x << 16;
        if (colour && !md_no_colour(x, chroma[at], chroma[chroma_plane + at])) {  // a grey or clipped frame keeps the colours known
            for (int p = 0; p < 2; ++p) cm[p] = (int)chroma[p * chroma_plane + at] << 16;
        }
        still_count = 0;
    };
    long long drift = ratios == NULL || first_pair == 1 ? 65536 : drift_in[0];  // Q16
    for (int k = 0; k < frames; ++k) {
        int pair = first_pair + k;
        int warm = pair <= warmup ? (131072 + pair + 1) / (2 * (pair + 1)) : 0;
        size_t at = (size_t)k * count + i;
        const int x = src[at];
        const unsigned int* light = light_counts + 4 * k;
        const bool light_switch = md_light_switch(light, ratios == NULL ? 256 : ratios[k], light_count, exposure_q8);
        const int gain = ratios == NULL ? 256 : md_exposure_step(drift, light, ratios[k], light_switch, exposure_q8, alpha_q16);
        if (keep_recent && (light_switch || gain != 256)) b = x;  // an old brightness is no recent background
        if (light_switch) {
            take_frame(at, x);
            cancelled = true;
        } else if (gain != 256) {
            cancelled = true;
            const long long r = gain;
            m = (int)min(((long long)m * r + 128) >> 8, 255LL << 16);
            if (colour) {
                for (int p = 0; p < 2; ++p) {
                    long long scaled = ((((long long)cm[p] - (128 << 16)) * r + 128) >> 8) + (128 << 16);
                    cm[p] = (int)min(max(scaled, 0LL), 255LL << 16);
                }
            }
        }
        if (compared != NULL) compared[at] = (unsigned char)((m + 32768) >> 16);
        int d = (x << 16) - m;                                       // Q16
        long long d2 = (long long)d * d;                             // Q32
        int floor_var = min_var_q8;                                  // Q8
        if (relative_q16 > 0) floor_var = max(floor_var, md_relative_var(m, relative_q16));
        // Darker: the shadow floor, where it is above the relative one (equal by default: no second pass).
        if (d < 0 && shadow_q16 > relative_q16) floor_var = max(floor_var, md_relative_var(m, shadow_q16));
        long long limit = (long long)k2_q8 * (long long)max(v, floor_var);  // Q16
        const int grey_foreground = d2 > (limit << 16);
        int foreground = grey_foreground;
        // Off the background by more than grow_sigmas (0: never): the weak level a dilation grows into.
        bool weak = grow_k2_q8 > 0 && d2 > (((long long)grow_k2_q8 * (long long)max(v, floor_var)) << 16);
        int cd[2] = {0, 0};
        long long cd2[2] = {0, 0}, climit[2] = {0, 0};
        // Grey pixels have no colour to compare: a grey frame (night mode) or grey means (none known).
        const bool frame_grey = colour && md_no_colour(x, chroma[at], chroma[chroma_plane + at]);
        const bool mean_grey = colour && md_grey_chroma((cm[0] + 32768) >> 16, (cm[1] + 32768) >> 16);
        const bool compare_colour = colour && !frame_grey && !mean_grey;
        // A shadow: the grey level's change is the light's (the frame's colour is compared with
        // the means' dimmed, so a grey or clipped frame is tested too).
        if (colour && grey_foreground && d < 0 && shadow_chroma_q8 > 0 &&
            md_chroma_shadow(x, m, chroma[at], chroma[chroma_plane + at], cm, shadow_chroma_q8, shadow_ratio_q16))
            foreground = 0;
        if (compare_colour) {
            for (int p = 0; p < 2; ++p) {
                cd[p] = ((int)chroma[p * chroma_plane + at] << 16) - cm[p];
                cd2[p] = (long long)cd[p] * cd[p];
                climit[p] = (long long)k2_q8 * (long long)max(cv[p], chroma_min_var_q8);
                foreground |= cd2[p] > (climit[p] << 16);
                weak |= grow_k2_q8 > 0 && cd2[p] > (((long long)grow_k2_q8 * (long long)max(cv[p], chroma_min_var_q8)) << 16);
            }
        }
        dst[at] = foreground ? 255 : weak ? 128 : 0;
        const int change = abs(x - previous);                        // from the previous frame: read with `last` only
        const bool moved = keep_last && change > quiet_tolerance;
        int a = foreground ? (moved ? 0 : alpha_fg_q16) : alpha_q16;
        const bool settled = keep_last && change < variance_min_change;
        int r = max(foreground ? (settled ? 0 : var_alpha_fg_q16) : var_alpha_q16, warm);
        m += (int)(((long long)d * a + 32768) >> 16);
        long long d2_q8 = (d2 + (1LL << 23)) >> 24, limit_q8 = (limit + 128) >> 8;
        long long sample = d2_q8 < limit_q8 ? d2_q8 : limit_q8;     // Q8
        v += (int)(((sample - v) * r + 32768) >> 16);
        if (compare_colour) {
            for (int p = 0; p < 2; ++p) {
                cm[p] += (int)(((long long)cd[p] * a + 32768) >> 16);
                long long c2_q8 = (cd2[p] + (1LL << 23)) >> 24, cl_q8 = (climit[p] + 128) >> 8;
                long long c_sample = c2_q8 < cl_q8 ? c2_q8 : cl_q8;
                cv[p] += (int)(((c_sample - cv[p]) * r + 32768) >> 16);
            }
        } else if (mean_grey && !frame_grey && !grey_foreground) {  // the colours come: take them
            for (int p = 0; p < 2; ++p) cm[p] = (int)chroma[p * chroma_plane + at] << 16;
        }
        if (keep_recent) {  // 2 d + eligible, for kernels/recent_gate.cu
            const int rd = x - b;
            const bool eligible = pair > warmup && v > recent_var_q8 && abs(rd) > recent_gate;
            recent_diff[at] = (short)(rd * 2 + (eligible ? 1 : 0));
        }
        if (absorb) {
            still_count = foreground && change <= still_tolerance ? still_count + 1 : 0;
            if (still_count >= still_frames) take_frame(at, x);
        }
        if (boot && pair <= bootstrap) {
            history[(size_t)pair * count + i] = (unsigned char)x;
            if (colour) {
                for (int p = 0; p < 2; ++p) history[(size_t)(bootstrap + 1 + p * bootstrap + pair) * count + i] = chroma[p * chroma_plane + at];
            }
            if (pair == bootstrap && !cancelled) {
                // Restart where a median lies beyond the model's smallest threshold from its mean.
                const int median = md_lower_median(history + i, bootstrap + 1, count) << 16;
                int chroma_median[2] = {0, 0};
                bool wrong = md_beyond((long long)median - m, k2_q8, min_var_q8);
                if (colour) {
                    for (int p = 0; p < 2; ++p) {
                        chroma_median[p] = md_lower_median(history + (size_t)(bootstrap + 2 + p * bootstrap) * count + i, bootstrap, count) << 16;
                        wrong |= md_beyond((long long)chroma_median[p] - cm[p], k2_q8, chroma_min_var_q8);
                    }
                }
                if (wrong) {
                    m = median;
                    if (colour) {
                        for (int p = 0; p < 2; ++p) cm[p] = chroma_median[p];
                    }
                    still_count = 0;
                }
                if (keep_recent) b = (m + 32768) >> 16;  // what moved through the first frames is not it
            }
        }
        if (keep_recent && !foreground && change <= MD_RECENT_STILL) b = x;
        previous = x;
    }
    if (boot) history[flag_at] = cancelled;
    if (ratios != NULL && i == 0) drift_out[0] = (int)drift;
    mean[i] = m;
    var[i] = v;
    if (keep_last) last[i] = (unsigned char)previous;
    if (absorb) still[i] = still_count;
    if (keep_recent) recent[i] = (unsigned char)b;
    if (colour) {
        for (int p = 0; p < 2; ++p) {
            chroma_mean[(size_t)p * count + i] = cm[p];
            chroma_var[(size_t)p * count + i] = cv[p];
        }
    }
}

// The light switch's and the exposure's counts (see md_gaussian_background_u8): for each of
// `frames` consecutive frames (frame k at src + k * count), the pixels whose grey level exceeds the
// previous frame's p by more than max(change, (p * relative_q16) >> 16) (the model's smallest
// threshold at p) into counts[4k] and those below it by more than that into counts[4k + 1]; with `ratios` (not NULL), the pixels within 3 grey levels of the previous
// frame's times ratios[k] (Q8, capped at 255) into counts[4k + 2] and those within 3 of the
// previous frame's own into counts[4k + 3]. Frame 0's previous frame is `before` (the model's
// `last`, or the reference on the stream's first pair). counts are zero before (md_exposure_histogram_u8
// zeroes them; with exposure off, the host). Batches:
// blockIdx.y is the frame; a grid-stride loop, a warp reduction with shuffles, the warps' sums
// through shared memory, one atomicAdd per block and count. (One atomicAdd per warp put 4,000 on
// each of a frame's counters at 480x270: at K = 32 the kernel took a fifth of the default
// pipeline's GPU time.) Blocks of at most 1024 threads; every thread reaches the reduction.
__global__ void md_light_change_count_u8(const unsigned char* __restrict__ src,
                                         const unsigned char* __restrict__ before,
                                         int count, int change, int relative_q16,
                                         const int* __restrict__ ratios,
                                         unsigned int* counts)
{
    const size_t k = blockIdx.y;
    const unsigned char* now = src + k * (size_t)count;
    const unsigned char* previous = k == 0 ? before : now - count;
    const int ratio = ratios != NULL ? ratios[k] : 256;
    unsigned int c[4] = {0, 0, 0, 0};
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) {
        const int x = now[i], p = previous[i];
        const int beyond = max(change, (p * relative_q16) >> 16);
        c[0] += x - p > beyond;
        c[1] += x - p < -beyond;
        if (ratios != NULL) {
            c[2] += abs(x - min((p * ratio + 128) >> 8, 255)) <= 3;
            c[3] += abs(x - p) <= 3;
        }
    }
    const int used = ratios != NULL ? 4 : 2;
    __shared__ unsigned int partial[4][32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
    for (int j = 0; j < used; ++j) {
        unsigned int sum = c[j];
        for (int offset = 16; offset > 0; offset >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, offset);
        if (lane == 0) partial[j][warp] = sum;
    }
    __syncthreads();
    if (warp == 0) {
        for (int j = 0; j < used; ++j) {
            unsigned int sum = lane < warps ? partial[j][lane] : 0u;
            for (int offset = 16; offset > 0; offset >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, offset);
            if (lane == 0 && sum) atomicAdd(&counts[4 * k + j], sum);
        }
    }
}

// The exposure's gain of frame k from its histogram h (1024 bins, Q8 ratios), by a whole block
// of any blockDim.x up to 1024 threads: the lower median ratio, the first bin at which the running
// total reaches (n + 1) / 2 of the n pixels measured, or 256 (1.0) when none was, into ratios[k].
// Each thread sums a run of bins, a scan over the threads gives each run's start, and the thread
// whose run crosses the half names the bin. (One thread walking the 1,024 bins twice, one
// dependent load after another, cost more than the rest of the exposure together.) It leaves h
// zero for the next batch and zeroes the frame's four light counts (counts[4k..4k+3], when counts
// is not NULL), which md_light_change_count_u8 adds into next: no memsets to queue. h is read
// from L2 (__ldcg): other blocks' atomics filled it.
__device__ void md_median_ratio(unsigned int* h, int k, int* ratios, unsigned int* counts)
{
    __shared__ unsigned int runs[1024];
    __shared__ int found;
    const int t = threadIdx.x, threads = blockDim.x;
    const int per = (1024 + threads - 1) / threads, first = min(t * per, 1024), end = min(first + per, 1024);
    unsigned int own = 0;
    for (int b = first; b < end; ++b) own += __ldcg(&h[b]);
    runs[t] = own;
    if (t == 0) found = 1023;
    __syncthreads();
    for (int step = 1; step < threads; step <<= 1) {  // inclusive scan (Hillis and Steele)
        const unsigned int add = t >= step ? runs[t - step] : 0u;
        __syncthreads();
        runs[t] += add;
        __syncthreads();
    }
    const unsigned int n = runs[threads - 1], half = (n + 1) / 2;
    unsigned int total = runs[t] - own;  // the pixels in the bins before this run
    if (n > 0 && total < half && runs[t] >= half) {  // exactly one run crosses the half
        int b = first;
        for (total += __ldcg(&h[b]); total < half; total += __ldcg(&h[++b])) {}
        found = b;
    }
    __syncthreads();
    for (int b = first; b < end; ++b) h[b] = 0;  // every read of the histogram is above
    if (t == 0) {
        ratios[k] = n > 0 ? found : 256;
        if (counts != NULL) {
            for (int j = 0; j < 4; ++j) counts[4 * k + j] = 0;
        }
    }
}

// The exposure's histogram and gain (see md_gaussian_background_u8): for each of `frames`
// consecutive frames (blockIdx.y; read as md_light_change_count_u8 reads them), the ratio of each
// pixel's grey level x to the previous frame's p, min((x * 256 + p / 2) / p, 1023) (Q8), counted
// into hist[1024 k + ratio] over the pixels with 16 <= p <= 254 and x <= 254. A histogram per
// block in shared memory, merged into the frame's with one atomicAdd per non-empty bin. Most
// pixels of a steady scene share a few bins around 256, so the lanes of a warp that share a bin
// add their count once (its lowest lane, __match_any_sync) instead of contending for one address.
// The frame's last block to finish (a ticket per frame, tickets[k], zero before and left zero: the
// CUDA programming guide's last-block pattern) takes the median ratio (md_median_ratio), which
// leaves hist zero again. hist and tickets are zeroed when allocated. (A second launch for the
// median cost more in gaps than in work at one frame a launch.)
__global__ void md_exposure_histogram_u8(const unsigned char* __restrict__ src,
                                         const unsigned char* __restrict__ before,
                                         int count, unsigned int* hist, unsigned int* tickets,
                                         int* ratios, unsigned int* counts)
{
    __shared__ unsigned int local[1024];
    __shared__ int last;
    for (int b = threadIdx.x; b < 1024; b += blockDim.x) local[b] = 0;
    __syncthreads();
    const size_t k = blockIdx.y;
    const unsigned char* now = src + k * (size_t)count;
    const unsigned char* previous = k == 0 ? before : now - count;
    // The loop's bound is the same for a whole block, so every lane of a warp takes part in each
    // __match_any_sync; a lane past the end or on a pixel not measured holds bin -1.
    for (int start = blockIdx.x * blockDim.x; start < count; start += gridDim.x * blockDim.x) {
        const int i = start + threadIdx.x;
        int bin = -1;
        if (i < count) {
            const int x = now[i], p = previous[i];
            if (p >= 16 && p <= 254 && x <= 254) bin = min((x * 256 + p / 2) / p, 1023);
        }
        const unsigned int peers = __match_any_sync(0xffffffffu, bin);
        if (bin >= 0 && (int)(threadIdx.x & 31) == __ffs(peers) - 1) atomicAdd(&local[bin], (unsigned int)__popc(peers));
    }
    __syncthreads();
    for (int b = threadIdx.x; b < 1024; b += blockDim.x) {
        if (local[b]) atomicAdd(&hist[1024 * k + b], local[b]);
    }
    __threadfence();  // this block's counts reach the device before its ticket
    __syncthreads();
    if (threadIdx.x == 0) last = atomicAdd(&tickets[k], 1u) == gridDim.x - 1;
    __syncthreads();
    if (!last) return;
    __threadfence();
    if (threadIdx.x == 0) tickets[k] = 0;  // for the next launch
    md_median_ratio(hist + 1024 * k, (int)k, ratios, counts);
}
