// Seed 004 §1 (CUDA Stream基础): the same copy in, kernel, copy out, first with cudaMemcpy on the
// default stream, then with cudaMemcpyAsync on a stream, from pinned memory, as the notes' code
// does. Repeated REPS times; each repetition starts with `step_marker`, which the claim files use
// to cut the trace into trials (`trial each kernel "*step_marker*"`).
//
//   nvcc -O2 -o stream_basics stream_basics.cu && stream-litmus trace --out t.json.gz -- ./stream_basics
#include <cstdio>
#include <cuda_runtime.h>

#define REPS 5

__global__ void step_marker() {}

__global__ void simpleKernel(float* data, int n) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < n) {
        for (int i = 0; i < 100; i++) {
            data[idx] = sinf(data[idx]) * cosf(data[idx]);
        }
    }
}

int main() {
    int n = 4 * 1024 * 1024;
    size_t size = n * sizeof(float);
    float *h_data, *d_data;
    cudaMallocHost(&h_data, size);  // pinned, as in the notes
    cudaMalloc(&d_data, size);
    for (int i = 0; i < n; i++) h_data[i] = 1.0f;
    int threads = 256, blocks = (n + threads - 1) / threads;
    cudaStream_t stream;
    cudaStreamCreate(&stream);
    for (int r = 0; r < REPS; r++) {
        step_marker<<<1, 1>>>();
        cudaDeviceSynchronize();
        // synchronous version
        cudaMemcpy(d_data, h_data, size, cudaMemcpyHostToDevice);
        simpleKernel<<<blocks, threads>>>(d_data, n);
        cudaMemcpy(h_data, d_data, size, cudaMemcpyDeviceToHost);
        cudaDeviceSynchronize();
        // asynchronous version, on a stream
        cudaMemcpyAsync(d_data, h_data, size, cudaMemcpyHostToDevice, stream);
        simpleKernel<<<blocks, threads, 0, stream>>>(d_data, n);
        cudaMemcpyAsync(h_data, d_data, size, cudaMemcpyDeviceToHost, stream);
        cudaStreamSynchronize(stream);
    }
    cudaError_t e = cudaGetLastError();
    printf("stream_basics: %d repetitions, %s\n", REPS, cudaGetErrorString(e));
    cudaStreamDestroy(stream);
    cudaFreeHost(h_data);
    cudaFree(d_data);
    return e == cudaSuccess ? 0 : 1;
}
