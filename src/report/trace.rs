//! Chrome Trace Event Format (JSON), which Perfetto UI and chrome://tracing open.
//!
//! One process per trial of each claim, named "claim · trial k". Each process has one named track
//! per stream ("s1 (non-blocking)") and a "host" track for the API calls. Kernels are complete
//! events ("X") in µs; event records and waits are instant events on their stream's track. Times
//! are relative to each trial's start, with host calls placed on the GPU clock by the trial's
//! clock sync where it has one, else by its host-to-GPU offset. Host functions are complete
//! events on their stream's track, placed the same way.

use crate::program::{OpKind, Program};
use crate::record::RunRecord;
use crate::timeline::Timeline;
use serde_json::{json, Value};

/// The trace of every trial of every claim that ran.
pub fn chrome_trace(run: &RunRecord) -> Value {
    let mut events = Vec::new();
    let mut pid = 0u64;
    for rec in &run.claims {
        let Some(trials) = rec.trials() else { continue };
        for (t, timeline) in trials.timelines.iter().enumerate() {
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
    out.push(meta(pid, None, "process_name", json!({ "name": name })));
    out.push(meta(
        pid,
        None,
        "process_sort_index",
        json!({ "sort_index": pid }),
    ));
    let offset = t.host_offset_ns().unwrap_or(0);
    let host = |ns: u64| ns as i64 + offset;
    let lo = t
        .host_calls
        .iter()
        .map(|c| host(c.begin_ns))
        .chain(t.spans.iter().map(|s| s.start() as i64))
        .min()
        .unwrap_or(0);
    let us = |ns: i64| (ns - lo) as f64 / 1e3;
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
    if !t.host_calls.is_empty() {
        out.push(meta(pid, Some(0), "thread_name", json!({ "name": "host" })));
        out.push(meta(
            pid,
            Some(0),
            "thread_sort_index",
            json!({ "sort_index": 1000 }),
        ));
    }
    for op in &program.ops {
        match op.kind {
            OpKind::Spin { stream, .. } | OpKind::Add { stream, .. } => {
                if let Some(span) = t.span(op.id) {
                    out.push(json!({
                        "name": op.label, "cat": "kernel", "ph": "X", "pid": pid,
                        "tid": stream.0 as u64 + 1,
                        "ts": us(span.start() as i64),
                        "dur": span.duration_ns() as f64 / 1e3,
                        "args": { "op": op.id.0, "blocks": span.blocks.len(), "sms": span.sms() },
                    }));
                }
            }
            OpKind::Copy { stream, bytes, .. } => {
                if let Some(i) = t.interval(op.id) {
                    out.push(json!({
                        "name": op.label, "cat": "copy", "ph": "X", "pid": pid,
                        "tid": stream.0 as u64 + 1,
                        "ts": us(i.start), "dur": (i.end - i.start) as f64 / 1e3,
                        "args": { "op": op.id.0, "bytes": bytes, "witness_error_ns": i.slack_ns },
                    }));
                }
            }
            OpKind::HostFn { stream, .. } => {
                if let Some(h) = t.host_spans.iter().find(|h| h.op == op.id) {
                    out.push(json!({
                        "name": op.label, "cat": "host fn", "ph": "X", "pid": pid,
                        "tid": stream.0 as u64 + 1,
                        "ts": us(host(h.begin_ns)),
                        "dur": (h.end_ns - h.begin_ns) as f64 / 1e3,
                        "args": { "op": op.id.0 },
                    }));
                }
            }
            OpKind::Record { stream, .. }
            | OpKind::Wait { stream, .. }
            | OpKind::AllocAsync { stream, .. }
            | OpKind::FreeAsync { stream, .. }
            | OpKind::BeginCapture { stream }
            | OpKind::EndCapture { stream }
            | OpKind::GraphLaunch { stream, .. } => {
                if let Some(at) = t.issued_ns(op.id) {
                    out.push(json!({
                        "name": op.label, "cat": "event", "ph": "i", "s": "t", "pid": pid,
                        "tid": stream.0 as u64 + 1, "ts": us(host(at)),
                    }));
                }
            }
            OpKind::HostSync { .. }
            | OpKind::Elapsed { .. }
            | OpKind::Query { .. }
            | OpKind::Api { .. } => {}
        }
    }
    for c in &t.host_calls {
        out.push(json!({
            "name": program.label(c.op), "cat": "host", "ph": "X", "pid": pid, "tid": 0,
            "ts": us(host(c.begin_ns)), "dur": (c.end_ns - c.begin_ns) as f64 / 1e3,
        }));
    }
}
