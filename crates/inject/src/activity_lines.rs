//! CUPTI activity records as lines of the profiler's event format, for `stream-litmus trace`.
//!
//! Each record kind the injection (`inject.rs`) enables becomes one line, in the shape the
//! PyTorch profiler gives the same record (`trace/kineto.rs` reads both): kernels, copies and
//! memsets as `X` events on their stream, runtime and driver calls as `X` events on their
//! thread, NVTX range ends as `nvtx_start`/`nvtx_end` (paired by `trace/recorded.rs`); syncs as
//! `cuda_sync` events with their stream and event; event records (`cuda_event_record`) and
//! streams (`cuda_stream`, with flag and priority) as metadata, since they have no span of their
//! own. Written by hand, not through a JSON tree: this runs once per record of a program that may
//! launch a hundred thousand kernels. Every offset read lies in the prefix CUPTI 12.8's and 13's
//! structures share (tests below).

use cudarc::cupti::sys;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::mem::offset_of;

/// What formatting keeps between records: the instant times count from, the callback names.
pub(crate) struct Lines {
    pub(crate) base_ns: u64,
    names: HashMap<(u32, u32), String>,
}

/// A record's bytes, read at its kind's offsets.
#[derive(Clone, Copy)]
struct Rec(*const u8);

impl Rec {
    fn u8(self, off: usize) -> u8 {
        // SAFETY: a `Rec` is made only from a complete record (`Lines::line`'s promise), and
        // every offset read is one of its kind's fields.
        unsafe { self.0.add(off).read() }
    }
    fn u32(self, off: usize) -> u32 {
        // SAFETY: as for `u8`.
        unsafe { (self.0.add(off) as *const u32).read_unaligned() }
    }
    fn i32(self, off: usize) -> i32 {
        self.u32(off) as i32
    }
    fn u64(self, off: usize) -> u64 {
        // SAFETY: as for `u8`.
        unsafe { (self.0.add(off) as *const u64).read_unaligned() }
    }
    /// The C string a field points at, "?" for none.
    fn text(self, off: usize) -> String {
        let p = self.u64(off) as *const std::ffi::c_char;
        match p.is_null() {
            true => "?".into(),
            // SAFETY: CUPTI's strings live at least as long as the record.
            false => unsafe { std::ffi::CStr::from_ptr(p) }
                .to_string_lossy()
                .into_owned(),
        }
    }
}

/// ns since the base as the profiler writes µs, exactly: "12345.678".
fn us(base: u64, ns: u64) -> String {
    let d = ns as i128 - base as i128;
    let (sign, d) = if d < 0 { ("-", -d) } else { ("", d) };
    format!("{sign}{}.{:03}", d / 1000, d % 1000)
}

impl Lines {
    pub(crate) fn new(base_ns: u64) -> Lines {
        Lines {
            base_ns,
            names: HashMap::new(),
        }
    }

    /// One record as a line, written to `line`; false for kinds not written.
    ///
    /// # Safety
    /// `p` points at a complete CUPTI activity record.
    pub(crate) unsafe fn line(&mut self, p: *const u8, line: &mut String) -> bool {
        use sys::CUpti_ActivityKind as K;
        let r = Rec(p);
        let kind = r.u32(0);
        // The process that recorded the record, written with it: correlation ids count from 1
        // in every process, so ops are joined to their calls within their process.
        let process = std::process::id();
        match kind {
            k if k == K::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL as u32 => {
                self.kernel(r, process, line)
            }
            k if k == K::CUPTI_ACTIVITY_KIND_MEMCPY as u32 => self.copy(r, process, line),
            k if k == K::CUPTI_ACTIVITY_KIND_MEMSET as u32 => self.memset(r, process, line),
            k if k == K::CUPTI_ACTIVITY_KIND_MARKER as u32 => return self.marker(r, line),
            k if k == K::CUPTI_ACTIVITY_KIND_RUNTIME as u32 => self.call(r, true, line),
            k if k == K::CUPTI_ACTIVITY_KIND_DRIVER as u32 => self.call(r, false, line),
            k if k == K::CUPTI_ACTIVITY_KIND_SYNCHRONIZATION as u32 => self.sync(r, process, line),
            k if k == K::CUPTI_ACTIVITY_KIND_CUDA_EVENT as u32 => event_record(r, process, line),
            k if k == K::CUPTI_ACTIVITY_KIND_STREAM as u32 => stream(r, process, line),
            _ => return false,
        }
        true
    }

    /// A span's start and duration as the profiler writes them.
    fn span(&self, r: Rec, start: usize, end: usize) -> (String, String) {
        let (s, e) = (r.u64(start), r.u64(end));
        (us(self.base_ns, s), us(0, e.saturating_sub(s)))
    }

    fn kernel(&self, r: Rec, process: u32, line: &mut String) {
        type T = sys::CUpti_ActivityKernel9;
        let (ts, dur) = self.span(r, offset_of!(T, start), offset_of!(T, end));
        let stream = r.u32(offset_of!(T, streamId));
        let _ = write!(
            line,
            r#"{{"ph":"X","cat":"kernel","name":{},"pid":0,"tid":{stream},"ts":{ts},"dur":{dur},"args":{{"process":{process},"device":{},"stream":{stream},"correlation":{},"grid":[{},{},{}],"block":[{},{},{}]}}}}"#,
            crate::json::quoted(&r.text(offset_of!(T, name))),
            r.u32(offset_of!(T, deviceId)),
            r.u32(offset_of!(T, correlationId)),
            r.i32(offset_of!(T, gridX)),
            r.i32(offset_of!(T, gridY)),
            r.i32(offset_of!(T, gridZ)),
            r.i32(offset_of!(T, blockX)),
            r.i32(offset_of!(T, blockY)),
            r.i32(offset_of!(T, blockZ)),
        );
    }

    fn copy(&self, r: Rec, process: u32, line: &mut String) {
        type T = sys::CUpti_ActivityMemcpy6;
        let (ts, dur) = self.span(r, offset_of!(T, start), offset_of!(T, end));
        let stream = r.u32(offset_of!(T, streamId));
        let _ = write!(
            line,
            r#"{{"ph":"X","cat":"gpu_memcpy","name":"Memcpy {} ({} -> {})","pid":0,"tid":{stream},"ts":{ts},"dur":{dur},"args":{{"process":{process},"device":{},"stream":{stream},"correlation":{},"bytes":{}}}}}"#,
            copy_kind(r.u8(offset_of!(T, copyKind))),
            memory_kind(r.u8(offset_of!(T, srcKind))),
            memory_kind(r.u8(offset_of!(T, dstKind))),
            r.u32(offset_of!(T, deviceId)),
            r.u32(offset_of!(T, correlationId)),
            r.u64(offset_of!(T, bytes)),
        );
    }

    fn memset(&self, r: Rec, process: u32, line: &mut String) {
        type T = sys::CUpti_ActivityMemset4;
        let (ts, dur) = self.span(r, offset_of!(T, start), offset_of!(T, end));
        let stream = r.u32(offset_of!(T, streamId));
        let _ = write!(
            line,
            r#"{{"ph":"X","cat":"gpu_memset","name":"Memset (Device)","pid":0,"tid":{stream},"ts":{ts},"dur":{dur},"args":{{"process":{process},"device":{},"stream":{stream},"correlation":{},"bytes":{}}}}}"#,
            r.u32(offset_of!(T, deviceId)),
            r.u32(offset_of!(T, correlationId)),
            r.u64(offset_of!(T, bytes)),
        );
    }

    /// NVTX: a range's start (with its name) and its end share an id; `trace/recorded.rs` pairs
    /// them into one range. Instant marks are not kept.
    fn marker(&self, r: Rec, line: &mut String) -> bool {
        type T = sys::CUpti_ActivityMarker2;
        let flags = r.u32(offset_of!(T, flags));
        let at = us(self.base_ns, r.u64(offset_of!(T, timestamp)));
        let id = r.u32(offset_of!(T, id));
        let (pid, tid) = (
            r.u32(offset_of!(T, objectId)),
            r.u32(offset_of!(T, objectId) + 4),
        );
        if flags & 2 != 0 {
            let _ = write!(
                line,
                r#"{{"cat":"nvtx_start","id":{id},"name":{},"pid":{pid},"tid":{tid},"ts":{at}}}"#,
                crate::json::quoted(&r.text(offset_of!(T, name)))
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
        false
    }

    fn call(&mut self, r: Rec, runtime: bool, line: &mut String) {
        type T = sys::CUpti_ActivityAPI;
        let (ts, dur) = self.span(r, offset_of!(T, start), offset_of!(T, end));
        let cbid = r.u32(offset_of!(T, cbid));
        let name = self.callback_name(runtime, cbid);
        let _ = write!(
            line,
            r#"{{"ph":"X","cat":"{}","name":"{name}","pid":{},"tid":{},"ts":{ts},"dur":{dur},"args":{{"cbid":{cbid},"correlation":{}}}}}"#,
            if runtime {
                "cuda_runtime"
            } else {
                "cuda_driver"
            },
            r.u32(offset_of!(T, processId)),
            r.u32(offset_of!(T, threadId)),
            r.u32(offset_of!(T, correlationId)),
        );
    }

    /// A sync with the stream it names (-1 for none) and the event it waits for, named as the
    /// profiler names it; its call's correlation joins it to the call's thread.
    fn sync(&self, r: Rec, process: u32, line: &mut String) {
        type T = sys::CUpti_ActivitySynchronization;
        let (ts, dur) = self.span(r, offset_of!(T, start), offset_of!(T, end));
        let name = match r.u32(offset_of!(T, type_)) {
            1 => "Event Sync",
            2 => "Stream Wait Event",
            3 => "Stream Sync",
            4 => "Context Sync",
            _ => "Unknown Sync",
        };
        // CUPTI_SYNCHRONIZATION_INVALID_VALUE (all ones) where the sync names no stream or event.
        let id = |off: usize| match r.u32(off) {
            u32::MAX => -1,
            v => i64::from(v),
        };
        let stream = id(offset_of!(T, streamId));
        let _ = write!(
            line,
            r#"{{"ph":"X","cat":"cuda_sync","name":"{name}","pid":{process},"tid":{stream},"ts":{ts},"dur":{dur},"args":{{"process":{process},"cuda_sync_kind":"{name}","stream":{stream},"correlation":{},"wait_on_cuda_event_id":{}}}}}"#,
            r.u32(offset_of!(T, correlationId)),
            id(offset_of!(T, cudaEventId)),
        );
    }

    /// "cudaLaunchKernel" for a runtime callback id (CUPTI's name without its `_v7000` suffix).
    fn callback_name(&mut self, runtime: bool, cbid: u32) -> String {
        let domain = match runtime {
            true => sys::CUpti_CallbackDomain::CUPTI_CB_DOMAIN_RUNTIME_API,
            false => sys::CUpti_CallbackDomain::CUPTI_CB_DOMAIN_DRIVER_API,
        };
        (self.names.entry((runtime as u32, cbid)))
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
}

/// A `cudaEventRecord`: its stream and event, and its call's correlation (no span of its own).
fn event_record(r: Rec, process: u32, line: &mut String) {
    type T = sys::CUpti_ActivityCudaEvent;
    let _ = write!(
        line,
        r#"{{"ph":"M","name":"cuda_event_record","pid":{process},"args":{{"process":{process},"stream":{},"event":{},"correlation":{}}}}}"#,
        r.u32(offset_of!(T, streamId)),
        r.u32(offset_of!(T, eventId)),
        r.u32(offset_of!(T, correlationId)),
    );
}

/// A stream as created: its flag (`trace/syncs.rs`'s words) and priority.
fn stream(r: Rec, process: u32, line: &mut String) {
    type T = sys::CUpti_ActivityStream;
    let flag = match r.u32(offset_of!(T, flag)) & 0xffff {
        1 => "blocking",
        2 => "non_blocking",
        3 => "legacy_default",
        _ => "unknown",
    };
    let _ = write!(
        line,
        r#"{{"ph":"M","name":"cuda_stream","pid":{process},"args":{{"process":{process},"stream":{},"flag":"{flag}","priority":{},"correlation":{}}}}}"#,
        r.u32(offset_of!(T, streamId)),
        r.i32(offset_of!(T, priority)),
        r.u32(offset_of!(T, correlationId)),
    );
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
        // The first version's fields, which the second keeps in place.
        type S = sys::CUpti_ActivitySynchronization;
        assert_eq!(offset_of!(S, type_), 4);
        assert_eq!(offset_of!(S, start), 8);
        assert_eq!(offset_of!(S, correlationId), 24);
        assert_eq!(offset_of!(S, streamId), 32);
        assert_eq!(offset_of!(S, cudaEventId), 36);
        type S2 = sys::CUpti_ActivitySynchronization2;
        assert_eq!(offset_of!(S2, cudaEventId), 36);
        type E = sys::CUpti_ActivityCudaEvent;
        type E2 = sys::CUpti_ActivityCudaEvent2;
        assert_eq!(offset_of!(E, correlationId), 4);
        assert_eq!(offset_of!(E, streamId), 12);
        assert_eq!(offset_of!(E, eventId), 16);
        assert_eq!(offset_of!(E2, eventId), 16);
        type T = sys::CUpti_ActivityStream;
        assert_eq!(offset_of!(T, streamId), 8);
        assert_eq!(offset_of!(T, priority), 12);
        assert_eq!(offset_of!(T, flag), 16);
        assert_eq!(offset_of!(T, correlationId), 20);
    }
}
