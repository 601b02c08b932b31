//! Host functions: the work `cuLaunchHostFunc` and `cuStreamAddCallback` enqueue.
//!
//! Each host-function op gets a slot, allocated before the trial and alive until after its final
//! synchronize, whose address is the callback's user data. When a driver thread calls the
//! function, it stamps its begin with the host clock ([`now_ns`]), spins for the op's duration,
//! and stamps its end. The executor turns the slots into host spans once the trial is over.
//! The functions make no CUDA call, as both APIs require.

use super::clock::now_ns;
use super::probe::call;
use crate::border::error::Error;
use crate::measured::timeline::HostSpan;
use crate::program::{HostFnApi, OpKind, Program};
use cudarc::driver::sys;
use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};

/// What one host function records.
#[derive(Default)]
struct Slot {
    spin_ns: u64,
    begin: AtomicU64,
    end: AtomicU64,
}

impl Slot {
    fn run(&self) {
        let begin = now_ns();
        self.begin.store(begin, Ordering::Release);
        while now_ns() - begin < self.spin_ns {
            std::hint::spin_loop();
        }
        let end = now_ns();
        self.end.store(end, Ordering::Release);
        LAST_RUN_END.fetch_max(end, Ordering::AcqRel);
    }
}

/// When the last host function ended, and when the last slots were freed (host clock ns): the
/// executor's error-path test checks that no host function ran after its slot was freed.
static LAST_RUN_END: AtomicU64 = AtomicU64::new(0);
static LAST_FREED: AtomicU64 = AtomicU64::new(0);

/// (when the last host function ended, when host-function slots were last freed), host ns.
#[doc(hidden)]
pub fn last_times() -> (u64, u64) {
    (
        LAST_RUN_END.load(Ordering::Acquire),
        LAST_FREED.load(Ordering::Acquire),
    )
}

unsafe extern "C" fn host_fn(data: *mut c_void) {
    // SAFETY: `data` is a Slot of HostFns, which outlives the trial's final synchronize.
    unsafe { &*(data as *const Slot) }.run();
}

unsafe extern "C" fn stream_callback(_: sys::CUstream, _: sys::CUresult, data: *mut c_void) {
    // SAFETY: as in `host_fn`.
    unsafe { &*(data as *const Slot) }.run();
}

/// One slot per op of the program (only host-function ops use theirs).
pub struct HostFns {
    slots: Box<[Slot]>,
}

impl HostFns {
    pub fn new(program: &Program) -> HostFns {
        let slots = program
            .ops
            .iter()
            .map(|op| Slot {
                spin_ns: match op.kind {
                    OpKind::HostFn { duration_ns, .. } => duration_ns,
                    _ => 0,
                },
                ..Slot::default()
            })
            .collect();
        HostFns { slots }
    }

    /// Gives up the slots without freeing them: for a context that could not be synchronized,
    /// where a queued host function might still run and use its slot.
    pub fn leak(&mut self) {
        std::mem::forget(std::mem::take(&mut self.slots));
    }

    /// Clears the stamps before a trial.
    pub fn reset(&self) {
        for s in self.slots.iter() {
            s.begin.store(0, Ordering::Relaxed);
            s.end.store(0, Ordering::Relaxed);
        }
    }

    /// Enqueues op `i`'s host function on `stream`.
    pub fn enqueue(&self, i: usize, stream: sys::CUstream, api: HostFnApi) -> Result<(), Error> {
        let data = &self.slots[i] as *const Slot as *mut c_void;
        // SAFETY: the slot lives in `self`, which the executor keeps until after the final
        // synchronize of every trial; the functions only touch their slot.
        unsafe {
            match api {
                HostFnApi::LaunchHostFunc => sys::cuLaunchHostFunc(stream, Some(host_fn), data)
                    .result()
                    .map_err(call("cuLaunchHostFunc")),
                HostFnApi::StreamAddCallback => {
                    sys::cuStreamAddCallback(stream, Some(stream_callback), data, 0)
                        .result()
                        .map_err(call("cuStreamAddCallback"))
                }
            }
        }
    }

    /// The host spans of the trial that began at host time `t0`, relative to it.
    pub fn spans(&self, program: &Program, t0: u64) -> Result<Vec<HostSpan>, Error> {
        let mut out = Vec::new();
        for (op, slot) in program.ops.iter().zip(self.slots.iter()) {
            if !matches!(op.kind, OpKind::HostFn { .. }) {
                continue;
            }
            let (begin, end) = (
                slot.begin.load(Ordering::Acquire),
                slot.end.load(Ordering::Acquire),
            );
            if begin < t0 || end < begin {
                return Err(Error::MissingHostSpan {
                    op: op.id.0,
                    label: op.label.clone(),
                });
            }
            out.push(HostSpan {
                op: op.id,
                begin_ns: begin - t0,
                end_ns: end - t0,
            });
        }
        Ok(out)
    }
}

impl Drop for HostFns {
    fn drop(&mut self) {
        if !self.slots.is_empty() {
            LAST_FREED.store(now_ns(), Ordering::Release);
        }
    }
}
