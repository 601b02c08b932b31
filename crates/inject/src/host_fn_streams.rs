//! The stream of each host function a traced program enqueues, for `stream-litmus trace`.
//!
//! CUPTI's activity records name a `cuLaunchHostFunc` or `cuStreamAddCallback` call but not the
//! stream it was enqueued on, and a host function is a stream op like any: the ops after it on
//! its stream wait for it. The callback API hands each call's parameters as the call enters, so
//! the injection subscribes to those four calls (and nothing else: every other call keeps its
//! cost) and writes, per call, its correlation and CUPTI's id of its stream, as a metadata line
//! the trace reader joins to the call (`trace/host_fns.rs`). Optional: a CUPTI that refuses the
//! subscription (another tool holds it) is a note, and the host functions' streams stay unknown.

use crate::inject_error::InjectError;
use cudarc::cupti::sys;
use std::ffi::c_void;
use std::fmt::Write as _;

use sys::CUpti_driver_api_trace_cbid_enum as Cbid;

/// The calls that enqueue a host function, with whether they name the per-thread default
/// stream when given the null stream (`_ptsz`).
const CALLS: [(Cbid, u8); 4] = [
    (Cbid::CUPTI_DRIVER_TRACE_CBID_cuLaunchHostFunc, 0),
    (Cbid::CUPTI_DRIVER_TRACE_CBID_cuLaunchHostFunc_ptsz, 1),
    (Cbid::CUPTI_DRIVER_TRACE_CBID_cuStreamAddCallback, 0),
    (Cbid::CUPTI_DRIVER_TRACE_CBID_cuStreamAddCallback_ptsz, 1),
];

/// Subscribes to the calls that enqueue host functions; why not, where CUPTI refused.
pub(crate) fn record() -> Result<(), InjectError> {
    let mut subscriber: sys::CUpti_SubscriberHandle = std::ptr::null_mut();
    // SAFETY: an out-pointer to a handle, and a callback that never unwinds into CUPTI.
    let ok = unsafe { sys::cuptiSubscribe(&mut subscriber, Some(entered), std::ptr::null_mut()) };
    if ok != sys::CUptiResult::CUPTI_SUCCESS {
        return Err(InjectError::Subscribe(format!("{ok:?}")));
    }
    for (cbid, _) in CALLS {
        let domain = sys::CUpti_CallbackDomain::CUPTI_CB_DOMAIN_DRIVER_API;
        // SAFETY: the handle CUPTI gave above, a domain and a callback id of that domain.
        let ok = unsafe { sys::cuptiEnableCallback(1, subscriber, domain, cbid as u32) };
        if ok != sys::CUptiResult::CUPTI_SUCCESS {
            return Err(InjectError::EnableCallback {
                call: format!("cuptiEnableCallback({cbid:?})"),
                code: format!("{ok:?}"),
            });
        }
    }
    Ok(())
}

/// The stream a host function call names, as CUPTI's stream id; why not, where CUPTI would not
/// say.
///
/// # Safety
/// `data` is the `CUpti_CallbackData` CUPTI hands a driver-API callback of id `cbid`.
unsafe fn stream_of(cbid: u32, data: &sys::CUpti_CallbackData) -> Result<u32, InjectError> {
    let Some(&(which, per_thread)) = CALLS.iter().find(|(c, _)| *c as u32 == cbid) else {
        return Err(InjectError::NotOurs(cbid));
    };
    if data.functionParams.is_null() {
        return Err(InjectError::NoParameters);
    }
    // Both calls' parameters begin with the stream.
    let stream = match which {
        Cbid::CUPTI_DRIVER_TRACE_CBID_cuLaunchHostFunc
        | Cbid::CUPTI_DRIVER_TRACE_CBID_cuLaunchHostFunc_ptsz => {
            // SAFETY: the parameters of this call, as the caller promises.
            unsafe { (*(data.functionParams as *const sys::cuLaunchHostFunc_params)).hStream }
        }
        _ => {
            // SAFETY: as above, for cuStreamAddCallback.
            unsafe { (*(data.functionParams as *const sys::cuStreamAddCallback_params)).hStream }
        }
    };
    let mut id = 0u32;
    // SAFETY: no context (CUPTI's documented usual argument), the call's stream, an out-pointer.
    let ex =
        unsafe { sys::cuptiGetStreamIdEx(std::ptr::null_mut(), stream as _, per_thread, &mut id) };
    if ex == sys::CUptiResult::CUPTI_SUCCESS {
        return Ok(id);
    }
    // SAFETY: as above; the older call, without the per-thread flag.
    let plain = unsafe { sys::cuptiGetStreamId(data.context as _, stream as _, &mut id) };
    match plain == sys::CUptiResult::CUPTI_SUCCESS {
        true => Ok(id),
        false => Err(InjectError::StreamId {
            ex: format!("{ex:?}"),
            plain: format!("{plain:?}"),
            context: format!("{:?}", data.context),
            stream: format!("{stream:?}"),
        }),
    }
}

/// Whether a failure to read a stream was written down already (once is enough).
static TOLD: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Host-function calls seen and streams written, for the process's summary line at exit.
static SEEN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
static WRITTEN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The process's summary, as a metadata line (ignored by the reader; read by a person who wonders
/// why a host function has no stream): calls seen and streams written.
pub(crate) fn summary() -> String {
    use std::sync::atomic::Ordering::Relaxed;
    format!(
        "{{\"ph\":\"M\",\"name\":\"host_fn_streams\",\"pid\":{},\"args\":{{\"calls\":{},\"written\":{}}}}}\n",
        std::process::id(),
        SEEN.load(Relaxed),
        WRITTEN.load(Relaxed)
    )
}

unsafe extern "C" fn entered(
    _userdata: *mut c_void,
    domain: sys::CUpti_CallbackDomain,
    cbid: sys::CUpti_CallbackId,
    cbdata: *const c_void,
) {
    let _ = std::panic::catch_unwind(|| {
        if domain != sys::CUpti_CallbackDomain::CUPTI_CB_DOMAIN_DRIVER_API || cbdata.is_null() {
            return;
        }
        // SAFETY: CUPTI hands a driver-API callback its `CUpti_CallbackData`.
        let data = unsafe { &*(cbdata as *const sys::CUpti_CallbackData) };
        if data.callbackSite != sys::CUpti_ApiCallbackSite::CUPTI_API_ENTER {
            return;
        }
        SEEN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // SAFETY: the data of a callback of id `cbid`, as CUPTI promises.
        let stream = match unsafe { stream_of(cbid, data) } {
            Ok(stream) => stream,
            Err(e) => {
                if !TOLD.swap(true, std::sync::atomic::Ordering::Relaxed) {
                    crate::trace_out::note(&format!(
                        "a host function's stream is not recorded: {e}"
                    ));
                }
                return;
            }
        };
        let process = std::process::id();
        let mut line = String::with_capacity(160);
        let _ = writeln!(
            line,
            r#"{{"ph":"M","name":"host_fn_stream","pid":{process},"args":{{"process":{process},"correlation":{},"stream":{stream}}}}}"#,
            data.correlationId
        );
        crate::trace_out::write_line(&line);
        WRITTEN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    });
}
