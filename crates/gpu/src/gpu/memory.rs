//! Memory that API-call ops and stream-ordered allocations work on.
//!
//! An implicit-synchronization experiment times one driver call, so everything else it needs
//! happens outside the timed region: the buffer a `cuMemFree` frees is allocated before the
//! trial, the one a `cuMemAlloc` allocates is freed after it, and the buffers a memset or a copy
//! uses live for the whole run. Stream-ordered allocations keep their address per op, so a later
//! `cuMemFreeAsync` finds it and the address can be read back as the op's reading.

use super::probe::call;
use crate::border::error::Error;
use crate::program::{ApiCall, OpKind, Program};
use cudarc::driver::{result, sys};
use std::ffi::c_void;

/// A buffer an op holds.
enum Buffer {
    Device(sys::CUdeviceptr),
    Host(*mut c_void),
}

impl Buffer {
    fn device(bytes: u64) -> Result<Buffer, Error> {
        // SAFETY: plain allocation, freed by `free`.
        let p = unsafe { result::malloc_sync(bytes as usize) }.map_err(call("cuMemAlloc"))?;
        Ok(Buffer::Device(p))
    }

    fn host(bytes: u64) -> Result<Buffer, Error> {
        let mut p: *mut c_void = std::ptr::null_mut();
        // SAFETY: out-pointer valid; freed by `free`.
        unsafe { sys::cuMemHostAlloc(&mut p, bytes as usize, 0) }
            .result()
            .map_err(call("cuMemHostAlloc"))?;
        Ok(Buffer::Host(p))
    }

    fn free(self) -> Result<(), Error> {
        match self {
            // SAFETY: each buffer is freed once, when the op or the trial is done with it.
            Buffer::Device(p) => unsafe { result::free_sync(p) }.map_err(call("cuMemFree")),
            // SAFETY: as above.
            Buffer::Host(p) => unsafe { sys::cuMemFreeHost(p) }
                .result()
                .map_err(call("cuMemFreeHost")),
        }
    }

    fn ptr(&self) -> sys::CUdeviceptr {
        match *self {
            Buffer::Device(p) => p,
            Buffer::Host(p) => p as sys::CUdeviceptr,
        }
    }
}

/// Per op, the buffers it holds; plus what the timed region allocated, to free after it.
pub struct Memory {
    held: Vec<Vec<Buffer>>,
    /// Per op, the address a stream-ordered allocation returned in this trial.
    async_addr: Vec<Option<sys::CUdeviceptr>>,
    made: Vec<Buffer>,
}

impl Memory {
    /// Allocates the buffers that live for the whole run (memset and copy targets).
    pub fn new(program: &Program) -> Result<Memory, Error> {
        let mut memory = Memory {
            held: (0..program.ops.len()).map(|_| Vec::new()).collect(),
            async_addr: vec![None; program.ops.len()],
            made: Vec::new(),
        };
        for (i, op) in program.ops.iter().enumerate() {
            if let OpKind::Api { call, bytes } = op.kind {
                let n = match call {
                    ApiCall::Memset => 1,
                    ApiCall::CopyD2D => 2,
                    _ => 0,
                };
                for _ in 0..n {
                    memory.held[i].push(Buffer::device(bytes)?);
                }
            }
        }
        Ok(memory)
    }

    /// Before a trial: the buffers the trial's frees will free.
    pub fn prepare(&mut self, program: &Program) -> Result<(), Error> {
        for (i, op) in program.ops.iter().enumerate() {
            match op.kind {
                OpKind::Api {
                    call: ApiCall::MemFree,
                    bytes,
                } if self.held[i].is_empty() => self.held[i].push(Buffer::device(bytes)?),
                OpKind::Api {
                    call: ApiCall::HostFree,
                    bytes,
                } if self.held[i].is_empty() => self.held[i].push(Buffer::host(bytes)?),
                _ => {}
            }
            self.async_addr[i] = None;
        }
        Ok(())
    }

    /// Issues API-call op `i`.
    pub fn api(&mut self, i: usize, call_kind: ApiCall, bytes: u64) -> Result<(), Error> {
        match call_kind {
            ApiCall::MemAlloc => {
                let b = Buffer::device(bytes)?;
                self.made.push(b);
            }
            ApiCall::HostAlloc => {
                let b = Buffer::host(bytes)?;
                self.made.push(b);
            }
            ApiCall::MemFree | ApiCall::HostFree => {
                if let Some(b) = self.held[i].pop() {
                    b.free()?;
                }
            }
            ApiCall::Memset => {
                let p = self.held[i][0].ptr();
                // SAFETY: `bytes` bytes allocated in `new`.
                unsafe { sys::cuMemsetD8_v2(p, 0, bytes as usize) }
                    .result()
                    .map_err(call("cuMemsetD8"))?;
            }
            ApiCall::CopyD2D => {
                let (dst, src) = (self.held[i][0].ptr(), self.held[i][1].ptr());
                // SAFETY: both hold `bytes` bytes, allocated in `new`.
                unsafe { sys::cuMemcpyDtoD_v2(dst, src, bytes as usize) }
                    .result()
                    .map_err(call("cuMemcpyDtoD"))?;
            }
        }
        Ok(())
    }

    /// `cuMemAllocAsync` for op `i`; returns the address.
    pub fn alloc_async(
        &mut self,
        i: usize,
        stream: sys::CUstream,
        bytes: u64,
    ) -> Result<sys::CUdeviceptr, Error> {
        let mut p: sys::CUdeviceptr = 0;
        // SAFETY: out-pointer valid; freed by the program's free op or after the trial.
        unsafe { sys::cuMemAllocAsync(&mut p, bytes as usize, stream) }
            .result()
            .map_err(call("cuMemAllocAsync"))?;
        self.async_addr[i] = Some(p);
        Ok(p)
    }

    /// `cuMemFreeAsync` of what op `alloc` allocated.
    pub fn free_async(&mut self, alloc: usize, stream: sys::CUstream) -> Result<(), Error> {
        if let Some(p) = self.async_addr[alloc].take() {
            // SAFETY: allocated by `alloc_async` in this trial, freed once.
            unsafe { sys::cuMemFreeAsync(p, stream) }
                .result()
                .map_err(call("cuMemFreeAsync"))?;
        }
        Ok(())
    }

    /// After a trial's final synchronize: frees what the timed region allocated.
    pub fn after_trial(&mut self) -> Result<(), Error> {
        for b in self.made.drain(..) {
            b.free()?;
        }
        let mut left = false;
        for p in self.async_addr.iter_mut().filter_map(Option::take) {
            // SAFETY: a stream-ordered allocation the program left allocated; the context is idle.
            unsafe { sys::cuMemFreeAsync(p, std::ptr::null_mut()) }
                .result()
                .map_err(call("cuMemFreeAsync"))?;
            left = true;
        }
        if left {
            result::ctx::synchronize().map_err(call("cuCtxSynchronize"))?;
        }
        Ok(())
    }
}

impl Drop for Memory {
    fn drop(&mut self) {
        let _ = self.after_trial();
        for b in self.held.iter_mut().flat_map(|h| h.drain(..)) {
            let _ = b.free();
        }
    }
}
