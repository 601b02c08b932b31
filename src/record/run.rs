//! The results file's shape: a run, its claims, their trials and outcomes. Judgements are
//! derived data, recomputed from the stamps by [`ClaimRecord::rejudge`].

use crate::border::error::Error;
use crate::border::limits::MAX_TIMELINES;
use crate::judge::claim::Claim;
use crate::judge::verdict::{judge_claim_in_run, observe, Judgement, Verdict};
use crate::measured::calibration::Calibration;
use crate::measured::sharing::Sharing;
use crate::measured::timeline::Timeline;
use crate::measured::timing::{ClaimTiming, SetupTiming};
use crate::program::Warning;
use serde::{Deserialize, Serialize};

/// Version of the results format; bumped on any incompatible change (see docs/results.md).
pub const SCHEMA_VERSION: u32 = 1;

/// The trials of one program, with the calibration of the process that ran them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trials {
    pub calibration: Calibration,
    /// The decided trials asked for: a Holds needs this many positive trials.
    pub wanted: usize,
    /// At most [`crate::border::limits::MAX_TIMELINES`], counted while a file is read.
    #[serde(deserialize_with = "crate::border::bounded_json::bounded_vec::<_, _, MAX_TIMELINES>")]
    pub timelines: Vec<Timeline>,
    /// Host wall time of the timed regions (first issue to final synchronize), summed.
    pub gpu_time_ns: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<Warning>,
    /// Who else used the GPU around these trials, where NVML could tell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sharing: Option<Sharing>,
    /// Where the claim's time went (`crate::measured::timing`); absent in files written before issue 16.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timing: Option<ClaimTiming>,
}

/// How one claim's run ended.
// A catalogue holds tens of records, so boxing the large variant would buy nothing but noise in
// every match and in the serde representation.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Outcome {
    Ran {
        trials: Trials,
        judgement: Judgement,
    },
    Failed {
        error: Error,
    },
}

/// One claim and what happened to it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClaimRecord {
    pub claim: Claim,
    #[serde(flatten)]
    pub outcome: Outcome,
}

impl ClaimRecord {
    /// Judges `trials` against the claim's checks with the trials' own tolerances.
    pub fn judged(claim: Claim, trials: Trials) -> ClaimRecord {
        let (judgement, _) = judge_trials(&claim, &trials, None);
        ClaimRecord {
            claim,
            outcome: Outcome::Ran { trials, judgement },
        }
    }

    pub fn failed(claim: Claim, error: Error) -> ClaimRecord {
        ClaimRecord {
            claim,
            outcome: Outcome::Failed { error },
        }
    }

    pub fn judgement(&self) -> Option<&Judgement> {
        match &self.outcome {
            Outcome::Ran { judgement, .. } => Some(judgement),
            Outcome::Failed { .. } => None,
        }
    }

    pub fn trials(&self) -> Option<&Trials> {
        match &self.outcome {
            Outcome::Ran { trials, .. } => Some(trials),
            Outcome::Failed { .. } => None,
        }
    }

    pub fn verdict(&self) -> Option<Verdict> {
        self.judgement().map(|j| j.verdict)
    }

    /// Whether the observed verdict is the expected one.
    pub fn as_expected(&self) -> bool {
        self.verdict().is_some_and(|v| v.matches(self.claim.expect))
    }

    /// The same record with its judgement recomputed from the stamps.
    pub fn rejudge(&self) -> ClaimRecord {
        match &self.outcome {
            Outcome::Ran { trials, .. } => ClaimRecord::judged(self.claim.clone(), trials.clone()),
            Outcome::Failed { .. } => self.clone(),
        }
    }
}

/// Where the run's time went.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunTiming {
    /// The whole run, as the user waited for it.
    pub wall_ns: u64,
    /// Context creation, NVRTC and calibration in this process.
    pub setup_ns: u64,
    /// Timed regions of every claim (in this process and in children), summed.
    pub gpu_ns: u64,
    /// Wall time spent waiting for child processes (their setup included).
    pub child_ns: u64,
    /// NVML looks around the claims (who else was on the GPU), summed. (This and the fields
    /// below are left out of the file where zero, as in files written before them.)
    #[serde(default, skip_serializing_if = "is_zero")]
    pub looks_ns: u64,
    /// Judging each claim once its trials are in, with what NVML saw around it, summed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub judging_ns: u64,
    /// Where this process's setup went.
    #[serde(default, skip_serializing_if = "SetupTiming::is_empty")]
    pub setup_split: SetupTiming,
    /// Where the child processes' setups went, summed over the children.
    #[serde(default, skip_serializing_if = "SetupTiming::is_empty")]
    pub child_setup: SetupTiming,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A whole run: the results file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub schema: u32,
    /// `stream-litmus <version>`.
    pub tool: String,
    /// The calibration of the main process; `None` when no GPU could be opened.
    pub calibration: Option<Calibration>,
    pub trials_per_claim: usize,
    pub claims: Vec<ClaimRecord>,
    pub timing: RunTiming,
    /// Who else held a context on the GPU when the run began, where NVML could tell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sharing: Option<Sharing>,
}

impl RunRecord {
    pub fn new(calibration: Option<Calibration>, trials_per_claim: usize) -> RunRecord {
        RunRecord {
            schema: SCHEMA_VERSION,
            tool: format!("stream-litmus {}", env!("CARGO_PKG_VERSION")),
            calibration,
            trials_per_claim,
            claims: Vec::new(),
            timing: RunTiming::default(),
            sharing: None,
        }
    }

    /// The run with every judgement recomputed from the stamps, the neighbours' utilisation carried
    /// forward through the claims first ([`crate::measured::sharing::Carry`]).
    pub fn rejudged(&self) -> RunRecord {
        let mut run = self.clone();
        let mut carry = crate::measured::sharing::Carry::default();
        let mut showing = Vec::new();
        for c in &mut run.claims {
            if let Outcome::Ran { trials, judgement } = &mut c.outcome {
                if let Some(s) = &mut trials.sharing {
                    carry.apply(s);
                }
                let (again, shows) = judge_trials(&c.claim, trials, None);
                *judgement = again;
                if shows {
                    showing.push(c.claim.id.clone());
                }
            }
        }
        // Files from before every trial was clock-synced (see `Marks::mark_unsynced`).
        if let Some(first) = showing.first() {
            let elsewhere = format!(
                "{} claim{} of this run show{} a neighbour ({first}{})",
                showing.len(),
                if showing.len() == 1 { "" } else { "s" },
                if showing.len() == 1 { "s" } else { "" },
                if showing.len() > 1 { ", …" } else { "" }
            );
            for c in &mut run.claims {
                if let Outcome::Ran { trials, judgement } = &mut c.outcome {
                    if trials.timelines.iter().any(|t| t.clock.is_none()) {
                        *judgement = judge_trials(&c.claim, trials, Some(&elsewhere)).0;
                    }
                }
            }
        }
        run
    }

    /// Whether every claim ran and met its expectation.
    pub fn all_as_expected(&self) -> bool {
        !self.claims.is_empty() && self.claims.iter().all(ClaimRecord::as_expected)
    }
}

/// The claim's judgement of `trials` with their own tolerances, its observations included, and
/// whether the trials show a neighbour; `elsewhere`: the run shows one (see
/// [`crate::judge::verdict::judge_claim_in_run`]).
fn judge_trials(claim: &Claim, trials: &Trials, elsewhere: Option<&str>) -> (Judgement, bool) {
    let tol = trials.calibration.tolerances();
    let (mut judgement, showing) = judge_claim_in_run(
        &claim.program,
        &claim.checks,
        &trials.timelines,
        trials.sharing.as_ref(),
        &tol,
        trials.wanted,
        elsewhere,
    );
    judgement.observed = observe(&claim.program, &claim.observations, &trials.timelines, &tol);
    (judgement, showing)
}
