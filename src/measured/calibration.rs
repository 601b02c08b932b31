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
    /// Environment variables the driver saw that change scheduling, as `NAME=value`.
    pub environment: Vec<String>,
}

impl Calibration {
    pub fn tolerances(&self) -> Tolerances {
        Tolerances {
            timer_step_ns: self.timer_step_ns.max(1),
            launch_jitter_ns: self.launch_jitter_ns,
            dependent_gap_ns: self.dependent_gap_ns,
            launch_latency_ns: self.launch_latency_ns,
        }
    }
}

/// The stall threshold is this many dependent gaps, and at least [`STALL_FLOOR_NS`]. A real wait
/// ends within one dependent gap of its blocker's end, and the idle window of an op opens only a
/// launch jitter after it was ready, so the threshold need not hold the jitter again. 24 gaps
/// (45–53 µs on an H100, 37 µs on an H200) are over twice the longest idle stretch in the idle
/// runs recorded as fixtures (19.5 µs, a D2H copy behind a kernel in its stream, over 1,500
/// trials; see `tests/disturbance.rs`), and below the shortest stall that turned a verdict (84 µs).
/// The jitter is no part of it because it is the first thing a neighbour inflates: a run
/// calibrated beside one measured 301 µs, which would have hidden stalls of 256 µs.
pub const STALL_GAPS: u64 = 24;
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
}

impl Tolerances {
    /// The shortest stall that counts as a disturbance: [`STALL_GAPS`] dependent gaps, at least
    /// [`STALL_FLOOR_NS`]. The relations use it too: a clock sync whose error is over a quarter
    /// of it does not place ready times.
    pub fn stall_threshold_ns(&self) -> u64 {
        STALL_GAPS
            .saturating_mul(self.dependent_gap_ns)
            .max(STALL_FLOOR_NS)
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
