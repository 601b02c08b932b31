//! An explanation for the eye: the Perfetto trace (Chrome trace format), one process per step,
//! one track per GPU lane, each op a complete event, and each wait the program did not ask for
//! a flow (an arrow) from the op it waited for to it, named for its cause, with the time lost;
//! and an HTML page with the text and those waits as a table per step.

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
        let pid = n as u64 + 1;
        let unasked = (step.waits.iter())
            .filter(|w| !w.held.kind.asked() && !w.held.kind.room())
            .count();
        let name = format!("{} · {unasked} waits not asked for", step.name);
        let mut push = |v| {
            events.push(v);
            Ok(())
        };
        let Ok(tracks) = super::traced_chrome::trial_tracks(&mut push, pid, &name, trial, trace)
        else {
            continue;
        };
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

/// The explanation as an HTML page: the text, then per step a table of the waits the program
/// did not ask for (op, the op it waited for, cause, time lost), and the surprises.
pub fn html_report(e: &Explanation, text: &str) -> String {
    use super::canvas::esc;
    use std::fmt::Write;
    let mut s = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/><title>stream-litmus: \
         what held the program back</title><style>body{font-family:sans-serif;margin:1.5em;\
         max-width:1200px}td,th{padding:2px 8px;text-align:left;vertical-align:top}\
         pre{white-space:pre-wrap;font-size:90%}</style></head><body><h1>What held the program \
         back</h1>",
    );
    let _ = write!(s, "<pre>{}</pre>", esc(text));
    for st in e.steps.iter().take(MAX_STEPS_DRAWN) {
        let unasked: Vec<_> = (st.waits.iter())
            .filter(|w| !w.held.kind.asked() && !w.held.kind.room())
            .collect();
        if unasked.is_empty() && st.surprises.is_empty() && st.violations.is_empty() {
            continue;
        }
        let _ = write!(s, "<h2>{}</h2>", esc(&st.name));
        for v in &st.violations {
            let _ = write!(s, "<p><b>{}</b>: {}</p>", esc(v.rule.word()), esc(&v.text));
        }
        if !unasked.is_empty() {
            s.push_str("<table><tr><th>op</th><th>waited for</th><th>cause</th><th>lost</th></tr>");
            for w in unasked {
                let _ = write!(
                    s,
                    "<tr><td>{}</td><td>{}</td><td title=\"{}\">{}</td><td>{:.2} µs</td></tr>",
                    esc(&w.label),
                    esc(&w.by_label),
                    esc(&w.held.cause),
                    esc(w.held.kind.word()),
                    w.lost_ns as f64 / 1e3
                );
            }
            s.push_str("</table>");
        }
        for p in &st.surprises {
            let _ = write!(
                s,
                "<p>the pageable copy {} ran beside {} for {:.2} µs</p>",
                esc(&p.copy_label),
                esc(&p.kernel_label),
                p.overlap_ns as f64 / 1e3
            );
        }
    }
    s.push_str("</body></html>\n");
    s
}
