//! Stalls: what an unexplained stall is, how long one must be, and which earlier ops an op may
//! wait for (so that a wait is not taken for a stall).

use crate::measured::calibration::Tolerances;
use crate::measured::timeline::Timeline;
use crate::model::{HappensBefore, Refinement};
use crate::program::{OpId, Program};
use serde::{Deserialize, Serialize};
use std::fmt;

pub use crate::measured::calibration::{STALL_FLOOR_NS, STALL_GAPS};

/// The shortest stall that counts as a disturbance, from the trial's tolerances
/// ([`Tolerances::stall_threshold_ns`]).
pub fn stall_threshold(tol: &Tolerances) -> u64 {
    tol.stall_threshold_ns()
}

/// Which signature a stall has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StallKind {
    /// The op was free to start and nothing of ours held what it needs, yet it did not start.
    Idle,
    /// A running block of the op stopped reading the clock.
    Paused,
}

/// One unexplained stall of one op, on the `%globaltimer` axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stall {
    pub op: OpId,
    pub kind: StallKind,
    /// When the stall began, in `%globaltimer` ns.
    pub at_ns: i64,
    pub len_ns: u64,
}

impl Stall {
    /// "K2 idle for 312.40 µs while ready" with trial-relative time.
    pub fn describe(&self, program: &Program, timeline: &Timeline) -> String {
        let at = (self.at_ns - timeline.origin_ns() as i64) as f64 / 1e3;
        let what = match self.kind {
            StallKind::Idle => "was free to start and nothing of ours held it, yet waited",
            StallKind::Paused => "stopped running (a block was switched out) for",
        };
        format!(
            "{} {what} {:.2} µs from {at:.2} µs",
            program.label(self.op),
            self.len_ns as f64 / 1e3
        )
    }
}

impl fmt::Display for StallKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StallKind::Idle => "idle",
            StallKind::Paused => "paused",
        })
    }
}

/// Which earlier ops an op may wait for: those the model orders before it, by the documented
/// rules or with every stream in one hardware queue (the most any driver setting serializes).
/// Ops in a graph fall back to everything the device received before them.
pub(super) struct Waits {
    /// Per op, where it stands in the order the device receives work: a captured op reaches the
    /// device with its graph's launch, after the ops captured before it.
    positions: Vec<(usize, usize)>,
    models: [HappensBefore; 2],
    /// The relations' view: which ops depend on nothing (for when a held trial was let go).
    pub(super) host: crate::judge::relation::HostWaits,
}

impl Waits {
    pub(super) fn of(program: &Program) -> Waits {
        let documented = HappensBefore::of(program);
        Waits {
            positions: program
                .graph_launches()
                .into_iter()
                .enumerate()
                .map(|(op, launch)| (launch.map_or(op, |l| l.0), op))
                .collect(),
            host: crate::judge::relation::HostWaits::with(program, &documented),
            models: [
                documented,
                HappensBefore::with(program, Refinement::Queues(1)),
            ],
        }
    }

    pub(super) fn captured(&self, op: OpId) -> bool {
        self.positions.get(op.0).is_some_and(|p| p.0 != op.0)
    }

    /// Whether `op` may have waited for the end of `before`.
    pub(super) fn may_wait(&self, before: OpId, op: OpId) -> bool {
        if self.captured(op) || self.captured(before) {
            return self.positions[before.0] < self.positions[op.0];
        }
        self.models.iter().any(|m| m.must_precede(before, op))
    }
}
