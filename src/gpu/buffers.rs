//! The program's buffers: taken from the run's pool (`pool.rs`) once per program, refilled before
//! every trial, read back after, given back to the pool when the program is done.
//!
//! Everything here happens outside the timed region, so a copy's time is the copy's alone. Device
//! buffers are set with `cuMemsetD32` (an `f32` fill value is a 32-bit pattern); host buffers are
//! written by the CPU, which also touches every page of a pageable buffer before the copy that
//! reads it. After a trial each buffer's memory type is asked of the driver, and buffers marked
//! for reading back are summarized (see `crate::contents`).

use super::pool::{Allocator, Pool};
use super::probe::call;
use crate::contents::{Contents, MemoryKind};
use crate::error::Error;
use crate::program::{Buffer, BufferId, Place};
use cudarc::driver::{result, sys};
use std::ffi::c_void;

/// Driver memory of one place: what the run's [`Pool`] keeps.
pub enum Block {
    Device(sys::CUdeviceptr, usize),
    Pinned(*mut f32, usize),
    Pageable(Vec<f32>),
}

// SAFETY: the pointers are addresses in the process-wide primary context and in page-locked host
// memory, valid from any thread; a block is only used by the thread that holds the pool's lock.
unsafe impl Send for Block {}

impl Block {
    /// The address a copy or kernel uses.
    pub fn ptr(&self) -> sys::CUdeviceptr {
        match self {
            Block::Device(p, _) => *p,
            Block::Pinned(p, _) => *p as sys::CUdeviceptr,
            Block::Pageable(v) => v.as_ptr() as sys::CUdeviceptr,
        }
    }
}

/// `cuMemAlloc`, `cuMemHostAlloc` or a `Vec`, by place.
pub struct Driver;

impl Allocator for Driver {
    type Block = Block;

    fn alloc(place: Place, bytes: usize) -> Result<Block, Error> {
        let n = bytes / 4;
        Ok(match place {
            // SAFETY: plain allocation, freed in `free`.
            Place::Device => Block::Device(
                unsafe { result::malloc_sync(bytes.max(1)) }.map_err(call("cuMemAlloc"))?,
                n,
            ),
            Place::Pinned => {
                let mut p: *mut c_void = std::ptr::null_mut();
                // SAFETY: out-pointer valid; flags 0 (not write-combined: the CPU reads it
                // back); freed in `free`.
                unsafe { sys::cuMemHostAlloc(&mut p, bytes.max(1), 0) }
                    .result()
                    .map_err(call("cuMemHostAlloc"))?;
                Block::Pinned(p as *mut f32, n)
            }
            Place::Pageable => Block::Pageable(vec![0f32; n]),
        })
    }

    fn fill(block: &mut Block, fill: f32) -> Result<(), Error> {
        match block {
            // SAFETY: `n` elements were allocated.
            Block::Device(p, n) => unsafe { sys::cuMemsetD32_v2(*p, fill.to_bits(), *n) }
                .result()
                .map_err(call("cuMemsetD32")),
            Block::Pinned(p, n) => {
                // SAFETY: `n` elements were allocated; no copy runs between trials.
                unsafe { std::slice::from_raw_parts_mut(*p, *n) }.fill(fill);
                Ok(())
            }
            Block::Pageable(v) => {
                v.fill(fill);
                Ok(())
            }
        }
    }

    fn free(block: Block) {
        // SAFETY: allocated in `alloc`, freed once, after the executor synchronized.
        match block {
            Block::Device(p, _) => {
                let _ = unsafe { result::free_sync(p) };
            }
            Block::Pinned(p, _) => {
                let _ = unsafe { sys::cuMemFreeHost(p as *mut c_void) };
            }
            Block::Pageable(_) => {}
        }
    }
}

/// The buffers of one program, indexed like `Program::buffers`, taken from the run's pool.
pub struct Buffers<A: Allocator = Driver> {
    blocks: Vec<A::Block>,
    keys: Vec<(Place, usize)>,
    fills: Vec<f32>,
    read_back: Vec<bool>,
    /// Per buffer: whether an op writes it (a copy's destination, an add's output). A buffer no
    /// op writes keeps its fill from one trial to the next, so it is filled only before the
    /// first; every buffer counts as written until [`Buffers::written_by`] says otherwise.
    written: Vec<bool>,
    filled: bool,
    /// Blocks the pool had, and blocks it had to allocate.
    pub reused: u32,
    pub allocated: u32,
}

impl<A: Allocator> Buffers<A> {
    /// Takes every buffer from `pool`. Their contents are undefined until [`Buffers::fill`].
    pub fn take(buffers: &[Buffer], pool: &mut Pool<A>) -> Result<Buffers<A>, Error> {
        let mut out = Buffers {
            blocks: Vec::with_capacity(buffers.len()),
            keys: Vec::with_capacity(buffers.len()),
            fills: buffers.iter().map(|b| b.fill as f32).collect(),
            read_back: buffers.iter().map(|b| b.read_back).collect(),
            written: vec![true; buffers.len()],
            filled: false,
            reused: 0,
            allocated: 0,
        };
        for b in buffers {
            let key = (b.place, b.bytes as usize);
            let (block, reused) = pool.take(key.0, key.1)?;
            match reused {
                true => out.reused += 1,
                false => out.allocated += 1,
            }
            out.blocks.push(block);
            out.keys.push(key);
        }
        Ok(out)
    }

    /// Which buffers the program's ops write; the others need filling once (they are only read).
    pub fn written_by(&mut self, program: &crate::program::Program) {
        use crate::program::OpKind;
        for (i, w) in self.written.iter_mut().enumerate() {
            *w = program.ops.iter().any(|op| match op.kind {
                OpKind::Copy { dst, .. } => dst.0 == i,
                OpKind::Add { out, .. } => out.0 == i,
                OpKind::AllReduce { buffer, .. } => buffer.0 == i,
                _ => false,
            });
        }
    }

    /// Sets every element to its fill value; the device part is complete when this returns. The
    /// executor calls it before every trial, so a trial never sees what another left: a buffer
    /// that no op writes still holds the fill of the first call.
    pub fn fill(&mut self) -> Result<(), Error> {
        for ((m, &fill), &written) in self.blocks.iter_mut().zip(&self.fills).zip(&self.written) {
            if written || !self.filled {
                A::fill(m, fill)?;
            }
        }
        self.filled = true;
        Ok(())
    }

    /// Gives every block back to `pool`; only once nothing on the GPU uses them any more.
    pub fn release(&mut self, pool: &mut Pool<A>) {
        for (block, (place, bytes)) in self.blocks.drain(..).zip(self.keys.drain(..)) {
            pool.give(place, bytes, block);
        }
    }

    #[cfg(test)]
    pub fn block_mut(&mut self, i: usize) -> &mut A::Block {
        &mut self.blocks[i]
    }
}

impl Buffers<Driver> {
    /// The address a copy or kernel uses.
    pub fn ptr(&self, b: BufferId) -> sys::CUdeviceptr {
        self.blocks[b.0].ptr()
    }

    /// After a trial: each buffer's memory type, and the contents of those marked for reading.
    pub fn contents(&self) -> Result<Vec<Contents>, Error> {
        let mut out = Vec::with_capacity(self.blocks.len());
        for (i, m) in self.blocks.iter().enumerate() {
            let id = BufferId(i);
            let memory = memory_kind(self.ptr(id));
            let data: Vec<f32> = if !self.read_back[i] {
                Vec::new()
            } else {
                match m {
                    Block::Device(p, n) => {
                        let mut v = vec![0f32; *n];
                        // SAFETY: `n` elements on both sides; the context is idle.
                        unsafe { result::memcpy_dtoh_sync(&mut v, *p) }
                            .map_err(call("cuMemcpyDtoH"))?;
                        v
                    }
                    // SAFETY: `n` elements were allocated; the context is idle.
                    Block::Pinned(p, n) => unsafe { std::slice::from_raw_parts(*p, *n) }.to_vec(),
                    Block::Pageable(v) => v.clone(),
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

impl<A: Allocator> Drop for Buffers<A> {
    /// Frees what was not given back (an error path): the executor synchronized first.
    fn drop(&mut self) {
        for b in self.blocks.drain(..) {
            A::free(b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::pool::fake::{allocs, Fake};
    use super::*;

    fn buffer(place: Place, bytes: u64, fill: i32) -> Buffer {
        Buffer {
            label: format!("{place:?}"),
            bytes,
            place,
            fill,
            read_back: false,
            device: 0,
        }
    }

    /// A block the pool hands to a second program still holds what the first one's trial wrote;
    /// the fill before the trial resets it to the second program's values.
    #[test]
    fn a_pooled_buffer_is_reset_before_the_next_trial() {
        let a0 = allocs();
        let mut pool: Pool<Fake> = Pool::default();
        let first = [buffer(Place::Pinned, 64, 1), buffer(Place::Device, 64, 2)];
        let mut b = Buffers::take(&first, &mut pool).unwrap();
        assert_eq!((b.reused, b.allocated), (0, 2));
        b.fill().unwrap();
        assert!(b.block_mut(0).iter().all(|&x| x == 1.0));
        b.block_mut(0).fill(9.0); // what a trial's copy wrote
        b.block_mut(1)[3] = 9.0;
        b.release(&mut pool);
        drop(b);

        let second = [
            buffer(Place::Device, 64, 5),
            buffer(Place::Pinned, 64, 4),
            buffer(Place::Pinned, 64, 6),
        ];
        let mut b = Buffers::take(&second, &mut pool).unwrap();
        assert_eq!(
            (b.reused, b.allocated),
            (2, 1),
            "same place and size: reused"
        );
        assert_eq!(allocs() - a0, 3);
        assert!(
            b.block_mut(1).contains(&9.0),
            "the pool itself resets nothing"
        );
        b.fill().unwrap();
        for (i, want) in [5.0, 4.0, 6.0].into_iter().enumerate() {
            assert!(b.block_mut(i).iter().all(|&x| x == want), "buffer {i}");
        }
    }

    /// A buffer no op writes is filled before the first trial only; one an op writes is filled
    /// before every trial, so each trial starts from the same contents either way.
    #[test]
    fn only_written_buffers_are_refilled() {
        use crate::program::{CopyDir, Program, StreamKind};
        let mut p = Program::builder("copy");
        let s = p.stream(StreamKind::NonBlocking);
        p.copy_new(s, "up", CopyDir::H2D, 64, Place::Pinned);
        let program = p.build();
        let mut pool: Pool<Fake> = Pool::default();
        let mut b = Buffers::take(&program.buffers, &mut pool).unwrap();
        b.written_by(&program);
        b.fill().unwrap();
        let (src, dst) = (
            program.buffers[0].fill as f32,
            program.buffers[1].fill as f32,
        );
        assert!(b.block_mut(0).iter().all(|&x| x == src));
        b.block_mut(1).fill(9.0); // the trial's copy wrote the destination
        b.fill().unwrap();
        assert!(
            b.block_mut(1).iter().all(|&x| x == dst),
            "written: refilled"
        );
        b.block_mut(0)[0] = 7.0; // nothing writes the source: a second fill leaves it be
        b.fill().unwrap();
        assert_eq!(b.block_mut(0)[0], 7.0, "read only: filled once");
    }
}
