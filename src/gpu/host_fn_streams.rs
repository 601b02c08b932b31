//! The stream of each host function a traced program enqueues, for `stream-litmus trace`.
//!
//! CUPTI's activity records name a `cuLaunchHostFunc` or `cuStreamAddCallback` call but not the
//! stream it was enqueued on, and a host function is a stream op like any: the ops after it on
//! its stream wait for it. The callback API hands each call's parameters as the call enters, so
//! the injection subscribes to those four calls (and nothing else: every other call keeps its
//! cost) and writes, per call, its correlation and CUPTI's id of its stream, as a metadata line
//! the trace reader joins to the call (`trace/host_fns.rs`). Optional: a CUPTI that refuses the
//! subscription (another tool holds it) is a note, and the host functions' streams stay unknown.

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
pub(super) fn record() -> Result<(), String> {
    let mut subscriber: sys::CUpti_SubscriberHandle = std::ptr::null_mut();
    // SAFETY: an out-pointer to a handle, and a callback that never unwinds into CUPTI.
    let ok = unsafe { sys::cuptiSubscribe(&mut subscriber, Some(entered), std::ptr::null_mut()) };
    if ok != sys::CUptiResult::CUPTI_SUCCESS {
        return Err(format!(
            "host functions' streams are not recorded: cuptiSubscribe failed ({ok:?}; another \
             tool may hold CUPTI's callbacks)"
        ));
    }
    for (cbid, _) in CALLS {
        let domain = sys::CUpti_CallbackDomain::CUPTI_CB_DOMAIN_DRIVER_API;
        // SAFETY: the handle CUPTI gave above, a domain and a callback id of that domain.
        let ok = unsafe { sys::cuptiEnableCallback(1, subscriber, domain, cbid as u32) };
        if ok != sys::CUptiResult::CUPTI_SUCCESS {
            return Err(format!(
                "host functions' streams are not recorded: cuptiEnableCallback({cbid:?}) \
                 failed ({ok:?})"
            ));
        }
    }
    Ok(())
}

/// The stream a host function call names, as CUPTI's stream id.
///
/// # Safety
/// `data` is the `CUpti_CallbackData` CUPTI hands a driver-API callback of id `cbid`.
unsafe fn stream_of(cbid: u32, data: &sys::CUpti_CallbackData) -> Option<u32> {
    let &(which, per_thread) = CALLS.iter().find(|(c, _)| *c as u32 == cbid)?;
    if data.functionParams.is_null() {
        return None;
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
    // SAFETY: the call's own context and stream, and an out-pointer.
    let ok =
        unsafe { sys::cuptiGetStreamIdEx(data.context as _, stream as _, per_thread, &mut id) };
    (ok == sys::CUptiResult::CUPTI_SUCCESS).then_some(id)
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
        // SAFETY: the data of a callback of id `cbid`, as CUPTI promises.
        let Some(stream) = (unsafe { stream_of(cbid, data) }) else {
            return;
        };
        let process = std::process::id();
        let mut line = String::with_capacity(160);
        let _ = writeln!(
            line,
            r#"{{"ph":"M","name":"host_fn_stream","pid":{process},"args":{{"process":{process},"correlation":{},"stream":{stream}}}}}"#,
            data.correlationId
        );
        super::inject::write_line(&line);
    });
}
