// Mask statistics for the motion fraction and the bounding box, so the host never scans a mask:
// the number of non-zero pixels and the smallest and largest column and row holding one.
// A grid-stride loop keeps per-thread partials, a warp reduction with shuffles combines them,
// then one lane per warp that saw a set pixel does a 64-bit atomicAdd and four atomicMin/Max.
// Before the launch the host sets *total = 0 and box = {0xffffffff, 0xffffffff, 0, 0}
// (x0, y0, x1, y1); box is meaningful only when *total > 0. width must be >= 1.
// Batches: blockIdx.y picks the mask (of `count` pixels) and its own total and box, so one
// launch with gridDim.y = K reduces K masks.
// Counts of the mask an upscale would make: with out_width x out_height larger than the mask,
// each set pixel counts as the block of the upscale's output it becomes (kernels/upscale.cu:
// output x reads input x * width / out_width, so input i covers ceil(i * out / in) up to
// ceil((i + 1) * out / in) - 1), and the box stays in the mask's pixels (the host maps it);
// out_width = width and out_height = height count each pixel once.
__device__ __forceinline__ unsigned int md_block_span(unsigned int i, unsigned int in, unsigned int out)
{
    unsigned long long a = (unsigned long long)i * out, b = a + out;  // ceil(b / in) - ceil(a / in)
    return (unsigned int)((b + in - 1) / in - (a + in - 1) / in);
}

__global__ void md_mask_stats_u8(const unsigned char* __restrict__ mask, int width, int count,
                                 unsigned long long* total, unsigned int* box,
                                 int out_width, int out_height)
{
    const unsigned int height = (unsigned int)(count / width);
    const bool same = out_width == width && (unsigned int)out_height == height;  // no upscale: 1 a pixel
    mask += (size_t)blockIdx.y * (size_t)count;
    total += blockIdx.y;
    box += 4 * blockIdx.y;
    unsigned int local = 0;
    unsigned int x0 = 0xffffffffu, y0 = 0xffffffffu, x1 = 0u, y1 = 0u;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) {
        if (mask[i]) {
            unsigned int y = (unsigned int)(i / width);
            unsigned int x = (unsigned int)i - y * (unsigned int)width;
            local += same ? 1u
                          : md_block_span(x, (unsigned int)width, (unsigned int)out_width) *
                                md_block_span(y, height, (unsigned int)out_height);
            x0 = min(x0, x);
            y0 = min(y0, y);
            x1 = max(x1, x);
            y1 = max(y1, y);
        }
    }
    for (int offset = 16; offset > 0; offset >>= 1) {
        local += __shfl_down_sync(0xffffffffu, local, offset);
        x0 = min(x0, __shfl_down_sync(0xffffffffu, x0, offset));
        y0 = min(y0, __shfl_down_sync(0xffffffffu, y0, offset));
        x1 = max(x1, __shfl_down_sync(0xffffffffu, x1, offset));
        y1 = max(y1, __shfl_down_sync(0xffffffffu, y1, offset));
    }
    if ((threadIdx.x & 31) == 0 && local) {
        atomicAdd(total, (unsigned long long)local);
        atomicMin(&box[0], x0);
        atomicMin(&box[1], y0);
        atomicMax(&box[2], x1);
        atomicMax(&box[3], y1);
    }
}
