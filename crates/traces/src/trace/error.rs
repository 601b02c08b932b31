//! Why traces could not be read, put together or cut into trials ([`TraceError`]), and why the
//! reading of one trace stopped at an event ([`EventError`]).

use crate::border::limits::{describe_bytes, READ_LIMIT_ENV};

/// Everything that stops a trace from being read or cut; each message says what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TraceError {
    /// One file could not be read as a trace: its path (as shown) and why, in words.
    #[error("{path}: {why}")]
    File { path: String, why: String },
    /// The files given together are not the ranks of one run, or one is given twice.
    #[error("{0}")]
    NotOneRun(String),
    /// The trials asked for cannot be cut from the trace: a pattern that names no range, or
    /// trials that would hold more ops than the bound.
    #[error("{0}")]
    Trials(String),
    /// A claim cannot be judged on this trace (a selection of nothing, its pairs past its bound).
    #[error("{0}")]
    Unjudgeable(String),
    /// A recording's files could not be joined into one trace (`path`: the file or folder).
    #[error("{path}: {why}")]
    Recording { path: String, why: String },
    /// The joined trace could not be written.
    #[error("{0}")]
    Write(String),
    /// A name pattern the reader does not take.
    #[error(transparent)]
    Pattern(#[from] super::glob::PatternError),
}

/// The first event, or bound, at which a trace's reading stopped. `which` names an event as the
/// reader shows it: ``event 12 (kernel `gemm`)``.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EventError {
    /// The file ends inside event `0`.
    #[error(
        "the trace ends in the middle (in event {0} of `traceEvents`): it was cut short (a \
         profiler killed while writing, an interrupted copy); record it again"
    )]
    EndsInside(u64),
    /// Event `n` is longer than any profiler writes (`mib` MiB).
    #[error(
        "event {n} of `traceEvents` is over {mib} MiB: no profiler writes such an event; the \
         trace is damaged"
    )]
    Huge { n: u64, mib: usize },
    /// An empty item of `traceEvents` at event `0`.
    #[error(
        "`traceEvents` has an empty item at event {0} (a comma too many, or one before the \
         `]`): the trace is damaged"
    )]
    EmptyItem(u64),
    /// serde_json found event `n` cut short: its message.
    #[error("event {n} of `traceEvents` is cut short ({what}): the trace is damaged")]
    CutShort { n: u64, what: String },
    /// serde_json refused event `n`: its message and place in the event.
    #[error("event {n} of `traceEvents`: {what} (at its line {line}, column {column})")]
    NotAnEvent {
        n: u64,
        what: String,
        line: usize,
        column: usize,
    },
    /// The bytes stopped in event `n`: the guard's refusal, or gzip's error.
    #[error("{why} (in event {n} of `traceEvents`)")]
    Unread { n: u64, why: String },
    #[error("{which} names no device or stream")]
    NoStream { which: String },
    #[error("{which} has device {device} and stream {stream}")]
    BadStream {
        which: String,
        device: i64,
        stream: i64,
    },
    #[error("{which} has no `ts`")]
    NoTs { which: String },
    #[error("{which} has no `dur`")]
    NoDur { which: String },
    /// `us`: the duration as shown.
    #[error("{which} has a negative or invalid duration ({us} µs): the trace is damaged")]
    BadDuration { which: String, us: String },
    #[error("{which} lasts {us} µs, over a day: the trace is damaged")]
    OverADay { which: String, us: String },
    #[error("{which} has an absurd timestamp ({us} µs)")]
    AbsurdTime { which: String, us: String },
    /// More records than the reader keeps ([`super::kept`]).
    #[error(
        "over {0} GPU ops, CUDA calls and ranges: profile fewer steps (a schedule with `active` \
         of a few steps) and judge that trace"
    )]
    TooManyRecords(usize),
    /// The records kept take more than their budget.
    #[error(
        "its GPU ops, calls and ranges take over {} once read ({records} kept after {events} \
         events), an eighth of the read limit ({READ_LIMIT_ENV} raises it): profile fewer steps",
        describe_bytes(*budget)
    )]
    RecordsTooLarge {
        budget: u64,
        records: usize,
        events: u64,
    },
    /// The distinct names take more than their budget, after `events` events.
    #[error("after {events} events, {full}")]
    Names {
        events: u64,
        full: super::names::NamesFull,
    },
}
