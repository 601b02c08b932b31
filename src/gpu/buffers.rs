//! The program's buffers: allocated once per run, refilled before every trial, read back after.
//!
//! Everything here happens outside the timed region, so a copy's time is the copy's alone. Device
//! buffers are set with `cuMemsetD32` (an `f32` fill value is a 32-bit pattern); host buffers are
//! written by the CPU, which also touches every page of a pageable buffer before the copy that
//! reads it. After a trial each buffer's memory type is asked of the driver, and buffers marked
//! for reading back are summarized (see `crate::contents`).

use super::probe::call;
use crate::contents::{Contents, MemoryKind};
use crate::error::Error;
use crate::program::{BufferId, Place, Program};
use cudarc::driver::{result, sys};
use std::ffi::c_void;

enum Memory {
    Device(sys::CUdeviceptr, usize),
    Pinned(*mut f32, usize),
    Pageable(Vec<f32>),
}

/// The buffers of one program, indexed like `Program::buffers`.
pub struct Buffers {
    memory: Vec<Memory>,
    fills: Vec<f32>,
    read_back: Vec<bool>,
}

impl Buffers {
    pub fn alloc(program: &Program) -> Result<Buffers, Error> {
        let mut buffers = Buffers {
            memory: Vec::with_capacity(program.buffers.len()),
            fills: program.buffers.iter().map(|b| b.fill as f32).collect(),
            read_back: program.buffers.iter().map(|b| b.read_back).collect(),
        };
        for b in &program.buffers {
            let n = b.elements() as usize;
            let m = match b.place {
                // SAFETY: plain allocation, freed in Drop.
                Place::Device => Memory::Device(
                    unsafe { result::malloc_sync(b.bytes as usize) }.map_err(call("cuMemAlloc"))?,
                    n,
                ),
                Place::Pinned => {
                    let mut p: *mut c_void = std::ptr::null_mut();
                    // SAFETY: out-pointer valid; flags 0 (not write-combined: the CPU reads it
                    // back); freed in Drop.
                    unsafe { sys::cuMemHostAlloc(&mut p, b.bytes as usize, 0) }
                        .result()
                        .map_err(call("cuMemHostAlloc"))?;
                    Memory::Pinned(p as *mut f32, n)
                }
                Place::Pageable => Memory::Pageable(vec![0f32; n]),
            };
            buffers.memory.push(m);
        }
        Ok(buffers)
    }

    /// The address a copy or kernel uses.
    pub fn ptr(&self, b: BufferId) -> sys::CUdeviceptr {
        match &self.memory[b.0] {
            Memory::Device(p, _) => *p,
            Memory::Pinned(p, _) => *p as sys::CUdeviceptr,
            Memory::Pageable(v) => v.as_ptr() as sys::CUdeviceptr,
        }
    }

    /// Sets every element to its fill value; the device part is complete when this returns.
    pub fn fill(&mut self) -> Result<(), Error> {
        for (m, &fill) in self.memory.iter_mut().zip(&self.fills) {
            match m {
                // SAFETY: `n` elements were allocated.
                Memory::Device(p, n) => unsafe { sys::cuMemsetD32_v2(*p, fill.to_bits(), *n) }
                    .result()
                    .map_err(call("cuMemsetD32"))?,
                Memory::Pinned(p, n) => {
                    // SAFETY: `n` elements were allocated; no copy runs between trials.
                    unsafe { std::slice::from_raw_parts_mut(*p, *n) }.fill(fill)
                }
                Memory::Pageable(v) => v.fill(fill),
            }
        }
        Ok(())
    }

    /// After a trial: each buffer's memory type, and the contents of those marked for reading.
    pub fn contents(&self) -> Result<Vec<Contents>, Error> {
        let mut out = Vec::with_capacity(self.memory.len());
        for (i, m) in self.memory.iter().enumerate() {
            let id = BufferId(i);
            let memory = memory_kind(self.ptr(id));
            let data: Vec<f32> = if !self.read_back[i] {
                Vec::new()
            } else {
                match m {
                    Memory::Device(p, n) => {
                        let mut v = vec![0f32; *n];
                        // SAFETY: `n` elements on both sides; the context is idle.
                        unsafe { result::memcpy_dtoh_sync(&mut v, *p) }
                            .map_err(call("cuMemcpyDtoH"))?;
                        v
                    }
                    // SAFETY: `n` elements were allocated; the context is idle.
                    Memory::Pinned(p, n) => unsafe { std::slice::from_raw_parts(*p, *n) }.to_vec(),
                    Memory::Pageable(v) => v.clone(),
                }
            };
            out.push(Contents::summarize(id, memory, &data));
        }
        Ok(out)
    }
}

/// `cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_MEMORY_TYPE)`; an address the driver does not know
/// (pageable memory) is an error there, and unregistered here.
fn memory_kind(ptr: sys::CUdeviceptr) -> MemoryKind {
    let mut kind: u32 = 0;
    // SAFETY: writes one unsigned int.
    let r = unsafe {
        sys::cuPointerGetAttribute(
            &mut kind as *mut u32 as *mut c_void,
            sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
            ptr,
        )
    };
    if r != sys::CUresult::CUDA_SUCCESS {
        return MemoryKind::Unregistered;
    }
    match kind {
        k if k == sys::CUmemorytype::CU_MEMORYTYPE_HOST as u32 => MemoryKind::Host,
        k if k == sys::CUmemorytype::CU_MEMORYTYPE_DEVICE as u32 => MemoryKind::Device,
        k if k == sys::CUmemorytype::CU_MEMORYTYPE_UNIFIED as u32 => MemoryKind::Unified,
        _ => MemoryKind::Unregistered,
    }
}

impl Drop for Buffers {
    fn drop(&mut self) {
        for m in self.memory.drain(..) {
            // SAFETY: allocated in `alloc`, freed once, after the executor synchronized.
            match m {
                Memory::Device(p, _) => {
                    let _ = unsafe { result::free_sync(p) };
                }
                Memory::Pinned(p, _) => {
                    let _ = unsafe { sys::cuMemFreeHost(p as *mut c_void) };
                }
                Memory::Pageable(_) => {}
            }
        }
    }
}
