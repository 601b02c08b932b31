//! What differs between two runs: two GPUs, two drivers, two days.
//!
//! Claims are matched by id. A claim differs when its verdict differs, or when one of its key
//! figures differs. The key figures are the measured range (min..max over trials) of each check's
//! gap or overlap. Two ranges differ when they lie apart by more than the larger launch jitter of
//! the two runs. Inside one run the range already holds the trial-to-trial spread, and the jitter
//! bounds how much launch timing alone can move a start. So what remains is a real difference in
//! behaviour, not noise. Figures that are not times (bytes of an address offset, elements
//! differing, a memory kind) are printed in their own units and differ whenever their ranges do.
//! The caller re-judges both runs under the current rules first (`stream-litmus compare`).

use crate::judge::relation::{micros, Value};
use crate::record::{ClaimRecord, RunRecord};
use std::fmt::Write;

fn device(run: &RunRecord) -> String {
    match &run.calibration {
        Some(c) => format!(
            "{}, driver {}, timer step {} ns, launch jitter {:.2} µs, {} trials",
            c.device.name,
            c.device.driver(),
            c.timer_step_ns,
            c.launch_jitter_ns as f64 / 1e3,
            run.trials_per_claim
        ),
        None => "no GPU".into(),
    }
}

fn jitter(run: &RunRecord) -> i64 {
    run.calibration
        .as_ref()
        .map(|c| c.launch_jitter_ns.max(c.timer_step_ns) as i64)
        .unwrap_or(0)
}

/// The differences of one claim, as lines.
fn claim_differences(a: &ClaimRecord, b: &ClaimRecord, tol: i64) -> Vec<String> {
    let mut out = Vec::new();
    if a.verdict() != b.verdict() {
        let v = |r: &ClaimRecord| {
            r.verdict()
                .map(|v| v.to_string())
                .unwrap_or_else(|| "failed".into())
        };
        out.push(format!("verdict {} → {}", v(a), v(b)));
    }
    if a.claim.checks != b.claim.checks || a.claim.program != b.claim.program {
        out.push("the claim's program or checks differ; figures not compared".into());
        return out;
    }
    let (Some(ja), Some(jb)) = (a.judgement(), b.judgement()) else {
        return out;
    };
    for (ra, rb) in ja.ranges.iter().zip(&jb.ranges) {
        // Times move with launch jitter; bytes, element counts and memory kinds do not, so they
        // differ when they differ at all.
        let ((a_min, a_max), (b_min, b_max)) = (ra.values(), rb.values());
        let differs = match (a_min, a_max, b_min, b_max) {
            (Value::Time(a_min), Value::Time(a_max), Value::Time(b_min), Value::Time(b_max)) => {
                a_min.saturating_sub(b_max).max(b_min.saturating_sub(a_max)) > tol
            }
            _ => (ra.min_ns, ra.max_ns) != (rb.min_ns, rb.max_ns),
        };
        if differs {
            out.push(format!(
                "{} {a_min}..{a_max} → {b_min}..{b_max}",
                ra.check.describe(&a.claim.program),
            ));
        }
    }
    out
}

/// The comparison as text, and how many claims differ (present in only one run counts too).
pub fn compare(a: &RunRecord, b: &RunRecord) -> (String, usize) {
    let mut s = String::new();
    let _ = writeln!(s, "a      {}", device(a));
    let _ = writeln!(s, "b      {}", device(b));
    let tol = jitter(a).max(jitter(b));
    let mut differ = 0;
    let mut common = 0;
    for ra in &a.claims {
        let Some(rb) = b.claims.iter().find(|c| c.claim.id == ra.claim.id) else {
            let _ = writeln!(s, "only a {}", ra.claim.id);
            differ += 1;
            continue;
        };
        common += 1;
        let lines = claim_differences(ra, rb, tol);
        if !lines.is_empty() {
            differ += 1;
            let _ = writeln!(s, "differ {:<36} {}", ra.claim.id, lines.join("; "));
        }
    }
    for rb in &b.claims {
        if !a.claims.iter().any(|c| c.claim.id == rb.claim.id) {
            let _ = writeln!(s, "only b {}", rb.claim.id);
            differ += 1;
        }
    }
    let _ = writeln!(
        s,
        "{differ} claim(s) differ; {common} compared (times differ when their ranges lie more \
         than {} apart, the larger launch jitter; bytes, counts and memory kinds when their \
         ranges differ)",
        micros(tol)
    );
    (s, differ)
}
