//! Pace: copies and memsets that ran slower than they run alone.
//!
//! A neighbour's copies share the copy engines and the bus with ours and slow them down without
//! stopping them, so no stall shows (see the module above). What shows is the pace: a copy that
//! moved its bytes as fast as copies of its kind move them on this GPU alone was not slowed,
//! neighbour or not. Two rules, each against a measured reference:
//! - **Calibrated rate**: each copy against the rate its kind (direction, page-locked or pageable
//!   host memory) reaches alone, measured at start-up ([`crate::CopyRates`]). A copy is slowed
//!   when it took longer than its expected time divided by the kind's pace floor
//!   ([`PINNED_PACE`], [`PAGEABLE_PACE`]) and the excess is over the stall threshold, the same
//!   bound below which a delay is never taken for a neighbour.
//! - **The claim's own trials**: each copy or memset against the fastest run of the same op in
//!   the claim's trials: slowed when it took more than [`STAGE_SLOWDOWN`] times that, by more than
//!   the stall threshold. It covers what has no calibrated rate (memsets, device-to-device
//!   copies), and a neighbour that came and went during the claim.
//!
//! Measured on an H100 (driver 580.159.04), 8 catalogue runs, each copy's rate against the
//! fastest of its kind and size in the run: alone, page-locked copies ran at 0.66–1.0 of it (the
//! slowest while copies of ours in the other direction shared the bus: 4 MiB in 117 µs against
//! 78 µs, an excess of 39 µs, below the stall threshold) and pageable ones at 0.51–1.0 (the
//! driver stages them through the CPU); beside a loop of bf16 matrix products or another
//! catalogue run the same; beside a PyTorch loop of 256 MiB page-locked copies both ways,
//! page-locked copies fell to 0.06–0.30 and pageable ones to 0.15–0.2.

use crate::measured::calibration::Tolerances;
use crate::measured::timeline::Timeline;
use crate::program::{OpId, OpKind, Place, Program};

/// A page-locked copy slower than this share of its calibrated rate was slowed by someone else.
pub const PINNED_PACE: f64 = 0.4;
/// The same for pageable host memory, which the driver stages through the CPU: its pace varies
/// far more alone (one 16 MiB copy of five took 3.6 ms against 1.17 ms on an idle H100, 0.33),
/// and a neighbour's copies took it to 0.15–0.2.
pub const PAGEABLE_PACE: f64 = 0.25;
/// A copy or memset that took more than this many times its fastest run in the claim's trials
/// was slowed by someone else: alone, less the time other copies of ours ran beside it, the
/// same op's runs in one claim stayed within this in every recorded idle run
/// (`tests/cpu/disturbance.rs`). Pageable copies are left to the calibrated rate: the CPU's staging
/// makes them vary 3× alone.
pub const STAGE_SLOWDOWN: f64 = 2.5;

/// One copy or memset that ran slower than its reference.
#[derive(Debug, Clone, PartialEq)]
pub struct Slowed {
    pub op: OpId,
    pub took_ns: u64,
    /// What it should have taken: the calibrated expectation, or the fastest run of the op.
    pub reference_ns: u64,
    /// The calibrated rate's share of bytes moved per ns that it reached, for the first rule.
    pub pace: Option<f64>,
}

impl Slowed {
    pub fn describe(&self, program: &Program) -> String {
        let label = program.label(self.op);
        match self.pace {
            Some(p) => format!(
                "{label} took {:.2} µs where copies of its kind take {:.2} µs alone: {:.0} % of \
                 their pace, the copy engines or the bus were shared",
                self.took_ns as f64 / 1e3,
                self.reference_ns as f64 / 1e3,
                p * 100.0
            ),
            None => format!(
                "{label} took {:.2} µs, {:.1}× its fastest run in this claim's trials ({:.2} µs)",
                self.took_ns as f64 / 1e3,
                self.took_ns as f64 / self.reference_ns.max(1) as f64,
                self.reference_ns as f64 / 1e3
            ),
        }
    }
}

/// How long each witnessed op (copy or memset) of the trial took, by op, and how much of that
/// another witnessed op of ours ran beside it: two copies of ours share the bus (two H2D copies
/// on two engines each took 2.25× as long as one alone on an idle H100, and opposite directions
/// 1.2–1.5×), and what our own program does to a copy is no neighbour.
fn durations(t: &Timeline) -> impl Iterator<Item = (OpId, u64, u64)> + '_ {
    t.witnessed.iter().map(|w| {
        let took = w.end_ns.saturating_sub(w.start_ns).max(0);
        let mut spans: Vec<(i64, i64)> = t
            .witnessed
            .iter()
            .filter(|o| o.op != w.op)
            .map(|o| (o.start_ns.max(w.start_ns), o.end_ns.min(w.end_ns)))
            .filter(|(a, b)| b > a)
            .collect();
        spans.sort_unstable();
        let (mut shared, mut reach) = (0i64, i64::MIN);
        for (a, b) in spans {
            let a = a.max(reach);
            if b > a {
                shared += b - a;
                reach = b;
            }
        }
        (w.op, took as u64, shared.clamp(0, took) as u64)
    })
}

/// Whether `op` copies from or to pageable host memory.
fn pageable(program: &Program, op: OpId) -> bool {
    let Some(OpKind::Copy { src, dst, .. }) = program.op(op).map(|o| &o.kind) else {
        return false;
    };
    [*src, *dst].iter().any(|b| {
        program
            .buffer(*b)
            .is_some_and(|b| b.place == Place::Pageable)
    })
}

/// The copies of the trial slower than their kind's calibrated rate allows, the slowest first.
pub fn slow_copies(program: &Program, t: &Timeline, tol: &Tolerances) -> Vec<Slowed> {
    let Some(rates) = &tol.copy_rates else {
        return Vec::new();
    };
    let slack = tol.stall_threshold_ns();
    // Only the time it ran without other copies of ours counts: lenient, never a false mark.
    let mut found: Vec<Slowed> = durations(t)
        .map(|(op, took, shared)| (op, took - shared))
        .filter_map(|(op, took)| {
            let OpKind::Copy {
                src, dst, bytes, ..
            } = program.op(op)?.kind
            else {
                return None;
            };
            let (src, dst) = (program.buffer(src)?.place, program.buffer(dst)?.place);
            let expected = rates.of(src, dst)?.expected_ns(bytes).max(1);
            let floor = if src == Place::Pageable || dst == Place::Pageable {
                PAGEABLE_PACE
            } else {
                PINNED_PACE
            };
            let slowed = took as f64 * floor > expected as f64 && took > expected + slack;
            slowed.then(|| Slowed {
                op,
                took_ns: took,
                reference_ns: expected,
                pace: Some(expected as f64 / took.max(1) as f64),
            })
        })
        .collect();
    found.sort_by(|a, b| a.pace.unwrap_or(1.0).total_cmp(&b.pace.unwrap_or(1.0)));
    found
}

/// Per trial, its copy or memset that ran most over [`STAGE_SLOWDOWN`] times the op's fastest run
/// in `timelines`, if any.
pub fn slow_stages(
    program: &Program,
    timelines: &[Timeline],
    tol: &Tolerances,
) -> Vec<Option<Slowed>> {
    let mut fastest: std::collections::BTreeMap<OpId, u64> = Default::default();
    // Runs that shared nothing with other copies of ours, compared with each other.
    let alone = |t| durations(t).filter(|&(_, _, shared)| shared == 0);
    for (op, took, _) in timelines.iter().flat_map(alone) {
        let f = fastest.entry(op).or_insert(took);
        *f = (*f).min(took);
    }
    let slack = tol.stall_threshold_ns();
    timelines
        .iter()
        .map(|t| {
            alone(t)
                .filter(|&(op, _, _)| !pageable(program, op))
                .filter_map(|(op, took, _)| {
                    let best = *fastest.get(&op)?;
                    (took as f64 > best as f64 * STAGE_SLOWDOWN && took > best + slack).then_some(
                        Slowed {
                            op,
                            took_ns: took,
                            reference_ns: best,
                            pace: None,
                        },
                    )
                })
                .max_by_key(|s| s.took_ns.saturating_sub(s.reference_ns))
        })
        .collect()
}
