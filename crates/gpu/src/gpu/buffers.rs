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
//! the driver, and buffers marked for reading back are summarized (see `crate::measured::contents`), device
//! ones through a pinned staging block.

use super::kernels::Kernels;
use super::pool::{Allocator, Known, Pool};
use super::probe::call;
use crate::border::error::Error;
use crate::measured::contents::{Contents, MemoryKind};
use crate::program::{Buffer, BufferId, Place};
use cudarc::driver::{result, sys};
use std::ffi::c_void;

/// Bytes of [`Buffers`]' uniformity words per staged buffer: whether a word differs, and the
/// first word.
const UNIFORMITY_BYTES: usize = 8;

/// The pool keys (place and bytes) a buffer takes: its own block's, and, for a device buffer
/// read back, its pinned staging block's ([`Buffers::take`]; the blocks made ahead,
/// `lab/ahead.rs`, follow the same rule).
pub fn pool_keys(b: &Buffer) -> ((Place, usize), Option<(Place, usize)>) {
    let bytes = b.bytes as usize;
    let staged = b.read_back && b.place == Place::Device;
    ((b.place, bytes), staged.then_some((Place::Pinned, bytes)))
}

/// Driver memory of one place: what the run's [`Pool`] keeps.
pub enum Block {
    Device(sys::CUdeviceptr, usize),
    /// Page-locked host memory (`pinned.rs`), freed as it was made.
    Pinned(*mut f32, usize, super::pinned::Origin),
    /// Ordinary host memory, its pages present (`pageable.rs`).
    Pageable(super::pageable::Pageable),
}

// SAFETY: the pointers are addresses in the process-wide primary context and in page-locked host
// memory, valid from any thread; a block is only used by the thread that holds the pool's lock.
unsafe impl Send for Block {}

impl Block {
    /// The address a copy or kernel uses.
    pub fn ptr(&self) -> sys::CUdeviceptr {
        match self {
            Block::Device(p, _) => *p,
            Block::Pinned(p, ..) => *p as sys::CUdeviceptr,
            Block::Pageable(v) => v.as_ptr() as sys::CUdeviceptr,
        }
    }
}

/// `cuMemAlloc`, page-locked host memory (`pinned.rs`) or a `Vec`, by place.
pub struct Driver;

impl Allocator for Driver {
    type Block = Block;
    const PAGEABLE_PRESENT: bool = true;

    fn alloc(place: Place, bytes: usize) -> Result<Block, Error> {
        let n = bytes / 4;
        Ok(match place {
            // SAFETY: plain allocation, freed in `free`.
            Place::Device => Block::Device(
                unsafe { result::malloc_sync(bytes.max(1)) }.map_err(call("cuMemAlloc"))?,
                n,
            ),
            Place::Pinned => {
                let (p, origin) = super::pinned::alloc(bytes)?;
                Block::Pinned(p, n, origin)
            }
            Place::Pageable => {
                Block::Pageable(super::pageable::Pageable::new(n).ok_or_else(|| {
                    Error::HostMemory {
                        bytes,
                        detail: format!("mmap: {}", std::io::Error::last_os_error()),
                    }
                })?)
            }
        })
    }

    fn fill(block: &mut Block, fill: f32) -> Result<(), Error> {
        match block {
            // SAFETY: `n` elements were allocated.
            Block::Device(p, n) => unsafe { sys::cuMemsetD32_v2(*p, fill.to_bits(), *n) }
                .result()
                .map_err(call("cuMemsetD32")),
            Block::Pinned(p, n, _) => {
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
        match block {
            Block::Device(p, _) => {
                // SAFETY: allocated in `alloc`, freed once, after the executor synchronized.
                let _ = unsafe { result::free_sync(p) };
            }
            // Allocated in `alloc`, freed once, after the executor synchronized.
            Block::Pinned(p, _, origin) => super::pinned::free(p, origin),
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
    /// block whose pages are not present yet, which the fill touches (a copy from untouched
    /// pages would fault them in); the driver's blocks come with theirs (`pageable.rs`).
    observed: Vec<bool>,
    /// Per buffer: whether an op writes it; such a block goes back to the pool as unknown.
    written: Vec<bool>,
    /// Per buffer: what its block holds, where known (from the pool, or since its fill).
    known: Vec<Known>,
    /// Per buffer: a new pageable block whose pages are not present yet
    /// ([`Allocator::PAGEABLE_PRESENT`]).
    untouched: Vec<bool>,
    filled: bool,
    /// Per buffer: for a device buffer read back, a pinned block of its size that the read-back
    /// copy lands in (from the pool, like the buffers): one copy at full speed instead of a copy
    /// to pageable memory the driver stages, into a new vector whose pages fault in, per trial.
    staging: Vec<Option<A::Block>>,
    /// Two device words per staged buffer, in order: whether any of its words differs from its
    /// first, and the first (`Buffers::contents`). `None` where nothing is staged.
    uniformity: Option<A::Block>,
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
            uniformity: None,
            reused: 0,
            allocated: 0,
        };
        for b in buffers {
            let (key, staged) = pool_keys(b);
            let want = Some((b.fill as f32).to_bits());
            let (block, reused, known) = out.take_one(pool, key, want)?;
            out.blocks.push(block);
            out.keys.push(key);
            out.known.push(known);
            out.untouched
                .push(!reused && b.place == Place::Pageable && !A::PAGEABLE_PRESENT);
            let staging = match staged {
                Some(key) => Some(out.take_one(pool, key, None)?.0),
                None => None,
            };
            out.staging.push(staging);
        }
        let staged = out.staging.iter().flatten().count();
        if staged > 0 {
            let key = (Place::Device, staged * UNIFORMITY_BYTES);
            out.uniformity = Some(out.take_one(pool, key, None)?.0);
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
        let staged = self.staging.iter().flatten().count();
        for (staging, &(_, bytes)) in self.staging.drain(..).zip(&self.keys) {
            if let Some(block) = staging {
                pool.give(Place::Pinned, bytes, block);
            }
        }
        if let Some(block) = self.uniformity.take() {
            pool.give(Place::Device, staged * UNIFORMITY_BYTES, block);
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
    /// Device buffers are first asked on the GPU whether they hold one value (the
    /// `differs_from_first` kernel, two words back per buffer); only those that do not are copied
    /// into their pinned staging blocks, together, with one wait. Host buffers are summarized
    /// where they are.
    pub fn contents(&self, kernels: &Kernels) -> Result<Vec<Contents>, Error> {
        let uniform = self.uniform_on(kernels)?;
        let mut copied = false;
        for (i, (m, staging)) in self.blocks.iter().zip(&self.staging).enumerate() {
            if let (Block::Device(p, n @ 1..), Some(Block::Pinned(s, ..))) = (m, staging) {
                if uniform[i].is_some() {
                    continue;
                }
                // SAFETY: both blocks hold `n` elements; the context is idle, and the wait below
                // ends the copy before the staging block is read.
                unsafe {
                    sys::cuMemcpyDtoHAsync_v2(*s as *mut c_void, *p, n * 4, std::ptr::null_mut())
                }
                .result()
                .map_err(call("cuMemcpyDtoHAsync"))?;
                copied = true;
            }
        }
        if copied {
            result::ctx::synchronize().map_err(call("cuCtxSynchronize"))?;
        }
        let mut out = Vec::with_capacity(self.blocks.len());
        for (i, m) in self.blocks.iter().enumerate() {
            let id = BufferId(i);
            let memory = memory_kind(self.ptr(id));
            if let (true, Some(value), Block::Device(_, n)) = (self.read_back[i], uniform[i], m) {
                out.push(Contents::uniform(id, memory, value, *n as u64));
                continue;
            }
            let unstaged;
            let data: &[f32] = match (self.read_back[i], m, &self.staging[i]) {
                (false, ..) => &[],
                // SAFETY: the staging block holds `n` elements, allocated pinned in `take`;
                // the trial was synchronized, so nothing writes them now.
                (true, Block::Device(..), Some(Block::Pinned(s, n, _))) => unsafe {
                    std::slice::from_raw_parts(*s, *n)
                },
                // SAFETY: the pinned buffer holds `n` elements; the trial was synchronized, so
                // nothing writes them now.
                (true, Block::Pinned(p, n, _), _) => unsafe { std::slice::from_raw_parts(*p, *n) },
                (true, Block::Pageable(v), _) => &v[..],
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

    /// Per buffer, the one value a staged device buffer holds in every element, where it holds
    /// one (asked on the GPU: a fill of the uniformity words, a `differs_from_first` launch per
    /// staged buffer on the legacy stream, and one synchronous copy of the words back).
    fn uniform_on(&self, kernels: &Kernels) -> Result<Vec<Option<f32>>, Error> {
        let mut uniform = vec![None; self.blocks.len()];
        let Some(Block::Device(words, _)) = &self.uniformity else {
            return Ok(uniform);
        };
        let staged: Vec<(usize, sys::CUdeviceptr, usize)> = (self.blocks.iter().enumerate())
            .zip(&self.staging)
            .filter_map(|((i, m), staging)| match (m, staging) {
                (Block::Device(p, n @ 1..), Some(_)) => Some((i, *p, *n)),
                _ => None,
            })
            .collect();
        if staged.is_empty() {
            return Ok(uniform);
        }
        let stream = std::ptr::null_mut();
        kernels.launch_fill(stream, *words, 2 * staged.len() as u64, 0)?;
        for (j, &(_, p, n)) in staged.iter().enumerate() {
            let out = *words + (j * UNIFORMITY_BYTES) as sys::CUdeviceptr;
            kernels.launch_differs(stream, p, n as u64, out)?;
        }
        let mut host = vec![0u32; 2 * staged.len()];
        // SAFETY: the uniformity block holds two words per staged buffer (`take`); the copy on
        // the legacy stream follows the launches above.
        unsafe { result::memcpy_dtoh_sync(&mut host, *words) }.map_err(call("cuMemcpyDtoH"))?;
        for (j, &(i, ..)) in staged.iter().enumerate() {
            if host[2 * j] == 0 {
                uniform[i] = Some(f32::from_bits(host[2 * j + 1]));
            }
        }
        Ok(uniform)
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
            .chain(self.uniformity.take())
        {
            A::free(b);
        }
    }
}

#[cfg(test)]
mod tests;
