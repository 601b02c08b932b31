//! An explanation as data (`explain --json FILE`): what the text says, every wait of every step
//! included, for a CI job or a notebook to read. The schema is docs/checking-your-program.md's
//! "explain --json"; its `version` changes whenever a field does.

use crate::explain::{lane_name, Class, Explanation, Step};
use crate::trace::Trace;
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::{json, Value};

/// The version of the schema written.
pub const EXPLAIN_JSON_VERSION: u32 = 1;

/// The explanation of `trace` as one JSON document (pretty-printed), written as it is made: one
/// step's value at a time. Built whole, the document of the docs' 200 MB benchmark trace took
/// 496 MB (issue 51).
pub fn write_json(
    e: &Explanation,
    trace: &Trace,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    let doc = Document { e, trace };
    serde_json::to_writer_pretty(out, &doc).map_err(std::io::Error::other)
}

/// The document, its fields in the order `serde_json`'s maps keep (by name), as
/// [`explained_json`] makes them.
struct Document<'a> {
    e: &'a Explanation,
    trace: &'a Trace,
}

impl Serialize for Document<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let Value::Object(head) = head(self.e, self.trace) else {
            unreachable!("the head is an object");
        };
        let mut map = s.serialize_map(None)?;
        let mut steps_written = false;
        for (k, v) in &head {
            if !steps_written && k.as_str() > "steps" {
                map.serialize_entry("steps", &Steps(self.e, self.trace))?;
                steps_written = true;
            }
            map.serialize_entry(k, v)?;
        }
        if !steps_written {
            map.serialize_entry("steps", &Steps(self.e, self.trace))?;
        }
        map.end()
    }
}

struct Steps<'a>(&'a Explanation, &'a Trace);

impl Serialize for Steps<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.steps.len()))?;
        for st in &self.0.steps {
            seq.serialize_element(&step(st, self.1))?;
        }
        seq.end()
    }
}

/// The explanation of `trace` as one JSON value, built whole ([`write_json`] writes the same
/// text as it goes).
pub fn explained_json(e: &Explanation, trace: &Trace) -> Value {
    let mut doc = head(e, trace);
    let steps: Vec<Value> = e.steps.iter().map(|st| step(st, trace)).collect();
    doc["steps"] = Value::Array(steps);
    doc
}

/// One step as JSON: its pairs, violations, every wait and the surprises.
fn step(st: &Step, trace: &Trace) -> Value {
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
        .map(
            |p| json!({"copy": p.copy_label, "kernel": p.kernel_label, "overlap_ns": p.overlap_ns}),
        )
        .collect();
    json!({"name": st.name, "pairs": st.pairs, "by_rule": by_rule,
        "violations": violations, "waits": waits, "surprises": surprises})
}

/// Every field of the document but its steps.
fn head(e: &Explanation, trace: &Trace) -> Value {
    let tol = &trace.tolerances;
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
    })
}
