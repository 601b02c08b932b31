//! One check of a claim on a trace, on one trial: the plain relation on single ops, or a
//! quantifier over the pairs that could have met (see `judge.rs`), and what held an op back.

use super::claim::{Quantifier, TraceCheck, TraceClaim, TraceRelation};
use super::pairs::{each_pair, LeftOut};
use super::trials::Trial;
use crate::judge::relation::{Check, Measurement, Truth};
use crate::measured::calibration::Tolerances;
use crate::measured::timeline::{HostCall, Span, Timeline};
use crate::program::OpId;

/// One check on one trial.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckOutcome {
    pub check: TraceCheck,
    pub truth: Truth,
    /// The deciding pair's measured number (ns for times), 0 where none decided.
    pub value_ns: i64,
    /// The relation the value belongs to, for its unit and words.
    pub measured: Option<Check>,
    pub reason: String,
}

/// The relation between ops `a` and `b` as the lab's check.
fn check_of(r: TraceRelation, a: OpId, b: OpId) -> Check {
    match r {
        TraceRelation::Precedes => Check::Precedes {
            before: a,
            after: b,
        },
        TraceRelation::Overlaps => Check::Overlaps { a, b },
        TraceRelation::Serializes => Check::Serializes { a, b },
        TraceRelation::ReturnsBefore => Check::ReturnsBefore { call: a, span: b },
        TraceRelation::ReturnsAfter => Check::ReturnsAfter { call: a, span: b },
        TraceRelation::Blocks => Check::Blocks { call: a, span: b },
        TraceRelation::Faster => Check::Faster {
            slow: (a, a),
            fast: (b, b),
        },
    }
}

fn outcome(
    check: TraceCheck,
    truth: Truth,
    m: Option<&Measurement>,
    reason: String,
) -> CheckOutcome {
    CheckOutcome {
        check,
        truth,
        value_ns: m.map_or(0, |m| m.value_ns),
        measured: m.map(|m| m.check),
        reason,
    }
}

pub(super) fn measure(
    claim: &TraceClaim,
    trial: &Trial,
    members: &[Vec<OpId>],
    c: &TraceCheck,
    tol: &Tolerances,
) -> CheckOutcome {
    let (sa, sb) = (&members[c.a], &members[c.b]);
    let (na, nb) = (&claim.selections[c.a].name, &claim.selections[c.b].name);
    if sa.is_empty() || sb.is_empty() {
        let empty = if sa.is_empty() { na } else { nb };
        return outcome(
            *c,
            Truth::Unknown,
            None,
            format!("{empty} holds no op in this trial"),
        );
    }
    if c.relation == TraceRelation::Faster {
        return faster(trial, sa, sb, c, tol, na, nb);
    }
    if c.quantifier == Quantifier::One && !c.next {
        if sa.len() != 1 || sb.len() != 1 {
            let (name, n) = if sa.len() != 1 {
                (na, sa.len())
            } else {
                (nb, sb.len())
            };
            return outcome(
                *c,
                Truth::Unknown,
                None,
                format!(
                    "{name} holds {n} ops in this trial: say which pairs count with `exists`, \
                     `forall` or `~exists`, or narrow the selection"
                ),
            );
        }
        if !trial.one_recording(sa[0], sb[0]) {
            return outcome(
                *c,
                Truth::Unknown,
                None,
                format!(
                    "{na} and {nb} are of two recordings, whose clocks are not one: only \
                     `faster` compares recordings"
                ),
            );
        }
        let m = check_of(c.relation, sa[0], sb[0]).measure_with(&trial.waits, &trial.timeline, tol);
        let why = explained(trial, &m, tol);
        return outcome(*c, m.truth, Some(&m), why);
    }
    pairs(trial, sa, sb, c, tol, nb)
}

/// The measurement's reason, with what held the later op back where it waited.
fn explained(trial: &Trial, m: &Measurement, tol: &Tolerances) -> String {
    let names = m
        .check
        .ops()
        .iter()
        .map(|&o| trial.label(o))
        .collect::<Vec<_>>()
        .join(" / ");
    let waited = matches!(
        (m.check, m.truth),
        (Check::Precedes { .. }, Truth::Yes)
            | (Check::Overlaps { .. }, Truth::No)
            | (Check::Serializes { .. }, Truth::Yes)
    );
    let held = match waited {
        true => later(trial, m.check).and_then(|o| held_back(trial, o, tol)),
        false => None,
    };
    format!(
        "{names}: {}{}",
        m.reason,
        held.map_or(String::new(), |h| format!("; {h}"))
    )
}

/// The op of an order or overlap that started later.
fn later(trial: &Trial, c: Check) -> Option<OpId> {
    let ops = c.ops();
    let (&a, &b) = (ops.first()?, ops.get(1)?);
    let start = |o: OpId| trial.timeline.span(o).map(|s| s.start());
    Some(if start(a)? > start(b)? { a } else { b })
}

/// "held back by X (stream 21), which ended 1.9 µs before it started"; "queued behind X in its
/// stream" where X is the op before it in its stream. X ran on the same GPU: the same device of
/// the same trace file. (An op of another rank cannot hold it back, and a device number names
/// the same GPU only within one file: a launcher may give every rank its own device 0.)
fn held_back(trial: &Trial, op: OpId, tol: &Tolerances) -> Option<String> {
    let t = &trial.timeline;
    let start = t.span(op)?.start();
    let step = tol.timer_step_ns.max(1);
    let gpu = |o: OpId| trial.place(o).map(|(file, _, device, _)| (file, device));
    let holder = (t.spans.iter())
        .filter(|s| s.op != op && s.end() <= start + step && gpu(s.op) == gpu(op))
        .max_by_key(|s| s.end())?;
    let label = trial.label(holder.op);
    let gap = start as i64 - holder.end() as i64;
    let how = match trial.place(holder.op) == trial.place(op) {
        true => "queued behind it in its stream".to_string(),
        false => format!("on another stream; {}", cause(trial, op)),
    };
    Some(format!(
        "it started {:+.2} µs after {label} ended ({how})",
        gap as f64 / 1e3
    ))
}

/// Why an op waited for one of another stream, as far as the trace shows: a first launch
/// (lazy module loading), an event wait on its thread since its previous launch, or nothing it
/// records.
fn cause(trial: &Trial, op: OpId) -> &'static str {
    let facts = trial.facts.get(op.0).copied().unwrap_or_default();
    if facts.first_launch {
        "it is the first launch of its kernel in its process: where modules load lazily \
         (CUDA_MODULE_LOADING=LAZY, the default since CUDA 12.2), that launch loads its module, \
         which waits for the work already running; CUDA_MODULE_LOADING=EAGER or a warm-up \
         launch removes the wait"
    } else if facts.event_wait {
        "its thread called cudaStreamWaitEvent since its previous launch: an event wait may \
         have ordered it"
    } else {
        "nothing in the trace says why: not its stream's order, no event wait before its \
         launch, not a first launch (one hardware queue, as under CUDA_DEVICE_MAX_CONNECTIONS=1, \
         or the legacy default stream would do this, and the trace records neither)"
    }
}

/// The measurements of a quantified check, by truth: how many, and the few a reason names.
/// Each pair is keyed by its place in the selections' product (`a`, then `b`), so that the one
/// named does not depend on the order the pairs were found in.
#[derive(Default)]
struct Tally {
    yes: Kept,
    no: Kept,
    unknown: Kept,
}

/// One truth's measurements: their count, the first, and those of the least and the most value
/// (the first of the least, the last of the most, as `min_by_key` and `max_by_key` give them).
#[derive(Default)]
struct Kept {
    n: usize,
    first: Option<((OpId, OpId), Measurement)>,
    least: Option<((OpId, OpId), Measurement)>,
    most: Option<((OpId, OpId), Measurement)>,
}

impl Kept {
    /// Counts `m`, keeping it where it is first, least or most (cloned only where it is more
    /// than one of them).
    fn add(&mut self, key: (OpId, OpId), m: Measurement) {
        self.n += 1;
        let v = (m.value_ns, key);
        let first = self.first.as_ref().map_or(true, |(k, _)| key < *k);
        let least = (self.least.as_ref()).map_or(true, |(k, l)| v < (l.value_ns, *k));
        let most = (self.most.as_ref()).map_or(true, |(k, l)| v > (l.value_ns, *k));
        let mut slots: Vec<_> = [
            (first, &mut self.first),
            (least, &mut self.least),
            (most, &mut self.most),
        ]
        .into_iter()
        .filter_map(|(wants, slot)| wants.then_some(slot))
        .collect();
        if let Some(last) = slots.pop() {
            for slot in slots {
                *slot = Some((key, m.clone()));
            }
            *last = Some((key, m));
        }
    }

    fn least(&self) -> Option<Measurement> {
        self.least.as_ref().map(|(_, m)| m.clone())
    }

    fn most(&self) -> Option<Measurement> {
        self.most.as_ref().map(|(_, m)| m.clone())
    }
}

/// How many measurements [`measure`] takes for check `c` in `trial`, counted up to one past
/// `limit`: what a claim's budget of [`MAX_PAIRS`](super::MAX_PAIRS) is charged before anything is measured.
pub(super) fn measurements(
    trial: &Trial,
    members: &[Vec<OpId>],
    c: &TraceCheck,
    tol: &Tolerances,
    limit: usize,
) -> usize {
    let (sa, sb) = (&members[c.a], &members[c.b]);
    if sa.is_empty() || sb.is_empty() {
        return 0;
    }
    if c.relation == TraceRelation::Faster || (c.quantifier == Quantifier::One && !c.next) {
        return 1;
    }
    let mut n = 0usize;
    each_pair(trial, (sa, sb), c, tol, &mut |_, _| {
        n += 1;
        n <= limit
    });
    n
}

fn pairs(
    trial: &Trial,
    sa: &[OpId],
    sb: &[OpId],
    c: &TraceCheck,
    tol: &Tolerances,
    nb: &str,
) -> CheckOutcome {
    let mut tally = Tally::default();
    let left = each_pair(trial, (sa, sb), c, tol, &mut |a, b| {
        let m = check_of(c.relation, a, b).measure_with(&trial.waits, &trial.timeline, tol);
        let kept = match m.truth {
            Truth::Yes => &mut tally.yes,
            Truth::No => &mut tally.no,
            Truth::Unknown => &mut tally.unknown,
        };
        kept.add((a, b), m);
        true
    });
    let left_out = left_out(&left, nb);
    let (yes, no, unknown) = (&tally.yes, &tally.no, &tally.unknown);
    let total = yes.n + no.n + unknown.n;
    if total == 0 {
        return outcome(
            *c,
            Truth::Unknown,
            None,
            format!("no pair could have run together{left_out}"),
        );
    }
    let say = |truth: Truth, m: Option<Measurement>, n: usize, what: &str| {
        let head = format!("{n} of {total} pairs");
        match m {
            Some(m) => outcome(
                *c,
                truth,
                Some(&m),
                format!(
                    "{head} {what}; e.g. {}{left_out}",
                    explained(trial, &m, tol)
                ),
            ),
            None => outcome(*c, truth, None, format!("{head} {what}{left_out}")),
        }
    };
    match c.quantifier {
        Quantifier::Exists | Quantifier::One if yes.n > 0 => {
            say(Truth::Yes, yes.most(), yes.n, "show it")
        }
        Quantifier::Exists | Quantifier::One if unknown.n == 0 => {
            say(Truth::No, no.most(), no.n, "refute it")
        }
        Quantifier::Forall if no.n > 0 => say(Truth::No, no.least(), no.n, "refute it"),
        Quantifier::Forall if unknown.n == 0 => say(Truth::Yes, yes.least(), yes.n, "show it"),
        Quantifier::NotExists if yes.n > 0 => say(Truth::No, yes.most(), yes.n, "show it"),
        // The pair nearest to showing it: for `~exists overlaps`, the closest two ops.
        Quantifier::NotExists if unknown.n == 0 => say(Truth::Yes, no.most(), no.n, "refute it"),
        _ => say(
            Truth::Unknown,
            unknown.first.as_ref().map(|(_, m)| m.clone()),
            unknown.n,
            "are undecided",
        ),
    }
}

/// What a reason says of the pairs left out, after its count.
fn left_out(left: &LeftOut, nb: &str) -> String {
    let mut s = match left.apart {
        0 => String::new(),
        n => format!("; {n} pairs could not have run together (one was issued only after the other ended) and are left out"),
    };
    if left.unordered > 0 {
        s += &format!(
            "; {} pairs have no launch call to order them by issue and are left out",
            left.unordered
        );
    }
    if left.recordings > 0 {
        s += &format!(
            "; {} pairs of two recordings (`trace … as NAME`), whose clocks are not one, are \
             left out",
            left.recordings
        );
    }
    if left.no_next > 0 {
        s += &format!(
            "; {} ops have no op of {nb} issued after them by their process and are left out",
            left.no_next
        );
    }
    s
}

/// `faster(SLOW, FAST)`: each selection's first start to last end, as one phase each, judged by
/// the lab's `faster` on a timeline of the two phases.
fn faster(
    trial: &Trial,
    sa: &[OpId],
    sb: &[OpId],
    c: &TraceCheck,
    tol: &Tolerances,
    na: &str,
    nb: &str,
) -> CheckOutcome {
    let t = &trial.timeline;
    // Host functions' runs count too: a phase is where its ops ran, on the GPU or the host.
    let phase = |ops: &[OpId], id: usize| {
        let runs: Vec<_> = ops.iter().filter_map(|&o| t.interval(o)).collect();
        let lo = runs.iter().map(|i| i.start).min()?.max(0) as u64;
        let hi = runs.iter().map(|i| i.end).max()?.max(0) as u64;
        Some(Span::single(OpId(id), lo, hi.max(lo)))
    };
    let (Some(slow), Some(fast)) = (phase(sa, 0), phase(sb, 1)) else {
        return outcome(*c, Truth::Unknown, None, "a phase has no spans".into());
    };
    let (ds, df) = (slow.duration_ns(), fast.duration_ns());
    let phases = Timeline::new(vec![slow, fast], Vec::<HostCall>::new());
    let check = check_of(TraceRelation::Faster, OpId(0), OpId(1));
    let m = check.measure(&phases, tol);
    let reason = format!(
        "{na} took {:.2} µs from first start to last end ({} ops), {nb} {:.2} µs ({} ops): {}",
        ds as f64 / 1e3,
        sa.len(),
        df as f64 / 1e3,
        sb.len(),
        m.reason
    );
    outcome(*c, m.truth, Some(&m), reason)
}
