//! Chrome Trace Event Format (JSON), which Perfetto UI and chrome://tracing open.
//!
//! One process per trial of each claim, named "claim · trial k". Each process has one named track
//! per stream ("s1 (non-blocking)") and a "host" track for the API calls. Every op is one event,
//! placed by [`placed_ops`] exactly as in the SVG and terminal pictures: a complete event ("X")
//! in µs for what has a duration (kernels, vector adds, copies, host functions, a graph
//! launch over what its graph ran, host-side calls), an instant event ("i") for an op the host
//! only enqueued (event records and waits, async allocations and frees), and an instant at the
//! trial's start named "(not placed)" for an op the trial has no place for. The category is the
//! op's kind; the args name the op id, the source that placed it, its slack where it has one,
//! and its arguments ("copy H2D 1.0 MiB") where they say more. Host calls that issued stream ops
//! are complete events on the host track (category "host call"). Times are relative to the trial's earliest mark. The
//! trace is never thinned: its viewer zooms.

use super::placement::{describe, extent, kind_name, placed_ops, Lane, Mark, PlacedOp};
use crate::measured::timeline::Timeline;
use crate::program::Program;
use crate::record::{RunRecord, KEPT_TRIALS};
use serde_json::{json, Value};

/// The trace of the trials of every claim that ran: the first [`KEPT_TRIALS`] and the witness,
/// the trials whose stamps a run keeps for its reports (a run of 1,000 trials would otherwise
/// make a trace of gigabytes that no viewer opens).
pub fn chrome_trace(run: &RunRecord) -> Value {
    let mut events = Vec::new();
    let mut pid = 0u64;
    for rec in &run.claims {
        let Some(trials) = rec.trials() else { continue };
        let witness = rec.judgement().and_then(|j| j.witness);
        let shown = |t: usize| t < KEPT_TRIALS || witness == Some(t);
        for (t, timeline) in trials
            .timelines
            .iter()
            .enumerate()
            .filter(|(t, _)| shown(*t))
        {
            pid += 1;
            let name = format!("{} · trial {}", rec.claim.id, t + 1);
            trial_events(&mut events, pid, &name, &rec.claim.program, timeline);
        }
    }
    json!({ "traceEvents": events, "displayTimeUnit": "ns" })
}

fn meta(pid: u64, tid: Option<u64>, what: &str, args: Value) -> Value {
    match tid {
        Some(tid) => json!({ "ph": "M", "pid": pid, "tid": tid, "name": what, "args": args }),
        None => json!({ "ph": "M", "pid": pid, "name": what, "args": args }),
    }
}

/// Track of stream `i` is `i + 1`; the host track is 0.
fn trial_events(out: &mut Vec<Value>, pid: u64, name: &str, program: &Program, t: &Timeline) {
    let placed = placed_ops(program, t);
    tracks(out, pid, name, program, &placed);
    let lo = extent(&placed, true).map_or(0, |(lo, _)| lo);
    for p in &placed {
        op_events(out, pid, program, t, p, lo);
    }
}

/// The trial's process and its tracks, named and in order: the streams it uses, then the host's
/// where an op or call is on it.
fn tracks(out: &mut Vec<Value>, pid: u64, name: &str, program: &Program, placed: &[PlacedOp]) {
    out.push(meta(pid, None, "process_name", json!({ "name": name })));
    out.push(meta(
        pid,
        None,
        "process_sort_index",
        json!({ "sort_index": pid }),
    ));
    for (i, s) in program.streams.iter().enumerate() {
        if program.uses_stream(crate::program::StreamId(i)) {
            let tid = i as u64 + 1;
            let label = s.display_label();
            out.push(meta(
                pid,
                Some(tid),
                "thread_name",
                json!({ "name": label }),
            ));
            out.push(meta(
                pid,
                Some(tid),
                "thread_sort_index",
                json!({ "sort_index": tid }),
            ));
        }
    }
    if placed
        .iter()
        .any(|p| p.lane == Lane::Host || p.call.is_some())
    {
        out.push(meta(pid, Some(0), "thread_name", json!({ "name": "host" })));
        out.push(meta(
            pid,
            Some(0),
            "thread_sort_index",
            json!({ "sort_index": 1000 }),
        ));
    }
}

/// The track of a lane.
fn tid(lane: Lane) -> u64 {
    match lane {
        Lane::Host => 0,
        Lane::Stream(s) => (s.0 as u64).saturating_add(1),
    }
}

/// The events of one placed op: its own (or why it has no place), then its host call's; times
/// in µs from `lo`.
fn op_events(
    out: &mut Vec<Value>,
    pid: u64,
    program: &Program,
    t: &Timeline,
    p: &PlacedOp,
    lo: i64,
) {
    let us = |ns: i64| ns.saturating_sub(lo) as f64 / 1e3;
    let Some(op) = program.op(p.op) else { return };
    let cat = kind_name(&op.kind);
    let mut args = json!({ "op": p.op.0 });
    let what = describe(program, p.op);
    if what != cat {
        args["kind"] = json!(what);
    }
    if let Some(span) = t.span(p.op) {
        args["blocks"] = json!(span.blocks.len());
        args["sms"] = json!(span.sms());
    }
    if let Some(end) = p.graph {
        args["captured_by"] = json!(end.0);
    }
    match p.at {
        Ok(m) => {
            args["source"] = json!(m.source.name());
            if m.slack_ns > 0 {
                args["slack_ns"] = json!(m.slack_ns);
            }
            out.push(event(
                &op.label,
                cat,
                pid,
                tid(p.lane),
                &m,
                us(m.start),
                args,
            ));
        }
        Err(why) => {
            args["placed"] = json!(false);
            args["why"] = json!(why.to_string());
            out.push(json!({
                "name": format!("{} (not placed)", op.label), "cat": cat, "ph": "i",
                "s": "t", "pid": pid, "tid": tid(p.lane), "ts": 0.0, "args": args,
            }));
        }
    }
    if let Some(c) = p.call {
        let args = json!({ "op": p.op.0, "source": c.source.name() });
        out.push(event(&op.label, "host call", pid, 0, &c, us(c.start), args));
    }
}

/// A complete event for an interval, an instant event for an instant.
fn event(name: &str, cat: &str, pid: u64, tid: u64, m: &Mark, ts: f64, args: Value) -> Value {
    if m.instant {
        json!({ "name": name, "cat": cat, "ph": "i", "s": "t", "pid": pid, "tid": tid, "ts": ts,
                "args": args })
    } else {
        json!({ "name": name, "cat": cat, "ph": "X", "pid": pid, "tid": tid, "ts": ts,
                "dur": m.duration_ns() as f64 / 1e3, "args": args })
    }
}
