//! Records: what a run produced, as the JSON a user keeps, replays and compares.
//!
//! A [`RunRecord`] holds the device and its calibration, and for every claim the claim itself
//! (program, checks, expectation), the raw timelines of every trial and the judgement made from
//! them. Judgements are derived data: [`ClaimRecord::rejudge`] recomputes them from the stamps on
//! any machine, which is how recorded GPU runs become CPU test fixtures.

use crate::calibration::Calibration;
use crate::claim::Claim;
use crate::error::Error;
use crate::limits::MAX_TIMELINES;
use crate::program::Warning;
use crate::sharing::Sharing;
use crate::timeline::Timeline;
use crate::timing::{ClaimTiming, SetupTiming};
use crate::verdict::{judge_claim, observe, Judgement, Verdict};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Version of the results format; bumped on any incompatible change (see docs/results.md).
pub const SCHEMA_VERSION: u32 = 1;

/// The trials of one program, with the calibration of the process that ran them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trials {
    pub calibration: Calibration,
    /// The decided trials asked for: a Holds needs this many positive trials.
    pub wanted: usize,
    /// At most [`crate::limits::MAX_TIMELINES`], counted while a file is read.
    #[serde(deserialize_with = "crate::bounded_json::bounded_vec::<_, _, MAX_TIMELINES>")]
    pub timelines: Vec<Timeline>,
    /// Host wall time of the timed regions (first issue to final synchronize), summed.
    pub gpu_time_ns: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<Warning>,
    /// Who else used the GPU around these trials, where NVML could tell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sharing: Option<Sharing>,
    /// Where the claim's time went (`crate::timing`); absent in files written before issue 16.
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
        let tol = trials.calibration.tolerances();
        let mut judgement = judge_claim(
            &claim.program,
            &claim.checks,
            &trials.timelines,
            trials.sharing.as_ref(),
            &tol,
            trials.wanted,
        );
        judgement.observed = observe(&claim.program, &claim.observations, &trials.timelines, &tol);
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
    /// forward through the claims first ([`crate::sharing::Carry`]).
    pub fn rejudged(&self) -> RunRecord {
        let mut run = self.clone();
        let mut carry = crate::sharing::Carry::default();
        for c in &mut run.claims {
            if let Outcome::Ran { trials, .. } = &mut c.outcome {
                if let Some(s) = &mut trials.sharing {
                    carry.apply(s);
                }
            }
            *c = c.rejudge();
        }
        run
    }

    /// Whether every claim ran and met its expectation.
    pub fn all_as_expected(&self) -> bool {
        !self.claims.is_empty() && self.claims.iter().all(ClaimRecord::as_expected)
    }

    /// Read a results file; a name ending in `.gz` is read through gzip (see [`RunRecord::save`]).
    ///
    /// The file is user input: at most [`crate::limits::read_limit`] bytes are read (after
    /// decompression), and everything is checked before it is returned (`record_check.rs`): a
    /// damaged or crafted file is refused with a message naming the claim and the field.
    /// A claim without a scenario table whose id is `scenario.sleep.*`, `scenario.pipeline.*`
    /// or `scenario.prefetch.*` gets that table ([`crate::Table::from_legacy_id`]): files
    /// written before claims carried the field load as they were recorded.
    pub fn load(path: &Path) -> Result<RunRecord, Error> {
        use std::io::BufReader;
        let file_err = |detail: String| Error::File {
            path: path.display().to_string(),
            detail,
        };
        let file = crate::input_file::open_regular(path).map_err(file_err)?;
        let limit = crate::limits::read_limit();
        // Parsed as it streams (`bounded_json`): no copy of the whole text, every size counted
        // before memory is taken. Concatenated gzip members are one gzip stream; whatever
        // follows the object is refused.
        let parsed = if is_gzip(path) {
            let gz = flate2::read::MultiGzDecoder::new(BufReader::new(file));
            crate::bounded_json::read_json::<RunRecord>(gz, limit)
        } else {
            crate::bounded_json::read_json::<RunRecord>(file, limit)
        };
        let mut record = parsed.map_err(|e| match e.starts_with("larger than") {
            true => file_err(e),
            false => file_err(format!("not a stream-litmus results file: {e}")),
        })?;
        // Files written before claims carried `table` name a scenario row only by its id.
        for c in &mut record.claims {
            if c.claim.table.is_none() {
                c.claim.table = crate::claim::Table::from_legacy_id(&c.claim.id);
            }
        }
        if record.schema != SCHEMA_VERSION {
            return Err(file_err(format!(
                "results schema {} is not the supported {SCHEMA_VERSION}",
                record.schema
            )));
        }
        crate::record_check::check(&record).map_err(|e| {
            file_err(format!(
                "{e}. The file is damaged or was edited; nothing in it was used (re-record it, \
                 or restore it from version control)"
            ))
        })?;
        Ok(record)
    }

    /// Write the results as JSON: pretty-printed, or compact and gzip-compressed when the name
    /// ends in `.gz`. Raw stamps dominate a record (a 4096-block kernel writes 4096 of them per
    /// trial), and they compress about tenfold, which keeps the scenarios' runs small enough to
    /// commit as fixtures. The file is replaced atomically: a failed write leaves the old one.
    pub fn save(&self, path: &Path) -> Result<(), Error> {
        crate::atomic_write::write_atomically(path, |out| {
            if !is_gzip(path) {
                serde_json::to_writer_pretty(&mut *out, self)?;
                return Ok(());
            }
            // zlib's default level: for the whole catalogue (23 MB of JSON) 2.6 MB in about a
            // second, where the best level saves 7 % of the size and takes three times as long,
            // after the run, while the user waits.
            let mut gz = flate2::write::GzEncoder::new(out, flate2::Compression::default());
            serde_json::to_writer(&mut gz, self)?;
            gz.finish().map(drop)
        })
    }
}

fn is_gzip(path: &Path) -> bool {
    path.extension().is_some_and(|x| x == "gz")
}
