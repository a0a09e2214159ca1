// Running-average filter: a reference frame that learns, compared with the current frame.
// Integer fixed point throughout, so the CPU reference computes the same bits: the background
// is kept in Q16 (grey level * 2^16, int) and the learning rate in Q16 (rate * 2^16, 0..65536). Products are 64-bit; ">>" of a negative
// 64-bit value is an arithmetic shift (floor) in nvcc, as in NumPy, and adding 2^(s-1) before a
// shift by s rounds half up.

// Running average (Frigate's and Motion's reference frame): out = |x - round(B)|, then
// B += alpha * (x - B). The first call of a stream sets B from the reference frame (init != 0).
__global__ void md_running_average_u8(const unsigned char* __restrict__ src,
                                      const unsigned char* __restrict__ reference,
                                      int* __restrict__ background,
                                      unsigned char* __restrict__ dst,
                                      int count, int alpha_q16, int init)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count) return;
    int b = init ? ((int)reference[i] << 16) : background[i];
    int x = (int)src[i] << 16;
    int diff = (int)src[i] - ((b + 32768) >> 16);
    dst[i] = (unsigned char)(diff < 0 ? -diff : diff);
    long long step = ((long long)(x - b) * alpha_q16 + 32768) >> 16;
    background[i] = b + (int)step;
}
