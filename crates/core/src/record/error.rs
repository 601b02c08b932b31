//! Why a results file's text was refused, before [`super::file`] puts the file's name in front
//! and says whether the file is damaged or not ours at all.

use super::check::Broken;
use crate::border::bounded_json::Refusal;
use crate::border::limits::{describe_bytes, KEPT_TEXT_SHARE, MAX_TIMELINES, READ_LIMIT_ENV};
use std::fmt;

/// Everything that stops a results file's read, in the file's order.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The guard stopped the bytes: the read limit on the whole, a string, an array, nesting.
    #[error(transparent)]
    Refused(#[from] Refusal),
    /// The bytes could not be read (the I/O error's message: a gzip cut short, a failing disk).
    #[error("{0}")]
    Read(String),
    /// Nothing but blanks came.
    #[error("it is empty")]
    Empty,
    /// One claim's text (`what`: `claims[3]`), or what the caller keeps of the claims up to one
    /// (`the claims up to claims[3] together`), passed the read limit.
    #[error(
        "larger than the {} read limit (after decompression) in {what}; memory holds one claim \
         at a time, and this is far beyond any claim we write; if it is real, raise the limit \
         with {READ_LIMIT_ENV}=<MiB>",
        describe_bytes(*limit)
    )]
    TooLarge { what: String, limit: u64 },
    /// A claim's text besides its timelines (`claim: Some(i)`), or the text around the claims
    /// (`None`), passed its share of the read limit.
    #[error(
        "{} holds over {} of text besides its trials' timelines (1/{KEPT_TEXT_SHARE} of the read \
         limit, at least 1 MiB): a claim we write holds at most a few MB there (its program, its \
         checks, its outcomes), so this is a field no results file has; if it is real, raise \
         the read limit with {READ_LIMIT_ENV}=<MiB>",
        Kept(*claim),
        describe_bytes(*limit)
    )]
    TooMuchKept { claim: Option<usize>, limit: u64 },
    /// Claim `claim` of the file could not be cut or parsed.
    #[error("claims[{claim}]{problem}")]
    Claim { claim: usize, problem: ClaimProblem },
    /// A claim, as parsed, breaks a rule of the format ([`super::check`]).
    #[error(transparent)]
    Broken(#[from] Broken),
    /// The thread that parses the claims stopped first; its own error is the one reported.
    #[error("the claims' reader stopped")]
    Stopped,
    /// No thread could be started to cut the file.
    #[error("could not start a thread to read it: {0}")]
    Thread(String),
    /// A thread that parses the pieces stopped (it panicked; the panic is passed on).
    #[error("a thread parsing its claims stopped")]
    Parser(#[from] crate::border::in_order::WorkerGone),
    /// The cutter found itself where it cannot be (a timeline outside a claim): a bug of ours.
    #[error("the results reader lost its place ({0}); this is a bug in stream-litmus")]
    Lost(&'static str),
    /// The caller's own error, for a claim it was handed, passed through as it is.
    #[error(transparent)]
    Caller(Box<crate::border::error::Error>),
}

impl RecordError {
    /// Whether the read limit stopped the file (the message then says how to raise it).
    pub fn is_read_limit(&self) -> bool {
        matches!(
            self,
            RecordError::Refused(Refusal::TooLarge(_)) | RecordError::TooLarge { .. }
        )
    }

    /// Whether the error is in one claim of a file that is otherwise a results file.
    pub fn is_in_a_claim(&self) -> bool {
        matches!(
            self,
            RecordError::Claim { .. } | RecordError::TooMuchKept { claim: Some(_), .. }
        )
    }
}

/// What is wrong with one claim as it is cut out of the file or parsed; shown after
/// `claims[i]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimProblem {
    /// The file ends inside it.
    CutShort,
    /// An element of `claims` that is not an object.
    NotAnObject,
    /// An element of its `trials.timelines` that is not an object.
    TimelineNotAnObject(usize),
    /// More than [`MAX_TIMELINES`] timelines.
    TooManyTimelines,
    /// serde_json refused a timeline (`Some(j)`) or the rest of the claim (`None`): its message.
    Json {
        timeline: Option<usize>,
        message: String,
    },
}

impl fmt::Display for ClaimProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClaimProblem::CutShort => f.write_str(" is cut short: the file ends inside it"),
            ClaimProblem::NotAnObject => f.write_str(" is not an object; every claim is one"),
            ClaimProblem::TimelineNotAnObject(j) => {
                write!(
                    f,
                    ": trials.timelines[{j}] is not an object; every trial is one"
                )
            }
            ClaimProblem::TooManyTimelines => write!(
                f,
                ": trials.timelines: more than {MAX_TIMELINES} items, the most a results file \
                 may hold here"
            ),
            ClaimProblem::Json {
                timeline: Some(j),
                message,
            } => write!(f, ": trials.timelines[{j}]: {message}"),
            ClaimProblem::Json {
                timeline: None,
                message,
            } => write!(f, ": {message}"),
        }
    }
}

/// `claims[i]`, or what surrounds the claims, in [`RecordError::TooMuchKept`].
struct Kept(Option<usize>);

impl fmt::Display for Kept {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(i) => write!(f, "claims[{i}]"),
            None => f.write_str("what surrounds its claims"),
        }
    }
}
