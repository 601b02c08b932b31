// Seed 002 §4 (流同步): layer k's `add` runs on the NULL stream while the next layer's weights
// load on `load_weight_stream`, and events order them: an add waits for its weights' load
// (cudaStreamWaitEvent(NULL, load_event)), a load waits for the add that last read its buffer
// (cudaStreamWaitEvent(load_weight_stream, compute_event)). The note says to create the load
// stream non-blocking: a stream made by cudaStreamCreate is blocking, and the NULL stream (the
// legacy default stream) then waits for all its work and it for the NULL stream's, so no load
// runs beside an add, events or not.
//
//   nvcc -O2 -o weight_prefetch weight_prefetch.cu
//   ./weight_prefetch nonblocking   (the note's advice)  |  ./weight_prefetch blocking
//
// Each repetition is an NVTX range named "repetition". `stream-litmus trace` records the stream
// kinds and the event waits; `stream-litmus explain` names the legacy default stream as the
// cause of every wait between a load and an add in the blocking run.
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#define REPS 5
#define LAYERS 4

__device__ void spin_ns(unsigned long long ns) {
    unsigned long long t0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    for (;;) {
        unsigned long long t;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
        if (t - t0 >= ns) break;
    }
}

// A layer: reads its weights, then spins so that a load of the same size could run beside it.
__global__ void add(const float* w, float* out, int n, unsigned long long ns) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] += w[i];
    if (i == 0) spin_ns(ns);
}

int main(int argc, char** argv) {
    bool blocking = argc > 1 && strcmp(argv[1], "blocking") == 0;
    const int n = 1 << 20;  // 4 MiB of floats per layer's weights
    const size_t bytes = n * sizeof(float);
    float* weight[LAYERS];
    for (int k = 0; k < LAYERS; k++) {
        cudaMallocHost(&weight[k], bytes);
        for (int i = 0; i < n; i++) weight[k][i] = 1.0f;
    }
    float *d_weight[2], *d_out;
    cudaMalloc(&d_weight[0], bytes);
    cudaMalloc(&d_weight[1], bytes);
    cudaMalloc(&d_out, bytes);
    cudaStream_t load;
    if (blocking) {
        cudaStreamCreate(&load);
    } else {
        cudaStreamCreateWithFlags(&load, cudaStreamNonBlocking);
    }
    cudaEvent_t load_event, compute_event[2];
    cudaEventCreateWithFlags(&load_event, cudaEventDisableTiming);
    cudaEventCreateWithFlags(&compute_event[0], cudaEventDisableTiming);
    cudaEventCreateWithFlags(&compute_event[1], cudaEventDisableTiming);
    for (int r = 0; r < REPS; r++) {
        nvtxRangePushA("repetition");
        cudaMemcpy(d_weight[0], weight[0], bytes, cudaMemcpyHostToDevice);
        for (int k = 0; k < LAYERS; k++) {
            int cur = k % 2, next = (k + 1) % 2;
            // The next layer's weights load while this layer adds, once the add that last read
            // their buffer (layer k - 1) is done.
            if (k + 1 < LAYERS) {
                if (k > 0) cudaStreamWaitEvent(load, compute_event[next], 0);
                cudaMemcpyAsync(d_weight[next], weight[k + 1], bytes, cudaMemcpyHostToDevice, load);
                cudaEventRecord(load_event, load);
            }
            add<<<n / 256, 256>>>(d_weight[cur], d_out, n, 400000);
            cudaEventRecord(compute_event[cur], 0);
            // The next add reads the weights just loaded.
            if (k + 1 < LAYERS) cudaStreamWaitEvent(0, load_event, 0);
        }
        cudaDeviceSynchronize();
        nvtxRangePop();
    }
    cudaError_t e = cudaGetLastError();
    printf("weight_prefetch (%s load stream): %d repetitions, %s\n",
           blocking ? "blocking" : "non-blocking", REPS, cudaGetErrorString(e));
    return e == cudaSuccess ? 0 : 1;
}
