//! The host clock, and its alignment to `%globaltimer`.
//!
//! Host functions, queries and syncs happen on the host, and their times are read with the host
//! clock; stamps use `%globaltimer`. To put both on one axis the executor measures, just before
//! each trial, the offset between the two clocks with the ping-pong of
//! Cristian's algorithm: a one-thread kernel watches a word of mapped page-locked host memory,
//! and when the host writes a round number it stamps `%globaltimer` and answers. The host reads
//! its clock before writing and after seeing the answer, so the GPU's stamp lies inside that
//! round trip: `offset = stamp - midpoint`, correct to within half the round trip. The round with
//! the shortest trip gives the bound printed with every host-side verdict.
//!
//! Trials without host-side work are aligned too, with fewer rounds: the alignment tells when
//! their first op could have started, so a trial that a neighbour held back as a whole (every op
//! shifted alike, which the stamps alone cannot show) is seen (`crate::judge::disturbance`).
//!
//! The trial follows within a millisecond, so drift between the two clocks (parts per million)
//! adds nanoseconds; the bound is dominated by the PCIe round trip.

use super::kernels::Kernels;
use super::probe::call;
use crate::border::error::Error;
use cudarc::driver::{result, sys};
use std::ffi::c_void;
use std::sync::OnceLock;
use std::time::Instant;

/// Rounds of ping-pong per alignment of a trial with host-side work: the shortest of them sets
/// the bound printed with every host-side verdict.
pub const ROUNDS: usize = 24;
/// Rounds for a trial without host-side work. Its alignment only places the trial's first
/// launch against the calibrated launch latency (`crate::judge::disturbance`), where a bound of a few µs
/// is plenty against a stall threshold of tens of µs; on an idle H100 the best of 6 round trips
/// is within 1 µs of the best of 24.
pub const QUICK_ROUNDS: usize = 6;
/// How long either side waits for the other before giving up.
const TIMEOUT_NS: u64 = 200_000_000;

/// Nanoseconds on the host's monotonic clock since the process first asked: one clock for the
/// executor's thread and the driver's host-function thread.
pub fn now_ns() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

/// How many times the OS has preempted the calling thread (involuntary context switches, from
/// `getrusage(RUSAGE_THREAD)`; 0 where the OS does not say). A launch call that took long because
/// the thread was switched out measured the host's scheduler, not the driver: the executor counts
/// them over each trial's issue loop, and trials with host-time checks and a preemption are set
/// aside (`crate::judge::disturbance`).
pub fn preemptions() -> u64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: a valid out-pointer; RUSAGE_THREAD reads the calling thread's counters.
    let ok = unsafe { libc::getrusage(libc::RUSAGE_THREAD, usage.as_mut_ptr()) } == 0;
    if !ok {
        return 0;
    }
    // SAFETY: initialised by the successful call (and zeroed before).
    let usage = unsafe { usage.assume_init() };
    u64::try_from(usage.ru_nivcsw).unwrap_or(0)
}

/// The measured alignment: `%globaltimer = now_ns() + offset_ns`, within `±error_ns`.
#[derive(Debug, Clone, Copy)]
pub struct Alignment {
    pub offset_ns: i64,
    pub error_ns: u64,
}

/// Mapped page-locked host memory the ping kernel and the host share.
pub struct Mailbox {
    host: *mut u64,
    device: sys::CUdeviceptr,
}

impl Mailbox {
    pub fn alloc() -> Result<Mailbox, Error> {
        let bytes = (ROUNDS + 2) * 8;
        let mut host: *mut c_void = std::ptr::null_mut();
        // SAFETY: out-pointers are valid; the memory is freed in Drop.
        unsafe {
            sys::cuMemHostAlloc(
                &mut host,
                bytes,
                sys::CU_MEMHOSTALLOC_DEVICEMAP | sys::CU_MEMHOSTALLOC_PORTABLE,
            )
            .result()
            .map_err(call("cuMemHostAlloc"))?;
        }
        let mut device: sys::CUdeviceptr = 0;
        // SAFETY: `host` came from cuMemHostAlloc with DEVICEMAP.
        let mapped = unsafe { sys::cuMemHostGetDevicePointer_v2(&mut device, host, 0) }.result();
        if let Err(e) = mapped {
            // SAFETY: allocated above, not yet owned by a Mailbox.
            let _ = unsafe { sys::cuMemFreeHost(host) };
            return Err(call("cuMemHostGetDevicePointer")(e));
        }
        Ok(Mailbox {
            host: host as *mut u64,
            device,
        })
    }

    fn write(&self, i: usize, v: u64) {
        // SAFETY: i < ROUNDS + 2 words, allocated above; volatile because the GPU reads it.
        unsafe { std::ptr::write_volatile(self.host.add(i), v) }
    }

    fn read(&self, i: usize) -> u64 {
        // SAFETY: as in `write`; the GPU writes these words.
        unsafe { std::ptr::read_volatile(self.host.add(i)) }
    }

    /// Measures the alignment with `rounds` round trips (at most [`ROUNDS`]), then synchronizes
    /// the context. The ping kernel runs in the legacy stream, so work enqueued before it there
    /// (the executor's preparation of a trial) ends before the first round is answered; that
    /// round's trip is then long, and the best round is what counts. Nothing else may run while
    /// the rounds do, beyond the witness's 2 µs marker on its own stream.
    pub fn align(&self, kernels: &Kernels, rounds: usize) -> Result<Alignment, Error> {
        let rounds = rounds.clamp(1, ROUNDS);
        for i in 0..rounds + 2 {
            self.write(i, 0);
        }
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        kernels.launch_clock_ping(std::ptr::null_mut(), self.device, rounds as i32, TIMEOUT_NS)?;
        let mut best: Option<Alignment> = None;
        let mut failure = None;
        for round in 1..=rounds as u64 {
            let asked = now_ns();
            self.write(0, round);
            std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
            while self.read(1) < round {
                if now_ns() - asked > TIMEOUT_NS {
                    failure = Some(round);
                    break;
                }
                std::hint::spin_loop();
            }
            if failure.is_some() {
                break;
            }
            let answered = now_ns();
            std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
            let stamp = self.read(1 + round as usize);
            let candidate = Alignment {
                offset_ns: stamp as i64 - ((asked + answered) / 2) as i64,
                error_ns: (answered - asked).div_ceil(2),
            };
            if best.map_or(true, |b| candidate.error_ns < b.error_ns) {
                best = Some(candidate);
            }
        }
        result::ctx::synchronize().map_err(call("cuCtxSynchronize"))?;
        match (failure, best) {
            (None, Some(b)) => Ok(b),
            (round, _) => Err(Error::Clock {
                detail: format!(
                    "the GPU did not answer ping {} within {} ms: another process held the GPU \
                     that long, or mapped host memory is not visible to the device (is this a \
                     GPU without unified addressing?)",
                    round.unwrap_or(1),
                    TIMEOUT_NS / 1_000_000
                ),
            }),
        }
    }
}

// SAFETY: mapped page-locked memory of the process, valid from any thread; the `Gpu` keeps one
// mailbox behind a lock, so only one thread aligns with it at a time.
unsafe impl Send for Mailbox {}

impl Drop for Mailbox {
    fn drop(&mut self) {
        // SAFETY: allocated in `alloc`, freed once; the ping kernel has finished (align syncs).
        let _ = unsafe { sys::cuMemFreeHost(self.host as *mut c_void) };
    }
}
