// Mask operations around the filter pipeline: the region of interest and the mapping of a mask
// computed on a cropped and/or downscaled frame back to the input frame's size.

#include "batch.cuh"

// Region of interest: out = mask where roi is set, else 0 (roi holds 0 or 255). count covers a
// batch of masks of `plane` pixels each; the one roi of `plane` pixels applies to every mask.
__global__ void md_and_mask_u8(const unsigned char* __restrict__ mask,
                               const unsigned char* __restrict__ roi,
                               unsigned char* __restrict__ out, int count, int plane)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count) return;
    out[i] = roi[i % plane] ? mask[i] : 0;
}

// Expand a (src_height, src_width) mask to (height, width): out(y, x) = src(ymap[y], xmap[x]),
// or 0 where either map holds -1 (outside the crop). The host fills the maps with OpenCV's
// INTER_NEAREST source indices, so the result equals cv2.resize(..., INTER_NEAREST) pasted at the
// crop's place in a zero frame.
__global__ void md_expand_mask_u8(const unsigned char* __restrict__ src, int src_width, int src_plane,
                                  const int* __restrict__ xmap, const int* __restrict__ ymap,
                                  unsigned char* __restrict__ out, int width, int height)
{
    MD_IMAGE(src, src_plane);
    MD_IMAGE(out, width * height);
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height) return;
    int sx = xmap[x], sy = ymap[y];
    out[(size_t)y * width + x] = (sx >= 0 && sy >= 0) ? src[(size_t)sy * src_width + sx] : 0;
}
