// Many tiny kernel launches, for the tracing overhead (`stream-litmus trace --overhead`):
// N launches of an empty kernel on one stream (default 100000), then a sync.
//
//   nvcc -O2 -o launches launches.cu && ./launches 100000
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void tiny() {}

int main(int argc, char** argv) {
    long n = argc > 1 ? atol(argv[1]) : 100000;
    cudaStream_t s;
    cudaStreamCreate(&s);
    tiny<<<1, 32, 0, s>>>();  // loads the kernel before the timed loop
    cudaStreamSynchronize(s);
    auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < n; i++) tiny<<<1, 32, 0, s>>>();
    cudaStreamSynchronize(s);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    cudaError_t e = cudaGetLastError();
    printf("launches: %ld in %.1f ms (%.2f us each), %s\n", n, ms, ms * 1e3 / n, cudaGetErrorString(e));
    return e == cudaSuccess ? 0 : 1;
}
