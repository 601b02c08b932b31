//! One check of a claim on a trace, on one trial: the plain relation on single ops, or a
//! quantifier over the pairs that could have met (see `judgement.rs`), and what held an op back.

use super::claim::{Quantifier, TraceCheck, TraceClaim, TraceRelation};
use crate::judge::relation::{latest_free_start, Check, HostWaits, Measurement, Truth};
use crate::measured::calibration::Tolerances;
use crate::measured::timeline::{HostCall, Span, Timeline};
use crate::program::OpId;
use crate::trace::{held_back, CauseKind, Held, Trial};

/// The most pairs one check looks at in one trial: beyond, the selections are too wide to say
/// anything readable, and the check asks for narrower ones.
pub const MAX_PAIRS: usize = 1_000_000;

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

/// A trial with what the lab's relations know of its ops' calls: each op issued by a call that
/// blocks nothing, labelled, free where its stream was idle when it was issued.
pub(super) struct OnTrial<'a> {
    trial: &'a Trial,
    waits: HostWaits,
}

impl<'a> OnTrial<'a> {
    pub(super) fn new(trial: &'a Trial) -> OnTrial<'a> {
        let waits = HostWaits::listed(trial.labels.iter().cloned());
        OnTrial { trial, waits }
    }
}

impl std::ops::Deref for OnTrial<'_> {
    type Target = Trial;
    fn deref(&self) -> &Trial {
        self.trial
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

/// Whether a pair could have run together: the op that started later was ready before the
/// other ended. Unknown ready time: kept (the relation says why it cannot decide).
fn could_meet(trial: &OnTrial, a: OpId, b: OpId, tol: &Tolerances) -> bool {
    let t = &trial.timeline;
    // Host functions' runs too (their host spans), not GPU spans only: a pair with a host
    // function is left out like any other that could not have met.
    let (Some(ia), Some(ib)) = (t.interval(a), t.interval(b)) else {
        return true;
    };
    let (first, second) = if ia.start <= ib.start {
        (ia, b)
    } else {
        (ib, a)
    };
    match latest_free_start(&trial.waits, t, second, tol) {
        Some(ready) => ready < first.end,
        None => true,
    }
}

fn pairs(
    trial: &OnTrial,
    sa: &[OpId],
    sb: &[OpId],
    c: &TraceCheck,
    tol: &Tolerances,
    nb: &str,
) -> CheckOutcome {
    // A call relation within one selection speaks of each op and its own call ("each copy's
    // call returns before its copy ends"), not of one op's call against another op's span.
    let own_call = c.a == c.b
        && matches!(
            c.relation,
            TraceRelation::ReturnsBefore | TraceRelation::ReturnsAfter | TraceRelation::Blocks
        );
    if !own_call && !c.next && sa.len().saturating_mul(sb.len()) > MAX_PAIRS {
        return outcome(
            *c,
            Truth::Unknown,
            None,
            format!(
                "{} × {} pairs, over {MAX_PAIRS}: narrow the selections (a stream, a range)",
                sa.len(),
                sb.len()
            ),
        );
    }
    // `precedes` within one selection speaks of issue order ("stream 7 runs in issue order"):
    // each op before every op issued after it, never the pair both ways, which could not hold.
    let issue_order = c.a == c.b && c.relation == TraceRelation::Precedes;
    let issued = |op: OpId| trial.timeline.host_call(op).map(|call| (call.begin_ns, op));
    let mut unordered = 0usize;
    let mut no_next = 0usize;
    let all_pairs = sa.iter().flat_map(|&a| sb.iter().map(move |&b| (a, b)));
    let pairs: Box<dyn Iterator<Item = (OpId, OpId)>> = match (own_call, issue_order) {
        _ if c.next => {
            Box::new(next_pairs(trial, sa, sb, &mut unordered, &mut no_next).into_iter())
        }
        (true, _) => Box::new(sa.iter().map(|&a| (a, a))),
        (false, true) => Box::new(all_pairs.filter(|&(a, b)| match (issued(a), issued(b)) {
            (Some(ia), Some(ib)) => ia < ib,
            _ => {
                // Counted once per unordered pair, as (a, b) with a < b.
                unordered += usize::from(a < b);
                false
            }
        })),
        (false, false) => Box::new(all_pairs.filter(|(a, b)| a != b)),
    };
    let ([yes, no, unknown], apart, recordings) = measured(trial, c.relation, tol, pairs);
    let total = yes.len() + no.len() + unknown.len();
    let left_out = left_out([apart, unordered, recordings, no_next], nb);
    if total == 0 {
        return outcome(
            *c,
            Truth::Unknown,
            None,
            format!("no pair could have run together{left_out}"),
        );
    }
    by_quantifier(trial, c, tol, [yes, no, unknown], &left_out)
}

/// The pairs' measurements of `relation` that show it, refute it and leave it undecided; then
/// how many pairs could not have met (for the relations of timing) and how many were of two
/// recordings, left out.
fn measured(
    trial: &OnTrial,
    relation: TraceRelation,
    tol: &Tolerances,
    pairs: impl Iterator<Item = (OpId, OpId)>,
) -> ([Vec<Measurement>; 3], usize, usize) {
    let timed = matches!(
        relation,
        TraceRelation::Precedes | TraceRelation::Overlaps | TraceRelation::Serializes
    );
    let (mut yes, mut no, mut unknown, mut apart) = (Vec::new(), Vec::new(), Vec::new(), 0usize);
    let mut recordings = 0usize;
    for (a, b) in pairs {
        if !trial.one_recording(a, b) {
            recordings += 1;
            continue;
        }
        if timed && !could_meet(trial, a, b, tol) {
            apart += 1;
            continue;
        }
        let m = check_of(relation, a, b).measure_with(&trial.waits, &trial.timeline, tol);
        match m.truth {
            Truth::Yes => yes.push(m),
            Truth::No => no.push(m),
            Truth::Unknown => unknown.push(m),
        }
    }
    ([yes, no, unknown], apart, recordings)
}

/// What the pairs left out of a check say, after its count: those that could not have met
/// (`apart`), had no call to order them (`unordered`), came from two recordings, or had no next
/// op of `nb`.
fn left_out([apart, unordered, recordings, no_next]: [usize; 4], nb: &str) -> String {
    let mut left_out = match apart {
        0 => String::new(),
        n => format!("; {n} pairs could not have run together (one was issued only after the other ended) and are left out"),
    };
    if unordered > 0 {
        left_out += &format!(
            "; {unordered} pairs have no launch call to order them by issue and are left out"
        );
    }
    if recordings > 0 {
        left_out += &format!(
            "; {recordings} pairs of two recordings (`trace … as NAME`), whose clocks are not \
             one, are left out"
        );
    }
    if no_next > 0 {
        left_out += &format!(
            "; {no_next} ops have no op of {nb} issued after them by their process and are left out"
        );
    }
    left_out
}

/// A check's outcome by its quantifier, from the measurements of its pairs that show the
/// relation, refute it and leave it undecided (`[yes, no, unknown]`, `total` pairs in all).
fn by_quantifier(
    trial: &OnTrial,
    c: &TraceCheck,
    tol: &Tolerances,
    [yes, no, unknown]: [Vec<Measurement>; 3],
    left_out: &str,
) -> CheckOutcome {
    let total = yes.len() + no.len() + unknown.len();
    let counted = format!("{} of {total} pairs", "{}");
    let largest = |v: &[Measurement]| v.iter().max_by_key(|m| m.value_ns).cloned();
    let smallest = |v: &[Measurement]| v.iter().min_by_key(|m| m.value_ns).cloned();
    let say = |truth: Truth, m: Option<Measurement>, n: usize, what: &str| {
        let head = counted.replacen("{}", &n.to_string(), 1);
        match m {
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
        Quantifier::Exists | Quantifier::One if !yes.is_empty() => {
            say(Truth::Yes, largest(&yes), yes.len(), "show it")
        }
        Quantifier::Exists | Quantifier::One if unknown.is_empty() => {
            say(Truth::No, largest(&no), no.len(), "refute it")
        }
        Quantifier::Forall if !no.is_empty() => {
            say(Truth::No, smallest(&no), no.len(), "refute it")
        }
        Quantifier::Forall if unknown.is_empty() => {
            say(Truth::Yes, smallest(&yes), yes.len(), "show it")
        }
        Quantifier::NotExists if !yes.is_empty() => {
            say(Truth::No, largest(&yes), yes.len(), "show it")
        }
        // The pair nearest to showing it: for `~exists overlaps`, the closest two ops.
        Quantifier::NotExists if unknown.is_empty() => {
            say(Truth::Yes, largest(&no), no.len(), "refute it")
        }
        _ => say(
            Truth::Unknown,
            unknown.first().cloned(),
            unknown.len(),
            "are undecided",
        ),
    }
}

/// `RELATION(A, next B)`: each op of `sa` with the op of `sb` its process issued first after it
/// (by call begin; ties by op), counting the ops with no call (`unordered`) and those with no op
/// of `sb` after them (`no_next`). One sort of `sb` and a binary search per op of `sa`.
fn next_pairs(
    trial: &OnTrial,
    sa: &[OpId],
    sb: &[OpId],
    unordered: &mut usize,
    no_next: &mut usize,
) -> Vec<(OpId, OpId)> {
    let key = |op: OpId| {
        let process = trial.place(op).map(|(file, pid, ..)| (file, pid));
        let call = trial.timeline.host_call(op).map(|call| call.begin_ns);
        Some((process?, call?, op))
    };
    let mut later: Vec<_> = sb.iter().filter_map(|&b| key(b)).collect();
    later.sort_unstable();
    let mut pairs = Vec::with_capacity(sa.len());
    for &a in sa {
        let Some(ka) = key(a) else {
            *unordered += 1;
            continue;
        };
        let i = later.partition_point(|kb| *kb <= ka);
        match later.get(i) {
            Some(&(process, _, b)) if process == ka.0 => pairs.push((a, b)),
            _ => *no_next += 1,
        }
    }
    pairs
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
