//! CUPTI's injection entry point: `stream-litmus trace -- CMD` records any CUDA program.
//!
//! The crate is also built as a shared library (`libstream_litmus.so`). The `trace` command runs
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

use cudarc::cupti::result::activity;
use cudarc::cupti::sys;
use std::collections::HashMap;
use std::io::Write;
use std::mem::offset_of;
use std::sync::Mutex;

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

struct Out {
    file: std::io::BufWriter<std::fs::File>,
    names: HashMap<(u32, u32), String>,
    base_ns: u64,
}

static OUT: Mutex<Option<Out>> = Mutex::new(None);

/// Called by the CUDA driver in each process of a traced command. Returns 1 (success) in every
/// case: a tracing failure is written down, never passed to the program.
#[no_mangle]
pub extern "C" fn InitializeInjection() -> std::ffi::c_int {
    let _ = std::panic::catch_unwind(|| {
        if let Err(e) = start() {
            note(&e);
        }
    });
    1
}

fn start() -> Result<(), String> {
    let dir = std::env::var_os(TRACE_DIR_ENV).ok_or("no trace directory set")?;
    let path = std::path::Path::new(&dir).join(format!("trace-{}.jsonl", std::process::id()));
    let file = std::fs::OpenOptions::new()
        .create_new(true)
        .write(true)
        .open(&path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let base_ns = std::env::var(TRACE_BASE_ENV)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    *lock() = Some(Out {
        file: std::io::BufWriter::with_capacity(1 << 20, file),
        names: HashMap::new(),
        base_ns,
    });
    write_env();
    if super::probe::cupti().is_none() {
        return Err("libcupti not found by the loader (add its directory, e.g. \
                    /usr/local/cuda/extras/CUPTI/lib64, to LD_LIBRARY_PATH)"
            .into());
    }
    // SAFETY: only dlopens CUPTI by the names cudarc tries.
    if !unsafe { sys::is_culib_present() } {
        return Err("libcupti loads, but not under the names cudarc tries".into());
    }
    activity::register_callbacks(Some(super::cupti::requested), Some(completed)).map_err(|e| {
        format!("cuptiActivityRegisterCallbacks failed ({e:?}): another tool (Nsight, a profiler) may hold CUPTI")
    })?;
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
    for kind in KINDS {
        if tune.skip.contains(&kind_word(kind)) {
            continue;
        }
        activity::enable(kind)
            .map_err(|e| format!("cuptiActivityEnable({kind:?}) failed: {e:?}"))?;
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

/// `STREAM_LITMUS_TRACE_TUNE`: words that leave a kind of record out, for measuring where the
/// tracer's cost goes (`trace --overhead`) or trading detail for it: `no-kernel`, `no-runtime`,
/// `no-driver`, `no-copy`, `no-memset`. An unknown word is a note, never an error. (Measured on
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
            let _ = out.file.flush();
        }
    });
}

fn lock() -> std::sync::MutexGuard<'static, Option<Out>> {
    OUT.lock().unwrap_or_else(|p| p.into_inner())
}

/// The environment the driver read as this process started (`DRIVER_ENV`), as a metadata
/// event of the profiler's format: what explains waits that no stream order asks for. A
/// variable left unset is left out; values are clipped (they are short words and numbers).
fn write_env() {
    let mut env = serde_json::Map::new();
    for name in crate::border::allowed_env::DRIVER_ENV {
        if let Some(v) = std::env::var_os(name) {
            let v: String = v.to_string_lossy().chars().take(64).collect();
            env.insert(name.to_string(), v.into());
        }
    }
    let line = serde_json::json!({
        "ph": "M", "name": "process_env", "pid": std::process::id(),
        "args": { "env": env },
    });
    if let Some(out) = lock().as_mut() {
        let _ = writeln!(out.file, "{line}");
    }
}

/// A line saying what went wrong, for the `trace` command to show.
fn note(what: &str) {
    if let Some(out) = lock().as_mut() {
        let line = serde_json::json!({ "note": what });
        let _ = writeln!(out.file, "{line}");
        let _ = out.file.flush();
    } else {
        eprintln!("stream-litmus trace: {what}");
    }
}

unsafe extern "C" fn completed(
    _context: cudarc::driver::sys::CUcontext,
    _stream: u32,
    buffer: *mut u8,
    _size: usize,
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
            // SAFETY: each record `each_record` hands over is complete, read at its kind's
            // offsets.
            unsafe { event(out, record, &mut line) }
        }));
        if matches!(written, Ok(true)) {
            line.push('\n');
            let _ = out.file.write_all(line.as_bytes());
        }
    };
    // SAFETY: CUPTI hands back a buffer from `cupti::requested` with `valid` bytes of records.
    unsafe { super::cupti::each_record(buffer, valid, write) };
    if let Some(out) = guard.as_mut() {
        let _ = out.file.flush();
    }
}

/// ns since the base as the profiler writes µs, exactly: "12345.678".
fn us(base: u64, ns: u64) -> String {
    let d = ns as i128 - base as i128;
    let (sign, d) = if d < 0 { ("-", -d) } else { ("", d) };
    format!("{sign}{}.{:03}", d / 1000, d % 1000)
}

/// One record as a line of the profiler's event format, written to `line`; false for other
/// kinds. Written by hand, not through a JSON tree: this runs once per record of a program
/// that may launch a hundred thousand kernels.
///
/// # Safety
/// `p` points at a complete CUPTI activity record.
unsafe fn event(out: &mut Out, p: *const u8, line: &mut String) -> bool {
    use std::fmt::Write as _;
    use sys::CUpti_ActivityKind as K;
    // SAFETY: the caller's promise; every offset below lies inside the record of its kind (the
    // shared prefix of CUPTI 12.8's and 13's structures, tests below).
    let r8 = |off: usize| unsafe { p.add(off).read() };
    // SAFETY: as for `r8`.
    let r32 = |off: usize| unsafe { (p.add(off) as *const u32).read_unaligned() };
    // SAFETY: as for `r8`.
    let ri32 = |off: usize| unsafe { (p.add(off) as *const i32).read_unaligned() };
    // SAFETY: as for `r8`.
    let r64 = |off: usize| unsafe { (p.add(off) as *const u64).read_unaligned() };
    let base = out.base_ns;
    let span = |start: usize, end: usize| {
        let (s, e) = (r64(start), r64(end));
        (us(base, s), us(0, e.saturating_sub(s)))
    };
    let kind = r32(0);
    // The process that recorded the op, written with it: correlation ids count from 1 in every
    // process, so ops are joined to their calls within their process (`trace/kineto.rs`).
    let process = std::process::id();
    if kind == K::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL as u32 {
        type T = sys::CUpti_ActivityKernel9;
        let name = r64(offset_of!(T, name)) as *const std::ffi::c_char;
        let name = match name.is_null() {
            true => "?".into(),
            // SAFETY: CUPTI's name string lives at least as long as the record.
            false => unsafe { std::ffi::CStr::from_ptr(name) }.to_string_lossy(),
        };
        let (ts, dur) = span(offset_of!(T, start), offset_of!(T, end));
        let stream = r32(offset_of!(T, streamId));
        let _ = write!(
            line,
            r#"{{"ph":"X","cat":"kernel","name":{},"pid":0,"tid":{stream},"ts":{ts},"dur":{dur},"args":{{"process":{process},"device":{},"stream":{stream},"correlation":{},"grid":[{},{},{}],"block":[{},{},{}]}}}}"#,
            serde_json::Value::from(name.as_ref()),
            r32(offset_of!(T, deviceId)),
            r32(offset_of!(T, correlationId)),
            ri32(offset_of!(T, gridX)),
            ri32(offset_of!(T, gridY)),
            ri32(offset_of!(T, gridZ)),
            ri32(offset_of!(T, blockX)),
            ri32(offset_of!(T, blockY)),
            ri32(offset_of!(T, blockZ)),
        );
        return true;
    }
    if kind == K::CUPTI_ACTIVITY_KIND_MEMCPY as u32 {
        type T = sys::CUpti_ActivityMemcpy6;
        let (ts, dur) = span(offset_of!(T, start), offset_of!(T, end));
        let stream = r32(offset_of!(T, streamId));
        let _ = write!(
            line,
            r#"{{"ph":"X","cat":"gpu_memcpy","name":"Memcpy {} ({} -> {})","pid":0,"tid":{stream},"ts":{ts},"dur":{dur},"args":{{"process":{process},"device":{},"stream":{stream},"correlation":{},"bytes":{}}}}}"#,
            copy_kind(r8(offset_of!(T, copyKind))),
            memory_kind(r8(offset_of!(T, srcKind))),
            memory_kind(r8(offset_of!(T, dstKind))),
            r32(offset_of!(T, deviceId)),
            r32(offset_of!(T, correlationId)),
            r64(offset_of!(T, bytes)),
        );
        return true;
    }
    if kind == K::CUPTI_ACTIVITY_KIND_MEMSET as u32 {
        type T = sys::CUpti_ActivityMemset4;
        let (ts, dur) = span(offset_of!(T, start), offset_of!(T, end));
        let stream = r32(offset_of!(T, streamId));
        let _ = write!(
            line,
            r#"{{"ph":"X","cat":"gpu_memset","name":"Memset (Device)","pid":0,"tid":{stream},"ts":{ts},"dur":{dur},"args":{{"process":{process},"device":{},"stream":{stream},"correlation":{},"bytes":{}}}}}"#,
            r32(offset_of!(T, deviceId)),
            r32(offset_of!(T, correlationId)),
            r64(offset_of!(T, bytes)),
        );
        return true;
    }
    if kind == K::CUPTI_ACTIVITY_KIND_MARKER as u32 {
        // NVTX: a range's start (with its name) and its end share an id; `trace/recorded.rs`
        // pairs them into one range. Instant marks are not kept.
        type T = sys::CUpti_ActivityMarker2;
        let flags = r32(offset_of!(T, flags));
        let at = us(base, r64(offset_of!(T, timestamp)));
        let id = r32(offset_of!(T, id));
        let (pid, tid) = (
            r32(offset_of!(T, objectId)),
            r32(offset_of!(T, objectId) + 4),
        );
        if flags & 2 != 0 {
            let name = r64(offset_of!(T, name)) as *const std::ffi::c_char;
            let name = match name.is_null() {
                true => "?".into(),
                // SAFETY: CUPTI's name string lives at least as long as the record.
                false => unsafe { std::ffi::CStr::from_ptr(name) }.to_string_lossy(),
            };
            let _ = write!(
                line,
                r#"{{"cat":"nvtx_start","id":{id},"name":{},"pid":{pid},"tid":{tid},"ts":{at}}}"#,
                serde_json::Value::from(name.as_ref())
            );
            return true;
        }
        if flags & 4 != 0 {
            let _ = write!(
                line,
                r#"{{"cat":"nvtx_end","id":{id},"pid":{pid},"ts":{at}}}"#
            );
            return true;
        }
        return false;
    }
    let runtime = kind == K::CUPTI_ACTIVITY_KIND_RUNTIME as u32;
    if runtime || kind == K::CUPTI_ACTIVITY_KIND_DRIVER as u32 {
        type T = sys::CUpti_ActivityAPI;
        let (ts, dur) = span(offset_of!(T, start), offset_of!(T, end));
        let cbid = r32(offset_of!(T, cbid));
        let name = callback_name(out, runtime, cbid);
        let _ = write!(
            line,
            r#"{{"ph":"X","cat":"{}","name":"{name}","pid":{},"tid":{},"ts":{ts},"dur":{dur},"args":{{"cbid":{cbid},"correlation":{}}}}}"#,
            if runtime {
                "cuda_runtime"
            } else {
                "cuda_driver"
            },
            r32(offset_of!(T, processId)),
            r32(offset_of!(T, threadId)),
            r32(offset_of!(T, correlationId)),
        );
        return true;
    }
    false
}

/// "cudaLaunchKernel" for a runtime callback id (CUPTI's name without its `_v7000` suffix).
fn callback_name(out: &mut Out, runtime: bool, cbid: u32) -> String {
    let domain = match runtime {
        true => sys::CUpti_CallbackDomain::CUPTI_CB_DOMAIN_RUNTIME_API,
        false => sys::CUpti_CallbackDomain::CUPTI_CB_DOMAIN_DRIVER_API,
    };
    out.names
        .entry((runtime as u32, cbid))
        .or_insert_with(|| {
            let mut name: *const std::ffi::c_char = std::ptr::null();
            // SAFETY: CUPTI writes a pointer to a static string, or nothing.
            let ok = unsafe { sys::cuptiGetCallbackName(domain, cbid, &mut name) };
            if ok != sys::CUptiResult::CUPTI_SUCCESS || name.is_null() {
                return format!("cbid {cbid}");
            }
            // SAFETY: a NUL-terminated static string.
            let full = unsafe { std::ffi::CStr::from_ptr(name) }
                .to_string_lossy()
                .into_owned();
            let name = match full.rsplit_once("_v") {
                Some((base, v)) if v.chars().all(|c| c.is_ascii_digit()) => base.to_string(),
                _ => full,
            };
            // Written into JSON by hand: only the characters of C identifiers.
            name.chars()
                .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect()
        })
        .clone()
}

/// CUpti_ActivityMemcpyKind as the profiler names it.
fn copy_kind(k: u8) -> &'static str {
    match k {
        1 => "HtoD",
        2 => "DtoH",
        3 => "HtoA",
        4 => "AtoH",
        5 => "AtoA",
        6 => "AtoD",
        7 => "DtoA",
        8 => "DtoD",
        9 => "HtoH",
        10 => "PtoP",
        _ => "Unknown",
    }
}

/// CUpti_ActivityMemoryKind as the profiler names it.
fn memory_kind(k: u8) -> &'static str {
    match k {
        1 => "Pageable",
        2 => "Pinned",
        3 => "Device",
        4 => "Array",
        5 => "Managed",
        6 => "Device Static",
        7 => "Managed Static",
        _ => "Unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::sys;
    use std::mem::offset_of;

    /// The fields read must sit where CUPTI 12.8 and 13 both put them.
    #[test]
    fn record_fields_are_in_the_shared_prefix() {
        type K = sys::CUpti_ActivityKernel9;
        assert_eq!(offset_of!(K, deviceId), 40);
        assert_eq!(offset_of!(K, streamId), 48);
        assert_eq!(offset_of!(K, gridX), 52);
        assert_eq!(offset_of!(K, blockZ), 72);
        type M = sys::CUpti_ActivityMemcpy6;
        assert_eq!(offset_of!(M, copyKind), 4);
        assert_eq!(offset_of!(M, bytes), 8);
        assert_eq!(offset_of!(M, deviceId), 32);
        assert_eq!(offset_of!(M, streamId), 40);
        type N = sys::CUpti_ActivityMarker2;
        assert_eq!(offset_of!(N, flags), 4);
        assert_eq!(offset_of!(N, timestamp), 8);
        assert_eq!(offset_of!(N, id), 16);
        assert_eq!(offset_of!(N, objectId), 24);
        assert_eq!(offset_of!(N, name), 40);
        type A = sys::CUpti_ActivityAPI;
        assert_eq!(offset_of!(A, start), 8);
        assert_eq!(offset_of!(A, processId), 24);
        assert_eq!(offset_of!(A, correlationId), 32);
    }
}
