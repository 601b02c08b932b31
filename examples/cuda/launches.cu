// Many tiny kernel launches, for the tracing overhead (`stream-litmus trace --overhead`):
// N launches of an empty kernel on one stream (default 100000), then a sync.
//
//   nvcc -O2 -o launches launches.cu && ./launches 100000
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void tiny() {}

int main(int argc, char** argv) {
    long n = argc > 1 ? atol(argv[1]) : 100000;
    cudaStream_t s;
    cudaStreamCreate(&s);
    for (long i = 0; i < n; i++) tiny<<<1, 32, 0, s>>>();
    cudaStreamSynchronize(s);
    cudaError_t e = cudaGetLastError();
    printf("launches: %ld, %s\n", n, cudaGetErrorString(e));
    return e == cudaSuccess ? 0 : 1;
}
