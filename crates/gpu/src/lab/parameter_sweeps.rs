//! Sweeps: measurements over a parameter, shown as small tables rather than verdicts.
//!
//! - **Launch offsets** (seed 000, 7.4: "流的启动是有顺序和延迟的，不同流之间的操作不一定同时开始").
//!   n kernels on n non-blocking streams are issued back to back, and the table gives each
//!   kernel's start offset from the first one's start, next to the host time between their
//!   launches.
//! - **Hardware queues** (`CUDA_DEVICE_MAX_CONNECTIONS`; studies of NVIDIA scheduling report 8
//!   compute channels per context). k streams get two kernels each, issued depth-first (A1 B1 A2
//!   B2 …). Every A depends on nothing, so without shared queues all of them start while A1 still
//!   runs. A kernel `Aj` that starts only after A1 has ended, although it was ready well before,
//!   was held back: it sat in a queue behind some `Bi`, which waits for its `Ai`. That is a false
//!   dependency. The model's queue refinement predicts which A's are held back for a given
//!   connection count, and the table shows both.
//!
//! Everything here is pure except the programs it builds: the lab runs them, and these functions
//! read the trials.

use crate::model::{HappensBefore, Refinement};
use crate::program::{OpId, Program, StreamKind};
use crate::record::Trials;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// `n` kernels on `n` non-blocking streams, issued back to back.
pub fn offsets_program(n: usize, spin: Duration) -> Program {
    let mut p = Program::builder(format!("sweep.offsets.{n}"));
    for i in 0..n {
        let s = p.stream(StreamKind::NonBlocking);
        p.spin(s, format!("K{}", i + 1), spin);
    }
    p.build()
}

/// The launch-offset row for `n` streams.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OffsetRow {
    pub streams: usize,
    /// Start of kernel j minus start of kernel 1, for j ≥ 2, over all trials (ns).
    pub offsets_ns: Vec<i64>,
    /// Host time between successive launches returning (ns), over all trials.
    pub launch_gaps_ns: Vec<i64>,
}

pub fn offsets_row(n: usize, trials: &Trials) -> OffsetRow {
    let mut offsets_ns = Vec::new();
    let mut launch_gaps_ns = Vec::new();
    for t in &trials.timelines {
        let Some(first) = t.span(OpId(0)) else {
            continue;
        };
        for j in 1..n {
            if let Some(s) = t.span(OpId(j)) {
                offsets_ns.push(s.start() as i64 - first.start() as i64);
            }
            if let (Some(a), Some(b)) = (t.issued_ns(OpId(j - 1)), t.issued_ns(OpId(j))) {
                launch_gaps_ns.push(b as i64 - a as i64);
            }
        }
    }
    OffsetRow {
        streams: n,
        offsets_ns,
        launch_gaps_ns,
    }
}

/// `k` streams with two kernels each, issued depth-first: A1 B1 A2 B2 …
pub fn queues_program(k: usize, spin: Duration) -> Program {
    let mut p = Program::builder(format!("sweep.queues.{k}"));
    for i in 0..k {
        let s = p.stream(StreamKind::NonBlocking);
        p.spin(s, format!("A{}", i + 1), spin);
        p.spin(s, format!("B{}", i + 1), spin);
    }
    p.build()
}

/// The hardware-queue row for `k` streams under one connection setting.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct QueueRow {
    pub streams: usize,
    /// Streams (1-based) whose A kernel was held back until A1 ended, in any trial.
    pub held_back: Vec<usize>,
    /// Streams whose A the model's queue refinement says must wait for A1 (or another A).
    pub predicted: Vec<usize>,
    /// A kernels issued too late to tell (ready only after A1 ended).
    pub undecided: usize,
}

/// The row of `program` (a [`queues_program`]) from its trials.
pub fn queues_row(program: &Program, trials: &Trials, refinement: Refinement) -> QueueRow {
    let k = program.streams.len();
    let model = HappensBefore::with(program, refinement);
    let a = |i: usize| OpId(2 * i);
    let predicted = (1..k)
        .filter(|&j| (0..j).any(|i| model.must_precede(a(i), a(j))))
        .map(|j| j + 1)
        .collect();
    let jitter = trials.calibration.launch_jitter_ns as i64;
    let mut held = std::collections::BTreeSet::new();
    let mut undecided = 0;
    for t in &trials.timelines {
        let Some(first) = t.span(a(0)) else { continue };
        for j in 1..k {
            let (Some(s), Some(ready)) = (t.span(a(j)), t.ready_ns(a(j))) else {
                continue;
            };
            if ready + jitter >= first.end() as i64 {
                undecided += 1;
            } else if s.start() >= first.end() {
                held.insert(j + 1);
            }
        }
    }
    QueueRow {
        streams: k,
        held_back: held.into_iter().collect(),
        predicted,
        undecided,
    }
}

/// Min, median and max of a sample.
pub fn summary(values: &[i64]) -> Option<(i64, i64, i64)> {
    let mut v = values.to_vec();
    v.sort_unstable();
    Some((*v.first()?, v[v.len() / 2], *v.last()?))
}
