//! Where a claim's time goes: the lab's own cost beside the GPU time it measures (issue 16).
//!
//! A catalogue run once took 5 to 8 times longer than the timed regions it records, and nobody
//! could say which part of the lab the rest went to. So every claim carries a [`ClaimTiming`]:
//! the executor times each phase of a program's run (resources made and freed, the work before
//! and after each trial, clock alignments, the CUPTI witness), `collect_trials` adds the judging
//! between batches and the retry pauses, and the lab adds each claim's share of its child
//! process. The figures are host wall time, kept in the results file beside the trials (old files
//! have none) and printed at the end of a run; they never enter a verdict.
//!
//! The phases are chosen so that they add up: `wall ≈ gpu + warm-up + setup + teardown + prepare
//! + clock + witness + readback + judge + paused + child`, with a few µs of bookkeeping left over.

use serde::{Deserialize, Serialize};

/// Where one claim's time went, in nanoseconds of host wall time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClaimTiming {
    /// From the first resource made to the last batch judged, plus [`ClaimTiming::child_ns`].
    pub wall_ns: u64,
    /// Timed regions (first issue to final synchronize) of the recorded trials.
    pub gpu_ns: u64,
    /// Timed regions of the warm-up trials (one per batch).
    #[serde(default)]
    pub warmup_ns: u64,
    /// Making the program's resources: streams, events, stamp buffer, buffers (taken from the
    /// pool or allocated), API-call memory, the witness (CUPTI switched on).
    #[serde(default)]
    pub setup_ns: u64,
    /// Freeing them: the final synchronize, streams and events destroyed, buffers back to the pool.
    #[serde(default)]
    pub teardown_ns: u64,
    /// Around each trial: stamps zeroed, buffers refilled, frees prepared, synchronizes, what the
    /// trial allocated freed afterwards.
    #[serde(default)]
    pub prepare_ns: u64,
    /// Host-clock alignments (`clock.rs`).
    #[serde(default)]
    pub clock_ns: u64,
    /// Witness markers and CUPTI flushes.
    #[serde(default)]
    pub witness_ns: u64,
    /// After each recorded trial: stamps read back, timeline built, buffer contents read.
    #[serde(default)]
    pub readback_ns: u64,
    /// Judging the trials between batches, to know whether more are needed.
    #[serde(default)]
    pub judge_ns: u64,
    /// Retry pauses slept before replacement batches.
    #[serde(default)]
    pub paused_ns: u64,
    /// This claim's share of its child process's own cost (start, GPU context, NVRTC,
    /// calibration, the JSON both ways): the child's wall time less its claims' own walls,
    /// split evenly among them. Zero for a claim run in-process.
    #[serde(default)]
    pub child_ns: u64,
    /// Executions of the program (the first one and each replacement batch).
    #[serde(default)]
    pub batches: u32,
    /// Buffers taken from the run's pool instead of allocated.
    #[serde(default)]
    pub buffers_reused: u32,
    /// Buffers allocated because the pool had none of that place and size.
    #[serde(default)]
    pub buffers_allocated: u32,
}

impl ClaimTiming {
    /// What the lab spent besides the recorded timed regions.
    pub fn overhead_ns(&self) -> u64 {
        self.wall_ns.saturating_sub(self.gpu_ns)
    }

    /// Adds another execution's figures (a replacement batch) to these; walls add too.
    pub fn absorb(&mut self, o: &ClaimTiming) {
        let add = |a: &mut u64, b: u64| *a = a.saturating_add(b);
        add(&mut self.wall_ns, o.wall_ns);
        add(&mut self.gpu_ns, o.gpu_ns);
        add(&mut self.warmup_ns, o.warmup_ns);
        add(&mut self.setup_ns, o.setup_ns);
        add(&mut self.teardown_ns, o.teardown_ns);
        add(&mut self.prepare_ns, o.prepare_ns);
        add(&mut self.clock_ns, o.clock_ns);
        add(&mut self.witness_ns, o.witness_ns);
        add(&mut self.readback_ns, o.readback_ns);
        add(&mut self.judge_ns, o.judge_ns);
        add(&mut self.paused_ns, o.paused_ns);
        add(&mut self.child_ns, o.child_ns);
        self.batches = self.batches.saturating_add(o.batches);
        self.buffers_reused = self.buffers_reused.saturating_add(o.buffers_reused);
        self.buffers_allocated = self.buffers_allocated.saturating_add(o.buffers_allocated);
    }

    /// The named phases, largest first, for a one-line breakdown (zero phases left out); "other"
    /// is the overhead no phase accounts for (bookkeeping between phases, the lock, the calls
    /// that bind the context).
    pub fn phases(&self) -> Vec<(&'static str, u64)> {
        let mut v = vec![
            ("warm-up", self.warmup_ns),
            ("setup", self.setup_ns),
            ("teardown", self.teardown_ns),
            ("prepare", self.prepare_ns),
            ("clock", self.clock_ns),
            ("witness", self.witness_ns),
            ("readback", self.readback_ns),
            ("judge", self.judge_ns),
            ("paused", self.paused_ns),
            ("child", self.child_ns),
        ];
        let named = v.iter().fold(0u64, |a, p| a.saturating_add(p.1));
        v.push(("other", self.overhead_ns().saturating_sub(named)));
        v.retain(|&(_, ns)| ns > 0);
        v.sort_by_key(|p| std::cmp::Reverse(p.1));
        v
    }
}

/// Where the process's setup went (`Gpu::open`), in nanoseconds of host wall time: what every
/// process that opens the GPU pays once, the CLI's children and each test binary included.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetupTiming {
    /// Loading the driver, `cuInit` and the primary context.
    #[serde(default)]
    pub context_ns: u64,
    /// The device's attributes and starting CUPTI (loading the library, its callbacks).
    #[serde(default)]
    pub device_ns: u64,
    /// Compiling the kernels with NVRTC (or taking the PTX given) and loading the module.
    #[serde(default)]
    pub kernels_ns: u64,
    /// Measuring the timer step, the clock, launch jitter and gaps.
    #[serde(default)]
    pub calibration_ns: u64,
}

impl SetupTiming {
    /// No part measured (a run that opened no GPU, or a file written before the split).
    pub fn is_empty(&self) -> bool {
        *self == SetupTiming::default()
    }

    /// Adds another process's setup to these.
    pub fn absorb(&mut self, o: &SetupTiming) {
        self.context_ns = self.context_ns.saturating_add(o.context_ns);
        self.device_ns = self.device_ns.saturating_add(o.device_ns);
        self.kernels_ns = self.kernels_ns.saturating_add(o.kernels_ns);
        self.calibration_ns = self.calibration_ns.saturating_add(o.calibration_ns);
    }

    /// The named parts, largest first, zero ones left out.
    pub fn parts(&self) -> Vec<(&'static str, u64)> {
        let mut v = vec![
            ("context", self.context_ns),
            ("device and CUPTI", self.device_ns),
            ("kernels", self.kernels_ns),
            ("calibration", self.calibration_ns),
        ];
        v.retain(|&(_, ns)| ns > 0);
        v.sort_by_key(|p| std::cmp::Reverse(p.1));
        v
    }
}

/// A claim's family: its id's first segment (`fifo`, `copy`, `scenario`, …).
pub fn family(id: &str) -> &str {
    id.split('.').next().unwrap_or(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absorb_adds_every_phase_and_overhead_is_the_rest() {
        let mut a = ClaimTiming {
            wall_ns: 10,
            gpu_ns: 4,
            setup_ns: 3,
            batches: 1,
            ..ClaimTiming::default()
        };
        a.absorb(&ClaimTiming {
            wall_ns: 5,
            gpu_ns: 1,
            paused_ns: 2,
            batches: 1,
            ..ClaimTiming::default()
        });
        assert_eq!((a.wall_ns, a.gpu_ns, a.batches), (15, 5, 2));
        assert_eq!(a.overhead_ns(), 10);
        assert_eq!(a.phases(), vec![("other", 5), ("setup", 3), ("paused", 2)]);
        assert_eq!(family("scenario.pipeline.1"), "scenario");
        assert_eq!(family("fifo"), "fifo");
    }

    #[test]
    fn a_timing_without_the_newer_fields_loads() {
        let t: ClaimTiming = serde_json::from_str(r#"{"wall_ns": 7, "gpu_ns": 3}"#).unwrap();
        assert_eq!(t.overhead_ns(), 4);
    }
}
