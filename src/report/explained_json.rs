//! An explanation as data (`explain --json FILE`): what the text says, every wait of every step
//! included, for a CI job or a notebook to read. The schema is docs/checking-your-program.md's
//! "explain --json"; its `version` changes whenever a field does.

use crate::explain::{lane_name, Class, Explanation};
use crate::trace::Trace;
use serde_json::{json, Value};

/// The version of the schema written.
pub const EXPLAIN_JSON_VERSION: u32 = 1;

/// The explanation of `trace` as one JSON document.
pub fn explained_json(e: &Explanation, trace: &Trace) -> Value {
    let tol = &trace.tolerances;
    let steps: Vec<Value> = (e.steps.iter())
        .map(|st| {
            let by_rule: serde_json::Map<String, Value> = (st.by_rule.iter())
                .map(|(r, n)| (r.word().to_string(), json!(n)))
                .collect();
            let violations: Vec<Value> = (st.violations.iter())
                .map(|v| {
                    json!({"rule": v.rule.word(), "first": v.first.0, "then": v.then.map(|t| t.0),
                        "by_ns": v.by_ns, "text": v.text})
                })
                .collect();
            let waits: Vec<Value> = (st.waits.iter())
                .map(|w| {
                    json!({"op": w.label, "by": w.by_label, "lane": lane_name(trace, w.lane),
                        "by_lane": lane_name(trace, w.by_lane), "lost_ns": w.lost_ns,
                        "gap_ns": w.held.gap_ns, "class": Class::of(w.held.kind).key(),
                        "cause": w.held.kind.key(), "why": w.held.cause})
                })
                .collect();
            let surprises: Vec<Value> = (st.surprises.iter())
                .map(|p| {
                    json!({"copy": p.copy_label, "kernel": p.kernel_label,
                        "overlap_ns": p.overlap_ns})
                })
                .collect();
            json!({"name": st.name, "pairs": st.pairs, "by_rule": by_rule,
                "violations": violations, "waits": waits, "surprises": surprises})
        })
        .collect();
    json!({
        "schema": "stream-litmus explain",
        "version": EXPLAIN_JSON_VERSION,
        "traces": trace.files.iter().map(|f| f.path.clone()).collect::<Vec<_>>(),
        "cut": e.cut,
        "tolerances": {
            "timer_step_ns": tol.tolerances.timer_step_ns,
            "launch_latency_ns": tol.tolerances.launch_latency_ns,
            "launch_jitter_ns": tol.tolerances.launch_jitter_ns,
            "clock_error_ns": tol.clock_error_ns,
            "idle_issued": tol.idle_issued,
            "described": tol.describe(),
        },
        "notes": e.notes,
        "steps": steps,
    })
}
