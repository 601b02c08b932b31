//! The tolerances a trace is judged with, measured from the trace itself.
//!
//! The lab calibrates its launch latency and jitter on an idle GPU before it runs; a trace comes
//! from someone else's run, under a profiler that adds its own cost to every launch (8–30 µs on
//! an H100 under `torch.profiler`, against the lab's 2–5 µs). So they are read from the ops the
//! trace shows **issued to an idle GPU**: no op of their device ran from their call's begin to
//! their start, the thread's previous call was no `cudaStreamWaitEvent`, and they are no copy of
//! pageable memory (whose call the driver holds while it stages the copy). Nothing could hold
//! such an op back, so its delay (from its call's return, where ready times count from) is
//! launch delay:
//! - launch latency = the shortest of those delays (0 where the op started before its call
//!   returned);
//! - launch jitter = the longest minus the shortest (every one of them was pure launch delay);
//! - clock error = the shortest delay of *any* op: CUPTI puts GPU times on the host's clock, and
//!   were the two off by more than that, some op would have started before its launch call
//!   began; the host-side checks (`returns_before`, `blocks`) widen by it;
//! - timer step: [`CUPTI_TIMER_STEP_NS`] where the trace writes fractions of a µs, else 1 µs.
//!
//! Fewer than [`MIN_IDLE_ISSUED`] such ops and the trace has no launch latency: every check that
//! needs a ready time is Inconclusive, saying so.

use super::events::{GpuKind, HostMemory, TraceFile};
use super::host_fns::behind;
use crate::measured::calibration::Tolerances;

/// The step of the GPU clock CUPTI stamps activity with (`%globaltimer`): 32 ns on the H100 and
/// the H200, as the lab's own calibration measures it (docs/claims.md).
pub const CUPTI_TIMER_STEP_NS: u64 = 32;

/// The fewest ops issued to an idle GPU that give a launch latency and jitter.
pub const MIN_IDLE_ISSUED: usize = 3;

/// What was measured, with the tolerances it gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceTolerances {
    pub tolerances: Tolerances,
    /// How many ops were issued to an idle GPU.
    pub idle_issued: usize,
    pub clock_error_ns: u64,
}

impl TraceTolerances {
    /// Measures them over every file of a trace.
    pub fn measure(files: &[TraceFile]) -> TraceTolerances {
        let mut idle_delays: Vec<i64> = Vec::new();
        let mut shortest_any: Option<i64> = None;
        for f in files {
            // The latest end so far among ops that started earlier, per device.
            let mut busy_until: std::collections::HashMap<u32, i64> = Default::default();
            // A host function ran on the host: no launch, and no GPU time.
            for op in f.ops.iter().filter(|o| o.kind != GpuKind::HostFn) {
                let before = busy_until.get(&op.device).copied();
                if let Some(call) = &op.call {
                    shortest_any = Some(shortest_any.map_or(op.start_ns - call.begin_ns, |s| {
                        s.min(op.start_ns - call.begin_ns)
                    }));
                    // Ready times count from the call's return (`Timeline::issued_ns`), so the
                    // delay does too: a first launch that loads its module inside the call, or a
                    // call the host was slow in, does not count as launch delay. A call that
                    // returned only after its op ended (a synchronous copy) launched nothing
                    // asynchronously and is left out; so is a copy to or from pageable memory,
                    // whose call holds the host while the driver stages it and returns once the
                    // last chunk is staged, long after the copy began: such copies (the lab's
                    // start-up times some) made every ready time of a trace of the lab itself
                    // hundreds of µs wide.
                    // An op issued while a host function was pending may be queued behind it.
                    let idle = !call.after_wait
                        && before.map_or(true, |b| b < call.begin_ns)
                        && !behind(&f.host_fn_pending, op.pid, call.begin_ns);
                    if idle && call.end_ns <= op.end_ns && !from_pageable(op.kind) {
                        idle_delays.push(op.start_ns - call.end_ns);
                    }
                }
                let e = busy_until.entry(op.device).or_insert(op.end_ns);
                *e = (*e).max(op.end_ns);
            }
        }
        let step = match files.iter().all(|f| f.sub_micro) {
            true => CUPTI_TIMER_STEP_NS,
            false => 1_000,
        };
        let clock_error_ns = shortest_any.unwrap_or(0).max(0) as u64;
        // A launch may return after its op has started (delay below 0): the latency is then 0,
        // and the jitter still spans the whole spread, so no ready time comes out early.
        let idle = idle_delays;
        let (latency, jitter) = match (idle.iter().min(), idle.iter().max()) {
            (Some(&lo), Some(&hi)) if idle.len() >= MIN_IDLE_ISSUED => {
                (Some(lo.max(0) as u64), (hi - lo) as u64)
            }
            _ => (None, 0),
        };
        TraceTolerances {
            tolerances: Tolerances {
                timer_step_ns: step,
                launch_jitter_ns: jitter.max(step),
                dependent_gap_ns: 0,
                launch_latency_ns: latency,
                copy_rates: None,
            },
            idle_issued: idle.len(),
            clock_error_ns,
        }
    }

    /// "timer step 32 ns, launch latency 8.63 µs and jitter 22.38 µs (from 12 ops issued to an
    /// idle GPU), clock error 8.63 µs".
    pub fn describe(&self) -> String {
        let us = |ns: u64| format!("{:.2} µs", ns as f64 / 1e3);
        let t = &self.tolerances;
        match t.launch_latency_ns {
            Some(l) => format!(
                "timer step {} ns, launch latency {} and jitter {} (from {} ops issued to an idle \
                 GPU), clock error {}",
                t.timer_step_ns,
                us(l),
                us(t.launch_jitter_ns),
                self.idle_issued,
                us(self.clock_error_ns)
            ),
            None => format!(
                "timer step {} ns; no launch latency: only {} ops were issued to an idle GPU \
                 (at least {MIN_IDLE_ISSUED} are needed), so no ready time is known",
                t.timer_step_ns, self.idle_issued
            ),
        }
    }
}

/// Whether an op copies to or from pageable host memory.
fn from_pageable(kind: GpuKind) -> bool {
    matches!(kind, GpuKind::Copy(_, HostMemory::Pageable))
}
