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
