// Stamp kernels for stream-litmus, compiled once per process with NVRTC.
//
// Every block of `spin_stamp` writes one record of six 64-bit words at
// stamps[6 * blockIdx.x ...]:
//   [0] %globaltimer when the block started (ns, one clock for the whole GPU)
//   [1] %globaltimer when the block finished spinning
//   [2] %smid, the SM the block ran on
//   [3] clock64 cycles the block actually spun
//   [4] %globaltimer before the longest gap between two consecutive timer reads of thread 0
//   [5] that gap, in ns: a running block reads the clock every few tens of ns, so a long gap
//       means the block was switched out (another context's time slice)
// %globaltimer is the only clock comparable across SMs; clock64 is a per-SM cycle counter, so it
// is used to spin and never to compare two blocks.

__device__ __forceinline__ unsigned long long global_timer() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__device__ __forceinline__ unsigned int sm_id() {
    unsigned int id;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
    return id;
}

// Spins every thread for `cycles` clock64 cycles and stamps the block. Grid: any number of blocks
// in x; block: any number of threads in x.
// After the block's work (and a __syncthreads), thread 0 writes the block's record.
__device__ __forceinline__ void write_stamp(unsigned long long* stamps, unsigned long long start,
                                            long long cycles, unsigned long long gap_at,
                                            unsigned long long gap) {
    if (threadIdx.x == 0) {
        unsigned long long end = global_timer();
        unsigned long long* rec = stamps + 6ull * blockIdx.x;
        rec[0] = start;
        rec[1] = end;
        rec[2] = sm_id();
        rec[3] = (unsigned long long)cycles;
        rec[4] = gap_at;
        rec[5] = gap;
    }
}

__device__ __forceinline__ void spin_and_stamp(unsigned long long* stamps, long long cycles) {
    __shared__ unsigned long long start;
    if (threadIdx.x == 0) {
        start = global_timer();
    }
    __syncthreads();
    long long c0 = clock64();
    long long spun = 0;
    // Thread 0 alone reads the timer between its clock reads and keeps the largest gap: with
    // every thread of a 1024-thread block reading %globaltimer, the reads themselves queued up for
    // tens of µs and slowed the kernels (seen on an H100). The other threads only spin.
    // The gap is measured from the loop's first read, not from `start`: the __syncthreads above
    // can hold a block of a grid larger than the GPU for ~100 µs while its warps arrive (4096
    // blocks of 256 threads on an H100), which is no switch.
    unsigned long long gap = 0, gap_at = start;
    if (threadIdx.x == 0) {
        unsigned long long last = global_timer();
        gap_at = last;
        do {
            spun = clock64() - c0;
            unsigned long long now = global_timer();
            if (now - last > gap) {
                gap = now - last;
                gap_at = last;
            }
            last = now;
        } while (spun < cycles);
    } else {
        do {
            spun = clock64() - c0;
        } while (spun < cycles);
    }
    __syncthreads();
    write_stamp(stamps, start, spun, gap_at, gap);
}

extern "C" __global__ void spin_stamp(unsigned long long* stamps, long long cycles) {
    spin_and_stamp(stamps, cycles);
}

// The same spin under another name: the copy witness finds its marker kernels among CUPTI's
// kernel records by this name (see src/gpu/witness.rs).
extern "C" __global__ void witness_marker(unsigned long long* stamps, long long cycles) {
    spin_and_stamp(stamps, cycles);
}

// Measures the %globaltimer step: one thread reads the timer `samples` times and keeps the
// smallest non-zero difference between successive readings.
// out[0] = smallest step (ns), out[1] = number of distinct readings seen, out[2] = elapsed ns.
extern "C" __global__ void timer_step(unsigned long long* out, int samples) {
    if (threadIdx.x != 0 || blockIdx.x != 0) {
        return;
    }
    unsigned long long first = global_timer();
    unsigned long long prev = first;
    unsigned long long smallest = ~0ull;
    unsigned long long changes = 0;
    for (int i = 0; i < samples; ++i) {
        unsigned long long now = global_timer();
        if (now != prev) {
            unsigned long long d = now - prev;
            if (d < smallest) {
                smallest = d;
            }
            ++changes;
            prev = now;
        }
    }
    out[0] = smallest;
    out[1] = changes;
    out[2] = prev - first;
}

// Aligns the host clock to %globaltimer by ping-pong through mapped, page-locked host memory.
// mailbox[0]: the round the host asks for; mailbox[1]: the last round answered;
// mailbox[2 + i]: %globaltimer when round i + 1 was seen. The host stamps its clock before
// asking and after seeing the answer, so each round brackets one GPU reading. The kernel gives
// up after `timeout_ns` without a request, so a host that fails cannot leave it spinning.
extern "C" __global__ void clock_ping(volatile unsigned long long* mailbox, int rounds,
                                      unsigned long long timeout_ns) {
    if (threadIdx.x != 0 || blockIdx.x != 0) {
        return;
    }
    for (int i = 1; i <= rounds; ++i) {
        unsigned long long deadline = global_timer() + timeout_ns;
        unsigned long long seen;
        while ((seen = mailbox[0]) < (unsigned long long)i) {
            if (global_timer() > deadline) {
                return;
            }
        }
        mailbox[1 + i] = global_timer();
        __threadfence_system();
        mailbox[1] = (unsigned long long)i;
        __threadfence_system();
    }
}

// Sets `n` 32-bit words at `p` to `value`: the lab resets buffers and stamp words before every
// trial with this kernel, one launch per buffer, rather than with cuMemsetD32/D8, each of which
// cost about 0.15 ms while CUPTI traced memsets (copy and scenario claims).
extern "C" __global__ void fill_words(unsigned int* p, unsigned long long n, unsigned int value) {
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += stride) {
        p[i] = value;
    }
}

// Whether any of the `n` 32-bit words at `p` differs from the first: `out[0]` becomes non-zero
// if one does (the caller zeroes it first), and `out[1]` holds the first word. A buffer read
// back after a trial nearly always holds one value (the prefetch claims' 4 MiB inputs); asked
// here, it is 8 bytes to copy back instead of the whole buffer to copy and scan on the host,
// which is then done only where a word differs.
extern "C" __global__ void differs_from_first(const unsigned int* p, unsigned long long n,
                                              unsigned int* out) {
    unsigned int first = p[0];
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i == 0) {
        out[1] = first;
    }
    for (; i < n; i += stride) {
        if (p[i] != first) {
            out[0] = 1;
            return;
        }
    }
}
