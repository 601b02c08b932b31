//! CUPTI activity tracing: the device's own start and end of every kernel, copy and memset.
//!
//! CUPTI is optional. It is looked for the way cudarc looks for every library (by name, through
//! the loader), never loaded when `STREAM_LITMUS_CUPTI=off`, and any failure to start it only
//! means the executor falls back to events (see `crate::measured::witness`). Nothing here panics: cudarc's
//! loader would panic on a missing library, so the library is probed first.
//!
//! The activity API is process-wide. Records arrive in buffers CUPTI asks for and hands back; the
//! callbacks copy the few fields used into a global list. Records carry CUPTI's correlation id,
//! which numbers driver calls in issue order, so sorting by it gives the issue order back; the
//! witness matches records to ops by that order between two marker kernels (found by name). CUPTI
//! could also map its ids to ours (external correlation), but only with driver-API records
//! switched on, which would slow every call the experiments time. Tracing is enabled only while
//! programs with copies run, so no other claim pays its overhead: the `Gpu` keeps it on from the
//! first of a row of such programs (the copy and scenario claims come in rows) until the next
//! program without copies, so a row pays for switching it on and off once. Between two programs
//! and two trials it records fills and setup work too; the witness takes a program's records with
//! one flush after its last trial (`Witness::finish`) and matches only those between a trial's own
//! two markers.

use cudarc::cupti::result::activity;
use cudarc::cupti::sys;
use std::mem::offset_of;
use std::sync::{Mutex, OnceLock};
use stream_litmus_inject::buffers::{each_record, requested, WITNESS_BUFFER_BYTES};

/// The environment variable that hides CUPTI (`off`), for runs that show the fallback.
pub const CUPTI_ENV: &str = "STREAM_LITMUS_CUPTI";

const KINDS: [sys::CUpti_ActivityKind; 3] = [
    sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
    sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_MEMCPY,
    sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_MEMSET,
];

/// What one activity record was about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activity {
    Kernel,
    Memcpy,
    Memset,
}

/// One device activity, in CUPTI's clock.
#[derive(Debug, Clone, Copy)]
pub struct Record {
    pub activity: Activity,
    /// A kernel record of the witness's marker kernel.
    pub marker: bool,
    pub correlation: u32,
    pub start: u64,
    pub end: u64,
}

static COLLECTED: Mutex<Vec<Record>> = Mutex::new(Vec::new());
/// `STREAM_LITMUS_CUPTI_DEBUG` set: print what each flush delivered, to diagnose a trial left
/// without a witness.
fn debug() -> bool {
    std::env::var_os("STREAM_LITMUS_CUPTI_DEBUG").is_some()
}

static STARTED: OnceLock<Result<String, CuptiError>> = OnceLock::new();

/// Why CUPTI cannot be used, or a call of it failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CuptiError {
    #[error("hidden by {CUPTI_ENV}=off")]
    Hidden,
    #[error(
        "libcupti not found by the loader (it ships with the CUDA toolkit, under \
         extras/CUPTI/lib64 or targets/*/lib; add its directory to LD_LIBRARY_PATH)"
    )]
    NotFound,
    /// The library (by this name) loads, but cudarc does not find it.
    #[error("{0} loads, but not under the names cudarc tries")]
    OtherName(String),
    /// A CUPTI call failed: the call and CUPTI's result code.
    #[error("{call} failed: {code}")]
    Call { call: String, code: String },
}

/// Finds CUPTI and registers the buffer callbacks, once per process: the library's name, or why
/// CUPTI cannot be used.
pub fn start() -> Result<String, CuptiError> {
    STARTED.get_or_init(try_start).clone()
}

fn try_start() -> Result<String, CuptiError> {
    if std::env::var(CUPTI_ENV).is_ok_and(|v| v.eq_ignore_ascii_case("off") || v == "0") {
        return Err(CuptiError::Hidden);
    }
    let Some(name) = stream_litmus_inject::find_cupti() else {
        return Err(CuptiError::NotFound);
    };
    // SAFETY: only dlopens CUPTI by the names cudarc tries; a miss returns false.
    if !unsafe { sys::is_culib_present() } {
        return Err(CuptiError::OtherName(name));
    }
    activity::register_callbacks(Some(requested::<WITNESS_BUFFER_BYTES>), Some(completed))
        .map_err(|e| failed("cuptiActivityRegisterCallbacks", e))?;
    Ok(name)
}

/// A failed call's error.
fn failed(call: &str, code: impl std::fmt::Debug) -> CuptiError {
    CuptiError::Call {
        call: call.into(),
        code: format!("{code:?}"),
    }
}

/// Tracing switched on; switched off when dropped.
pub struct Tracing(());

impl Tracing {
    pub fn begin() -> Result<Tracing, CuptiError> {
        start()?;
        for kind in KINDS {
            if let Err(e) = activity::enable(kind) {
                for k in KINDS {
                    let _ = activity::disable(k);
                }
                return Err(failed(&format!("cuptiActivityEnable({kind:?})"), e));
            }
        }
        drain();
        if debug() {
            eprintln!("cupti: tracing on");
        }
        Ok(Tracing(()))
    }

    /// Flushes CUPTI's buffers and takes every record so far, in issue order (call it while a
    /// [`Tracing`] is alive).
    pub fn collect() -> Result<Vec<Record>, CuptiError> {
        // CUPTI_ACTIVITY_FLAG_FLUSH_FORCED: hand back buffers even if not full.
        activity::flush_all(1).map_err(|e| failed("cuptiActivityFlushAll", e))?;
        let mut records = drain();
        records.sort_by_key(|r| r.correlation);
        if debug() {
            eprintln!(
                "cupti: {} records, {} markers",
                records.len(),
                records.iter().filter(|r| r.marker).count()
            );
        }
        Ok(records)
    }
}

impl Drop for Tracing {
    fn drop(&mut self) {
        for k in KINDS {
            let _ = activity::disable(k);
        }
        let _ = activity::flush_all(1);
        drain();
    }
}

fn drain() -> Vec<Record> {
    let mut c = COLLECTED.lock().unwrap_or_else(|p| p.into_inner());
    std::mem::take(&mut *c)
}

unsafe extern "C" fn completed(
    _context: cudarc::driver::sys::CUcontext,
    _stream: u32,
    buffer: *mut u8,
    size: usize,
    valid: usize,
) {
    let mut found = Vec::new();
    // SAFETY: CUPTI hands back a buffer from `requested`, its size and `valid` bytes of records;
    // each is read at the offsets of its kind's structure, which the CUPTI versions since 12
    // share for these fields.
    unsafe { each_record(buffer, size, valid, |record| found.extend(parse(record))) };
    COLLECTED
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .extend(found);
}

/// # Safety
/// `p` points at a complete CUPTI activity record.
unsafe fn parse(p: *const u8) -> Option<Record> {
    use sys::CUpti_ActivityKind as K;
    // SAFETY: the caller's promise; every offset below lies inside the record of its kind.
    let read32 = |off: usize| unsafe { (p.add(off) as *const u32).read_unaligned() };
    // SAFETY: as for `read32`.
    let read64 = |off: usize| unsafe { (p.add(off) as *const u64).read_unaligned() };
    let kind = read32(0);
    let record = |activity, start, end, corr| {
        Some(Record {
            activity,
            marker: false,
            correlation: read32(corr),
            start: read64(start),
            end: read64(end),
        })
    };
    if kind == K::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL as u32 {
        type T = sys::CUpti_ActivityKernel9;
        let name = read64(offset_of!(T, name)) as *const std::ffi::c_char;
        // SAFETY: CUPTI's name string lives at least as long as the record.
        let named = (!name.is_null()).then(|| unsafe { std::ffi::CStr::from_ptr(name) }.to_bytes());
        // The clock alignment's kernel is the lab's, never a trial's (see `PING_KERNEL`).
        if named == Some(super::kernels::PING_KERNEL.as_bytes()) {
            return None;
        }
        let marker = named == Some(super::kernels::MARKER_KERNEL.as_bytes());
        let mut r = record(
            Activity::Kernel,
            offset_of!(T, start),
            offset_of!(T, end),
            offset_of!(T, correlationId),
        )?;
        r.marker = marker;
        Some(r)
    } else if kind == K::CUPTI_ACTIVITY_KIND_MEMCPY as u32 {
        type T = sys::CUpti_ActivityMemcpy6;
        record(
            Activity::Memcpy,
            offset_of!(T, start),
            offset_of!(T, end),
            offset_of!(T, correlationId),
        )
    } else if kind == K::CUPTI_ACTIVITY_KIND_MEMSET as u32 {
        type T = sys::CUpti_ActivityMemset4;
        record(
            Activity::Memset,
            offset_of!(T, start),
            offset_of!(T, end),
            offset_of!(T, correlationId),
        )
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::sys;
    use std::mem::offset_of;

    /// The offsets `parse` reads must be those of CUPTI 12.8 and 13 alike (the GPU machines run
    /// CUPTI 13 while the bindings are 12.8's): start, end and the correlation id.
    #[test]
    fn record_offsets_are_the_shared_prefix() {
        assert_eq!(offset_of!(sys::CUpti_ActivityKernel9, start), 16);
        assert_eq!(offset_of!(sys::CUpti_ActivityKernel9, end), 24);
        assert_eq!(offset_of!(sys::CUpti_ActivityKernel9, correlationId), 92);
        assert_eq!(offset_of!(sys::CUpti_ActivityKernel9, name), 104);
        assert_eq!(offset_of!(sys::CUpti_ActivityMemcpy6, start), 16);
        assert_eq!(offset_of!(sys::CUpti_ActivityMemcpy6, correlationId), 44);
        assert_eq!(offset_of!(sys::CUpti_ActivityMemset4, correlationId), 44);
    }
}
