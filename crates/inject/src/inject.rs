//! CUPTI's injection entry point: `stream-litmus trace -- CMD` records any CUDA program.
//!
//! This crate is built as a shared library (`libstream_litmus_inject.so`). The `trace` command runs
//! the user's command with `CUDA_INJECTION64_PATH` naming it, and the CUDA driver calls
//! [`InitializeInjection`] in every process of the command when it initialises. From there CUPTI's
//! activity API records every kernel, copy and memset, and the runtime and driver calls that
//! issued them. Records arrive in buffers CUPTI hands back on its own thread (and every
//! [`FLUSH_PERIOD_MS`], so a killed program leaves what was flushed); each buffer is written at
//! once as lines of the profiler's own event format to `$STREAM_LITMUS_TRACE_DIR/trace-PID.jsonl`,
//! never on the program's launch path. At exit the last buffers are flushed. The `trace` command
//! joins the files into one trace that `check` reads like a PyTorch profiler trace.
//!
//! Nothing here may crash the user's program: every failure is written as a `note` line and
//! CUPTI is left alone; no panic crosses the C boundary.

use crate::activity_lines::Lines;
use crate::buffers::TRACE_BUFFER_BYTES;
use crate::inject_error::InjectError;
use crate::trace_out::{lock, note, Out};
use cudarc::cupti::result::activity;
use cudarc::cupti::sys;
use std::io::Write;

/// Where each process writes its records (set by the `trace` command).
pub const TRACE_DIR_ENV: &str = "STREAM_LITMUS_TRACE_DIR";

/// The instant (CUPTI's clock, ns since the epoch) the times of every process count from, set by
/// the `trace` command so that all processes share it. CUPTI's ns since 1970 written as µs in an
/// f64 would keep only a quarter of a µs; counted from a base minutes away they keep the ns.
pub const TRACE_BASE_ENV: &str = "STREAM_LITMUS_TRACE_BASE_NS";

/// Milliseconds between CUPTI's flushes of buffers that are not full ([`FLUSH_PERIOD_MS`] when
/// unset; 0: only full buffers and the last flush at exit).
pub const TRACE_PERIOD_ENV: &str = "STREAM_LITMUS_TRACE_PERIOD_MS";

/// `STREAM_LITMUS_TRACE_DRIVER=off` records no driver-API calls (less overhead; a program that
/// launches through the driver API, as PyTorch does, then has kernels without their calls).
pub const TRACE_DRIVER_ENV: &str = "STREAM_LITMUS_TRACE_DRIVER";

/// How often CUPTI hands back buffers that are not full, in ms: a killed program loses at most
/// this much.
pub const FLUSH_PERIOD_MS: u32 = 200;

const KINDS: [sys::CUpti_ActivityKind; 5] = [
    sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
    sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_MEMCPY,
    sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_MEMSET,
    sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_RUNTIME,
    sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_DRIVER,
];

/// Called by the CUDA driver in each process of a traced command. Returns 1 (success) in every
/// case: a tracing failure is written down, never passed to the program.
#[no_mangle]
pub extern "C" fn InitializeInjection() -> std::ffi::c_int {
    let _ = std::panic::catch_unwind(|| {
        if let Err(e) = start() {
            note(&e.to_string());
        }
    });
    1
}

fn start() -> Result<(), InjectError> {
    let dir = std::env::var_os(TRACE_DIR_ENV).ok_or(InjectError::NoTraceDir)?;
    let path = std::path::Path::new(&dir).join(format!("trace-{}.jsonl", std::process::id()));
    let file = std::fs::OpenOptions::new()
        .create_new(true)
        .write(true)
        .open(&path)
        .map_err(|source| InjectError::Open {
            path: path.display().to_string(),
            source,
        })?;
    let base_ns = std::env::var(TRACE_BASE_ENV)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    *lock() = Some(Out {
        file: std::io::BufWriter::with_capacity(1 << 20, file),
        lines: Lines::new(base_ns),
    });
    write_env();
    if crate::find_cupti().is_none() {
        return Err(InjectError::NoCupti);
    }
    // SAFETY: only dlopens CUPTI by the names cudarc tries.
    if !unsafe { sys::is_culib_present() } {
        return Err(InjectError::OtherName);
    }
    activity::register_callbacks(
        Some(crate::buffers::requested::<TRACE_BUFFER_BYTES>),
        Some(completed),
    )
    .map_err(|e| InjectError::Callbacks(format!("{e:?}")))?;
    // One kind of thread id for calls and NVTX ranges alike (the kernel's), so that a range is
    // known to be on a thread that made no CUDA call: a host function's (`trace/host_fns.rs`).
    if let Err(e) = cudarc::cupti::result::set_thread_id_type(
        sys::CUpti_ActivityThreadIdType::CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM,
    ) {
        note(&format!(
            "host functions' runs may not be found: cuptiSetThreadIdType(SYSTEM) failed: {e:?}"
        ));
    }
    // NVTX ranges, where the program marks them and NVTX hands them to CUPTI
    // (NVTX_INJECTION64_PATH, set by the `trace` command): optional, a note if refused.
    if let Err(e) = activity::enable(sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_MARKER) {
        note(&format!(
            "NVTX ranges are not recorded: cuptiActivityEnable(MARKER) failed: {e:?}"
        ));
    }
    let tune = Tune::from_env();
    if !tune.skip.contains(&"sync") {
        record_syncs();
        if let Err(e) = crate::host_fn_streams::record() {
            note(&e.to_string());
        }
    }
    for kind in KINDS {
        if tune.skip.contains(&kind_word(kind)) {
            continue;
        }
        activity::enable(kind).map_err(|e| InjectError::Call {
            call: format!("cuptiActivityEnable({kind:?})"),
            code: format!("{e:?}"),
        })?;
    }
    let period = std::env::var(TRACE_PERIOD_ENV)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(FLUSH_PERIOD_MS);
    if period > 0 {
        let _ = activity::flush_period(period);
    }
    // SAFETY: registers a plain extern "C" function with no arguments.
    unsafe { libc::atexit(at_exit) };
    Ok(())
}

/// The program's own orders (`trace/syncs.rs`): syncs with their stream and event, event
/// records, streams with their flags and priority. Optional: a CUPTI that refuses one kind is a
/// note, and the trace then says the process's syncs were not all recorded.
const SYNC_KINDS: [sys::CUpti_ActivityKind; 3] = [
    sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
    sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_CUDA_EVENT,
    sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_STREAM,
];

/// Enables [`SYNC_KINDS`]; where all are recorded, says so in a `process_records` metadata
/// event, so that a reader knows a sync missing from the trace was never made.
fn record_syncs() {
    for kind in SYNC_KINDS {
        if let Err(e) = activity::enable(kind) {
            note(&format!(
                "syncs, event records and streams are not recorded: cuptiActivityEnable({kind:?}) \
                 failed: {e:?}"
            ));
            return;
        }
    }
    let line = format!(
        r#"{{"ph":"M","name":"process_records","pid":{},"args":{{"recorded_syncs":true}}}}"#,
        std::process::id()
    );
    if let Some(out) = lock().as_mut() {
        let _ = writeln!(out.file, "{line}");
    }
}

/// `STREAM_LITMUS_TRACE_TUNE`: words that leave a kind of record out, for measuring where the
/// tracer's cost goes (`trace --overhead`) or trading detail for it: `no-kernel`, `no-runtime`,
/// `no-driver`, `no-copy`, `no-memset`, `no-sync` (syncs, event records, streams and host
/// functions' streams). An unknown word is a note, never an error. (Measured on
/// the H100: kernel records alone cost about as much as everything, docs/claims.md.)
pub const TRACE_TUNE_ENV: &str = "STREAM_LITMUS_TRACE_TUNE";

#[derive(Debug, Default)]
struct Tune {
    skip: Vec<&'static str>,
}

impl Tune {
    fn from_env() -> Tune {
        let mut tune = Tune::default();
        // The older switch for driver records alone.
        if std::env::var(TRACE_DRIVER_ENV).is_ok_and(|v| v == "off" || v == "0") {
            tune.skip.push("driver");
        }
        let words = std::env::var(TRACE_TUNE_ENV).unwrap_or_default();
        for w in words.split([',', ' ']).filter(|w| !w.is_empty()) {
            match w {
                "no-kernel" => tune.skip.push("kernel"),
                "no-runtime" => tune.skip.push("runtime"),
                "no-driver" => tune.skip.push("driver"),
                "no-copy" => tune.skip.push("copy"),
                "no-memset" => tune.skip.push("memset"),
                "no-sync" => tune.skip.push("sync"),
                _ => note(&format!(
                    "{TRACE_TUNE_ENV}: `{w}` is not a setting; left out"
                )),
            }
        }
        tune
    }
}

/// The word [`Tune`] uses for an activity kind.
fn kind_word(kind: sys::CUpti_ActivityKind) -> &'static str {
    use sys::CUpti_ActivityKind as K;
    match kind {
        K::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL => "kernel",
        K::CUPTI_ACTIVITY_KIND_MEMCPY => "copy",
        K::CUPTI_ACTIVITY_KIND_MEMSET => "memset",
        K::CUPTI_ACTIVITY_KIND_RUNTIME => "runtime",
        K::CUPTI_ACTIVITY_KIND_DRIVER => "driver",
        _ => "other",
    }
}

extern "C" fn at_exit() {
    let _ = std::panic::catch_unwind(|| {
        let _ = activity::flush_all(1);
        if let Some(out) = lock().as_mut() {
            let _ = out
                .file
                .write_all(crate::host_fn_streams::summary().as_bytes());
            let _ = out.file.flush();
        }
    });
}

/// The environment the driver read as this process started (`DRIVER_ENV`), as a metadata
/// event of the profiler's format: what explains waits that no stream order asks for. A
/// variable left unset is left out; values are clipped (they are short words and numbers).
fn write_env() {
    let mut env = Vec::new();
    for name in crate::DRIVER_ENV {
        if let Some(v) = std::env::var_os(name) {
            let v: String = v.to_string_lossy().chars().take(64).collect();
            env.push(format!(
                "{}:{}",
                crate::json::quoted(name),
                crate::json::quoted(&v)
            ));
        }
    }
    let line = format!(
        r#"{{"ph":"M","name":"process_env","pid":{},"args":{{"env":{{{}}}}}}}"#,
        std::process::id(),
        env.join(",")
    );
    if let Some(out) = lock().as_mut() {
        let _ = writeln!(out.file, "{line}");
    }
}

unsafe extern "C" fn completed(
    _context: cudarc::driver::sys::CUcontext,
    _stream: u32,
    buffer: *mut u8,
    size: usize,
    valid: usize,
) {
    let mut guard = lock();
    let mut line = String::with_capacity(512);
    let write = |record: *const u8| {
        let Some(out) = guard.as_mut() else {
            return;
        };
        line.clear();
        // No panic may cross into CUPTI: a record that fails to format is dropped.
        let written = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            // SAFETY: each record `each_record` hands over is complete.
            unsafe { out.lines.line(record, &mut line) }
        }));
        if matches!(written, Ok(true)) {
            line.push('\n');
            let _ = out.file.write_all(line.as_bytes());
        }
    };
    // SAFETY: CUPTI hands back a buffer from `buffers::requested`, its size and `valid` bytes of
    // records.
    unsafe { crate::buffers::each_record(buffer, size, valid, write) };
    if let Some(out) = guard.as_mut() {
        let _ = out.file.flush();
    }
}
