//! An explanation for the eye: the Perfetto trace (Chrome trace format), one process per step,
//! one track per GPU lane, each op a complete event, and each wait the program did not ask for
//! (or that the streams' kinds imply) a flow (an arrow) from the op it waited for to it, named
//! for its cause, with the time lost. The HTML page is `explained_html.rs`.

use crate::explain::{Class, Explanation};
use crate::trace::{Trace, TrialSpec};
use serde_json::json;

/// The steps drawn at most: a trace of thousands of steps is explained whole, drawn in part.
pub const MAX_STEPS_DRAWN: usize = 200;

/// Writes the explanation's Perfetto trace to `out`, event by event.
pub fn write_chrome_trace(
    e: &Explanation,
    trace: &Trace,
    spec: &TrialSpec,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    out.write_all(br#"{"displayTimeUnit":"ns","traceEvents":["#)?;
    let mut events = super::traced_chrome::Events { out, first: true };
    let drawn_steps = |i: usize| i < MAX_STEPS_DRAWN;
    let trials = trace.some_trials(spec, &drawn_steps).unwrap_or_default();
    let mut flow = 0u64;
    for (n, trial) in trials {
        let Some(step) = e.steps.get(n) else {
            continue;
        };
        let pid = n as u64 + 1;
        let unasked = (step.waits.iter())
            .filter(|w| Class::of(w.held.kind) == Class::NotAsked)
            .count();
        let name = format!("{} · {unasked} waits not asked for", step.name);
        let mut push = |v: serde_json::Value| events.push(&v);
        let Ok(tracks) = super::traced_chrome::trial_tracks(&mut push, pid, &name, &trial, trace)
        else {
            continue;
        };
        let tid = |o: crate::program::OpId| {
            let place = trial.place(o)?;
            Some(tracks.iter().position(|&t| t == place)? + 1)
        };
        let drawn = trial.drawn();
        for &(op, start, end) in &drawn {
            events.push(&json!({"ph": "X", "pid": pid, "tid": tid(op).unwrap_or(0),
                "name": crate::trace::short_name(&trace.op(trial.ops[op.0]).name),
                "ts": start as f64 / 1e3, "dur": end.saturating_sub(start) as f64 / 1e3,
                "args": {"label": trial.label(op)}}))?;
        }
        let starts: std::collections::HashMap<crate::program::OpId, u64> =
            drawn.iter().map(|d| (d.0, d.1)).collect();
        let start_of = |o: crate::program::OpId| starts.get(&o).copied();
        let drawn_waits = (step.waits.iter())
            .filter(|w| matches!(Class::of(w.held.kind), Class::NotAsked | Class::Implied));
        for w in drawn_waits {
            let (Some(a), Some(b), Some(ta), Some(tb)) = (
                start_of(w.held.by),
                start_of(w.held.op),
                tid(w.held.by),
                tid(w.held.op),
            ) else {
                continue;
            };
            flow += 1;
            let name = format!("{}: {}", Class::of(w.held.kind).word(), w.held.kind.word());
            let args =
                json!({"lost_us": w.lost_ns as f64 / 1e3, "cause": w.held.words(&w.by_label)});
            events.push(
                &json!({"ph": "s", "id": flow, "pid": pid, "tid": ta, "ts": a as f64 / 1e3,
                "cat": "wait", "name": name, "args": args}),
            )?;
            events.push(
                &json!({"ph": "f", "bp": "e", "id": flow, "pid": pid, "tid": tb,
                "ts": b as f64 / 1e3, "cat": "wait", "name": name, "args": args}),
            )?;
        }
    }
    events.out.write_all(b"]}")
}
