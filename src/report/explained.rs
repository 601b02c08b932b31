//! The Perfetto trace (Chrome trace format) of an explanation: one process per step, one track
//! per GPU lane, each op a complete event, and each wait the program did not ask for a flow (an
//! arrow) from the op it waited for to it, named for its cause, with the time lost.

use crate::explain::Explanation;
use crate::trace::{Trace, TrialSpec};
use serde_json::{json, Value};

/// The steps drawn at most: a trace of thousands of steps is explained whole, drawn in part.
pub const MAX_STEPS_DRAWN: usize = 200;

pub fn chrome_trace(e: &Explanation, trace: &Trace, spec: &TrialSpec) -> Value {
    let trials = trace.trials(spec).unwrap_or_default();
    let mut events = Vec::new();
    let mut flow = 0u64;
    for (n, (trial, step)) in trials
        .iter()
        .zip(&e.steps)
        .enumerate()
        .take(MAX_STEPS_DRAWN)
    {
        let pid = n + 1;
        let unasked = (step.waits.iter())
            .filter(|w| !w.held.kind.asked() && !w.held.kind.room())
            .count();
        events.push(json!({"ph": "M", "pid": pid, "name": "process_name",
            "args": {"name": format!("{} · {unasked} waits not asked for", step.name)}}));
        let mut tracks = trial.places.clone();
        tracks.sort_unstable();
        tracks.dedup();
        for (i, &place) in tracks.iter().enumerate() {
            events.push(
                json!({"ph": "M", "pid": pid, "tid": i + 1, "name": "thread_name",
                "args": {"name": trial.lane_name(trace, place)}}),
            );
        }
        let tid = |o: crate::program::OpId| {
            let place = trial.place(o)?;
            Some(tracks.iter().position(|&t| t == place)? + 1)
        };
        let drawn = trial.drawn();
        for &(op, start, end) in &drawn {
            events.push(json!({"ph": "X", "pid": pid, "tid": tid(op).unwrap_or(0),
                "name": crate::trace::short_name(&trace.op(trial.ops[op.0]).name),
                "ts": start as f64 / 1e3, "dur": end.saturating_sub(start) as f64 / 1e3,
                "args": {"label": trial.label(op)}}));
        }
        let start_of = |o: crate::program::OpId| drawn.iter().find(|d| d.0 == o).map(|d| d.1);
        for w in (step.waits.iter()).filter(|w| !w.held.kind.asked() && !w.held.kind.room()) {
            let (Some(a), Some(b), Some(ta), Some(tb)) = (
                start_of(w.held.by),
                start_of(w.held.op),
                tid(w.held.by),
                tid(w.held.op),
            ) else {
                continue;
            };
            flow += 1;
            let name = format!("not asked for: {}", w.held.kind.word());
            let args =
                json!({"lost_us": w.lost_ns as f64 / 1e3, "cause": w.held.words(&w.by_label)});
            events.push(
                json!({"ph": "s", "id": flow, "pid": pid, "tid": ta, "ts": a as f64 / 1e3,
                "cat": "wait", "name": name, "args": args}),
            );
            events.push(
                json!({"ph": "f", "bp": "e", "id": flow, "pid": pid, "tid": tb,
                "ts": b as f64 / 1e3, "cat": "wait", "name": name, "args": args}),
            );
        }
    }
    json!({"traceEvents": events, "displayTimeUnit": "ns"})
}
