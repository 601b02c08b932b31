//! What the lab measured about the GPU before running any claim, and the tolerances derived
//! from it.
//!
//! Tolerances are not guesses: each one is a measured quantity with a name, printed with the
//! evidence whenever a relation could not be decided.
//! - The **timer step** is the resolution of `%globaltimer`. Two stamps read from one monotone
//!   clock and floored to its step differ by less than one step from the truth, so an overlap of
//!   at least one step is proof that two spans really overlapped, and a negative gap of at least
//!   one step is proof that the second started before the first ended.
//! - The **launch jitter** is how much the launch latency (host call returned → kernel started)
//!   varies between independent kernels of one trial. Every timeline knows when each op was
//!   issued on the host; with the trial's host-to-GPU offset that gives the moment an op was
//!   *ready* ([`crate::Timeline::ready_ns`]). An op that depends on nothing starts within the
//!   jitter of being ready. So an order is evidence of a dependency only if the later op was
//!   ready a jitter before the earlier one ended, and a missing overlap is evidence of waiting only
//!   under the same condition; otherwise the relation is undecided, however it came out. This
//!   keeps a late issue (a host hiccup, a spin shorter than the launch latency) from ever
//!   passing for a semantic order.
//! - The **dependent gap** is the gap between two kernels in one stream: how soon a dependent
//!   kernel starts after its predecessor ends. It is reported as context for measured gaps.
//! - The **launch latency** is how long after its launch call returns a kernel that waits for
//!   nothing starts, measured through the host-to-GPU clock sync every trial takes. The offset of
//!   the previous point is taken from the trial's own ops, so a trial that something outside held
//!   back as a whole looks on time to it; the latency does not, which is what the disturbance
//!   rule needs ([`crate::judge::disturbance`]).

use serde::{Deserialize, Serialize};

/// The GPU a run used, as the driver describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Device {
    pub name: String,
    /// `cuDriverGetVersion`, e.g. 13000 for CUDA 13.0.
    pub driver_version: i32,
    /// The kernel module's release, e.g. "580.159.04", where the OS tells it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver_release: Option<String>,
    pub compute_capability: (i32, i32),
    pub sm_count: u32,
    /// The clock-rate attribute, in kHz (may differ from the calibrated rate).
    pub clock_khz: u32,
    /// `cuCtxGetStreamPriorityRange`: (least, greatest); numerically the greatest is the lower.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_range: Option<(i32, i32)>,
    /// `CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT`: copy engines that can run beside kernels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub async_engines: Option<u32>,
    /// The CUPTI library the loader found (e.g. "libcupti.so"), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cupti: Option<String>,
}

impl Device {
    /// "580.159.04 (CUDA 13.0)", or "CUDA 13.0" when the release is unknown.
    pub fn driver(&self) -> String {
        match &self.driver_release {
            Some(r) => format!("{r} (CUDA {})", self.driver_cuda_version()),
            None => format!("CUDA {}", self.driver_cuda_version()),
        }
    }

    /// "13.0" from 13000.
    pub fn driver_cuda_version(&self) -> String {
        format!(
            "{}.{}",
            self.driver_version / 1000,
            (self.driver_version % 1000) / 10
        )
    }
}

/// Measured at start-up by the lab, in the process that runs the programs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    pub device: Device,
    /// `clock64` cycles per `%globaltimer` nanosecond, measured by spinning.
    pub cycles_per_ns: f64,
    /// Smallest non-zero step of `%globaltimer`.
    pub timer_step_ns: u64,
    /// Largest spread of launch latency among independent kernels of one trial.
    pub launch_jitter_ns: u64,
    /// Median gap between two kernels in one stream.
    pub dependent_gap_ns: u64,
    /// Median launch latency of a trial's first kernel: from its launch call's return to its
    /// first block's start, through the trial's host-to-GPU clock sync. Runs recorded before
    /// every trial was clock-synced have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch_latency_ns: Option<u64>,
    /// How fast each kind of copy runs on this GPU with nobody else on it ([`CopyRates`]).
    /// Runs recorded before it was measured have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copy_rates: Option<CopyRates>,
    /// Environment variables the driver saw that change scheduling, as `NAME=value`.
    pub environment: Vec<String>,
}

impl Calibration {
    pub fn tolerances(&self) -> Tolerances {
        Tolerances {
            timer_step_ns: self.timer_step_ns.max(1),
            launch_jitter_ns: self.launch_jitter_ns,
            dependent_gap_ns: self.dependent_gap_ns,
            launch_latency_ns: self.launch_latency_ns.map(|l| l.min(MAX_LAUNCH_LATENCY_NS)),
            copy_rates: self.copy_rates,
        }
    }
}

/// The longest launch latency the readiness rule believes: a launch that waits for nothing has
/// started 2.3–3.1 µs after its call returned on every idle H100 and H200 run we recorded, and
/// the stall floor is ten times that. A calibration beside a neighbour that took a time slice in
/// every one of its 32 trials measured 2.44 ms (H100, beside a loop of bf16 matrix products):
/// taken as it was, every trial that neighbour held back as a whole looked on time, which is how
/// `priority.equal_waits_behind` was once decided wrongly. Capped, such trials are seen.
pub const MAX_LAUNCH_LATENCY_NS: u64 = STALL_FLOOR_NS;

/// The stall threshold is this many dependent gaps, and at least [`STALL_FLOOR_NS`]. A real wait
/// ends within one dependent gap of its blocker's end, and the idle window of an op opens only a
/// launch jitter after it was ready, so the threshold need not hold the jitter again. 24 gaps
/// (45–53 µs on an H100, 37 µs on an H200) are over twice the longest idle stretch in the idle
/// runs recorded as fixtures (19.5 µs, a D2H copy behind a kernel in its stream, over 1,500
/// trials; see `tests/cpu/disturbance.rs`), and below the shortest stall that turned a verdict (84 µs).
/// The jitter is no part of it because it is the first thing a neighbour inflates: a run
/// calibrated beside one measured 301 µs, which would have hidden stalls of 256 µs.
pub const STALL_GAPS: u64 = 24;

/// The stall threshold is at most this, below the shortest stall that turned a verdict (84 µs).
/// The dependent gap is calibrated as the median of 32 trials, and a neighbour lengthens it: 1.6–
/// 3.2 µs in every idle run on an H100 and an H200 (threshold 38–77 µs), but 9.3 and 10.3 µs in two
/// contended fixtures and 16.1 µs in one run beside another catalogue run on an H100, whose
/// threshold of 387 µs let stalls of a few hundred µs through: `scenario.pipeline.8` and
/// `scenario.prefetch.slow_kernels` were decided "Violated" there. Applied when files are
/// re-judged too.
pub const MAX_STALL_THRESHOLD_NS: u64 = 80_000;
/// The smallest stall threshold: a dependent gap measured under load can be small, and a few µs
/// of GPU-side scheduling noise is not a neighbour.
pub const STALL_FLOOR_NS: u64 = 20_000;

/// How long after it was ready a host function may start: the driver runs host functions
/// (`cuLaunchHostFunc`, stream callbacks) on a thread of its own, whose wake-up is slow and long
/// tailed. 70 host functions on an idle H100 (driver 580.159.04, `tests/fixtures/claims-h100.json.gz`)
/// started 31 µs to 2.77 ms after they were ready, half of them within 90 µs; no kernel
/// calibration bounds that. So a host function counts as ready to start no sooner than this
/// after its issue (about twice the longest start seen): an order or a missing overlap proves
/// that it waited only when the earlier op outlasted that, and a host function that merely
/// started late proves nothing.
pub const HOST_FN_LATENCY_NS: u64 = 5_000_000;

/// The named tolerances every relation is judged with; see the module docs for why each exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tolerances {
    pub timer_step_ns: u64,
    pub launch_jitter_ns: u64,
    pub dependent_gap_ns: u64,
    /// See [`Calibration::launch_latency_ns`]: with a trial's clock sync, when its first op could
    /// have started at the earliest, however late every op of the trial started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch_latency_ns: Option<u64>,
    /// See [`Calibration::copy_rates`]: how long a copy takes when nothing slows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copy_rates: Option<CopyRates>,
}

impl Tolerances {
    /// The shortest stall that counts as a disturbance: [`STALL_GAPS`] dependent gaps, at least
    /// [`STALL_FLOOR_NS`]. The relations use it too: a clock sync whose error is over a quarter
    /// of it does not place ready times.
    pub fn stall_threshold_ns(&self) -> u64 {
        STALL_GAPS
            .saturating_mul(self.dependent_gap_ns)
            .clamp(STALL_FLOOR_NS, MAX_STALL_THRESHOLD_NS)
    }
}

impl std::fmt::Display for Tolerances {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "timer step {} ns, launch jitter {:.2} µs, dependent gap {:.2} µs",
            self.timer_step_ns,
            self.launch_jitter_ns as f64 / 1e3,
            self.dependent_gap_ns as f64 / 1e3
        )?;
        match self.launch_latency_ns {
            Some(l) => write!(f, ", launch latency {:.2} µs", l as f64 / 1e3),
            None => Ok(()),
        }
    }
}

/// One kind of copy's speed: a copy of `b` bytes takes `overhead_ns + b / bytes_per_us` µs.
/// Two sizes measured at start-up give both terms (`gpu/copy_rates.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CopyRate {
    pub overhead_ns: u64,
    /// Bytes per µs (so 53,700 is 53.7 GB/s).
    pub bytes_per_us: u64,
}

impl CopyRate {
    /// How long a copy of `bytes` takes at this rate, in ns.
    pub fn expected_ns(&self, bytes: u64) -> u64 {
        let moving = u128::from(bytes) * 1000 / u128::from(self.bytes_per_us.max(1));
        self.overhead_ns
            .saturating_add(u64::try_from(moving).unwrap_or(u64::MAX))
    }

    /// The faster of two measurements of one kind: the one that moves `bytes` sooner.
    pub fn faster(a: Option<CopyRate>, b: Option<CopyRate>, bytes: u64) -> Option<CopyRate> {
        match (a, b) {
            (Some(a), Some(b)) => Some(if b.expected_ns(bytes) < a.expected_ns(bytes) {
                b
            } else {
                a
            }),
            (a, b) => a.or(b),
        }
    }
}

/// The kinds of copy whose speed a neighbour changes and the disturbance rule checks
/// ([`crate::judge::disturbance`]): both directions between the device and page-locked or pageable
/// host memory.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CopyRates {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub h2d_pinned: Option<CopyRate>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub d2h_pinned: Option<CopyRate>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub h2d_pageable: Option<CopyRate>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub d2h_pageable: Option<CopyRate>,
    /// Whether the rates were measured with no other process on the GPU (now, or in an earlier
    /// run whose rates were kept): rates measured beside a neighbour's copies are its pace, not
    /// the GPU's, and a copy as slow as they are proves nothing.
    pub alone: bool,
}

impl CopyRates {
    /// The rate of copies from `src` to `dst`, where it was measured.
    pub fn of(&self, src: crate::program::Place, dst: crate::program::Place) -> Option<CopyRate> {
        use crate::program::Place::*;
        match (src, dst) {
            (Pinned, Device) => self.h2d_pinned,
            (Device, Pinned) => self.d2h_pinned,
            (Pageable, Device) => self.h2d_pageable,
            (Device, Pageable) => self.d2h_pageable,
            _ => None,
        }
    }

    /// Each kind at the faster of two measurements (at a size of `bytes`); alone if either was.
    pub fn fastest(a: &CopyRates, b: &CopyRates, bytes: u64) -> CopyRates {
        CopyRates {
            h2d_pinned: CopyRate::faster(a.h2d_pinned, b.h2d_pinned, bytes),
            d2h_pinned: CopyRate::faster(a.d2h_pinned, b.d2h_pinned, bytes),
            h2d_pageable: CopyRate::faster(a.h2d_pageable, b.h2d_pageable, bytes),
            d2h_pageable: CopyRate::faster(a.d2h_pageable, b.d2h_pageable, bytes),
            alone: a.alone || b.alone,
        }
    }
}
