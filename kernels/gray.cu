// Gray filter: BT.601 luma Y = 0.299 R + 0.587 G + 0.114 B (ITU-R BT.601), rounded.
// Integer fixed point with 16 fractional bits, so the CPU reference computes the same bits:
// the weights are round(w * 65536) and sum to exactly 65536; adding 32768 rounds half up.
#include "batch.cuh"
#include "blocks.cuh"

#define MD_B2Y 7471u
#define MD_G2Y 38470u
#define MD_R2Y 19595u

// bgr: count pixels of interleaved B, G, R bytes; gray: count bytes.
__global__ void md_gray_bt601_u8(const unsigned char* __restrict__ bgr,
                                 unsigned char* __restrict__ gray, int count)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count) return;
    const unsigned char* p = bgr + 3 * (size_t)i;
    unsigned int y = p[0] * MD_B2Y + p[1] * MD_G2Y + p[2] * MD_R2Y + 32768u;
    gray[i] = (unsigned char)(y >> 16);
}

// Luma-first grey: gray = lut[Y'], the decoder's luma expanded to full range through the
// 256-entry table of motiondetect.picture.luma_table (the identity for full-range streams).
// Reads `frames` images of width x height whose rows are `pitch` bytes apart and whose images
// are `image` bytes apart (a decoder's padded surfaces, or packed planes), and writes them
// packed at out_width x out_height: each output pixel the mean of its block of the downscale
// filter (kernels/downscale.cu: integer sum, rounded half up), so a smaller output equals the
// full-size grey image followed by md_downscale_area_u8, bit for bit, without writing that
// image; at the input's own size each block is one pixel. One thread per output pixel,
// blockIdx.z the image.
__global__ void md_luma_to_gray_u8(const unsigned char* __restrict__ luma, int pitch, long long image,
                                   const unsigned char* __restrict__ lut,
                                   unsigned char* __restrict__ gray, int width, int height,
                                   int out_width, int out_height)
{
    MD_IMAGE(luma, image);
    MD_IMAGE(gray, out_width * out_height);
    int i = blockIdx.x * blockDim.x + threadIdx.x;  // output column
    int j = blockIdx.y * blockDim.y + threadIdx.y;  // output row
    if (i >= out_width || j >= out_height) return;
    if (out_width == width && out_height == height) {
        gray[(size_t)j * out_width + i] = lut[luma[(size_t)j * pitch + i]];
        return;
    }
    const MdBlock b = md_block(i, j, width, height, out_width, out_height);
    const int x0 = b.x0, x1 = b.x1, y0 = b.y0, y1 = b.y1;
    unsigned int sum = 0;
    for (int y = y0; y < y1; ++y) {
        const unsigned char* row = luma + (size_t)y * pitch;
        for (int x = x0; x < x1; ++x) sum += lut[row[x]];
    }
    unsigned int n = (unsigned int)((x1 - x0) * (y1 - y0));
    gray[(size_t)j * out_width + i] = (unsigned char)((sum + n / 2) / n);
}

// Full-range BT.601 chroma (JFIF): Cb = 128 - 0.168736 R - 0.331264 G + 0.5 B and
// Cr = 128 + 0.5 R - 0.418688 G - 0.081312 B, weights round(w * 65536) (each row sums to 0),
// 128 * 65536 + 32768 added (the offset, rounded half up), clipped to 255.
__device__ __forceinline__ void md_bgr_chroma(const unsigned char* p, unsigned int& cb, unsigned int& cr)
{
    int b = p[0], g = p[1], r = p[2];
    cb = (unsigned int)min((32768 * b - 21710 * g - 11058 * r + 128 * 65536 + 32768) >> 16, 255);
    cr = (unsigned int)min((-5329 * b - 27439 * g + 32768 * r + 128 * 65536 + 32768) >> 16, 255);
}

// The chroma of a BGR frame of width x height pixels as full-range planes of out_width x
// out_height: each pixel's Cb and Cr (md_bgr_chroma), averaged over the downscale filter's
// blocks (kernels/downscale.cu: integer sum, rounded half up). With the frame's own size as the
// output each block is one pixel; with a smaller one it equals the full-size planes followed
// by md_downscale_area_u8, bit for bit, in one launch and without writing them. Cb is written
// to chroma, Cr out_width * out_height bytes after it.
__global__ void md_bgr_chroma_blocks_u8(const unsigned char* __restrict__ bgr,
                                        unsigned char* __restrict__ chroma,
                                        int width, int height, int out_width, int out_height)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;  // output column
    int j = blockIdx.y * blockDim.y + threadIdx.y;  // output row
    if (i >= out_width || j >= out_height) return;
    const MdBlock b = md_block(i, j, width, height, out_width, out_height);
    const int x0 = b.x0, x1 = b.x1, y0 = b.y0, y1 = b.y1;
    unsigned int sum_b = 0, sum_r = 0;
    for (int y = y0; y < y1; ++y) {
        const unsigned char* row = bgr + 3 * (size_t)y * width;
        for (int x = x0; x < x1; ++x) {
            unsigned int cb, cr;
            md_bgr_chroma(row + 3 * x, cb, cr);
            sum_b += cb;
            sum_r += cr;
        }
    }
    unsigned int n = (unsigned int)((x1 - x0) * (y1 - y0));
    size_t to = (size_t)j * out_width + i;
    chroma[to] = (unsigned char)((sum_b + n / 2) / n);
    chroma[(size_t)out_width * out_height + to] = (unsigned char)((sum_r + n / 2) / n);
}

// A decoder's 4:2:0 chroma as full-range planes of out_width x out_height: the chroma of the
// crop of width x height luma pixels whose top left is luma pixel (x0, y0), where luma pixel
// (x, y) of the crop takes sample ((y0 + y) / 2, (x0 + x) / 2) of each plane through the 256-entry
// table of motiondetect.core.picture.chroma_table, then averaged over the downscale filter's
// blocks (kernels/downscale.cu: integer sum, rounded half up). With the crop's own size as the
// output this is the 2x nearest-neighbour expansion; with a smaller one it equals the expansion
// followed by md_downscale_area_u8, bit for bit, without writing the full-size planes.
// Samples are `step` bytes apart in a row (1 planar, 2 for NV12's interleaved Cb Cr), rows
// `pitch` bytes, images `image` bytes (blockIdx.z the image); Cb is written to chroma, Cr
// `plane` bytes after it.
__global__ void md_chroma_420_blocks_u8(const unsigned char* __restrict__ cb,
                                        const unsigned char* __restrict__ cr,
                                        int pitch, int step, long long image, int x0, int y0,
                                        const unsigned char* __restrict__ lut,
                                        unsigned char* __restrict__ chroma,
                                        int width, int height, int out_width, int out_height,
                                        long long plane)
{
    MD_IMAGE(cb, image);
    MD_IMAGE(cr, image);
    MD_IMAGE(chroma, out_width * out_height);
    int i = blockIdx.x * blockDim.x + threadIdx.x;  // output column
    int j = blockIdx.y * blockDim.y + threadIdx.y;  // output row
    if (i >= out_width || j >= out_height) return;
    const MdBlock b = md_block(i, j, width, height, out_width, out_height);
    const int bx0 = b.x0, bx1 = b.x1, by0 = b.y0, by1 = b.y1;
    // The block's sum over its luma pixels, taken over the chroma samples they read, each
    // weighted by how many of the block's rows and columns read it (1 or 2): a quarter of the
    // loads of a loop over the pixels, the same integer.
    unsigned int sum_b = 0, sum_r = 0;
    int cy0 = (y0 + by0) >> 1, cy1 = (y0 + by1 - 1) >> 1;
    int cx0 = (x0 + bx0) >> 1, cx1 = (x0 + bx1 - 1) >> 1;
    for (int cy = cy0; cy <= cy1; ++cy) {
        unsigned int wy = (unsigned int)(min(by1, 2 * cy + 2 - y0) - max(by0, 2 * cy - y0));
        size_t row = (size_t)cy * pitch;
        unsigned int row_b = 0, row_r = 0;
        for (int cx = cx0; cx <= cx1; ++cx) {
            unsigned int wx = (unsigned int)(min(bx1, 2 * cx + 2 - x0) - max(bx0, 2 * cx - x0));
            size_t at = row + (size_t)cx * step;
            row_b += wx * lut[cb[at]];
            row_r += wx * lut[cr[at]];
        }
        sum_b += wy * row_b;
        sum_r += wy * row_r;
    }
    unsigned int n = (unsigned int)((bx1 - bx0) * (by1 - by0));
    size_t to = (size_t)j * out_width + i;
    chroma[to] = (unsigned char)((sum_b + n / 2) / n);
    chroma[(size_t)plane + to] = (unsigned char)((sum_r + n / 2) / n);
}
