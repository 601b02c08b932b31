//! What `explain` found, written as claims on traces (`explain --claims FILE`), so that what the
//! user learned about their step becomes a regression test, judged by `check` on the next trace.
//!
//! For each pair of GPU lanes (a stream of a device of a rank) present in every step: lanes
//! that ran together in every step give `check exists overlaps(A, B)`; lanes that never did, and
//! in every step one waited for the other though ready, give `check ~exists overlaps(A, B)`.
//! Pairs that met in some steps only say nothing for sure and are left out. Each claim names
//! its selections by stream and device (and rank, where the trace has one), its trials as
//! `explain` cut them, and the trace it was found in.

use crate::explain::{lane_name, Explanation, Lane};
use crate::program::text::quote;
use crate::trace::{Trace, TrialSpec};
use std::fmt::Write;

/// The most claims one file gets: the pairs of lanes of the busiest GPUs first.
const MAX_CLAIMS: usize = 32;

/// No pair of lanes was decided in every one of the trace's `steps` steps.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "no pair of streams ran together in every one of the {steps} steps, or waited for each other \
     in every one: nothing to write as a claim"
)]
pub struct NothingToClaim {
    pub steps: usize,
}

/// The claim file, or why none can be written (no pair of lanes decided in every step).
pub fn claims_from(
    e: &Explanation,
    trace: &Trace,
    spec: &TrialSpec,
    traces: &[String],
) -> Result<String, NothingToClaim> {
    let steps = e.steps.len();
    // For each pair of lanes: the steps it met in, and those with a wait between them.
    let facts: Vec<((Lane, Lane), bool)> = (e.lanes.iter())
        .filter(|(_, p)| p.present == steps)
        .filter_map(|(&pair, p)| match (p.met == steps, p.waited == steps) {
            (true, _) => Some((pair, true)),
            (false, true) if p.met == 0 => Some((pair, false)),
            _ => None,
        })
        .take(MAX_CLAIMS)
        .collect();
    if facts.is_empty() {
        return Err(NothingToClaim { steps });
    }
    let mut s = format!(
        "# Written by `stream-litmus explain --claims` from {}: what the trace showed in each of\n\
         # its {steps} steps, to judge again on the next trace (`stream-litmus check FILE --trace NEW`).\n",
        // A path is input: kept to the comment's line, its control characters shown.
        crate::border::shown::one_line(&traces.join(", "))
    );
    for (n, ((a, b), met)) in facts.into_iter().enumerate() {
        claim(&mut s, n + 1, trace, spec, traces, (a, b), met);
    }
    Ok(s)
}

fn claim(
    s: &mut String,
    n: usize,
    trace: &Trace,
    spec: &TrialSpec,
    traces: &[String],
    (a, b): (Lane, Lane),
    met: bool,
) {
    let (na, nb) = (lane_name(trace, a), lane_name(trace, b));
    let statement = match met {
        true => format!("{na} and {nb} run together in every step"),
        false => format!("{na} and {nb} never run together: one waits for the other in every step"),
    };
    let _ = writeln!(s, "\nclaim explained.lanes_{n}");
    let _ = writeln!(s, "statement {}", quote(&statement));
    let _ = writeln!(
        s,
        "source {} section \"explain\"",
        quote(&traces.join(", "))
    );
    let _ = writeln!(s, "expect holds");
    for t in traces {
        let _ = writeln!(s, "trace {}", quote(t));
    }
    match spec {
        TrialSpec::Each(p) => {
            let _ = writeln!(s, "trial each {}", quote(p.text()));
        }
        TrialSpec::EachKernel(p) => {
            let _ = writeln!(s, "trial each kernel {}", quote(p.text()));
        }
        TrialSpec::Whole => {}
    }
    let select = |name: &str, l: Lane| {
        let rank = (trace.files.get(l.0).and_then(|f| f.rank))
            .map_or(String::new(), |r| format!(" rank {r}"));
        format!("select {name} = any stream {} device {}{rank}\n", l.3, l.2)
    };
    s.push_str(&select("A", a));
    s.push_str(&select("B", b));
    let _ = writeln!(
        s,
        "check {}overlaps(A, B)",
        if met { "exists " } else { "~exists " }
    );
}
