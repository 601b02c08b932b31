//! Relations between two spans, judged with named tolerances.
//!
//! A claim states its expectation as [`Check`]s: `A` precedes `B`, `A` overlaps `B`. On one
//! trial's timeline each check yields a [`Measurement`]: the signed quantity measured (a gap or
//! an overlap, in ns) and a three-valued [`Truth`]. `Unknown` is not a failure: it means the
//! timeline cannot decide, and the reason says which tolerance was in the way.
//!
//! The stamps alone decide what they can prove outright: an overlap of at least one timer step
//! means two spans ran together, and so refutes an order. Everything else also needs to know
//! whether the later op *could* have started sooner: an order observed between two ops proves a
//! dependency only if the later op was issued early enough to have started before the earlier
//! one ended, had nothing held it back; the same condition makes a missing overlap a proof of
//! waiting. "Early enough" is the op's ready time plus the measured launch jitter (see
//! [`crate::Calibration`]): its issue moved onto the GPU clock by the trial's clock sync and the
//! calibrated launch latency, or, in files recorded without a sync, by the smallest launch delay
//! of the ops that depend on nothing (`latest_free_start`). An op issued after a host sync that waits for the
//! earlier op could not be issued sooner at all: that order is the host's, and it is judged by
//! when the sync was called and returned (`host_order.rs`, docs/design.md decision 13), which
//! needs the program ([`Check::measure_in`]). Every `Unknown` reason says why the timeline could
//! not decide and what would.
//!
//! Host-side work (host functions, the return of a host call) is placed on the `%globaltimer`
//! axis with the trial's clock sync, whose error bound widens every tolerance it enters; the
//! checks about the host are in `host_checks.rs`.

mod data;
pub use data::{sides, Sides};
mod describe;
mod host_checks;
mod host_order;
mod host_waits;
mod kernel;
mod order;
mod ready;
mod value;

use crate::measured::calibration::Tolerances;
use crate::measured::timeline::Timeline;
use crate::program::{BufferId, OpId, Place, Program};
pub use host_waits::HostWaits;
use kernel::{elapsed_covers, uninterrupted};
use order::{dispatch_order, overlaps, precedes};
pub use ready::{
    held_until, latest_free_start, released_apart, releases, synced_delay_within, Release,
};
use ready::{ready_how, synced};
use serde::{Deserialize, Serialize};
use std::fmt;
pub use value::{Unit, Value};

/// An expected relation between two ops, as data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "relation", rename_all = "snake_case")]
pub enum Check {
    /// `after` starts no earlier than `before` ends.
    Precedes { before: OpId, after: OpId },
    /// The two spans run at the same time for at least one timer step.
    Overlaps { a: OpId, b: OpId },
    /// Some blocks of `low` are dispatched after the first block of `high` has started: `high`
    /// jumped ahead of `low`'s remaining blocks (stream priorities).
    Interleaves { low: OpId, high: OpId },
    /// No block of `low` starts after the first block of `high`: `high` waited behind all of
    /// `low`'s blocks.
    Behind { low: OpId, high: OpId },
    /// No block of `op` was held off its SM by `by`: each block ran for the time its spun cycles
    /// take at the kernel's own rate, give or take far less than a block of `by` lasts (a block
    /// preempted by `by` would wait out at least one of `by`'s blocks).
    Uninterrupted { op: OpId, by: OpId },
    /// The elapsed time an [`crate::OpKind::Elapsed`] op read covers the stamped run of `span`
    /// (events recorded around a kernel measure at least the kernel).
    ElapsedCovers { elapsed: OpId, span: OpId },
    /// The host call that issued `call` returned before `span` ended (a launch returns early).
    ReturnsBefore { call: OpId, span: OpId },
    /// The host call `call` did not return before `span` ended (a sync waits for the work).
    ReturnsAfter { call: OpId, span: OpId },
    /// The query `query` answered in line with `span`'s state: not ready while it ran, ready once
    /// it had ended.
    Answers { query: OpId, span: OpId },
    /// `before` and `after` did not run together, with the host call `call` issued between them:
    /// either `after` waited on the device, or `call` held the host until `before` ended.
    Separates {
        call: OpId,
        before: OpId,
        after: OpId,
    },
    /// The stream-ordered allocation `second` returned the address `first` did.
    Reuses { first: OpId, second: OpId },
    /// Launching the graph (op `graph`) took less host time than issuing ops `first..=last` one
    /// by one.
    LaunchCheaper {
        graph: OpId,
        first: OpId,
        last: OpId,
    },
    /// `a` and `b` did not run together (copies on one copy engine, kernels that fill the GPU).
    Serializes { a: OpId, b: OpId },
    /// The ops `fast.0..=fast.1` took less time from first start to last end than the ops
    /// `slow.0..=slow.1`: a speed-up, given with its ratio.
    Faster {
        slow: (OpId, OpId),
        fast: (OpId, OpId),
    },
    /// The host call that issued `call` held the host for at least half of `span` (a copy staged
    /// through the driver: the host is blocked while the data moves).
    Blocks { call: OpId, span: OpId },
    /// Every element of `buffer`, read back after the trial, equals `value`.
    Contents { buffer: BufferId, value: i32 },
    /// The driver reports `buffer`'s memory as what `place` allocates (device memory,
    /// page-locked host memory, or memory it does not know).
    MemoryIs { buffer: BufferId, place: Place },
}

impl Check {
    /// Every op whose time the check reads: [`Check::ops`], with each phase of a makespan and the
    /// launches a graph launch is compared with taken whole (`first..=last`), not by its ends.
    pub fn ops_read(&self) -> Vec<OpId> {
        let range = |(first, last): (OpId, OpId)| (first.0..=last.0).map(OpId);
        match *self {
            Check::Faster { slow, fast } => range(slow).chain(range(fast)).collect(),
            Check::LaunchCheaper { graph, first, last } => {
                std::iter::once(graph).chain(range((first, last))).collect()
            }
            _ => self.ops(),
        }
    }

    /// The ops the check reads.
    pub fn ops(&self) -> Vec<OpId> {
        match *self {
            Check::Precedes { before, after } => vec![before, after],
            Check::Overlaps { a, b } => vec![a, b],
            Check::Interleaves { low, high } | Check::Behind { low, high } => vec![low, high],
            Check::Uninterrupted { op, by } => vec![op, by],
            Check::ElapsedCovers { elapsed, span } => vec![elapsed, span],
            Check::ReturnsBefore { call, span } | Check::ReturnsAfter { call, span } => {
                vec![call, span]
            }
            Check::Answers { query, span } => vec![query, span],
            Check::Separates {
                call,
                before,
                after,
            } => vec![call, before, after],
            Check::Reuses { first, second } => vec![first, second],
            Check::LaunchCheaper { graph, first, last } => vec![graph, first, last],
            Check::Serializes { a, b } => vec![a, b],
            Check::Blocks { call, span } => vec![call, span],
            Check::Faster { slow, fast } => vec![slow.0, slow.1, fast.0, fast.1],
            Check::Contents { .. } | Check::MemoryIs { .. } => vec![],
        }
    }

    /// Whether the check is a happens-before question the [model](crate::model) answers.
    pub fn is_ordering(&self) -> bool {
        matches!(self, Check::Precedes { .. } | Check::Overlaps { .. })
    }

    /// Whether the check places its ops on the time axis as intervals (where a graph launch
    /// stands for its nodes' span), rather than reading blocks, readings or host times alone.
    pub fn places_ops(&self) -> bool {
        matches!(
            self,
            Check::Precedes { .. }
                | Check::Overlaps { .. }
                | Check::Separates { .. }
                | Check::Serializes { .. }
                | Check::ReturnsBefore { .. }
                | Check::ReturnsAfter { .. }
                | Check::Blocks { .. }
                | Check::Answers { .. }
        )
    }

    /// Whether the check compares host-clock times of our own calls (when a call returned, how
    /// long launches took): the OS preempting the issuing thread moves those, and nothing else.
    pub fn reads_host_time(&self) -> bool {
        matches!(
            self,
            Check::LaunchCheaper { .. }
                | Check::ReturnsBefore { .. }
                | Check::ReturnsAfter { .. }
                | Check::Blocks { .. }
                | Check::Answers { .. }
                | Check::Separates { .. }
        )
    }

    /// Whether the check reads when its ops were ready (a start order or a missing overlap is
    /// waiting only if the later op was ready in time): a trial held back as a whole and released
    /// at once makes every op ready together, which only a clock sync shows.
    pub fn reads_readiness(&self) -> bool {
        matches!(
            self,
            Check::Precedes { .. }
                | Check::Overlaps { .. }
                | Check::Interleaves { .. }
                | Check::Behind { .. }
                | Check::Serializes { .. }
        )
    }

    /// Whether the check's reason carries a figure its value does not (a ratio), so evidence
    /// lines show the reason even when the claim holds.
    pub fn reason_is_evidence(&self) -> bool {
        matches!(
            self,
            Check::LaunchCheaper { .. }
                | Check::Faster { .. }
                | Check::Contents { .. }
                | Check::MemoryIs { .. }
        )
    }

    /// What the check's measured number counts: bytes for address offsets, elements for
    /// contents, a memory kind for memory types, else ns.
    pub fn unit(&self) -> Unit {
        match self {
            Check::Reuses { .. } => Unit::Bytes,
            Check::Contents { .. } => Unit::Count,
            Check::MemoryIs { .. } => Unit::Memory,
            _ => Unit::Time,
        }
    }

    /// A stored number of this check as a typed value.
    pub fn value(&self, raw: i64) -> Value {
        Value::of(self.unit(), raw)
    }

    /// A measured value in the check's unit (see [`Value`]'s display).
    pub fn format_value(&self, value: i64) -> String {
        self.value(value).to_string()
    }

    /// Judges the check on one timeline, knowing nothing of the program: an order the host made
    /// (the later op issued after a sync that waits for the earlier one) stays undecided, and
    /// reasons name ops by number. [`Check::measure_in`] knows the program.
    pub fn measure(&self, timeline: &Timeline, tol: &Tolerances) -> Measurement {
        self.measure_with(&HostWaits::unknown(), timeline, tol)
    }

    /// Judges the check on one timeline of `program`: orders made by the host count
    /// (docs/design.md, decision 13), and reasons name ops by label.
    pub fn measure_in(
        &self,
        program: &Program,
        timeline: &Timeline,
        tol: &Tolerances,
    ) -> Measurement {
        self.measure_with(&HostWaits::of(program), timeline, tol)
    }

    /// [`Check::measure_in`] with the program's host waits worked out once.
    pub fn measure_with(
        &self,
        waits: &HostWaits,
        timeline: &Timeline,
        tol: &Tolerances,
    ) -> Measurement {
        self.measure_saying(waits, timeline, tol, Say::Why)
    }

    /// [`Check::measure_with`]'s truth and value, without the reason where it can be left out
    /// (orders, overlaps and serializations; [`Say`]). Measuring again with
    /// [`Check::measure_with`] gives the same truth and value, with the reason.
    pub fn measure_quiet(
        &self,
        waits: &HostWaits,
        timeline: &Timeline,
        tol: &Tolerances,
    ) -> Measurement {
        self.measure_saying(waits, timeline, tol, Say::Quiet)
    }

    fn measure_saying(
        &self,
        waits: &HostWaits,
        timeline: &Timeline,
        tol: &Tolerances,
        say: Say,
    ) -> Measurement {
        let check = *self;
        let intervals = |x, y| both(check, x, y, |o| waits.interval(timeline, o));
        let spans = |x, y| both(check, x, y, |o| timeline.span(o));
        let measured = match check {
            Check::Precedes { before, after } => (intervals(before, after))
                .map(|(a, b)| precedes(check, waits, timeline, a, b, tol, say)),
            Check::Overlaps { a, b } => {
                (intervals(a, b)).map(|(ia, ib)| overlaps(check, waits, timeline, ia, ib, tol, say))
            }
            Check::Interleaves { low, high } | Check::Behind { low, high } => {
                spans(low, high).map(|(l, h)| dispatch_order(check, waits, timeline, l, h, tol))
            }
            Check::Uninterrupted { op, by } => {
                spans(op, by).map(|(o, b)| uninterrupted(check, o, b))
            }
            Check::ElapsedCovers { elapsed, span } => Ok(elapsed_covers(
                check,
                timeline.reading(elapsed),
                timeline.span(span),
                tol,
            )),
            Check::ReturnsBefore { call, span } | Check::ReturnsAfter { call, span } => Ok(
                host_checks::returns(check, waits, timeline, call, span, tol),
            ),
            Check::Answers { query, span } => Ok(host_checks::answers(
                check, waits, timeline, query, span, tol,
            )),
            Check::Separates {
                call,
                before,
                after,
            } => intervals(before, after)
                .map(|(b, a)| host_checks::separates(check, waits, timeline, call, b, a, tol)),
            Check::Reuses { first, second } => {
                Ok(host_checks::reuses(check, timeline, first, second))
            }
            Check::LaunchCheaper { graph, first, last } => Ok(host_checks::launch_cheaper(
                check, timeline, graph, first, last,
            )),
            Check::Serializes { a, b } => {
                Ok(data::serializes(check, waits, timeline, a, b, tol, say))
            }
            Check::Blocks { call, span } => {
                Ok(host_checks::blocks(check, waits, timeline, call, span, tol))
            }
            Check::Faster { slow, fast } => Ok(data::faster(check, timeline, slow, fast, tol)),
            Check::Contents { buffer, value } => Ok(data::contents(check, timeline, buffer, value)),
            Check::MemoryIs { buffer, place } => {
                Ok(data::memory_is(check, timeline, buffer, place))
            }
        };
        let mut m = measured.unwrap_or_else(|unknown| unknown);
        if say == Say::Why {
            m.reason += &waits.launch_note(check);
        }
        m
    }
}

/// Whether a measurement says why it came out as it did. A claim on a trace measures up to a
/// million pairs and keeps three of each truth (the first, the least, the most): writing every
/// pair's reason took a quarter of `check`'s time on the docs' 202 MB trace. Quiet measurements
/// decide the same truth and value by the same code, and leave the reason empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Say {
    Why,
    Quiet,
}

impl Say {
    /// The reason `why` makes, or nothing when quiet.
    fn why(self, why: impl FnOnce() -> String) -> String {
        match self {
            Say::Why => why(),
            Say::Quiet => String::new(),
        }
    }
}

fn buffer_label(program: &Program, b: BufferId) -> String {
    program
        .buffer(b)
        .map(|x| x.label.clone())
        .unwrap_or_else(|| format!("b{}", b.0))
}

/// What `get` finds for both ops, or the Unknown measurement naming the op it has nothing for.
fn both<T>(
    check: Check,
    x: OpId,
    y: OpId,
    get: impl Fn(OpId) -> Option<T>,
) -> Result<(T, T), Measurement> {
    match (get(x), get(y)) {
        (Some(a), Some(b)) => Ok((a, b)),
        (a, _) => Err(unknown(
            check,
            format!(
                "op {} has no stamps on this timeline: only a kernel's stamps, a witnessed copy or \
                 a host function placed with a clock sync put an op on the GPU's time axis, so \
                 this check cannot be judged on it",
                if a.is_none() { x.0 } else { y.0 }
            ),
        )),
    }
}

/// An Unknown measurement with its reason.
fn unknown(check: Check, reason: String) -> Measurement {
    Measurement {
        check,
        value_ns: 0,
        truth: Truth::Unknown,
        reason,
    }
}

/// Three-valued truth of one check on one trial.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Truth {
    Yes,
    No,
    Unknown,
}

impl Truth {
    /// Conjunction: any `No` wins, then any `Unknown`.
    pub fn all(truths: impl IntoIterator<Item = Truth>) -> Truth {
        let mut out = Truth::Yes;
        for t in truths {
            match t {
                Truth::No => return Truth::No,
                Truth::Unknown => out = Truth::Unknown,
                Truth::Yes => {}
            }
        }
        out
    }
}

/// A check measured on one timeline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Measurement {
    pub check: Check,
    /// The number measured, in the check's unit ([`Check::unit`]; typed: [`Measurement::value`]).
    /// For `Precedes`: the gap `after.start - before.end` in ns (negative: they overlapped).
    /// For `Overlaps`: the overlap `min(ends) - max(starts)` in ns (negative: a gap between
    /// them). Bytes for `Reuses`, a count for `Contents`, a memory-kind code for `MemoryIs`.
    pub value_ns: i64,
    pub truth: Truth,
    /// Why the truth is what it is, with the tolerance that decided it.
    pub reason: String,
}

impl Measurement {
    /// The measured number with its unit.
    pub fn value(&self) -> Value {
        self.check.value(self.value_ns)
    }

    /// "A→B gap +1.18 µs" / "A∥B overlap 38.20 µs".
    pub fn describe(&self, program: &Program) -> String {
        let (what, negate) = self.check.quantity_for(self.value_ns, self.value_ns);
        let shown = if negate {
            self.check.value(self.value_ns.saturating_neg())
        } else {
            self.value()
        };
        format!("{} {what} {shown}", self.check.describe(program))
    }
}

impl fmt::Display for Truth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Truth::Yes => "yes",
            Truth::No => "no",
            Truth::Unknown => "unknown",
        })
    }
}

/// Signed nanoseconds as "+1.18 µs".
pub fn micros(ns: i64) -> String {
    format!("{:+.2} µs", ns as f64 / 1e3)
}

fn signed(ns: u64) -> i64 {
    i64::try_from(ns).unwrap_or(i64::MAX)
}

/// Trial-relative µs of a `%globaltimer` instant, for reasons: relative to the trial's first
/// stamp, or, in a trial of copies alone, to its first copy. A trace's trial counts from its first
/// call or start (`trace::trials`), so that every figure is one the trace shows: a call made
/// before the first op started is no negative instant.
fn at(t: i64, timeline: &Timeline) -> String {
    let origin = if timeline.one_clock() {
        0
    } else if !timeline.spans.is_empty() {
        signed(timeline.origin_ns())
    } else {
        (timeline.witnessed.iter())
            .filter_map(|w| timeline.interval(w.op).map(|i| i.start))
            .min()
            .unwrap_or(0)
    };
    format!("{:.2} µs", (t - origin) as f64 / 1e3)
}

/// What the model predicts of a check. It lives here, beside [`Check`], so that the model knows
/// programs only and the relations may read the model (a wait is what the model orders before).
impl crate::model::HappensBefore {
    /// What the model says of a claim's check: `Some(true)` if it predicts it, `Some(false)` if
    /// it does not, `None` for checks that are no happens-before question (dispatch order,
    /// preemption).
    pub fn predicts(&self, check: &Check) -> Option<bool> {
        match *check {
            Check::Precedes { before, after } => Some(self.must_precede(before, after)),
            Check::Overlaps { a, b } => Some(self.may_overlap(a, b)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measured::timeline::{HostCall, Span};
    use proptest::prelude::*;

    /// Two ops and their issue calls, with a clock sync or none.
    fn two(a: (u64, u64), b: (u64, u64), issued: (u64, u64)) -> Timeline {
        let call = |op, at| HostCall {
            op,
            begin_ns: at,
            end_ns: at,
        };
        Timeline::new(
            vec![
                Span::single(OpId(0), a.0, a.0 + a.1),
                Span::single(OpId(1), b.0, b.0 + b.1),
            ],
            vec![call(OpId(0), issued.0), call(OpId(1), issued.1)],
        )
    }

    proptest! {
        /// A quiet measurement decides what a measurement with its reason decides, by the same
        /// code: the same truth and value for every order, overlap and serialization.
        #[test]
        fn quiet_measurements_decide_as_said_ones(
            a in (0u64..100_000, 0u64..50_000),
            b in (0u64..100_000, 0u64..50_000),
            issued in (0u64..100_000, 0u64..100_000),
            step in 1u64..100,
            jitter in 0u64..5_000,
        ) {
            let tol = Tolerances {
                timer_step_ns: step,
                launch_jitter_ns: jitter,
                dependent_gap_ns: 1_000,
                launch_latency_ns: None,
                copy_rates: None,
            };
            let t = two(a, b, issued);
            let waits = HostWaits::unknown();
            for check in [
                Check::Precedes { before: OpId(0), after: OpId(1) },
                Check::Precedes { before: OpId(1), after: OpId(0) },
                Check::Overlaps { a: OpId(0), b: OpId(1) },
                Check::Serializes { a: OpId(1), b: OpId(0) },
            ] {
                let said = check.measure_with(&waits, &t, &tol);
                let quiet = check.measure_quiet(&waits, &t, &tol);
                prop_assert_eq!((said.truth, said.value_ns), (quiet.truth, quiet.value_ns));
                prop_assert!(!said.reason.is_empty(), "{:?}", check);
            }
        }
    }
}
