// The recent-background gate: a pixel the Gaussian model calls background becomes foreground
// where its 9 x 9 window moved away from each pixel's recent still background together. The CPU
// reference is motiondetect/filters/recent_gate.py; its docstring gives the method. K frames of
// H x W pixels one after another: diff (int16, 2 d + eligible, written by the model's kernel,
// kernels/gaussian_background.cu) and mask (the model's output after its light field and ghost
// test, changed in place). Integer sums, so both backends set the same pixels.
#include "batch.cuh"

#define RG_RADIUS 4            // the window is 9 x 9 (recent_gate.WINDOW)
#define RG_COHERENCE_TENTHS 8  // |sum d| >= 0.8 sum |d| (recent_gate.COHERENCE_TENTHS)

__global__ void md_recent_gate_u8(const short* __restrict__ diff, unsigned char* __restrict__ mask,
                                  int width, int height, int level)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y * blockDim.y + threadIdx.y;
    if (col >= width || row >= height) return;
    size_t plane = (size_t)width * height;
    MD_IMAGE(diff, plane);
    MD_IMAGE(mask, plane);
    const int i = row * width + col;
    const int own = diff[i];
    if (!(own & 1) || mask[i] == 255) return;
    int total = 0, spread = 0;  // at most 81 * 255: int holds them
    for (int dy = -RG_RADIUS; dy <= RG_RADIUS; ++dy) {
        const int y = min(max(row + dy, 0), height - 1);  // cv2.BORDER_REPLICATE
        for (int dx = -RG_RADIUS; dx <= RG_RADIUS; ++dx) {
            const int x = min(max(col + dx, 0), width - 1);
            const int d = diff[y * width + x] >> 1;
            total += d;
            spread += d < 0 ? -d : d;
        }
    }
    const int d = own >> 1, side = 2 * RG_RADIUS + 1;
    const int magnitude = total < 0 ? -total : total;
    if (magnitude > level * side * side && 10 * magnitude >= RG_COHERENCE_TENTHS * spread && (long long)d * total > 0) mask[i] = 255;
}
