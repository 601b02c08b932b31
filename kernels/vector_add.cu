// The data kernel of stream-litmus: a real vector add that stamps like spin_stamp.
// Compiled together with stamp.cu (after it), so global_timer() and write_stamp() are in scope.
//
// out[i] = a[i] + b[i] for every i < n, with the grid striding over the elements: few threads
// make it slow, as the notes do to balance kernels against copies. Every block writes the same
// six-word record as spin_stamp: start, end, SM, the clock64 cycles it ran, and no gap (it does
// not loop on the clock, so it cannot tell a pause).
extern "C" __global__ void vector_add(unsigned long long* stamps, float* out, const float* a,
                                      const float* b, unsigned long long n) {
    __shared__ unsigned long long start;
    if (threadIdx.x == 0) {
        start = global_timer();
    }
    __syncthreads();
    long long c0 = clock64();
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += stride) {
        out[i] = a[i] + b[i];
    }
    __syncthreads();
    write_stamp(stamps, start, clock64() - c0, start, 0);
}
