//! Claims judged on traces as data (`check --json FILE`): for a CI job or a notebook, each
//! claim with its verdict, counts, evidence, tolerances and trials, the traces it was judged on
//! with their SHA-256, and the claims that could not be judged with why. The schema is
//! docs/schemas/check.schema.json; its `version` changes whenever a field does.

use crate::judge::verdict::Verdict;
use crate::trace_claims::{TraceClaim, TraceJudgement, Unjudged};
use serde_json::{json, Value};

/// The version of the schema written.
pub const CHECK_JSON_VERSION: u32 = 1;

/// A trace file a claim was judged on: its path as given, its size and SHA-256.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceDigest {
    pub path: String,
    pub bytes: u64,
    /// Lowercase hex; empty where the file could not be read again.
    pub sha256: String,
}

/// One claim of the run: judged, or the reason it was not.
pub struct Row<'a> {
    /// The claim file, as given.
    pub file: String,
    pub claim: &'a TraceClaim,
    pub traces: &'a [TraceDigest],
    pub outcome: Result<&'a TraceJudgement, &'a Unjudged>,
}

fn claim_json(r: &Row) -> Value {
    let c = r.claim;
    let traces: Vec<Value> = (r.traces.iter())
        .map(|t| json!({"path": t.path, "bytes": t.bytes, "sha256": t.sha256}))
        .collect();
    let mut v = json!({
        "id": c.id,
        "statement": c.statement,
        "source": c.source.document,
        "section": c.source.section,
        "file": r.file,
        "expect": c.expect,
        "traces": traces,
    });
    let fields = match &r.outcome {
        Ok(j) => {
            let trials: Vec<Value> = (j.trials.iter())
                .map(|t| {
                    let checks: Vec<Value> = (t.checks.iter())
                        .map(|o| {
                            json!({"check": c.describe(&o.check), "truth": o.truth,
                                "value_ns": o.value_ns, "reason": o.reason})
                        })
                        .collect();
                    json!({"name": t.name, "truth": t.truth, "checks": checks})
                })
                .collect();
            json!({
                "judged": true,
                "verdict": j.verdict,
                "as_expected": j.verdict.matches(c.expect),
                "counts": counts(j),
                "line": j.counts.to_string(),
                "evidence": j.evidence(c),
                "tolerances": j.tolerances,
                "trials": trials,
            })
        }
        Err(why) => json!({
            "judged": false,
            "verdict": Verdict::Inconclusive,
            "as_expected": false,
            "counts": {"positive": 0, "negative": 0, "undecided": 0, "trials": 0},
            "line": "not judged",
            "evidence": "",
            "tolerances": "",
            "error": why.to_string(),
            "trials": [],
        }),
    };
    if let (Some(v), Value::Object(f)) = (v.as_object_mut(), fields) {
        v.extend(f);
    }
    v
}

fn counts(j: &TraceJudgement) -> Value {
    json!({
        "positive": j.counts.positive,
        "negative": j.counts.negative,
        "undecided": j.counts.undecided,
        "trials": j.trials.len(),
    })
}

/// The run's claims as one JSON document.
pub fn traced_json(rows: &[Row]) -> Value {
    let judged = rows.iter().filter(|r| r.outcome.is_ok()).count();
    let expected = (rows.iter())
        .filter(|r| matches!(&r.outcome, Ok(j) if j.verdict.matches(r.claim.expect)))
        .count();
    json!({
        "schema": "stream-litmus check",
        "version": CHECK_JSON_VERSION,
        "tool": concat!("stream-litmus ", env!("CARGO_PKG_VERSION")),
        "summary": {
            "claims": rows.len(),
            "as_expected": expected,
            "not_as_expected": judged - expected,
            "not_judged": rows.len() - judged,
        },
        "claims": rows.iter().map(claim_json).collect::<Vec<_>>(),
    })
}
