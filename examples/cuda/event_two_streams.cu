// Seed 000 §7.6 (两个比较直观的例子): kernel2 needs kernel1's output, so stream2 waits on an event
// recorded after kernel1 in stream1; kernel3, on stream2 with no wait, may run beside kernel1.
// Each repetition is an NVTX range named "repetition" (`trial each "repetition"`), and starts
// with `step_marker` too, for traces taken without NVTX.
//
//   nvcc -O2 -o event_two_streams event_two_streams.cu
#include <cstdio>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#define REPS 5

__global__ void step_marker() {}

__device__ void spin_ns(unsigned long long ns) {
    unsigned long long t0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    for (;;) {
        unsigned long long t;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
        if (t - t0 >= ns) break;
    }
}

__global__ void kernel1(unsigned long long ns) { spin_ns(ns); }
__global__ void kernel2(unsigned long long ns) { spin_ns(ns); }
__global__ void kernel3(unsigned long long ns) { spin_ns(ns); }

int main() {
    cudaStream_t s1, s2;
    cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking);
    cudaEvent_t done;
    cudaEventCreateWithFlags(&done, cudaEventDisableTiming);
    for (int r = 0; r < REPS; r++) {
        nvtxRangePushA("repetition");
        step_marker<<<1, 1>>>();
        cudaDeviceSynchronize();
        // kernel2 waits for kernel1 through the event
        kernel1<<<1, 32, 0, s1>>>(500000);
        cudaEventRecord(done, s1);
        cudaStreamWaitEvent(s2, done, 0);
        kernel2<<<1, 32, 0, s2>>>(100000);
        cudaDeviceSynchronize();
        // kernel3 does not wait
        kernel1<<<1, 32, 0, s1>>>(500000);
        kernel3<<<1, 32, 0, s2>>>(100000);
        cudaDeviceSynchronize();
        nvtxRangePop();
    }
    cudaError_t e = cudaGetLastError();
    printf("event_two_streams: %d repetitions, %s\n", REPS, cudaGetErrorString(e));
    return e == cudaSuccess ? 0 : 1;
}
