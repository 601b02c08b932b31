//! Driver objects a program needs, created before the first op is issued and destroyed after the
//! last trial: streams of every kind, events, the stamp buffer (a block of the run's pool).
//! Owning them here (rather than through cudarc's safe wrappers) keeps every stream kind uniform
//! and keeps cudarc's implicit event tracking out of the experiment. Streams and events are made
//! per program, not pooled: with `CUDA_DEVICE_MAX_CONNECTIONS` a stream's hardware queue is
//! chosen when it is created, so a reused stream could change what a claim observes.

use super::buffers::{Block, Driver};
use super::kernels::Kernels;
use super::pool::{Allocator, Pool};
use super::probe::call;
use crate::border::error::Error;
use crate::program::{EventId, OpKind, Place, Priority, Stream, StreamId, StreamKind, SyncTarget};
use cudarc::driver::{result, sys};

/// The streams of one program, indexed like `Program::streams`.
pub struct Streams {
    handles: Vec<sys::CUstream>,
    owned: Vec<bool>,
}

impl Streams {
    pub fn create(decls: &[Stream]) -> Result<Streams, Error> {
        let mut streams = Streams {
            handles: Vec::with_capacity(decls.len()),
            owned: Vec::with_capacity(decls.len()),
        };
        for decl in decls {
            let (handle, owned) = match decl.kind {
                StreamKind::LegacyNull => (std::ptr::null_mut(), false),
                // CU_STREAM_PER_THREAD, see the driver API's stream synchronization behavior.
                StreamKind::PerThread => (0x2 as sys::CUstream, false),
                StreamKind::Blocking | StreamKind::NonBlocking => {
                    (create(decl.kind, decl.priority)?, true)
                }
            };
            streams.handles.push(handle);
            streams.owned.push(owned);
        }
        Ok(streams)
    }

    pub fn get(&self, i: usize) -> sys::CUstream {
        self.handles[i]
    }
}

impl Drop for Streams {
    fn drop(&mut self) {
        for (&h, &owned) in self.handles.iter().zip(&self.owned) {
            if owned {
                // SAFETY: `h` was created by `create` for these streams (`owned`), is destroyed
                // only here, once, and the executor synchronized the context before dropping it.
                let _ = unsafe { result::stream::destroy(h) };
            }
        }
    }
}

/// A new blocking or non-blocking stream, with its priority if it has one. Priorities are
/// resolved with `cuCtxGetStreamPriorityRange`: lowest is its least, highest its greatest.
fn create(kind: StreamKind, priority: Option<Priority>) -> Result<sys::CUstream, Error> {
    let flags = || match kind {
        StreamKind::NonBlocking => result::stream::StreamKind::NonBlocking,
        _ => result::stream::StreamKind::Default,
    };
    match priority {
        None => result::stream::create(flags()).map_err(call("cuStreamCreate")),
        Some(p) => {
            let (least, greatest) = result::stream::get_priority_range()
                .map_err(call("cuCtxGetStreamPriorityRange"))?;
            let value = match p {
                Priority::Lowest => least,
                Priority::Highest => greatest,
            };
            result::stream::create_with_priority(flags(), value)
                .map_err(call("cuStreamCreateWithPriority"))
        }
    }
}

/// The program's events: without timing, unless an elapsed-time op reads them.
pub struct Events {
    handles: Vec<sys::CUevent>,
}

impl Events {
    pub fn create(program: &crate::program::Program) -> Result<Events, Error> {
        let mut events = Events {
            handles: Vec::with_capacity(program.events.len()),
        };
        for i in 0..program.events.len() {
            let flags = if program.is_timed_event(crate::program::EventId(i)) {
                sys::CUevent_flags::CU_EVENT_DEFAULT
            } else {
                sys::CUevent_flags::CU_EVENT_DISABLE_TIMING
            };
            let e = result::event::create(flags).map_err(call("cuEventCreate"))?;
            events.handles.push(e);
        }
        Ok(events)
    }

    pub fn get(&self, i: usize) -> sys::CUevent {
        self.handles[i]
    }
}

impl Drop for Events {
    fn drop(&mut self) {
        for &e in &self.handles {
            // SAFETY: `e` was created by `Events::create` for these events and is destroyed only
            // here, once, when nothing records or waits on it any more.
            let _ = unsafe { result::event::destroy(e) };
        }
    }
}

/// A device allocation of `u64` words: its own, or a block of the run's pool.
pub struct DeviceWords {
    ptr: sys::CUdeviceptr,
    len: usize,
    /// The pool block behind `ptr` and its size, when it came from the pool.
    pooled: Option<(Block, usize)>,
}

impl DeviceWords {
    pub fn alloc(len: usize) -> Result<DeviceWords, Error> {
        let bytes = len.max(1) * 8;
        // SAFETY: a plain device allocation of `bytes` (at least 8) bytes in the current
        // context; the pointer is owned by the returned value and freed once, in its Drop.
        let ptr = unsafe { result::malloc_sync(bytes) }.map_err(call("cuMemAlloc"))?;
        Ok(DeviceWords {
            ptr,
            len,
            pooled: None,
        })
    }

    /// `len` words from `pool`, and whether they were reused. Sizes are rounded up to a power of
    /// two (at least 4 KiB), so that programs of similar shapes share a block; only the first
    /// `len` words are ever zeroed, written or read. Whatever the last user left there is cleared
    /// by [`DeviceWords::zero`], which the executor calls before every trial.
    pub fn take(len: usize, pool: &mut Pool<Driver>) -> Result<(DeviceWords, bool), Error> {
        let bytes = (len.max(1) * 8).next_power_of_two().max(4096);
        let (block, reused) = pool.take(Place::Device, bytes)?;
        Ok((
            DeviceWords {
                ptr: block.ptr(),
                len,
                pooled: Some((block, bytes)),
            },
            reused,
        ))
    }

    /// Gives pooled words back to `pool` (own allocations are freed); only once nothing on the
    /// GPU uses them.
    pub fn release(&mut self, pool: &mut Pool<Driver>) {
        if let Some((block, bytes)) = self.pooled.take() {
            pool.give(Place::Device, bytes, block);
            self.ptr = 0; // nothing left to free
        }
    }

    /// Device address of word `i`.
    /// Words held.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn addr(&self, i: usize) -> sys::CUdeviceptr {
        self.ptr + 8 * i as u64
    }

    /// Zeroes the buffer and waits for it.
    pub fn zero(&self) -> Result<(), Error> {
        // SAFETY: `ptr` is this value's live allocation of `len.max(1) * 8` bytes, exactly the
        // range set.
        unsafe { result::memset_d8_sync(self.ptr, 0, self.len.max(1) * 8) }
            .map_err(call("cuMemsetD8"))
    }

    /// Zeroes the buffer with the fill kernel on the legacy default stream (see
    /// `Buffers::fill_on`); the caller synchronizes.
    pub fn zero_on(&self, kernels: &Kernels) -> Result<(), Error> {
        kernels.launch_fill(std::ptr::null_mut(), self.ptr, 2 * self.len as u64, 0)
    }

    /// Copies the whole buffer into `out` (which must have the same length).
    pub fn read(&self, out: &mut [u64]) -> Result<(), Error> {
        assert_eq!(out.len(), self.len);
        if out.is_empty() {
            return Ok(());
        }
        // SAFETY: `out` has exactly `len` words (asserted above), as does the live allocation
        // behind `ptr`, so the copy stays inside both.
        unsafe { result::memcpy_dtoh_sync(out, self.ptr) }.map_err(call("cuMemcpyDtoH"))
    }
}

impl Drop for DeviceWords {
    fn drop(&mut self) {
        match self.pooled.take() {
            Some((block, _)) => Driver::free(block),
            None if self.ptr == 0 => {} // given back to the pool
            None => {
                // SAFETY: `ptr` was allocated by `alloc` and is not pooled (`pooled` is None and
                // `ptr` non-zero); it is freed only here, once, after the executor synchronized.
                let _ = unsafe { result::free_sync(self.ptr) };
            }
        }
    }
}

/// Issues the ops both executors issue the same way (event records and waits, host syncs of a
/// stream, an event or the current context), with `stream` and `event` mapping ids to the
/// program's handles. Returns whether `kind` was one of them.
pub fn issue_ordering(
    kind: &OpKind,
    stream: impl Fn(StreamId) -> sys::CUstream,
    event: impl Fn(EventId) -> sys::CUevent,
) -> Result<bool, Error> {
    match *kind {
        OpKind::Record {
            stream: s,
            event: e,
        } => {
            // SAFETY: `stream` and `event` map the ids to the caller's handles, created for this
            // program and alive until its teardown.
            unsafe { result::event::record(event(e), stream(s)) }.map_err(call("cuEventRecord"))?
        }
        OpKind::Wait {
            stream: s,
            event: e,
        } => {
            // SAFETY: `stream` and `event` map the ids to the caller's handles, created for this
            // program and alive until its teardown; the flags are the default ones.
            unsafe {
                result::stream::wait_event(
                    stream(s),
                    event(e),
                    sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT,
                )
            }
            .map_err(call("cuStreamWaitEvent"))?
        }
        OpKind::HostSync { target } => match target {
            // SAFETY: `stream` maps the id to the caller's handle, alive until the program's
            // teardown.
            SyncTarget::Stream(s) => unsafe { result::stream::synchronize(stream(s)) }
                .map_err(call("cuStreamSynchronize"))?,
            // SAFETY: `event` maps the id to the caller's handle, alive until the program's
            // teardown.
            SyncTarget::Event(e) => unsafe { result::event::synchronize(event(e)) }
                .map_err(call("cuEventSynchronize"))?,
            SyncTarget::Device => result::ctx::synchronize().map_err(call("cuCtxSynchronize"))?,
        },
        _ => return Ok(false),
    }
    Ok(true)
}
