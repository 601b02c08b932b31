//! Why the injected library records nothing, or less than it could: said once, as a note in the
//! trace ([`crate::trace_out::note`]) or on stderr, and the program runs on untraced.

/// What stopped recording, or a part of it; `code` is CUPTI's result, as cudarc names it.
#[derive(Debug, thiserror::Error)]
pub(crate) enum InjectError {
    #[error("no trace directory set")]
    NoTraceDir,
    /// The process's trace file could not be created.
    #[error("{path}: {source}")]
    Open {
        path: String,
        source: std::io::Error,
    },
    #[error(
        "libcupti not found by the loader (add its directory, e.g. \
         /usr/local/cuda/extras/CUPTI/lib64, to LD_LIBRARY_PATH)"
    )]
    NoCupti,
    #[error("libcupti loads, but not under the names cudarc tries")]
    OtherName,
    #[error(
        "cuptiActivityRegisterCallbacks failed ({0}): another tool (Nsight, a profiler) may hold \
         CUPTI"
    )]
    Callbacks(String),
    /// A CUPTI call failed: the call as written, with its arguments, and the result.
    #[error("{call} failed: {code}")]
    Call { call: String, code: String },
    #[error(
        "host functions' streams are not recorded: cuptiSubscribe failed ({0}; another tool may \
         hold CUPTI's callbacks)"
    )]
    Subscribe(String),
    #[error("host functions' streams are not recorded: {call} failed ({code})")]
    EnableCallback { call: String, code: String },
    /// A callback of an id this library did not subscribe to.
    #[error("callback {0} is none of the four")]
    NotOurs(u32),
    #[error("no parameters")]
    NoParameters,
    /// Neither call would give the stream's id: their results, the context and the stream.
    #[error(
        "cuptiGetStreamIdEx: {ex}, cuptiGetStreamId: {plain} (context {context}, stream {stream})"
    )]
    StreamId {
        ex: String,
        plain: String,
        context: String,
        stream: String,
    },
}
