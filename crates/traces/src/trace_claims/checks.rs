//! One check of a claim on a trace, on one trial: the plain relation on single ops, or a
//! quantifier over the pairs that could have met (see `judge.rs`), and what held an op back.

use super::on_trial::OnTrial;
use super::pairs::{each_pair, LeftOut};
use super::trace_claim::{Quantifier, TraceCheck, TraceClaim, TraceRelation};
use crate::judge::relation::{Check, Measurement, Truth};
use crate::measured::calibration::Tolerances;
use crate::measured::timeline::{HostCall, Span, Timeline};
use crate::program::OpId;
use crate::trace::{held_back, CauseKind, Held};

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
    /// What held the deciding pair's later op back, where it waited.
    pub held: Option<Held>,
}

impl CheckOutcome {
    /// Its words without the room `format!` left after them (up to as much again): a claim's
    /// outcomes are kept, trial by trial, until the run's report is written (a 200 MB trace's
    /// 6,260 trials of four claims, issue 51).
    fn compact(mut self) -> CheckOutcome {
        self.reason.shrink_to_fit();
        if let Some(held) = &mut self.held {
            held.cause.shrink_to_fit();
        }
        self
    }
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
        held: None,
    }
}

pub(super) fn measure(
    claim: &TraceClaim,
    trial: &OnTrial,
    members: &[Vec<OpId>],
    c: &TraceCheck,
    tol: &Tolerances,
) -> CheckOutcome {
    measured(claim, trial, members, c, tol).compact()
}

/// The outcome of check `c` on `trial`, its words as they were made.
fn measured(
    claim: &TraceClaim,
    trial: &OnTrial,
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
        let (why, held) = explained(trial, &m, tol);
        return CheckOutcome {
            held,
            ..outcome(*c, m.truth, Some(&m), why)
        };
    }
    pairs(trial, sa, sb, c, tol, nb)
}

/// The measurement's reason, with what held the later op back where it waited.
fn explained(trial: &OnTrial, m: &Measurement, tol: &Tolerances) -> (String, Option<Held>) {
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
    // An undecided order whose later op was issued late: the host held it, and the trace may
    // say how (a sync, a pageable copy); its other causes would explain a wait it did not have.
    let held = match (waited, m.truth) {
        (true, _) => later(trial, m.check).and_then(|o| held_back(trial, o, tol)),
        (false, Truth::Unknown) => (later(trial, m.check))
            .and_then(|o| held_back(trial, o, tol))
            .filter(|h| matches!(h.kind, CauseKind::HostCall | CauseKind::IssuedLate)),
        (false, _) => None,
    };
    let why = format!(
        "{names}: {}{}",
        m.reason,
        (held.as_ref()).map_or(String::new(), |h| format!(
            "; {}",
            h.words(&trial.label(h.by))
        ))
    );
    (why, held)
}

/// The op of an order or overlap that started later.
fn later(trial: &OnTrial, c: Check) -> Option<OpId> {
    let ops = c.ops();
    let (&a, &b) = (ops.first()?, ops.get(1)?);
    let start = |o: OpId| trial.timeline.span(o).map(|s| s.start());
    Some(if start(a)? > start(b)? { a } else { b })
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
}

/// How many measurements [`measure`] takes for check `c` in `trial`, counted up to one past
/// `limit`: what a claim's budget of [`MAX_PAIRS`](super::MAX_PAIRS) is charged before anything is measured.
pub(super) fn measurements(
    trial: &OnTrial,
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
    trial: &OnTrial,
    sa: &[OpId],
    sb: &[OpId],
    c: &TraceCheck,
    tol: &Tolerances,
    nb: &str,
) -> CheckOutcome {
    let mut tally = Tally::default();
    let left = each_pair(trial, (sa, sb), c, tol, &mut |a, b| {
        let m = check_of(c.relation, a, b).measure_quiet(&trial.waits, &trial.timeline, tol);
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
    // Only the pair shown is measured again, with its reason.
    let said = |kept: Option<&((OpId, OpId), Measurement)>| {
        kept.map(|&((a, b), ref quiet)| {
            let m = check_of(c.relation, a, b).measure_with(&trial.waits, &trial.timeline, tol);
            debug_assert_eq!((m.truth, m.value_ns), (quiet.truth, quiet.value_ns));
            m
        })
    };
    let say = |truth: Truth, m: Option<&((OpId, OpId), Measurement)>, n: usize, what: &str| {
        let head = format!("{n} of {total} pairs");
        match said(m) {
            Some(m) => {
                let (why, held) = explained(trial, &m, tol);
                let why = format!("{head} {what}; e.g. {why}{left_out}");
                CheckOutcome {
                    held,
                    ..outcome(*c, truth, Some(&m), why)
                }
            }
            None => outcome(*c, truth, None, format!("{head} {what}{left_out}")),
        }
    };
    match c.quantifier {
        Quantifier::Exists | Quantifier::One if yes.n > 0 => {
            say(Truth::Yes, yes.most.as_ref(), yes.n, "show it")
        }
        Quantifier::Exists | Quantifier::One if unknown.n == 0 => {
            say(Truth::No, no.most.as_ref(), no.n, "refute it")
        }
        Quantifier::Forall if no.n > 0 => say(Truth::No, no.least.as_ref(), no.n, "refute it"),
        Quantifier::Forall if unknown.n == 0 => {
            say(Truth::Yes, yes.least.as_ref(), yes.n, "show it")
        }
        Quantifier::NotExists if yes.n > 0 => say(Truth::No, yes.most.as_ref(), yes.n, "show it"),
        // The pair nearest to showing it: for `~exists overlaps`, the closest two ops.
        Quantifier::NotExists if unknown.n == 0 => {
            say(Truth::Yes, no.most.as_ref(), no.n, "refute it")
        }
        _ => say(
            Truth::Unknown,
            unknown.first.as_ref(),
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
    trial: &OnTrial,
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
