//! A claim about a recorded program: which traces, what a trial is, which ops it speaks of, and
//! the relations that must hold between them, as data (printed, serialized, judged anywhere).

use super::select::Selection;
use crate::judge::claim::ClaimHeader;
use crate::trace::TrialSpec;
use serde::{Deserialize, Serialize};
use std::ops::{Deref, DerefMut};

/// How a check ranges over the ops of its selections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Quantifier {
    /// Each selection holds one op in every trial.
    One,
    /// Some pair of ops shows the relation.
    Exists,
    /// Every pair that could show it does.
    Forall,
    /// No pair shows it (`~exists`).
    NotExists,
}

impl Quantifier {
    pub fn word(self) -> &'static str {
        match self {
            Quantifier::One => "",
            Quantifier::Exists => "exists ",
            Quantifier::Forall => "forall ",
            Quantifier::NotExists => "~exists ",
        }
    }
}

/// The relations a trace can decide: those between spans and the calls that issued them. Block
/// dispatch order, preemption, readings and contents need the lab's own stamps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TraceRelation {
    Precedes,
    Overlaps,
    Serializes,
    ReturnsBefore,
    ReturnsAfter,
    Blocks,
    Faster,
}

impl TraceRelation {
    pub const ALL: [(&'static str, TraceRelation); 7] = [
        ("precedes", TraceRelation::Precedes),
        ("overlaps", TraceRelation::Overlaps),
        ("serializes", TraceRelation::Serializes),
        ("returns_before", TraceRelation::ReturnsBefore),
        ("returns_after", TraceRelation::ReturnsAfter),
        ("blocks", TraceRelation::Blocks),
        ("faster", TraceRelation::Faster),
    ];

    /// Whether the relation speaks of when ops ran, so that a pair that could not have met says
    /// nothing of it (`pairs.rs`).
    pub fn is_timed(self) -> bool {
        matches!(
            self,
            TraceRelation::Precedes | TraceRelation::Overlaps | TraceRelation::Serializes
        )
    }

    pub fn name(self) -> &'static str {
        TraceRelation::ALL
            .iter()
            .find(|(_, r)| *r == self)
            .map_or("?", |(n, _)| n)
    }

    pub fn by_name(name: &str) -> Option<TraceRelation> {
        TraceRelation::ALL
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, r)| *r)
    }
}

/// `check [QUANTIFIER] RELATION(A, B)` over selections `a` and `b` (indices into the claim's
/// selections). For `faster`, each selection is a phase: its first start to its last end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceCheck {
    pub quantifier: Quantifier,
    pub relation: TraceRelation,
    pub a: usize,
    pub b: usize,
    /// Measured and reported, not part of the verdict.
    #[serde(default)]
    pub observe: bool,
    /// `RELATION(A, next B)`: each op of A is paired only with the op of B its process issued
    /// next after it (by call begin), not with every op of B.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub next: bool,
}

/// A claim judged on traces of the user's own program. It reads as its header (`claim.id`,
/// `claim.expect`), the same as a claim on a program.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceClaim {
    #[serde(flatten)]
    pub header: ClaimHeader,
    /// Trace files named in the claim file (relative to it); `check --trace` may give others.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub traces: Vec<String>,
    /// The recording of each trace (`trace "FILE" as NAME`), by trace; empty where none is
    /// named, and then the traces are the ranks of one run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<String>,
    pub trial: TrialSpec,
    pub selections: Vec<Selection>,
    pub checks: Vec<TraceCheck>,
}

impl Deref for TraceClaim {
    type Target = ClaimHeader;
    fn deref(&self) -> &ClaimHeader {
        &self.header
    }
}

impl DerefMut for TraceClaim {
    fn deref_mut(&mut self) -> &mut ClaimHeader {
        &mut self.header
    }
}

impl TraceClaim {
    /// The traces its file names (`trace "…"`), as paths: relative to the claim file `file`, the
    /// one rule for every reader of claim files.
    pub fn trace_paths(&self, file: &std::path::Path) -> Vec<std::path::PathBuf> {
        let dir = file.parent().unwrap_or(std::path::Path::new("."));
        self.traces.iter().map(|t| dir.join(t)).collect()
    }

    /// "exists overlaps(AR, GEMM)".
    pub fn describe(&self, c: &TraceCheck) -> String {
        let name = |i: usize| self.selections.get(i).map_or("?", |s| s.name.as_str());
        format!(
            "{}{}({}, {}{})",
            c.quantifier.word(),
            c.relation.name(),
            name(c.a),
            if c.next { "next " } else { "" },
            name(c.b)
        )
    }
}
