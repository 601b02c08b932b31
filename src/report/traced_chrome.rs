//! The Chrome trace (Perfetto, chrome://tracing) of claims judged on traces: the first
//! [`KEPT_TRIALS`] trials of every claim and its witness, as for the lab's runs
//! (`report/chrome_trace.rs`), each trial's ops on one track per stream, the claim's selections picked
//! out. (A trace whose step range was written a thousand times over makes a thousand trials of
//! each claim: all of them made a Perfetto trace of 177 MB from a trace of 2 MB.)
//!
//! One process per trial, named "claim · ProfilerStep#3 · yes"; one track per (rank, device,
//! stream), named "r1 gpu0 stream 7"; each op a complete event whose category is the selections
//! it belongs to ("AR,GEMM", or "other"), whose args give its full name, its label in the
//! reasons and its launch call. The trial's check reasons are an instant event at its start, and
//! what held an op back a flow (an arrow) from the op it waited for to it, named for its cause.
//!
//! Written event by event as it is made, each op's selections and track looked up once per
//! trial, not searched per op: a trace of 400,000 ops took 54 s and 1.6 GB as one JSON value
//! searched per op, against 2.8 s to judge it.

use crate::record::KEPT_TRIALS;
use crate::trace::{Trace, Trial};
use crate::trace_claims::{TraceClaim, TraceJudgement, TracedTrial};
use serde_json::{json, Value};
use std::io::Write;

/// Writes the trace of the trials shown of every judged claim to `out`: the object
/// `{"displayTimeUnit": "ns", "traceEvents": [...]}`, keys in order as serde_json writes them.
pub fn write_chrome_trace(
    judged: &[(&TraceClaim, &Trace, &TraceJudgement)],
    out: &mut dyn Write,
) -> std::io::Result<()> {
    out.write_all(br#"{"displayTimeUnit":"ns","traceEvents":["#)?;
    let mut events = Events { out, first: true };
    let mut pid = 0u64;
    for (claim, trace, judgement) in judged {
        // Judged already: its trials were cut once within the bound.
        let shown = |t: usize| t < KEPT_TRIALS || judgement.witness == Some(t);
        let trials = trace.some_trials(&claim.trial, &shown).unwrap_or_default();
        for (trial, outcome) in
            (trials.iter()).filter_map(|(t, trial)| Some((trial, judgement.trials.get(*t)?)))
        {
            pid += 1;
            trial_events(&mut events, pid, claim, trace, trial, outcome)?;
        }
    }
    events.out.write_all(b"]}")
}

/// The events written so far, comma-separated: a trace is written as it is made, never held
/// whole (a step of 400,000 ops once built 1.5 GB of JSON values before writing any).
pub(super) struct Events<'a> {
    pub(super) out: &'a mut dyn Write,
    pub(super) first: bool,
}

impl Events<'_> {
    pub(super) fn push(&mut self, event: &serde_json::Value) -> std::io::Result<()> {
        if !std::mem::take(&mut self.first) {
            self.out.write_all(b",")?;
        }
        serde_json::to_writer(&mut *self.out, event).map_err(std::io::Error::other)
    }
}

/// The events of one trial: its process and tracks, each op, and the reasons of its checks.
fn trial_events(
    events: &mut Events,
    pid: u64,
    claim: &TraceClaim,
    trace: &Trace,
    trial: &Trial,
    outcome: &TracedTrial,
) -> std::io::Result<()> {
    let name = format!("{} · {} · {}", claim.id, trial.name, outcome.truth);
    let tracks = trial_tracks(&mut |v| events.push(&v), pid, &name, trial, trace)?;
    let picked = picked(claim, trace, trial);
    let name = |k: &usize| claim.selections.get(*k).map_or("?", |s| s.name.as_str());
    let drawn = trial.drawn();
    for &(op_id, start, end) in &drawn {
        let place = trial.places[op_id.0];
        let tid = tracks.binary_search(&place).map_or(0, |i| i + 1);
        let op = trace.op(trial.ops[op_id.0]);
        let cat = match picked[op_id.0].is_empty() {
            true => "other".to_string(),
            false => picked[op_id.0]
                .iter()
                .map(name)
                .collect::<Vec<_>>()
                .join(","),
        };
        events.push(&json!({
            "ph": "X", "pid": pid, "tid": tid, "cat": cat,
            "name": crate::trace::short_name(&op.name),
            "ts": start as f64 / 1e3,
            "dur": end.saturating_sub(start) as f64 / 1e3,
            "args": {
                "label": trial.label(op_id),
                "name": &*op.name,
                "kind": op.kind.word(),
                "call": op.call.as_ref().map(|c| &*c.name),
                "bytes": op.bytes,
            }
        }))?;
    }
    // What held an op back: a flow from the op it waited for to it, named for the cause.
    let at = |o: crate::program::OpId| {
        let tid = tracks.binary_search(trial.places.get(o.0)?).ok()? + 1;
        let span = drawn.iter().find(|d| d.0 == o)?;
        Some((tid, span.1 as f64 / 1e3))
    };
    for (k, held) in outcome
        .checks
        .iter()
        .enumerate()
        .filter_map(|(k, c)| Some((k, c.held.as_ref()?)))
    {
        let (Some((from_tid, from)), Some((to_tid, to))) = (at(held.by), at(held.op)) else {
            continue;
        };
        let id = (pid << 16) | k as u64;
        let name = format!("held back: {}", held.kind.word());
        let args = json!({ "cause": held.words(&trial.label(held.by)) });
        events.push(
            &json!({"ph": "s", "id": id, "pid": pid, "tid": from_tid, "ts": from,
            "cat": "cause", "name": name, "args": args}),
        )?;
        events.push(
            &json!({"ph": "f", "bp": "e", "id": id, "pid": pid, "tid": to_tid, "ts": to,
            "cat": "cause", "name": name, "args": args}),
        )?;
    }
    let reasons: Vec<String> = (outcome.checks.iter())
        .map(|c| format!("{}: {} — {}", claim.describe(&c.check), c.truth, c.reason))
        .collect();
    events.push(
        &json!({"ph": "i", "s": "p", "pid": pid, "tid": 0, "ts": 0.0,
        "name": "checks", "args": {"checks": reasons}}),
    )
}

/// By op of the trial, the selections it belongs to (their indices, in the claim's order).
pub(crate) fn picked(claim: &TraceClaim, trace: &Trace, trial: &Trial) -> Vec<Vec<usize>> {
    let mut picked = vec![Vec::new(); trial.ops.len()];
    let members = crate::trace_claims::members(claim, trace, &trial.ops);
    for (k, members) in members.iter().enumerate() {
        for op in members {
            if let Some(p) = picked.get_mut(op.0) {
                p.push(k);
            }
        }
    }
    picked
}

/// A trial as one process named `name`, with one track per lane (file, process, device,
/// stream) named "r1 gpu0 stream 7": its metadata events given to `push`, and the lanes in
/// track order (track `i + 1` is lane `i`).
pub(super) fn trial_tracks(
    push: &mut dyn FnMut(Value) -> std::io::Result<()>,
    pid: u64,
    name: &str,
    trial: &Trial,
    trace: &Trace,
) -> std::io::Result<Vec<(usize, i64, u32, u64)>> {
    push(json!({"ph": "M", "pid": pid, "name": "process_name", "args": {"name": name}}))?;
    push(
        json!({"ph": "M", "pid": pid, "name": "process_sort_index", "args": {"sort_index": pid}}),
    )?;
    let mut tracks = trial.places.clone();
    tracks.sort_unstable();
    tracks.dedup();
    for (i, &place) in tracks.iter().enumerate() {
        push(
            json!({"ph": "M", "pid": pid, "tid": i + 1, "name": "thread_name",
            "args": {"name": trial.lane_name(trace, place)}}),
        )?;
    }
    Ok(tracks)
}
