//! CUPTI's injection library: what `stream-litmus trace -- CMD` loads into every process of the
//! user's command to record its CUDA work (`inject.rs`), and the CUPTI buffers it shares with
//! the lab's copy witness (`buffers.rs`).
//!
//! A crate of its own because the driver loads it into someone else's program: it holds only
//! what recording needs (CUPTI through cudarc, and hand-written lines of the profiler's event
//! format), none of the parser, judge, reports or CLI of the `stream-litmus` crate, which depends
//! on it and reads what it writes (`trace/kineto.rs`). Cargo builds it as
//! `libstream_litmus_inject.so` beside the `stream-litmus` binary.

mod activity_lines;
pub mod buffers;
mod host_fn_streams;
mod inject;
mod inject_error;
mod json;
mod trace_out;

pub use buffers::find_cupti;
pub use inject::{
    InitializeInjection, FLUSH_PERIOD_MS, TRACE_BASE_ENV, TRACE_DIR_ENV, TRACE_DRIVER_ENV,
    TRACE_PERIOD_ENV, TRACE_TUNE_ENV,
};

/// The variables the CUDA driver reads as a process starts that change how its work waits
/// (one hardware queue, lazy module loading, blocking launches): the injection records them for
/// each process it traces, and a trace's causes name them (`stream_litmus::trace::DriverEnv`).
pub const DRIVER_ENV: [&str; 3] = [
    "CUDA_DEVICE_MAX_CONNECTIONS",
    "CUDA_MODULE_LOADING",
    "CUDA_LAUNCH_BLOCKING",
];
