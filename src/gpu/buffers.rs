//! The program's buffers: taken from the run's pool (`pool.rs`) once per program, refilled before
//! every trial, read back after, given back to the pool when the program is done.
//!
//! Everything here happens outside the timed region, so a copy's time is the copy's alone. Device
//! buffers are set by the `fill_words` kernel (an `f32` fill value is a 32-bit pattern), one
//! launch each: `cuMemsetD32` cost about 0.15 ms per call while CUPTI traced memsets. Host buffers
//! are written by the CPU, which also touches every page of a pageable buffer before the copy
//! that reads it. A buffer is refilled before every trial only where a later trial could see what
//! the last one left (see `Buffers::refill`), filled at all only where its contents can be seen
//! (see `Buffers::observed`), and not filled where the pool knows its block already holds the
//! value (see `pool.rs`). After a trial each buffer's memory type is asked of
//! the driver, and buffers marked for reading back are summarized (see `crate::contents`), device
//! ones through a pinned staging block.

use super::kernels::Kernels;
use super::pool::{Allocator, Known, Pool};
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
    /// Per buffer: whether it is refilled before every trial, not only the first: an op writes
    /// it (a copy's destination, an add's output) and what it holds can be seen (`observed`). A
    /// buffer no op writes keeps its fill from one trial to the next; one that ops write but
    /// nothing reads (a pipeline's output chunks, 64 MiB of pinned memory the CPU refilled every
    /// trial) can leave nothing that a later trial observes. Every buffer is refilled, and counts
    /// as seen and written, until [`Buffers::refills_for`] says otherwise.
    refill: Vec<bool>,
    /// Per buffer: whether what it holds can be seen at all: it is read back, or an op reads it
    /// into a buffer that can be seen (an all-reduce's buffers always count). A pipeline's input
    /// chunks flow through device chunks into output chunks nothing reads: 64 MiB of pinned
    /// memory whose contents no check can tell. Those are not filled, except a new pageable
    /// block, whose pages the fill touches (a copy from untouched pages would fault them in).
    observed: Vec<bool>,
    /// Per buffer: whether an op writes it; such a block goes back to the pool as unknown.
    written: Vec<bool>,
    /// Per buffer: what its block holds, where known (from the pool, or since its fill).
    known: Vec<Known>,
    /// Per buffer: a new pageable block, whose pages nothing has touched yet.
    untouched: Vec<bool>,
    filled: bool,
    /// Per buffer: for a device buffer read back, a pinned block of its size that the read-back
    /// copy lands in (from the pool, like the buffers): one copy at full speed instead of a copy
    /// to pageable memory the driver stages, into a new vector whose pages fault in, per trial.
    staging: Vec<Option<A::Block>>,
    /// Blocks the pool had, and blocks it had to allocate.
    pub reused: u32,
    pub allocated: u32,
}

impl<A: Allocator> Buffers<A> {
    /// Takes every buffer from `pool`. Their contents are undefined until [`Buffers::fill_with`].
    pub fn take(buffers: &[Buffer], pool: &mut Pool<A>) -> Result<Buffers<A>, Error> {
        let mut out = Buffers {
            blocks: Vec::with_capacity(buffers.len()),
            keys: Vec::with_capacity(buffers.len()),
            fills: buffers.iter().map(|b| b.fill as f32).collect(),
            read_back: buffers.iter().map(|b| b.read_back).collect(),
            refill: vec![true; buffers.len()],
            observed: vec![true; buffers.len()],
            written: vec![true; buffers.len()],
            known: Vec::with_capacity(buffers.len()),
            untouched: Vec::with_capacity(buffers.len()),
            filled: false,
            staging: Vec::with_capacity(buffers.len()),
            reused: 0,
            allocated: 0,
        };
        for b in buffers {
            let key = (b.place, b.bytes as usize);
            let want = Some((b.fill as f32).to_bits());
            let (block, reused, known) = out.take_one(pool, key, want)?;
            out.blocks.push(block);
            out.keys.push(key);
            out.known.push(known);
            out.untouched.push(!reused && b.place == Place::Pageable);
            let staged = b.read_back && b.place == Place::Device;
            let staging = match staged {
                true => Some(out.take_one(pool, (Place::Pinned, key.1), None)?.0),
                false => None,
            };
            out.staging.push(staging);
        }
        Ok(out)
    }

    fn take_one(
        &mut self,
        pool: &mut Pool<A>,
        (place, bytes): (Place, usize),
        want: Known,
    ) -> Result<(A::Block, bool, Known), Error> {
        let taken = pool.take_holding(place, bytes, want)?;
        match taken.1 {
            true => self.reused += 1,
            false => self.allocated += 1,
        }
        Ok(taken)
    }

    /// Which buffers of `program` can be seen, which ops write, and so which need refilling
    /// before every trial (see `refill` and `observed`).
    pub fn refills_for(&mut self, program: &crate::program::Program) {
        use crate::program::OpKind;
        let mut written = vec![false; self.refill.len()];
        for op in &program.ops {
            let out = match op.kind {
                OpKind::Copy { dst, .. } => dst,
                OpKind::Add { out, .. } => out,
                // In place: each rank's buffer is read and written.
                OpKind::AllReduce { buffer, .. } => buffer,
                _ => continue,
            };
            if let Some(w) = written.get_mut(out.0) {
                *w = true;
            }
        }
        self.observed = observed(program, &self.read_back);
        for (i, r) in self.refill.iter_mut().enumerate() {
            *r = written[i] && self.observed[i];
        }
        self.written = written;
    }

    /// [`Buffers::fill_with`] the allocator's own fill.
    #[cfg(test)]
    pub fn fill(&mut self) -> Result<(), Error> {
        self.fill_with(A::fill)
    }

    /// Sets every element to its fill value, each block with `set` (the executor sets device
    /// blocks with a kernel, [`Buffers::fill_on`]); the caller waits for the device part. The
    /// executor calls it before every trial, so a trial never sees what another left: a buffer
    /// not refilled (see `refill`) still holds the fill of the first call, or holds what nothing
    /// reads.
    pub fn fill_with(
        &mut self,
        mut set: impl FnMut(&mut A::Block, f32) -> Result<(), Error>,
    ) -> Result<(), Error> {
        for (i, m) in self.blocks.iter_mut().enumerate() {
            let fill = self.fills[i];
            let holds = Some(fill.to_bits());
            let needed = match (self.filled, self.observed[i]) {
                (true, _) => self.refill[i],
                (false, true) => self.known[i] != holds,
                (false, false) => self.untouched[i],
            };
            if needed {
                set(m, fill)?;
                self.known[i] = holds;
                self.untouched[i] = false;
            }
        }
        self.filled = true;
        Ok(())
    }

    /// Gives every block back to `pool`, with what it holds where no op wrote it; only once
    /// nothing on the GPU uses them any more.
    pub fn release(&mut self, pool: &mut Pool<A>) {
        for (staging, &(_, bytes)) in self.staging.drain(..).zip(&self.keys) {
            if let Some(block) = staging {
                pool.give(Place::Pinned, bytes, block);
            }
        }
        let blocks = self.blocks.drain(..).zip(self.keys.drain(..));
        for (i, (block, (place, bytes))) in blocks.enumerate() {
            let known = self.known[i].filter(|_| !self.written[i]);
            pool.give_holding(place, bytes, block, known);
        }
    }

    #[cfg(test)]
    pub fn block_mut(&mut self, i: usize) -> &mut A::Block {
        &mut self.blocks[i]
    }
}

/// Which buffers' contents can be seen (see `Buffers::observed`): the buffers read back, and,
/// working back from them, every buffer an op reads into one that can be seen.
fn observed(program: &crate::program::Program, read_back: &[bool]) -> Vec<bool> {
    use crate::program::OpKind;
    let mut seen = read_back.to_vec();
    let is = |seen: &[bool], b: BufferId| seen.get(b.0).copied().unwrap_or(false);
    for op in &program.ops {
        if let OpKind::AllReduce { buffer, .. } = op.kind {
            if let Some(x) = seen.get_mut(buffer.0) {
                *x = true;
            }
        }
    }
    // Each pass marks at least one more buffer or ends: at most one pass per buffer.
    loop {
        let mut changed = false;
        let mut mark = |seen: &mut Vec<bool>, b: BufferId| {
            if let Some(x) = seen.get_mut(b.0).filter(|x| !**x) {
                *x = true;
                changed = true;
            }
        };
        for op in &program.ops {
            match op.kind {
                OpKind::Copy { src, dst, .. } if is(&seen, dst) => mark(&mut seen, src),
                OpKind::Add { a, b, out, .. } if is(&seen, out) => {
                    mark(&mut seen, a);
                    mark(&mut seen, b);
                }
                _ => {}
            }
        }
        if !changed {
            return seen;
        }
    }
}

impl Buffers<Driver> {
    /// The address a copy or kernel uses.
    pub fn ptr(&self, b: BufferId) -> sys::CUdeviceptr {
        self.blocks[b.0].ptr()
    }

    /// [`Buffers::fill_with`] with device blocks set by the `fill_words` kernel on the legacy default
    /// stream, one launch each, instead of `cuMemsetD32`: under CUPTI's memset tracing (the copy
    /// and scenario claims) every memset cost about 0.15 ms. The caller synchronizes.
    pub fn fill_on(&mut self, kernels: &Kernels) -> Result<(), Error> {
        self.fill_with(|block, value| match block {
            Block::Device(p, n) => {
                kernels.launch_fill(std::ptr::null_mut(), *p, *n as u64, value.to_bits())
            }
            other => Driver::fill(other, value),
        })
    }

    /// After a trial: each buffer's memory type, and the contents of those marked for reading.
    /// Device buffers are copied into their pinned staging blocks together, with one wait; host
    /// buffers are summarized where they are.
    pub fn contents(&self) -> Result<Vec<Contents>, Error> {
        for (m, staging) in self.blocks.iter().zip(&self.staging) {
            if let (Block::Device(p, n @ 1..), Some(Block::Pinned(s, _))) = (m, staging) {
                // SAFETY: both blocks hold `n` elements; the context is idle, and the wait below
                // ends the copy before the staging block is read.
                unsafe {
                    sys::cuMemcpyDtoHAsync_v2(*s as *mut c_void, *p, n * 4, std::ptr::null_mut())
                }
                .result()
                .map_err(call("cuMemcpyDtoHAsync"))?;
            }
        }
        if self.staging.iter().any(Option::is_some) {
            result::ctx::synchronize().map_err(call("cuCtxSynchronize"))?;
        }
        let mut out = Vec::with_capacity(self.blocks.len());
        for (i, m) in self.blocks.iter().enumerate() {
            let id = BufferId(i);
            let memory = memory_kind(self.ptr(id));
            let unstaged;
            let data: &[f32] = match (self.read_back[i], m, &self.staging[i]) {
                (false, ..) => &[],
                // SAFETY (both): `n` elements were allocated; nothing writes them now.
                (true, Block::Device(..), Some(Block::Pinned(s, n))) => unsafe {
                    std::slice::from_raw_parts(*s, *n)
                },
                (true, Block::Pinned(p, n), _) => unsafe { std::slice::from_raw_parts(*p, *n) },
                (true, Block::Pageable(v), _) => v,
                (true, Block::Device(p, n), _) => {
                    // Not staged (`take` stages every device buffer read back): a plain copy.
                    let mut v = vec![0f32; *n];
                    // SAFETY: `n` elements on both sides; the context is idle.
                    unsafe { result::memcpy_dtoh_sync(&mut v, *p) }
                        .map_err(call("cuMemcpyDtoH"))?;
                    unstaged = v;
                    &unstaged
                }
            };
            out.push(Contents::summarize(id, memory, data));
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
        for b in self
            .blocks
            .drain(..)
            .chain(self.staging.drain(..).flatten())
        {
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

    /// Which fills a program's buffers get, before its first trial and before each later one: the
    /// fill values set, in buffer order (each test buffer has a fill of its own).
    fn fills(b: &mut Buffers<Fake>) -> Vec<f32> {
        let mut set = Vec::new();
        b.fill_with(|block, value| {
            set.push(value);
            Fake::fill(block, value)
        })
        .unwrap();
        set
    }

    /// A buffer is filled only when what it holds can be seen (read back, or read by an op into
    /// something seen), and refilled before every trial only when an op also writes it. Each
    /// trial starts from the same contents wherever they can be seen.
    #[test]
    fn only_buffers_that_can_be_seen_are_filled() {
        use crate::program::{Program, StreamKind};
        let mut p = Program::builder("copy");
        let s = p.stream(StreamKind::NonBlocking);
        let input = p.buffer("in", Place::Pinned, 64, 1);
        let data = p.buffer("data", Place::Device, 64, 2);
        let out = p.buffer("out", Place::Pinned, 64, 3);
        let seen = p.buffer("seen", Place::Device, 64, 4);
        let acc = p.buffer("acc", Place::Device, 64, 5);
        let up = p.buffer("up", Place::Pinned, 64, 6);
        p.read_back(seen);
        p.read_back(acc);
        p.copy(s, "up", input, data);
        p.copy(s, "down", data, out);
        p.copy(s, "seen", input, seen);
        p.copy(s, "acc", up, acc);
        p.add(s, "acc += acc", (acc, acc), acc, 1, 32);
        let program = p.build();
        let mut pool: Pool<Fake> = Pool::default();
        let mut b = Buffers::take(&program.buffers, &mut pool).unwrap();
        b.refills_for(&program);
        // in: read into seen; data and out: a chain nothing reads; seen and acc: read back; up:
        // read into acc.
        assert_eq!(fills(&mut b), [1.0, 4.0, 5.0, 6.0]);
        // Written and seen: refilled.
        assert_eq!(fills(&mut b), [4.0, 5.0]);
        b.release(&mut pool);
        drop(b);
        // The blocks no op wrote go back known to hold their fill: taken again, they are not
        // filled again; the written ones are.
        let mut b = Buffers::take(&program.buffers, &mut pool).unwrap();
        b.refills_for(&program);
        assert_eq!(fills(&mut b), [4.0, 5.0]);
    }

    /// A new pageable block is filled even where nothing sees its contents: the fill touches its
    /// pages, which a copy would otherwise fault in while it is timed. Taken again, it is not.
    #[test]
    fn a_new_pageable_block_is_touched_once() {
        use crate::program::{Program, StreamKind};
        let mut p = Program::builder("pageable");
        let s = p.stream(StreamKind::NonBlocking);
        let src = p.buffer("src", Place::Pageable, 64, 7);
        let dst = p.buffer("dst", Place::Device, 64, 8);
        p.copy(s, "C", src, dst);
        let program = p.build();
        let mut pool: Pool<Fake> = Pool::default();
        let mut b = Buffers::take(&program.buffers, &mut pool).unwrap();
        b.refills_for(&program);
        assert_eq!(fills(&mut b), [7.0]);
        assert_eq!(fills(&mut b), Vec::<f32>::new());
        b.release(&mut pool);
        drop(b);
        let mut b = Buffers::take(&program.buffers, &mut pool).unwrap();
        b.refills_for(&program);
        assert_eq!(fills(&mut b), Vec::<f32>::new());
    }

    /// A device buffer read back gets a pinned block of its size for the read-back copy, from the
    /// pool and back to it, like the buffers themselves.
    #[test]
    fn a_device_buffer_read_back_is_staged_through_the_pool() {
        let mut pool: Pool<Fake> = Pool::default();
        let mut seen = buffer(Place::Device, 64, 3);
        seen.read_back = true;
        let buffers = [seen, buffer(Place::Pinned, 64, 1)];
        let mut b = Buffers::take(&buffers, &mut pool).unwrap();
        assert_eq!(
            (b.reused, b.allocated),
            (0, 3),
            "two buffers and one staging block"
        );
        b.release(&mut pool);
        drop(b);
        assert_eq!(pool.idle_bytes(), 3 * 64);
        let b = Buffers::take(&buffers, &mut pool).unwrap();
        assert_eq!((b.reused, b.allocated), (3, 0));
    }
}
