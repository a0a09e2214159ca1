// Closing filter: grey-level closing with a square structuring element of (2 * radius + 1)
// pixels a side, a dilation (maximum; pixels outside the frame count as 0) then an erosion
// (minimum; dilated pixels outside the frame count as 255), as cv2.dilate then cv2.erode with
// their default borders. One launch: each block covers MD_CLOSE_W x MD_CLOSE_H output pixels (its
// threads loop over them), loads them with a halo of 2 * radius into shared memory and runs the
// four separable passes there (dilation rows, dilation columns, erosion rows, erosion columns):
// the mask is read from global memory once, and the host queues one launch instead of four.
// Shared memory: (H + 4r)(W + 4r) + (H + 4r)(W + 2r) + (H + 2r)(W + 2r) + (H + 2r) W bytes, laid
// out for the radius at hand in an array sized for the filter's largest, 15 (31 x 31).
// Every loop runs over the block's threads whatever their number, so one thread per block
// computes the same (tests/test_kernels_emulated.py runs it so, phase after phase).

#include "batch.cuh"

#define MD_CLOSE_W 32  // output pixels a block covers, launched as 32 x 8 threads
#define MD_CLOSE_H 32
#define MD_CLOSE_MAX_RADIUS 15
#define MD_CLOSE_SMEM ((MD_CLOSE_H + 4 * MD_CLOSE_MAX_RADIUS) * (MD_CLOSE_W + 4 * MD_CLOSE_MAX_RADIUS) \
    + (MD_CLOSE_H + 4 * MD_CLOSE_MAX_RADIUS) * (MD_CLOSE_W + 2 * MD_CLOSE_MAX_RADIUS)            \
    + (MD_CLOSE_H + 2 * MD_CLOSE_MAX_RADIUS) * (MD_CLOSE_W + 2 * MD_CLOSE_MAX_RADIUS)            \
    + (MD_CLOSE_H + 2 * MD_CLOSE_MAX_RADIUS) * MD_CLOSE_W)

__global__ void md_close_u8(const unsigned char* __restrict__ src,
                            unsigned char* __restrict__ dst,
                            int width, int height, int radius)
{
    MD_IMAGE(src, width * height);
    MD_IMAGE(dst, width * height);
    __shared__ unsigned char md_close_smem[MD_CLOSE_SMEM];
    const int r = min(radius, MD_CLOSE_MAX_RADIUS);
    const int sw = MD_CLOSE_W + 4 * r, sh = MD_CLOSE_H + 4 * r;  // the input tile with its halo
    const int aw = MD_CLOSE_W + 2 * r;                              // the dilation's columns
    const int bh = MD_CLOSE_H + 2 * r;                              // the dilation's rows
    unsigned char* tile = md_close_smem;          // sh x sw: the input, 0 outside the frame
    unsigned char* rows_max = tile + sh * sw;     // sh x aw: the dilation's row pass
    unsigned char* dilated = rows_max + sh * aw;  // bh x aw: the dilation
    unsigned char* rows_min = dilated + bh * aw;  // bh x MD_CLOSE_W: the erosion's row pass
    const int x0 = blockIdx.x * MD_CLOSE_W, y0 = blockIdx.y * MD_CLOSE_H;
    const int tx = threadIdx.x, ty = threadIdx.y, nx = blockDim.x, ny = blockDim.y;

    // Tile row j, column i: the frame's pixel (x0 - 2r + i, y0 - 2r + j).
    int set = 0;
    for (int j = ty; j < sh; j += ny) {
        int y = y0 - 2 * r + j;
        for (int i = tx; i < sw; i += nx) {
            int x = x0 - 2 * r + i;
            unsigned char v = (x >= 0 && x < width && y >= 0 && y < height) ? src[(size_t)y * width + x] : 0;
            tile[j * sw + i] = v;
            set |= v;
        }
    }
    // Most of a motion mask is empty: a tile with nothing set within its halo closes to nothing.
    if (!__syncthreads_or(set)) {
        for (int j = ty; j < MD_CLOSE_H && y0 + j < height; j += ny)
            for (int i = tx; i < MD_CLOSE_W && x0 + i < width; i += nx) dst[(size_t)(y0 + j) * width + x0 + i] = 0;
        return;
    }
    // rows_max and dilated, column i: the frame's x0 - r + i; dilated row j: the frame's y0 - r + j.
    for (int j = ty; j < sh; j += ny)
        for (int i = tx; i < aw; i += nx) {
            const unsigned char* p = tile + j * sw + i;
            unsigned char m = 0;
            for (int k = 0; k <= 2 * r; ++k) m = max(m, p[k]);
            rows_max[j * aw + i] = m;
        }
    __syncthreads();
    for (int j = ty; j < bh; j += ny)
        for (int i = tx; i < aw; i += nx) {
            const unsigned char* p = rows_max + j * aw + i;
            unsigned char m = 0;
            for (int k = 0; k <= 2 * r; ++k) m = max(m, p[k * aw]);
            dilated[j * aw + i] = m;
        }
    __syncthreads();
    // The erosion reads dilated pixels inside the frame only (outside: 255, min's identity).
    for (int j = ty; j < bh; j += ny)
        for (int i = tx; i < MD_CLOSE_W; i += nx) {
            int lo = max(0, r - (x0 + i)), hi = min(2 * r, width - 1 - (x0 + i) + r);
            const unsigned char* p = dilated + j * aw + i;
            unsigned char m = 255;
            for (int k = lo; k <= hi; ++k) m = min(m, p[k]);
            rows_min[j * MD_CLOSE_W + i] = m;
        }
    __syncthreads();
    for (int j = ty; j < MD_CLOSE_H; j += ny) {
        int y = y0 + j;
        if (y >= height) break;
        int lo = max(0, r - y), hi = min(2 * r, height - 1 - y + r);
        for (int i = tx; i < MD_CLOSE_W && x0 + i < width; i += nx) {
            const unsigned char* p = rows_min + j * MD_CLOSE_W + i;
            unsigned char m = 255;
            for (int k = lo; k <= hi; ++k) m = min(m, p[k * MD_CLOSE_W]);
            dst[(size_t)y * width + x0 + i] = m;
        }
    }
}
