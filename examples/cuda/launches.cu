// Many small kernel launches, for the tracing overhead (`stream-litmus trace --overhead`):
// N launches (default 100000) of a one-block kernel that spins NS ns (default 0: empty) on one
// stream, then a sync. With NS = 0 the loop is bound by the host's launch calls; with NS above
// the launch cost it is bound by the GPU.
//
//   nvcc -O2 -o launches launches.cu && ./launches 100000 [NS]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void tiny(unsigned long long ns) {
    if (ns == 0) return;
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    } while (t - t0 < ns);
}

int main(int argc, char** argv) {
    long n = argc > 1 ? atol(argv[1]) : 100000;
    unsigned long long ns = argc > 2 ? strtoull(argv[2], nullptr, 10) : 0;
    cudaStream_t s;
    cudaStreamCreate(&s);
    tiny<<<1, 32, 0, s>>>(0);  // loads the kernel before the timed loop
    cudaStreamSynchronize(s);
    auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < n; i++) tiny<<<1, 32, 0, s>>>(ns);
    cudaStreamSynchronize(s);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    cudaError_t e = cudaGetLastError();
    printf("launches: %ld of %llu ns in %.1f ms (%.2f us each), %s\n", n, ns, ms, ms * 1e3 / n,
           cudaGetErrorString(e));
    return e == cudaSuccess ? 0 : 1;
}
