//! The Chrome trace (Perfetto, chrome://tracing) of claims judged on traces: every trial of
//! every claim, its ops on one track per stream, the claim's selections picked out.
//!
//! One process per trial, named "claim · ProfilerStep#3 · yes"; one track per (rank, device,
//! stream), named "r1 gpu0 stream 7"; each op a complete event whose category is the selections
//! it belongs to ("AR,GEMM", or "other"), whose args give its full name, its label in the
//! reasons and its launch call. The trial's check reasons are an instant event at its start, and
//! what held an op back a flow (an arrow) from the op it waited for to it, named for its cause.

use crate::trace::Trace;
use crate::trace_claims::{TraceClaim, TraceJudgement};
use serde_json::{json, Value};

/// The trace of every trial of every judged claim.
pub fn chrome_trace(judged: &[(&TraceClaim, &Trace, &TraceJudgement)]) -> Value {
    let mut events = Vec::new();
    let mut pid = 0u64;
    let mut flow = 0u64;
    for (claim, trace, judgement) in judged {
        // Judged already: its trials were cut once within the bound.
        let trials = trace.trials(&claim.trial).unwrap_or_default();
        for (trial, outcome) in trials.iter().zip(&judgement.trials) {
            pid += 1;
            let name = format!("{} · {} · {}", claim.id, trial.name, outcome.truth);
            let tracks = trial_tracks(&mut events, pid, &name, trial, trace);
            let drawn = trial.drawn();
            for &(op_id, start, end) in &drawn {
                let place = trial.places[op_id.0];
                let tid = tracks.iter().position(|&t| t == place).map_or(0, |i| i + 1);
                let op = trace.op(trial.ops[op_id.0]);
                let picked: Vec<&str> = (claim.selections.iter().zip(&outcome.members))
                    .filter(|(_, m)| m.contains(&op_id))
                    .map(|(s, _)| s.name.as_str())
                    .collect();
                let cat = match picked.is_empty() {
                    true => "other".to_string(),
                    false => picked.join(","),
                };
                events.push(json!({
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
                }));
            }
            // What held an op back: a flow from the op it waited for to it, named for the cause.
            for held in outcome.checks.iter().filter_map(|c| c.held.as_ref()) {
                let at = |o: crate::program::OpId| {
                    let place = trial.places.get(o.0)?;
                    let tid = tracks.iter().position(|t| t == place)? + 1;
                    let span = drawn.iter().find(|d| d.0 == o)?;
                    Some((tid, span.1 as f64 / 1e3))
                };
                let (Some((from_tid, from)), Some((to_tid, to))) = (at(held.by), at(held.op))
                else {
                    continue;
                };
                flow += 1;
                let name = format!("held back: {}", held.kind.word());
                let args = json!({ "cause": held.words(&trial.label(held.by)) });
                events.push(json!({"ph": "s", "id": flow, "pid": pid, "tid": from_tid,
                    "ts": from, "cat": "cause", "name": name, "args": args}));
                events.push(
                    json!({"ph": "f", "bp": "e", "id": flow, "pid": pid, "tid": to_tid,
                    "ts": to, "cat": "cause", "name": name, "args": args}),
                );
            }
            let reasons: Vec<String> = (outcome.checks.iter())
                .map(|c| format!("{}: {} — {}", claim.describe(&c.check), c.truth, c.reason))
                .collect();
            events.push(json!({"ph": "i", "s": "p", "pid": pid, "tid": 0, "ts": 0.0,
                "name": "checks", "args": {"checks": reasons}}));
        }
    }
    json!({ "traceEvents": events, "displayTimeUnit": "ns" })
}

/// A trial as one process named `name`, with one track per lane (file, process, device,
/// stream) named "r1 gpu0 stream 7": the metadata events, and the lanes in track order (track
/// `i + 1` is lane `i`).
pub(super) fn trial_tracks(
    events: &mut Vec<Value>,
    pid: u64,
    name: &str,
    trial: &crate::trace::Trial,
    trace: &Trace,
) -> Vec<(usize, i64, u32, u64)> {
    events.push(json!({"ph": "M", "pid": pid, "name": "process_name", "args": {"name": name}}));
    events.push(
        json!({"ph": "M", "pid": pid, "name": "process_sort_index", "args": {"sort_index": pid}}),
    );
    let mut tracks = trial.places.clone();
    tracks.sort_unstable();
    tracks.dedup();
    for (i, &place) in tracks.iter().enumerate() {
        events.push(
            json!({"ph": "M", "pid": pid, "tid": i + 1, "name": "thread_name",
            "args": {"name": trial.lane_name(trace, place)}}),
        );
    }
    tracks
}
