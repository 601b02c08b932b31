//! The results file's shape: a run, its claims, their trials and outcomes. Judgements are
//! derived data, recomputed from the stamps by [`ClaimRecord::rejudge`].

use crate::border::error::Error;
use crate::border::limits::MAX_TIMELINES;
use crate::judge::claim::Claim;
use crate::judge::relation::Measurement;
use crate::judge::verdict::{
    judge_claim_in_run, observe, Judgement, Observed, TrialOutcome, Verdict,
};
use crate::measured::calibration::Calibration;
use crate::measured::sharing::Sharing;
use crate::measured::timeline::Timeline;
use crate::measured::timing::{ClaimTiming, SetupTiming};
use crate::program::Warning;
use serde::{Deserialize, Serialize};

/// Version of the results format; bumped on any incompatible change (see docs/results.md). 2:
/// block stamps in columns (`measured/columns.rs`); 3: pauses counted from their block's start
/// (`paused`), which a reader of schema 2 would silently drop. Files of versions 1 and 2 read as
/// before.
pub const SCHEMA_VERSION: u32 = 3;

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
    /// How many of `timelines` are left empty in memory, their stamps written to the results file
    /// and dropped ([`ClaimRecord::kept`]); never in a file. Trials with stamps left out are not
    /// judged again.
    #[serde(skip)]
    pub left_out: usize,
}

/// The trials whose stamps a run keeps in memory for its reports, beside the witness, once a
/// claim's record is written ([`ClaimRecord::kept`]): the pictures draw the witness, the
/// scenario tables take medians, and the Perfetto trace shows these trials. Twenty covers
/// every run of the study (5 to 20 trials) whole; at 1,000 trials it keeps 2 % of the stamps
/// (10 MB for `scenario.sleep.grid`, whose 32,768 block stamps a trial make it the largest).
pub const KEPT_TRIALS: usize = 20;

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

/// One claim and what happened to it. Written with its outcome's fields beside `claim`
/// (`"status": "ran", "trials": …, "judgement": …`); read by [`ClaimRecord`]'s own
/// `Deserialize`, since serde's `flatten` would first copy every value of the record into a
/// generic tree: 10 GB for the 131 million numbers of `scenario.sleep.grid` at 1,000 trials.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClaimRecord {
    pub claim: Claim,
    #[serde(flatten)]
    pub outcome: Outcome,
}

impl<'de> Deserialize<'de> for ClaimRecord {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<ClaimRecord, D::Error> {
        use serde::de::{Error as _, IgnoredAny, MapAccess, Visitor};
        struct Fields;
        impl<'de> Visitor<'de> for Fields {
            type Value = ClaimRecord;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a claim's record: its claim, status and outcome")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ClaimRecord, A::Error> {
                let (mut claim, mut status, mut trials, mut judgement, mut error) =
                    (None, None::<String>, None, None, None);
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "claim" => claim = Some(map.next_value::<Claim>()?),
                        "status" => status = Some(map.next_value()?),
                        "trials" => trials = Some(map.next_value::<Trials>()?),
                        "judgement" => judgement = Some(map.next_value::<Judgement>()?),
                        "error" => error = Some(map.next_value::<Error>()?),
                        _ => drop(map.next_value::<IgnoredAny>()?),
                    }
                }
                let claim = claim.ok_or_else(|| A::Error::missing_field("claim"))?;
                let outcome = match status.as_deref() {
                    Some("ran") => Outcome::Ran {
                        trials: trials.ok_or_else(|| A::Error::missing_field("trials"))?,
                        judgement: judgement.ok_or_else(|| A::Error::missing_field("judgement"))?,
                    },
                    Some("failed") => Outcome::Failed {
                        error: error.ok_or_else(|| A::Error::missing_field("error"))?,
                    },
                    Some(other) => {
                        return Err(A::Error::unknown_variant(other, &["ran", "failed"]))
                    }
                    None => return Err(A::Error::missing_field("status")),
                };
                Ok(ClaimRecord { claim, outcome })
            }
        }
        d.deserialize_map(Fields)
    }
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

    /// [`ClaimRecord::judged`], taking `alone` as the judgement where it is at hand: the
    /// trials judged with no neighbour seen ([`judge_claim_in_run`] with no sharing), as the lab
    /// judged them to decide whether to run more (`lab/collect.rs`). Judging reads nothing of
    /// the sharing but whether a neighbour was busy, so where none was, that judgement is the
    /// one [`ClaimRecord::judged`] would make again; the observations are added. Otherwise (a busy
    /// neighbour, or nothing at hand) the trials are judged anew.
    pub fn judged_with(claim: Claim, trials: Trials, alone: Option<Judgement>) -> ClaimRecord {
        match alone {
            Some(mut judgement) if !trials.sharing.as_ref().is_some_and(Sharing::busy) => {
                judgement.observed = observed(&claim, &trials);
                ClaimRecord {
                    claim,
                    outcome: Outcome::Ran { trials, judgement },
                }
            }
            _ => ClaimRecord::judged(claim, trials),
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

    /// The same record with its judgement recomputed from the stamps (as it is where some were
    /// left out, [`ClaimRecord::kept`]).
    pub fn rejudge(&self) -> ClaimRecord {
        match &self.outcome {
            Outcome::Ran { trials, .. } if trials.left_out == 0 => {
                ClaimRecord::judged(self.claim.clone(), trials.clone())
            }
            _ => self.clone(),
        }
    }

    /// The record as a run keeps it once it is written out: the judgement whole (every trial's
    /// outcome and measurements), the stamps of the first [`KEPT_TRIALS`] trials and of the
    /// witness, and empty timelines in the others' places, so that every trial keeps its index.
    /// The others' measurements keep their numbers and truths, not their reasons (the reports
    /// print the witness's): three checks' reasons were most of a kilobyte a trial.
    pub fn kept(&self) -> ClaimRecord {
        let Outcome::Ran { trials, judgement } = &self.outcome else {
            return self.clone();
        };
        let keep = |i: usize| i < KEPT_TRIALS || judgement.witness == Some(i);
        let timelines: Vec<Timeline> = trials
            .timelines
            .iter()
            .enumerate()
            .map(|(i, t)| {
                if keep(i) {
                    t.clone()
                } else {
                    Timeline::default()
                }
            })
            .collect();
        let left_out = (0..timelines.len()).filter(|&i| !keep(i)).count();
        ClaimRecord {
            claim: self.claim.clone(),
            outcome: Outcome::Ran {
                trials: Trials {
                    calibration: trials.calibration.clone(),
                    wanted: trials.wanted,
                    timelines,
                    gpu_time_ns: trials.gpu_time_ns,
                    warnings: trials.warnings.clone(),
                    sharing: trials.sharing.clone(),
                    timing: trials.timing,
                    left_out: trials.left_out + left_out,
                },
                judgement: Judgement {
                    trials: (judgement.trials.iter().enumerate())
                        .map(|(i, o)| match keep(i) {
                            true => o.clone(),
                            false => o.without_reasons(),
                        })
                        .collect(),
                    verdict: judgement.verdict,
                    counts: judgement.counts,
                    tolerances: judgement.tolerances,
                    ranges: judgement.ranges.clone(),
                    observed: judgement.observed.clone(),
                    witness: judgement.witness,
                    copies_seen_by: judgement.copies_seen_by.clone(),
                    devices_aligned: judgement.devices_aligned.clone(),
                    disturbance: judgement.disturbance.clone(),
                },
            },
        }
    }

    /// About the bytes the record's trials take in memory: their block stamps and a span's
    /// own size for each span (the rest of a record is small beside them).
    pub fn held_bytes(&self) -> u64 {
        let span = std::mem::size_of::<crate::measured::timeline::Span>();
        (self.trials().iter())
            .flat_map(|t| &t.timelines)
            .flat_map(|t| &t.spans)
            .map(|s| (s.blocks.held_bytes() + span) as u64)
            .sum()
    }

    /// About the bytes the record takes in memory: its trials' stamps ([`Self::held_bytes`]), a
    /// timeline's own size for every trial, stamped or not, the judgement's outcome of every
    /// trial with its measurements and their reasons, and the claim itself (its text as JSON:
    /// 100 claims of 15 MiB statements, 1.5 GB, took 3.1 GB of `render`'s memory and made a
    /// 1.57 GB report before it was counted). A trial whose stamps [`ClaimRecord::kept`]
    /// dropped still takes about a kilobyte (three checks' reasons): 60,000 empty trials a claim,
    /// 200 claims (a gzip of 1.1 MB), took 14.7 GB of `judge`'s memory before this was counted.
    pub fn kept_bytes(&self) -> u64 {
        use std::mem::size_of;
        // An allocation's own bookkeeping, beside its bytes.
        const ALLOCATION: usize = 16;
        let timelines = self.trials().map_or(0, |t| t.timelines.len()) * size_of::<Timeline>();
        let judged: usize = match &self.outcome {
            Outcome::Ran { judgement, .. } => (judgement.trials.iter())
                .map(|o| {
                    let reasons: usize = (o.measurements.iter())
                        .map(|m| size_of::<Measurement>() + m.reason.capacity() + ALLOCATION)
                        .sum();
                    let disturbed = o.disturbed.as_ref().map_or(0, |d| d.len() + ALLOCATION);
                    size_of::<TrialOutcome>() + ALLOCATION + reasons + disturbed
                })
                .sum(),
            _ => 0,
        };
        self.held_bytes()
            + (timelines + judged) as u64
            + crate::border::counted::json_bytes(&self.claim)
    }

    /// Whether the trials' stamps are all here (none left out by [`ClaimRecord::kept`]).
    pub fn whole(&self) -> bool {
        self.trials().map_or(true, |t| t.left_out == 0)
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
    /// forward through the claims first ([`crate::measured::sharing::Carry`]). See
    /// [`Rejudging`], which does the same one claim at a time.
    pub fn rejudged(&self) -> RunRecord {
        let mut first = Rejudging::default();
        let claims: Vec<ClaimRecord> = self
            .claims
            .iter()
            .map(|c| first.next(c.clone(), None))
            .collect();
        let claims = match first.elsewhere() {
            None => claims,
            Some(elsewhere) => {
                let mut again = Rejudging::default();
                let elsewhere = Some(elsewhere.as_str());
                self.claims
                    .iter()
                    .map(|c| again.next(c.clone(), elsewhere))
                    .collect()
            }
        };
        RunRecord {
            claims,
            ..self.clone_head()
        }
    }

    /// The run without its claims.
    pub fn clone_head(&self) -> RunRecord {
        RunRecord {
            schema: self.schema,
            tool: self.tool.clone(),
            calibration: self.calibration.clone(),
            trials_per_claim: self.trials_per_claim,
            claims: Vec::new(),
            timing: self.timing,
            sharing: self.sharing.clone(),
        }
    }

    /// Whether every claim ran and met its expectation.
    pub fn all_as_expected(&self) -> bool {
        !self.claims.is_empty() && self.claims.iter().all(ClaimRecord::as_expected)
    }
}

/// Re-judging a run's claims one at a time, in the run's order: the neighbours' utilisation is
/// carried forward through them ([`crate::measured::sharing::Carry`]), as the lab carried it.
///
/// Files from before every trial was clock-synced need a second pass (see
/// `Marks::mark_unsynced`): where a claim of the run shows a neighbour, the claims with unsynced
/// trials are judged again knowing it. [`Rejudging::elsewhere`] says whether that pass is
/// needed, and with what to tell them; the pass goes through every claim again with a fresh
/// `Rejudging`.
#[derive(Debug, Default)]
pub struct Rejudging {
    carry: crate::measured::sharing::Carry,
    showing: Vec<String>,
    unsynced: bool,
}

impl Rejudging {
    /// `c` judged again (as it was, where its stamps were left out or it failed); `elsewhere`:
    /// the second pass's word for claims with unsynced trials.
    pub fn next(&mut self, c: ClaimRecord, elsewhere: Option<&str>) -> ClaimRecord {
        let judged = self.prepare(c, elsewhere).judge();
        self.judged(judged)
    }

    /// The part of [`Rejudging::next`] that follows the run's order: the neighbours' shares
    /// carried into `c`'s trials. What it returns is judged on its own ([`Rejudge::judge`], on
    /// any thread), then handed back in the run's order ([`Rejudging::judged`]).
    pub fn prepare(&mut self, mut c: ClaimRecord, elsewhere: Option<&str>) -> Rejudge {
        let mut elsewhere = elsewhere.map(str::to_owned);
        let judged = match &mut c.outcome {
            Outcome::Ran { trials, .. } if trials.left_out == 0 => {
                if let Some(s) = &mut trials.sharing {
                    self.carry.apply(s);
                }
                let unsynced = trials.timelines.iter().any(|t| t.clock.is_none());
                self.unsynced |= unsynced;
                elsewhere = elsewhere.filter(|_| unsynced);
                true
            }
            _ => false,
        };
        Rejudge {
            claim: c,
            elsewhere,
            judged,
            shows: false,
        }
    }

    /// A claim judged ([`Rejudge::judge`]), taken back in the run's order.
    pub fn judged(&mut self, r: Rejudge) -> ClaimRecord {
        if r.shows {
            self.showing.push(r.claim.claim.id.clone());
        }
        r.claim
    }

    /// After every claim passed: what to tell the claims with unsynced trials in a second pass,
    /// or `None` where none is needed.
    pub fn elsewhere(&self) -> Option<String> {
        let first = self.showing.first().filter(|_| self.unsynced)?;
        let n = self.showing.len();
        Some(format!(
            "{n} claim{} of this run show{} a neighbour ({first}{})",
            if n == 1 { "" } else { "s" },
            if n == 1 { "s" } else { "" },
            if n > 1 { ", …" } else { "" }
        ))
    }
}

/// A claim on its way through [`Rejudging`]: prepared in the run's order, judged anywhere.
#[derive(Debug)]
pub struct Rejudge {
    claim: ClaimRecord,
    elsewhere: Option<String>,
    /// Whether it is judged again (it ran, and no stamps were left out).
    judged: bool,
    /// Whether its trials show a neighbour, once judged.
    shows: bool,
}

impl Rejudge {
    /// Judges the claim again from its stamps under the current rules.
    pub fn judge(mut self) -> Rejudge {
        if let (true, Outcome::Ran { trials, judgement }) = (self.judged, &mut self.claim.outcome) {
            let (again, shows) = judge_trials(&self.claim.claim, trials, self.elsewhere.as_deref());
            *judgement = again;
            self.shows = shows;
        }
        self
    }

    /// The claim, as prepared or as judged.
    pub fn claim(&self) -> &ClaimRecord {
        &self.claim
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
    judgement.observed = observed(claim, trials);
    (judgement, showing)
}

/// The claim's observations measured on `trials` with their own tolerances.
fn observed(claim: &Claim, trials: &Trials) -> Vec<Observed> {
    let tol = trials.calibration.tolerances();
    observe(&claim.program, &claim.observations, &trials.timelines, &tol)
}
