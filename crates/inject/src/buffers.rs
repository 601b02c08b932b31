//! CUPTI's activity buffers: found by name, asked for, walked and freed. Shared by the two users
//! of CUPTI's activity API: the injection (`inject.rs`) and the lab's copy witness
//! (`stream_litmus`'s `gpu/cupti.rs`), each with its own callback for completed buffers.

use cudarc::cupti::result::activity;
use cudarc::cupti::sys;
use std::alloc::{alloc, dealloc, Layout};

/// The injection library's buffers: a traced program makes many records between flushes.
pub const TRACE_BUFFER_BYTES: usize = 4 << 20;
/// The copy witness's buffers: a program's trials make a few hundred records (tens of KiB), and
/// after each forced flush CUPTI's next kernel launch paid for the new buffer in proportion to its
/// size (NVIDIA H200, CUDA 13.0: about 2.5 ms for 4 MiB, 0.6 ms for 256 KiB, the same for
/// 64 KiB).
pub const WITNESS_BUFFER_BYTES: usize = 256 << 10;
const BUFFER_ALIGN: usize = 8;

/// The name under which the loader finds CUPTI, if it does. cudarc's own loader would panic on a
/// missing library, so CUPTI is probed first.
pub fn find_cupti() -> Option<String> {
    [
        "libcupti.so",
        "libcupti.so.13",
        "libcupti.so.12",
        "libcupti.so.11",
    ]
    .into_iter()
    // SAFETY: loading CUPTI runs no initialisation that touches our state; it is dropped at once.
    .find(|name| unsafe { libloading::Library::new(*name) }.is_ok())
    .map(str::to_owned)
}

/// Frees a buffer [`requested`] gave CUPTI.
///
/// # Safety
/// `buffer` came from [`requested`] with `size` bytes and is not used after.
unsafe fn release(buffer: *mut u8, size: usize) {
    if let Some(layout) = layout(size) {
        // SAFETY: the caller's promise; same layout as the allocation.
        unsafe { dealloc(buffer, layout) }
    }
}

/// The layout of a buffer of `bytes` (none for 0 bytes, which is never allocated).
fn layout(bytes: usize) -> Option<Layout> {
    Layout::from_size_align(bytes, BUFFER_ALIGN)
        .ok()
        .filter(|l| l.size() > 0)
}

/// CUPTI's buffer request: one buffer of `BYTES` ([`TRACE_BUFFER_BYTES`] or
/// [`WITNESS_BUFFER_BYTES`]), freed by [`each_record`] once walked.
///
/// # Safety
/// Called by CUPTI with valid out-pointers.
pub unsafe extern "C" fn requested<const BYTES: usize>(
    buffer: *mut *mut u8,
    size: *mut usize,
    max_records: *mut usize,
) {
    // SAFETY: CUPTI passes valid out-pointers; the buffer is freed in `each_record`.
    unsafe {
        let p = layout(BYTES).map_or(std::ptr::null_mut(), |l| alloc(l));
        *buffer = p;
        *size = if p.is_null() { 0 } else { BYTES };
        *max_records = 0;
    }
}

/// Calls `f` with each complete record of a buffer CUPTI handed back, then frees the buffer:
/// the walk both buffer callbacks share (the copy witness's and the injection library's).
///
/// The buffer is freed with the `size` CUPTI hands back with it (the size [`requested`] set),
/// not with the caller's own size: a process has one pair of callbacks, so where the lab runs
/// under `stream-litmus trace` its callback also gets back the injection library's 4 MiB
/// buffers, asked for before the lab registered its own.
///
/// # Safety
/// `buffer` came from [`requested`] with `size` bytes (or is null) and holds `valid` bytes of
/// CUPTI records; it is not used after.
pub unsafe fn each_record(
    buffer: *mut u8,
    size: usize,
    valid: usize,
    mut f: impl FnMut(*const u8),
) {
    if buffer.is_null() {
        return;
    }
    let mut record: *mut sys::CUpti_Activity = std::ptr::null_mut();
    // SAFETY: the caller's promise.
    while unsafe { activity::get_next_record(buffer, valid, &mut record) }.is_ok() {
        f(record as *const u8);
    }
    // SAFETY: allocated by `requested`, done with.
    unsafe { release(buffer, size) };
}
