// RedBlend filter: where the mask is set, replace the red channel R by lut[R], where the host
// fills lut[R] = round((1 - alpha) * R + alpha * 255); B, G and unmasked pixels are copied.
// A 256-entry table keeps the rounding on the host, so both backends agree bit for bit.
__global__ void md_red_blend_u8(const unsigned char* __restrict__ bgr,
                                const unsigned char* __restrict__ mask,
                                const unsigned char* __restrict__ lut,
                                unsigned char* __restrict__ out, int count)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count) return;
    size_t p = 3 * (size_t)i;
    unsigned char r = bgr[p + 2];
    out[p] = bgr[p];
    out[p + 1] = bgr[p + 1];
    out[p + 2] = mask[i] ? lut[r] : r;
}

// The same blend in Y'CbCr 4:2:0, so annotated video reaches the encoder as yuv420p without a
// conversion to BGR and back (CPU reference: motiondetect.picture.blend_red_yuv). Where the mask
// is set, the pixel's red R = (r_y (Y' - offset) + r_cr (Cr - 128)) / 2^16 (BT.601, clipped)
// becomes lut[R]; Y' moves by dy_dr (lut[R] - R) / 2^16, and each chroma sample by the mean
// change of its block's pixels (unmasked ones count 0) times du_dr, dv_dr / 2^16; all rounded
// half up and clipped. Q16 constants from motiondetect.picture.YUV_Q16.
// One thread per chroma sample; blockIdx.z the image. Input planes: luma rows `y_pitch` apart,
// chroma rows `c_pitch` apart with samples `c_step` bytes apart (1: planar I420; 2: NV12, with v
// = u + 1); images `y_image` and `c_image` bytes apart. Masks packed (width x height each).
// Output: packed planar images of width * height + 2 * ceil(w/2) * ceil(h/2) bytes (I420).
__device__ __forceinline__ long long md_floor_div(long long a, long long b)
{
    return a >= 0 ? a / b : -((-a + b - 1) / b);
}

__device__ __forceinline__ unsigned char md_clip_u8(long long value)
{
    return (unsigned char)(value < 0 ? 0 : value > 255 ? 255 : value);
}

__global__ void md_red_blend_yuv_u8(const unsigned char* __restrict__ y, int y_pitch, long long y_image,
                                    const unsigned char* __restrict__ u, const unsigned char* __restrict__ v,
                                    int c_pitch, int c_step, long long c_image,
                                    const unsigned char* __restrict__ mask,
                                    const unsigned char* __restrict__ lut,
                                    unsigned char* __restrict__ out, int width, int height,
                                    int offset, int r_y, int r_cr, int dy_dr, int du_dr, int dv_dr)
{
    int cw = (width + 1) / 2, ch = (height + 1) / 2;
    int cx = blockIdx.x * blockDim.x + threadIdx.x;
    int cy = blockIdx.y * blockDim.y + threadIdx.y;
    if (cx >= cw || cy >= ch) return;
    size_t z = blockIdx.z;
    y += z * y_image;
    u += z * c_image;
    v += z * c_image;
    mask += z * (size_t)width * height;
    unsigned char* out_y = out + z * ((size_t)width * height + 2 * (size_t)cw * ch);
    unsigned char* out_u = out_y + (size_t)width * height;
    unsigned char* out_v = out_u + (size_t)cw * ch;
    long long cb = u[(size_t)cy * c_pitch + (size_t)cx * c_step];
    long long cr = v[(size_t)cy * c_pitch + (size_t)cx * c_step];
    long long sum = 0;
    int n = 0;
    for (int dy = 0; dy < 2; ++dy) {
        int py = 2 * cy + dy;
        if (py >= height) break;
        for (int dx = 0; dx < 2; ++dx) {
            int px = 2 * cx + dx;
            if (px >= width) break;
            ++n;
            long long luma = y[(size_t)py * y_pitch + px];
            long long red = (r_y * (luma - offset) + r_cr * (cr - 128) + 32768) >> 16;
            red = red < 0 ? 0 : red > 255 ? 255 : red;
            long long delta = mask[(size_t)py * width + px] ? (long long)lut[red] - red : 0;
            sum += delta;
            out_y[(size_t)py * width + px] = md_clip_u8(luma + ((dy_dr * delta + 32768) >> 16));
        }
    }
    out_u[(size_t)cy * cw + cx] = md_clip_u8(cb + md_floor_div(du_dr * sum + n * 32768LL, n * 65536LL));
    out_v[(size_t)cy * cw + cx] = md_clip_u8(cr + md_floor_div(dv_dr * sum + n * 32768LL, n * 65536LL));
}
