//! The must-precede pairs of the orders a trace records with their arguments
//! (`trace/syncs.rs`), checked against the spans like stream order (`model.rs`):
//! - **event waits**: after `cudaStreamWaitEvent(s, e)`, the op issued next on `s` starts only
//!   after the op issued on the event's stream before its `cudaEventRecord` has ended;
//! - **event syncs**: `cudaEventSynchronize(e)` returns only once that op has ended;
//! - **stream syncs**: `cudaStreamSynchronize(s)` returns only once the ops issued on `s` before
//!   it have ended;
//! - **the legacy default stream**: an op on it starts only after the ops issued before it on
//!   every blocking stream of its process and device have ended, and those issued after it on
//!   them start only after it has ended.
//!
//! "Issued before" is sure only for calls of one thread, or for a call that returned before the
//! other began; pairs whose calls overlap on two threads are not checked. Ops outside the step
//! are not looked at: an op of the step issued earlier on the same stream is ordered before it
//! anyway, so every pair checked is one the model states. The tolerance is the timer's step for
//! two spans, the clock error for a span against a call's return.

use super::lanes::{lanes_of, Lane, Lanes};
use super::model::{us, RuleKind, Violation};
use crate::program::OpId;
use crate::trace::{CallSpan, StreamKind, SyncKind, Trace, TraceTolerances, Trial};

/// The most ops scanned past for the one issued right before or after a call: ops of other
/// threads whose calls overlap it are passed over, and past this many the pair is left out
/// (a hostile trace cannot make the scan quadratic).
const SCAN: usize = 8;

/// The most recorded syncs looked at over all steps: steps whose windows overlap would each look
/// at the same syncs again (a trace of many overlapping steps and many syncs, made for it, would
/// take steps × syncs). Well under a second of work; past it the rest are not checked, said in a
/// note.
pub const MAX_SYNC_VISITS: usize = 2_000_000;

/// What is left of [`MAX_SYNC_VISITS`] for one explanation.
pub(super) struct Visits {
    left: usize,
    /// Whether a sync was left unchecked.
    pub(super) spent: bool,
}

impl Default for Visits {
    fn default() -> Visits {
        Visits {
            left: MAX_SYNC_VISITS,
            spent: false,
        }
    }
}

impl Visits {
    /// One more sync looked at; false once none are left.
    fn take(&mut self) -> bool {
        match self.left.checked_sub(1) {
            Some(n) => {
                self.left = n;
                true
            }
            None => {
                self.spent = true;
                false
            }
        }
    }
}

/// The last op of `lane` surely issued before `call`.
fn last_before(lane: &[(CallSpan, OpId)], call: &CallSpan) -> Option<OpId> {
    let at = lane.partition_point(|(c, _)| c.begin_ns < call.begin_ns);
    (lane[..at].iter().rev().take(SCAN))
        .find(|(c, _)| c.before(call))
        .map(|&(_, o)| o)
}

/// The first op of `lane` surely issued after `call`.
fn first_after(lane: &[(CallSpan, OpId)], call: &CallSpan) -> Option<OpId> {
    let at = lane.partition_point(|(c, _)| c.begin_ns <= call.begin_ns);
    (lane[at..].iter().take(SCAN))
        .find(|(c, _)| call.before(c))
        .map(|&(_, o)| o)
}

/// The pairs checked in one step by rule, and those broken.
pub(super) fn check(
    trace: &Trace,
    trial: &Trial,
    tol: &TraceTolerances,
    lanes: &Lanes,
    visits: &mut Visits,
) -> (Vec<(RuleKind, usize)>, Vec<Violation>) {
    let mut found = Found {
        trial,
        step: tol.tolerances.timer_step_ns as i64,
        err: tol.clock_error_ns as i64,
        pairs: Vec::new(),
        broken: Vec::new(),
    };
    // A sync begun before the step's first call, or after its last call and the end of its
    // last op, orders none of its ops (or holds trivially).
    let begins = (lanes.ops.values()).flat_map(|l| l.iter().map(|(c, _)| c.begin_ns));
    let ends = (trial.timeline.spans.iter()).map(|s| s.end() as i64 + trial.origin_ns);
    let (Some(lo), Some(hi)) = (begins.clone().min(), begins.chain(ends).max()) else {
        return (Vec::new(), Vec::new());
    };
    for f in 0..trace.files.len() {
        let syncs = &trace.files[f].syncs;
        let from = syncs.partition_point(|s| s.call.begin_ns < lo);
        for s in syncs[from..].iter().take_while(|s| s.call.begin_ns <= hi) {
            if !visits.take() {
                break;
            }
            found.sync(lanes, f, s);
        }
    }
    found.legacy(trace, lanes);
    (found.pairs, found.broken)
}

struct Found<'a> {
    trial: &'a Trial,
    step: i64,
    err: i64,
    /// Pairs checked, by rule.
    pairs: Vec<(RuleKind, usize)>,
    broken: Vec<Violation>,
}

impl Found<'_> {
    fn count(&mut self, rule: RuleKind) {
        match self.pairs.iter_mut().find(|(r, _)| *r == rule) {
            Some((_, n)) => *n += 1,
            None => self.pairs.push((rule, 1)),
        }
    }

    fn end(&self, o: OpId) -> Option<i64> {
        self.trial.timeline.span(o).map(|s| s.end() as i64)
    }
    fn start(&self, o: OpId) -> Option<i64> {
        self.trial.timeline.span(o).map(|s| s.start() as i64)
    }

    /// `first` must end before `then` starts (within the timer's step).
    fn precede(&mut self, rule: RuleKind, first: OpId, then: OpId, why: &str) {
        let (Some(end), Some(start)) = (self.end(first), self.start(then)) else {
            return;
        };
        self.count(rule);
        let early = end - start;
        if early > self.step {
            let t = self.trial;
            self.broken.push(Violation {
                rule,
                first,
                then: Some(then),
                by_ns: early - self.step,
                text: format!(
                    "{} started at {}, {} before {} ended at {}, though {why} (beyond the timer \
                     step of {} ns)",
                    t.label(then),
                    us(start),
                    us(early),
                    t.label(first),
                    us(end),
                    self.step
                ),
            });
        }
    }

    /// `first` must end before a host call returned at `returned_ns` (absolute).
    fn before_return(&mut self, rule: RuleKind, first: OpId, returned_ns: i64, what: &str) {
        let Some(end) = self.end(first) else {
            return;
        };
        self.count(rule);
        let returned = returned_ns - self.trial.origin_ns;
        if end > returned + self.err {
            self.broken.push(Violation {
                rule,
                first,
                then: None,
                by_ns: end - returned - self.err,
                text: format!(
                    "{} ended at {}, {} after the {what} issued after it returned at {} (beyond \
                     the clock error of {})",
                    self.trial.label(first),
                    us(end),
                    us(end - returned),
                    us(returned),
                    us(self.err)
                ),
            });
        }
    }

    /// The pairs of one recorded sync of file `f`.
    fn sync(&mut self, lanes: &Lanes, f: usize, s: &crate::trace::SyncCall) {
        // The op the event's record captured: the last issued on its stream before the record.
        let recorded = |lanes: &Lanes| {
            let source = s.source?;
            let record = source.record?;
            let ops: Vec<OpId> = lanes_of(lanes, f, s.pid, source.stream)
                .filter_map(|l| last_before(l, &record))
                .collect();
            Some((source.stream, ops))
        };
        match (s.kind, s.stream) {
            (SyncKind::StreamWaitEvent, Some(waiting)) => {
                let Some((from, producers)) = recorded(lanes) else {
                    return;
                };
                let consumers: Vec<OpId> = lanes_of(lanes, f, s.pid, waiting)
                    .filter_map(|l| first_after(l, &s.call))
                    .collect();
                let why = format!(
                    "stream {waiting} waits (cudaStreamWaitEvent, recorded) for an event \
                     recorded on stream {from} after it"
                );
                for &p in &producers {
                    for &c in &consumers {
                        self.precede(RuleKind::EventWait, p, c, &why);
                    }
                }
            }
            (SyncKind::EventSync, _) => {
                let Some((_, producers)) = recorded(lanes) else {
                    return;
                };
                for p in producers {
                    self.before_return(
                        RuleKind::HostSync,
                        p,
                        s.call.end_ns,
                        "cudaEventSynchronize",
                    );
                }
            }
            (SyncKind::StreamSync, Some(stream)) => {
                let last: Vec<OpId> = lanes_of(lanes, f, s.pid, stream)
                    .filter_map(|l| last_before(l, &s.call))
                    .collect();
                for p in last {
                    let what = format!("cudaStreamSynchronize of stream {stream}");
                    self.before_return(RuleKind::HostSync, p, s.call.end_ns, &what);
                }
            }
            _ => {}
        }
    }

    /// The legacy default stream's pairs with the blocking streams of its process and device,
    /// where the trace records both kinds: each blocking op after the legacy op issued last
    /// before it, and before the legacy op issued first after it (pairs with legacy ops further
    /// away follow from stream order), so the pairs are at most twice the blocking ops.
    fn legacy(&mut self, trace: &Trace, lanes: &Lanes) {
        let kind = |l: &Lane| (trace.files[l.0].streams.get(&(l.1, l.3))).and_then(|s| s.kind);
        for (l, legacy) in lanes.ops.iter() {
            if kind(l) != Some(StreamKind::LegacyDefault) {
                continue;
            }
            let blocking = (lanes.ops.iter())
                .filter(|(b, _)| (b.0, b.1, b.2) == (l.0, l.1, l.2))
                .filter(|(b, _)| kind(b) == Some(StreamKind::Blocking));
            for (b, ops) in blocking {
                let why = format!(
                    "the legacy default stream (stream {}) and blocking stream {} wait for each \
                     other's work (recorded)",
                    l.3, b.3
                );
                for (call, op) in ops {
                    if let Some(p) = last_before(legacy, call) {
                        self.precede(RuleKind::LegacyStream, p, *op, &why);
                    }
                    if let Some(n) = first_after(legacy, call) {
                        self.precede(RuleKind::LegacyStream, *op, n, &why);
                    }
                }
            }
        }
    }
}
