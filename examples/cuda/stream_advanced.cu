// Seed 001 (001_a7500a1b7456fe7d.txt), its second example `stream_advanced.cu`: stream
// priorities ("创建不同优先级的 Stream") and callbacks ("回调（Callbacks）"), as a program whose trace
// `stream_advanced.litmus` judges. Each repetition is an NVTX range "repetition" and has three
// phases:
//   1. priorities: two wide kernels on two low-priority streams, then a one-block kernel `urgent`
//      on a high-priority stream;
//   2. the same with equal priorities: `patient` on a third stream of the low priority;
//   3. a callback: `before_callback`, cudaStreamAddCallback, `after_callback` on one stream. The
//      callback opens an NVTX range "callback" (a trace sees a host function's run only so).
// The wide kernels have WAVES waves of blocks that fill every SM, each block spinning BLOCK_NS.
//
//   nvcc -O2 -o stream_advanced stream_advanced.cu && ./stream_advanced
#include <chrono>
#include <cstdio>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#define REPS 5
#define WAVES 8
#define BLOCK_NS 100000ULL

__device__ void spin_ns(unsigned long long ns) {
    unsigned long long t0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    for (;;) {
        unsigned long long t;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
        if (t - t0 >= ns) break;
    }
}

__global__ void first_low(unsigned long long ns) { spin_ns(ns); }
__global__ void second_low(unsigned long long ns) { spin_ns(ns); }
__global__ void urgent(unsigned long long ns) { spin_ns(ns); }
__global__ void first_equal(unsigned long long ns) { spin_ns(ns); }
__global__ void second_equal(unsigned long long ns) { spin_ns(ns); }
__global__ void patient(unsigned long long ns) { spin_ns(ns); }
__global__ void before_callback(unsigned long long ns) { spin_ns(ns); }
__global__ void after_callback(unsigned long long ns) { spin_ns(ns); }

// Runs on a thread of the CUDA driver once `before_callback` has ended; the stream waits for it.
// It may not call CUDA; it marks its run and keeps the host busy for 1 ms.
void CUDART_CB on_done(cudaStream_t, cudaError_t, void*) {
    nvtxRangePushA("callback");
    auto t0 = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(1)) {
    }
    nvtxRangePop();
}

int main() {
    int least, greatest, sms, per_sm;
    cudaDeviceGetStreamPriorityRange(&least, &greatest);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, first_low, 1024, 0);
    int wide = sms * per_sm * WAVES;
    cudaStream_t low_a, low_b, high, same, cb;
    cudaStreamCreateWithPriority(&low_a, cudaStreamNonBlocking, least);
    cudaStreamCreateWithPriority(&low_b, cudaStreamNonBlocking, least);
    cudaStreamCreateWithPriority(&high, cudaStreamNonBlocking, greatest);
    cudaStreamCreateWithPriority(&same, cudaStreamNonBlocking, least);
    cudaStreamCreateWithFlags(&cb, cudaStreamNonBlocking);
    // Load every kernel before the repetitions (CUDA loads modules lazily, at a first launch).
    first_low<<<1, 32>>>(0);
    second_low<<<1, 32>>>(0);
    urgent<<<1, 32>>>(0);
    first_equal<<<1, 32>>>(0);
    second_equal<<<1, 32>>>(0);
    patient<<<1, 32>>>(0);
    before_callback<<<1, 32>>>(0);
    after_callback<<<1, 32>>>(0);
    cudaDeviceSynchronize();
    for (int r = 0; r < REPS; r++) {
        nvtxRangePushA("repetition");
        // 1. A high-priority kernel issued after two low-priority ones.
        first_low<<<wide, 1024, 0, low_a>>>(BLOCK_NS);
        second_low<<<wide, 1024, 0, low_b>>>(BLOCK_NS);
        urgent<<<1, 32, 0, high>>>(20000);
        cudaDeviceSynchronize();
        // 2. The same, every stream of one priority.
        first_equal<<<wide, 1024, 0, low_a>>>(BLOCK_NS);
        second_equal<<<wide, 1024, 0, low_b>>>(BLOCK_NS);
        patient<<<1, 32, 0, same>>>(20000);
        cudaDeviceSynchronize();
        // 3. A callback between two kernels of one stream.
        before_callback<<<1, 32, 0, cb>>>(8000000);
        cudaStreamAddCallback(cb, on_done, nullptr, 0);
        after_callback<<<1, 32, 0, cb>>>(50000);
        cudaDeviceSynchronize();
        nvtxRangePop();
    }
    cudaError_t e = cudaGetLastError();
    printf("stream_advanced: %d repetitions, priorities %d..%d, %d SMs x %d blocks x %d waves, %s\n",
           REPS, least, greatest, sms, per_sm, WAVES, cudaGetErrorString(e));
    return e == cudaSuccess ? 0 : 1;
}
