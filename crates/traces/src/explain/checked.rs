//! The model's must-precede pairs a step states, checked against its spans.
//!
//! The pairs are those of the model of the program behind the trace (`trace/behind.rs`) between
//! two things the trace times: each GPU op of the step against the ops the model orders right
//! before it (a chain through records, waits and the end of a graph launch, which the trace does
//! not time, but through no other GPU op: the pairs further back follow from these), and each
//! host sync of the step (`cudaStreamSynchronize`, `cudaEventSynchronize`, a device sync)
//! against the ops it covers, whose ends come before its return. A pair is checked only where
//! the trace shows the first op surely issued before the second (its call on the same thread,
//! or returned before the other began: calls of two threads that overlap are not ordered), and
//! only with the documented rules (the hardware queues are measured behaviour, not a promise).
//! A broken pair is a finding (a trace bug, a model gap or a driver behaviour no note
//! describes), never smoothed over: the tolerance is the GPU timer's step for two spans, the
//! trace's clock error for a span against a call.

use crate::model::Rule;
use crate::program::OpId;
use crate::trace::{
    CallSpan, Order, Source, SyncKind, Trace, TraceFile, TraceTolerances, Trial, MAX_SEARCH,
};
use std::collections::HashMap;

/// What a checked pair's chain of rules is counted as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RuleKind {
    StreamOrder,
    DeviceSync,
    /// A chain through recorded `cudaStreamWaitEvent`s.
    EventWait,
    /// A recorded `cudaStreamSynchronize` or `cudaEventSynchronize`.
    HostSync,
    /// The legacy default stream against a blocking stream, their kinds recorded.
    LegacyStream,
    /// The kernels of a graph launch against the stream's work after it.
    Graph,
}

impl RuleKind {
    pub fn word(self) -> &'static str {
        match self {
            RuleKind::StreamOrder => "stream order",
            RuleKind::DeviceSync => "device syncs",
            RuleKind::EventWait => "event waits",
            RuleKind::HostSync => "event and stream syncs",
            RuleKind::LegacyStream => "legacy default stream",
            RuleKind::Graph => "graph launches",
        }
    }

    /// The kind of a chain of rules between two ops.
    fn of(rules: &[Rule]) -> RuleKind {
        let has = |r: Rule| rules.contains(&r);
        match () {
            _ if has(Rule::Legacy) => RuleKind::LegacyStream,
            _ if has(Rule::Event) => RuleKind::EventWait,
            _ if has(Rule::Graph) => RuleKind::Graph,
            _ if has(Rule::HostSync) => RuleKind::HostSync,
            _ => RuleKind::StreamOrder,
        }
    }

    /// Why the pair must hold, in words.
    fn why(self) -> &'static str {
        match self {
            RuleKind::StreamOrder => "issued after it on its stream",
            RuleKind::EventWait => "ordered after it by the event waits the trace records",
            RuleKind::LegacyStream => {
                "the legacy default stream and the blocking streams of its device wait for each \
                 other's work (their kinds recorded)"
            }
            RuleKind::Graph => "issued after its graph launch on its stream",
            RuleKind::HostSync | RuleKind::DeviceSync => "a host sync came between them",
        }
    }
}

/// A must-precede pair the spans broke.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub rule: RuleKind,
    /// The op that must end first.
    pub first: OpId,
    /// The op that must start after it; none for a sync.
    pub then: Option<OpId>,
    /// By how much the order was broken (ns beyond the tolerance's edge).
    pub by_ns: i64,
    /// What was broken, with its figures on the step's axis.
    pub text: String,
}

pub(super) fn us(ns: i64) -> String {
    format!("{:.2} µs", ns as f64 / 1e3)
}

/// The most host syncs looked at over all steps: steps whose windows overlap would each look at
/// the same syncs again (a trace of many overlapping steps and many syncs, made for it, would
/// take steps × syncs). Well under a second of work; past it the rest are not checked, said in
/// a note.
pub const MAX_SYNC_VISITS: usize = 2_000_000;

/// An act of the program behind a trace: (file, process, act).
type Act = (usize, usize, usize);

/// What the checks of one explanation share: the ops the model orders right before each act
/// (found once for the steps that hold it, where steps overlap), and what is left of
/// [`MAX_SYNC_VISITS`].
pub(super) struct Checker {
    /// This step's acts. Only the step before's are kept beside them: steps that overlap share
    /// their acts with the step before, and a trace of 1,565 steps would otherwise keep every
    /// act's (4 MB a 20 MB trace).
    nearest: HashMap<Act, Vec<(usize, Vec<Rule>)>>,
    earlier: HashMap<Act, Vec<(usize, Vec<Rule>)>>,
    visits_left: usize,
    /// Whether a sync was left unchecked.
    pub(super) spent: bool,
}

impl Default for Checker {
    fn default() -> Checker {
        Checker {
            nearest: HashMap::new(),
            earlier: HashMap::new(),
            visits_left: MAX_SYNC_VISITS,
            spent: false,
        }
    }
}

impl Checker {
    /// The GPU ops the model orders right before act `a` of process `p` of file `f`: through
    /// acts the trace does not time, never through a host sync; documented rules only.
    fn nearest(&mut self, trace: &Trace, f: usize, p: usize, a: usize) -> &[(usize, Vec<Rule>)] {
        let earlier = &mut self.earlier;
        self.nearest.entry((f, p, a)).or_insert_with(|| {
            if let Some(found) = earlier.remove(&(f, p, a)) {
                return found;
            }
            let process = &trace.behind[f].processes[p];
            let observed = |x: usize| matches!(process.sources[x], Source::Op(_));
            let stop = |x: usize| process.is_host_sync(x);
            let documented = |r: Rule| r != Rule::Queue;
            (process.orders).nearest(a, &observed, &stop, &documented, MAX_SEARCH)
        })
    }

    /// The pairs checked in one step by kind, and those broken.
    pub(super) fn check(
        &mut self,
        trace: &Trace,
        trial: &Trial,
        tol: &TraceTolerances,
    ) -> (Vec<(RuleKind, usize)>, Vec<Violation>) {
        self.earlier = std::mem::take(&mut self.nearest);
        let mut found = Found {
            trial,
            step: tol.tolerances.timer_step_ns as i64,
            err: tol.clock_error_ns as i64,
            pairs: HashMap::new(),
            broken: Vec::new(),
        };
        // The step's ops by (file, process, act).
        let mut op_of: HashMap<(usize, usize, usize), OpId> = HashMap::new();
        for (i, &(f, o)) in trial.ops.iter().enumerate() {
            if let Some((p, a)) = trace.behind[f].act(o) {
                op_of.insert((f, p, a), OpId(i));
            }
        }
        for (i, &(f, o)) in trial.ops.iter().enumerate() {
            let Some((p, a)) = trace.behind[f].act(o) else {
                continue;
            };
            for (x, rules) in self.nearest(trace, f, p, a).to_vec() {
                let Some(&first) = op_of.get(&(f, p, x)) else {
                    continue;
                };
                if surely_before(trace, trial, first, OpId(i)) {
                    let process = &trace.behind[f].processes[p];
                    let why = || {
                        let label = trial.label(first);
                        let name = |y: usize| op_of.get(&(f, p, y)).map(|&o| trial.label(o));
                        match process.order(x, a) {
                            Order::Asked(l) | Order::Implied(l) => format!(
                                "ordered after it: {}",
                                process.chain_words(x, &l, &label, &name)
                            ),
                            _ => String::new(),
                        }
                    };
                    found.precede(RuleKind::of(&rules), first, OpId(i), &why);
                }
            }
        }
        self.syncs(&mut found, trace, &op_of);
        let mut pairs: Vec<(RuleKind, usize)> = found.pairs.into_iter().collect();
        pairs.sort_unstable();
        (pairs, found.broken)
    }

    /// Each host sync begun within the step (from its first call to its last call or end)
    /// against the ops of the step it covers.
    fn syncs(
        &mut self,
        found: &mut Found,
        trace: &Trace,
        op_of: &HashMap<(usize, usize, usize), OpId>,
    ) {
        let t = found.trial;
        let begins = (t.ops.iter()).filter_map(|&r| Some(trace.op(r).call.as_ref()?.begin_ns));
        let ends = (t.timeline.spans.iter()).map(|s| s.end() as i64 + t.origin_ns);
        let (Some(lo), Some(hi)) = (begins.clone().min(), begins.chain(ends).max()) else {
            return;
        };
        let mut files: Vec<usize> = t.ops.iter().map(|r| r.0).collect();
        files.sort_unstable();
        files.dedup();
        for f in files {
            let (behind, file) = (&trace.behind[f], &trace.files[f]);
            for (p, process) in behind.processes.iter().enumerate() {
                let from = process.syncs.partition_point(|s| s.0 < lo);
                let upto = process.syncs.partition_point(|s| s.0 <= hi);
                for &(_, a) in &process.syncs[from..upto] {
                    if self.visits_left == 0 {
                        self.spent = true;
                        return;
                    }
                    self.visits_left -= 1;
                    let Some((call, what, rule)) = sync_call(file, process.sources[a]) else {
                        continue;
                    };
                    for (x, _) in self.nearest(trace, f, p, a).to_vec() {
                        let Some(&first) = op_of.get(&(f, p, x)) else {
                            continue;
                        };
                        let Some(c) = trace.op(t.ops[first.0]).call.as_ref() else {
                            continue;
                        };
                        let mine = CallSpan {
                            tid: c.tid,
                            begin_ns: c.begin_ns,
                            end_ns: c.end_ns,
                        };
                        if mine.before(&call) {
                            found.before_return(rule, first, call.end_ns, &what);
                        }
                    }
                }
            }
        }
    }
}

/// A host sync's call, its name in words, and what its pairs are counted as.
fn sync_call(file: &TraceFile, source: Source) -> Option<(CallSpan, String, RuleKind)> {
    match source {
        Source::Sync(i) => {
            let s = file.syncs.get(i)?;
            let what = match (s.kind, s.stream) {
                (SyncKind::StreamSync, Some(n)) => format!("cudaStreamSynchronize of stream {n}"),
                (SyncKind::EventSync, _) => "cudaEventSynchronize".to_string(),
                _ => return None,
            };
            Some((s.call, what, RuleKind::HostSync))
        }
        Source::DeviceSync(i) => {
            let d = file.device_syncs.get(i)?;
            let call = CallSpan {
                tid: d.tid,
                begin_ns: d.begin_ns,
                end_ns: d.end_ns,
            };
            Some((call, "cudaDeviceSynchronize".into(), RuleKind::DeviceSync))
        }
        _ => None,
    }
}

/// Whether `a`'s call was surely made before `b`'s.
fn surely_before(trace: &Trace, trial: &Trial, a: OpId, b: OpId) -> bool {
    let call = |o: OpId| {
        let c = trace.op(trial.ops[o.0]).call.as_ref()?;
        Some(CallSpan {
            tid: c.tid,
            begin_ns: c.begin_ns,
            end_ns: c.end_ns,
        })
    };
    matches!((call(a), call(b)), (Some(x), Some(y)) if x.before(&y))
}

struct Found<'a> {
    trial: &'a Trial,
    step: i64,
    err: i64,
    /// Pairs checked, by kind.
    pairs: HashMap<RuleKind, usize>,
    broken: Vec<Violation>,
}

impl Found<'_> {
    fn count(&mut self, rule: RuleKind) {
        *self.pairs.entry(rule).or_default() += 1;
    }

    fn end(&self, o: OpId) -> Option<i64> {
        self.trial.timeline.span(o).map(|s| s.end() as i64)
    }
    fn start(&self, o: OpId) -> Option<i64> {
        self.trial.timeline.span(o).map(|s| s.start() as i64)
    }

    /// `first` must end before `then` starts (within the timer's step); `why` names the chain
    /// where it is more than its stream's order.
    fn precede(&mut self, rule: RuleKind, first: OpId, then: OpId, why: &dyn Fn() -> String) {
        let (Some(end), Some(start)) = (self.end(first), self.start(then)) else {
            return;
        };
        self.count(rule);
        let early = end - start;
        if early > self.step {
            let t = self.trial;
            let named = match rule {
                RuleKind::StreamOrder => String::new(),
                _ => why(),
            };
            let why = match named.is_empty() {
                true => rule.why().to_string(),
                false => format!("{}: {named}", rule.why()),
            };
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
}
