//! Checks a results file on load, before any of it is judged, drawn or written back.
//!
//! A results file is user input: it may be damaged, edited by hand, or crafted. Everything the
//! analysis later indexes or subtracts is checked here, once, at the boundary, so the analysis
//! itself can stay plain arithmetic on trusted values (docs/design.md, 14):
//! - the claims: unique ids; for each claim that ran (a failed one is reported by its error
//!   alone), a valid program ([`Program::validate`]) with at least one op, at least one check,
//!   and every op and buffer a check or observation names;
//! - calibrations: a plausible clock rate, a timer step of at least 1 ns, bounded tolerances;
//! - trials: wanted within [`MAX_TRIALS`], no more timelines than the lab would have run;
//! - timelines: every span, host call, host span, reading, witnessed span and buffer summary
//!   names an op or buffer of the program, sorted where lookups binary-search, every stamp
//!   ends no earlier than it starts, lies below [`MAX_STAMP_NS`], and, placed on the
//!   `%globaltimer` axis, within [`TRIAL_WINDOW_NS`] of the trial's earliest instant.
//!
//! With these bounds no sum or difference of two stamps and a tolerance can wrap. The first
//! problem found is reported, naming the claim and the field.

use super::run::{Outcome, RunRecord, Trials};
use crate::border::limits::{
    CYCLES_PER_NS, MAX_STAMP_NS, MAX_TOLERANCE_NS, MAX_TRIALS, MAX_TRIAL_FACTOR, TRIAL_WINDOW_NS,
};
use crate::judge::relation::Check;
use crate::measured::calibration::Calibration;
use crate::measured::timeline::Timeline;
use crate::program::{OpId, OpKind, Program};
use std::collections::HashSet;

/// The first rule of the format a results file (or a claim) breaks: the message names the claim
/// and the field (`claim 'x': trials.timelines[3].spans[0]: …`), each caller adding where it
/// looked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Broken(pub String);

impl From<String> for Broken {
    fn from(message: String) -> Broken {
        Broken(message)
    }
}

impl From<&str> for Broken {
    fn from(message: &str) -> Broken {
        Broken(message.into())
    }
}

/// The run's own fields: its calibration and trial count.
pub fn header(record: &RunRecord) -> Result<(), Broken> {
    if let Some(cal) = &record.calibration {
        calibration(cal).map_err(|e| format!("calibration: {e}"))?;
    }
    if !(1..=MAX_TRIALS).contains(&record.trials_per_claim) {
        return Err(format!(
            "trials_per_claim is {}; it must be 1..={MAX_TRIALS}",
            record.trials_per_claim
        )
        .into());
    }
    Ok(())
}

/// Claim `i` of a file, whose earlier claims' ids are `ids` (this one's is added).
pub fn claim_in_file(
    i: usize,
    rec: &super::run::ClaimRecord,
    ids: &mut HashSet<String>,
) -> Result<(), Broken> {
    unique(i, rec, ids)?;
    claim_alone(rec)
}

/// The part of [`claim_in_file`] that needs no other claim: a reader checks claims with it on
/// several threads, and [`unique`] in the file's order, before its error.
pub fn claim_alone(rec: &super::run::ClaimRecord) -> Result<(), Broken> {
    claim(rec).map_err(|e| Broken(format!("claim '{}': {e}", rec.claim.id.escape_debug())))
}

/// Claim `i`'s id is not among the ids of the claims before it (`ids`), and is added to them.
pub fn unique(
    i: usize,
    rec: &super::run::ClaimRecord,
    ids: &mut HashSet<String>,
) -> Result<(), Broken> {
    let id = &rec.claim.id;
    if !ids.insert(id.clone()) {
        return Err(format!(
            "claim '{}' (claims[{i}]) appears twice; every claim id must be unique, or its trials \
             would be counted twice",
            id.escape_debug()
        )
        .into());
    }
    Ok(())
}

fn claim(rec: &super::run::ClaimRecord) -> Result<(), Broken> {
    let c = &rec.claim;
    let p = &c.program;
    // Sizes first, whatever the outcome: every report loops over a claim's devices and ops.
    if let Some(problem) = p.size_problem() {
        return Err(format!("program: {problem}").into());
    }
    let Outcome::Ran { trials: t, .. } = &rec.outcome else {
        // A claim that failed (an invalid program among them) is reported by its error alone:
        // nothing of it is judged or drawn, so its program is not held to the rules.
        return Ok(());
    };
    claim_rules(c)?;
    trials(p, t)
}

/// What a results file holds every claim that ran to, its trials aside: a valid program with at
/// least one op, at least one check, and every op and buffer a check names. `check` asks it of
/// claim files before the GPU opens, so a run is never lost to a refusal at the end.
pub fn claim_rules(c: &crate::judge::claim::Claim) -> Result<(), Broken> {
    let p = &c.program;
    p.validate()
        .map_err(|e| format!("program: {}", e.problems.join("; ")))?;
    if p.ops.is_empty() {
        return Err("program: it has no ops; there is nothing to judge".into());
    }
    if c.checks.is_empty() {
        return Err("checks: there are none; a verdict would count nothing".into());
    }
    for (field, checks) in [("checks", &c.checks), ("observations", &c.observations)] {
        for (i, check) in checks.iter().enumerate() {
            check_refs(p, check).map_err(|e| format!("{field}[{i}]: {e}"))?;
        }
    }
    Ok(())
}

/// Every op and buffer `check` names exists; its op ranges run forwards.
fn check_refs(p: &Program, check: &Check) -> Result<(), Broken> {
    for op in check.ops() {
        op_ref(p, op)?;
    }
    let buffer = match *check {
        Check::Contents { buffer, .. } | Check::MemoryIs { buffer, .. } => Some(buffer),
        _ => None,
    };
    if let Some(b) = buffer.filter(|b| p.buffer(*b).is_none()) {
        return Err(format!(
            "names buffer b{}, which the program does not have ({} buffers)",
            b.0,
            p.buffers.len()
        )
        .into());
    }
    let ranges = match *check {
        Check::Faster { slow, fast } => vec![slow, fast],
        Check::LaunchCheaper { first, last, .. } => vec![(first, last)],
        _ => vec![],
    };
    if let Some((a, b)) = ranges.into_iter().find(|(a, b)| a > b) {
        return Err(format!("its op range {}..={} runs backwards", a.0, b.0).into());
    }
    Ok(())
}

fn op_ref(p: &Program, op: OpId) -> Result<(), Broken> {
    if p.op(op).is_none() {
        return Err(format!(
            "names op {}, which the program does not have ({} ops)",
            op.0,
            p.ops.len()
        )
        .into());
    }
    Ok(())
}

fn calibration(c: &Calibration) -> Result<(), Broken> {
    if !c.cycles_per_ns.is_finite() || !CYCLES_PER_NS.contains(&c.cycles_per_ns) {
        return Err(format!(
            "cycles_per_ns is {}; a GPU clock gives {}..={}",
            crate::border::shown::number(c.cycles_per_ns),
            CYCLES_PER_NS.start(),
            CYCLES_PER_NS.end()
        )
        .into());
    }
    if c.timer_step_ns == 0 {
        return Err("timer_step_ns is 0; the timer advances by at least 1 ns".into());
    }
    for (name, v) in [
        ("timer_step_ns", c.timer_step_ns),
        ("launch_jitter_ns", c.launch_jitter_ns),
        ("dependent_gap_ns", c.dependent_gap_ns),
        ("launch_latency_ns", c.launch_latency_ns.unwrap_or(0)),
    ] {
        bounded_tolerance(name, v)?;
    }
    if let Some(r) = &c.copy_rates {
        for rate in [r.h2d_pinned, r.d2h_pinned, r.h2d_pageable, r.d2h_pageable]
            .into_iter()
            .flatten()
        {
            bounded_tolerance("a copy rate's overhead_ns", rate.overhead_ns)?;
            if rate.bytes_per_us == 0 {
                return Err("a copy rate of 0 bytes per µs; measured rates move bytes".into());
            }
        }
    }
    Ok(())
}

fn bounded_tolerance(name: &str, v: u64) -> Result<(), Broken> {
    if v > MAX_TOLERANCE_NS {
        return Err(format!(
            "{name} is {v} ns, over the {MAX_TOLERANCE_NS} ns bound; measured values are \
             nanoseconds to microseconds"
        )
        .into());
    }
    Ok(())
}

fn trials(p: &Program, t: &Trials) -> Result<(), Broken> {
    calibration(&t.calibration).map_err(|e| format!("trials.calibration: {e}"))?;
    if !(1..=MAX_TRIALS).contains(&t.wanted) {
        return Err(format!("trials.wanted is {}; it must be 1..={MAX_TRIALS}", t.wanted).into());
    }
    let most = MAX_TRIAL_FACTOR * t.wanted;
    if t.timelines.len() > most {
        return Err(format!(
            "trials.timelines holds {} trials; the lab runs at most {most} for {} wanted",
            t.timelines.len(),
            t.wanted
        )
        .into());
    }
    for (i, tl) in t.timelines.iter().enumerate() {
        timeline(p, tl).map_err(|e| format!("trials.timelines[{i}].{e}"))?;
    }
    Ok(())
}

/// Ids strictly increasing (lookups binary-search them), each naming an op of the program.
fn sorted_ops(
    p: &Program,
    field: &str,
    ops: impl Iterator<Item = OpId>,
    kind_ok: impl Fn(&OpKind) -> bool,
    what: &str,
) -> Result<(), Broken> {
    let mut last: Option<OpId> = None;
    for (i, op) in ops.enumerate() {
        op_ref(p, op).map_err(|e| format!("{field}[{i}]: {e}"))?;
        if !p.op(op).is_some_and(|o| kind_ok(&o.kind)) {
            return Err(format!("{field}[{i}]: op {} is not {what}", op.0).into());
        }
        if last.is_some_and(|l| l >= op) {
            return Err(format!(
                "{field}[{i}]: op {} is out of order or repeated; entries are sorted by op",
                op.0
            )
            .into());
        }
        last = Some(op);
    }
    Ok(())
}

fn stamp(field: &str, v: i128) -> Result<(), Broken> {
    stamp_with(|| field.to_string(), v)
}

/// [`stamp`], naming the field only when it is refused (a claim may hold millions of stamps).
fn stamp_with(field: impl Fn() -> String, v: i128) -> Result<(), Broken> {
    if v.unsigned_abs() > u128::from(MAX_STAMP_NS) {
        return Err(format!("{} is {v}, beyond ±{MAX_STAMP_NS} ns", field()).into());
    }
    Ok(())
}

fn ordered(field: &str, start: i128, end: i128) -> Result<(), Broken> {
    ordered_with(|| field.to_string(), start, end)
}

fn ordered_with(field: impl Fn() -> String, start: i128, end: i128) -> Result<(), Broken> {
    stamp_with(&field, start)?;
    stamp_with(&field, end)?;
    if end < start {
        return Err(format!("{}: ends ({end}) before it starts ({start})", field()).into());
    }
    Ok(())
}

fn timeline(p: &Program, t: &Timeline) -> Result<(), Broken> {
    sorted_lists(p, t)?;
    // On the %globaltimer axis: every instant the analysis compares.
    let mut instants: Vec<i128> = Vec::new();
    span_stamps(p, t, &mut instants)?;
    for (i, c) in t.host_calls.iter().enumerate() {
        ordered(
            &format!("host_calls[{i}]"),
            c.begin_ns.into(),
            c.end_ns.into(),
        )?;
        if c.end_ns > TRIAL_WINDOW_NS {
            return Err(format!(
                "host_calls[{i}]: ends {} ns after the trial began, beyond the {} s window",
                c.end_ns,
                TRIAL_WINDOW_NS / 1_000_000_000
            )
            .into());
        }
    }
    for (i, r) in t.readings.iter().enumerate() {
        op_ref(p, r.op).map_err(|e| format!("readings[{i}]: {e}"))?;
        stamp(&format!("readings[{i}].value_ns"), r.value_ns.into())?;
    }
    if let Some(c) = t.clock {
        stamp("clock.offset_ns", c.offset_ns.into())?;
        bounded_tolerance("clock.error_ns", c.error_ns).map_err(|e| format!("clock: {e}"))?;
    }
    for (i, h) in t.host_spans.iter().enumerate() {
        let field = format!("host_spans[{i}]");
        ordered(&field, h.begin_ns.into(), h.end_ns.into())?;
        if let Some(c) = t.clock {
            let off = i128::from(c.offset_ns);
            instants.extend([i128::from(h.begin_ns) + off, i128::from(h.end_ns) + off]);
        }
    }
    if let Some(w) = t.witness {
        stamp("witness.offset_ns", w.offset_ns.into())?;
        bounded_tolerance("witness.error_ns", w.error_ns).map_err(|e| format!("witness: {e}"))?;
    }
    for (i, s) in t.witnessed.iter().enumerate() {
        ordered(
            &format!("witnessed[{i}]"),
            s.start_ns.into(),
            s.end_ns.into(),
        )?;
        if let Some(w) = t.witness {
            let off = i128::from(w.offset_ns);
            instants.extend([i128::from(s.start_ns) + off, i128::from(s.end_ns) + off]);
        }
    }
    for (i, c) in t.contents.iter().enumerate() {
        contents(p, c).map_err(|e| format!("contents[{i}]: {e}"))?;
    }
    within_a_trial(&instants)
}

/// Each list of a timeline in op order, of the ops its kind of entry is for.
fn sorted_lists(p: &Program, t: &Timeline) -> Result<(), Broken> {
    let any = |_: &OpKind| true;
    sorted_ops(
        p,
        "spans",
        t.spans.iter().map(|s| s.op),
        OpKind::is_stamped,
        "a stamped kernel",
    )?;
    sorted_ops(p, "host_calls", t.host_calls.iter().map(|c| c.op), any, "")?;
    let host_fn = |k: &OpKind| matches!(k, OpKind::HostFn { .. });
    sorted_ops(
        p,
        "host_spans",
        t.host_spans.iter().map(|s| s.op),
        host_fn,
        "a host function",
    )?;
    sorted_ops(p, "witnessed", t.witnessed.iter().map(|s| s.op), any, "")?;
    Ok(())
}

/// The spans' block stamps: one per block of the grid, each ordered; their extreme instants go
/// to `instants`.
fn span_stamps(p: &Program, t: &Timeline, instants: &mut Vec<i128>) -> Result<(), Broken> {
    for (i, s) in t.spans.iter().enumerate() {
        if s.blocks.is_empty() {
            return Err(format!("spans[{i}]: op {} has no block stamps", s.op.0).into());
        }
        // The kernel stamps one block of its grid each: more stamps than blocks are made up (a
        // file of a million stamps for a kernel of one block).
        let grid = p.op(s.op).map_or(0, |op| op.kind.stamped_grid() as usize);
        if s.blocks.len() != grid {
            return Err(format!(
                "spans[{i}]: {} block stamps, but op {} launches a grid of {grid} blocks",
                s.blocks.len(),
                s.op.0
            )
            .into());
        }
        for (b, block) in s.blocks.iter().enumerate() {
            let field = || format!("spans[{i}].blocks[{b}]");
            ordered_with(field, block.start_ns.into(), block.end_ns.into())?;
            stamp_with(|| format!("{}.cycles", field()), block.cycles.into())?;
        }
        // Stamps are held from the span's first start: its first start and last end are its
        // extreme instants.
        instants.extend([i128::from(s.start()), i128::from(s.end())]);
    }
    Ok(())
}

/// The instants of a trial within the window a trial may span, and stamps themselves.
fn within_a_trial(instants: &[i128]) -> Result<(), Broken> {
    let (lo, hi) = (instants.iter().min(), instants.iter().max());
    if let (Some(lo), Some(hi)) = (lo, hi) {
        if hi - lo > i128::from(TRIAL_WINDOW_NS) {
            return Err(format!(
                "its instants spread over {} ns, beyond the {} s a trial may span; a stamp or a \
                 clock offset is damaged",
                hi - lo,
                TRIAL_WINDOW_NS / 1_000_000_000
            )
            .into());
        }
        stamp("an instant placed on the GPU clock", *lo)?;
        stamp("an instant placed on the GPU clock", *hi)?;
    }
    Ok(())
}

/// A buffer summary: an existing buffer, counts that add up to the elements read.
fn contents(p: &Program, c: &crate::measured::contents::Contents) -> Result<(), Broken> {
    let Some(buf) = p.buffer(c.buffer) else {
        return Err(format!(
            "names buffer b{}, which the program does not have ({} buffers)",
            c.buffer.0,
            p.buffers.len()
        )
        .into());
    };
    if c.elements > buf.elements() {
        return Err(format!(
            "{} elements read back from buffer '{}', which holds {}",
            c.elements,
            buf.label,
            buf.elements()
        )
        .into());
    }
    let counted = c
        .values
        .iter()
        .try_fold(c.other, |sum, v| sum.checked_add(v.count));
    if counted != Some(c.elements) {
        return Err(format!(
            "the value counts and other add up to {}, not the {} elements read",
            counted.map_or("more than 2^64".into(), |n| n.to_string()),
            c.elements
        )
        .into());
    }
    Ok(())
}
