//! Memory kept for the whole run: buffers and stamp words reused from claim to claim.
//!
//! Allocating is the lab's own cost, not the experiment's: `cuMemHostAlloc` pins every page of
//! the buffer and maps it for the GPU, which takes milliseconds for the 16–128 MiB buffers of the
//! copy and scenario claims, and freeing them takes about as long again. The catalogue allocated
//! about 0.9 GiB of pinned and 1 GiB of device memory per run, all of it freed a moment later.
//! So a [`Pool`] owned by the `Gpu` keeps what a program gave back, keyed by place and size, and
//! the next program that asks for the same place and size gets it again.
//!
//! **Independence of trials.** A block comes back exactly as its last user left it; the pool never
//! promises contents. The executor fills every buffer before a program's first trial, and before
//! *every* trial each buffer whose contents a trial can see (`Buffers::fill_with`; the stamp
//! buffer is zeroed too), so no trial can see another's data. The CPU tests in `buffers.rs` show
//! a reused block being reset and which buffers are refilled; GPU tests (`tests/gpu/pooled_buffers.rs`)
//! show it on a race claim run twice and on a buffer an op reads and writes.
//!
//! **Known contents.** A block may come back with a note of what it holds: the bits of the one
//! value every element was set to, given back by a program that filled it and never wrote it
//! (`Buffers::release`). The next program that wants that value in that block skips the fill:
//! the pipeline and copy claims read 32–64 MiB of host buffers that only ever hold their fill, and
//! the CPU rewrote them for every claim. A block some op may have written goes back without a note.
//!
//! What a trial itself allocates or frees (the implicit-synchronization claims time `cuMemAlloc`
//! and `cuMemFree`) is the experiment, and never goes through the pool.

use crate::border::error::Error;
use crate::program::Place;
use std::collections::HashMap;

/// How many idle bytes the pool keeps at most; a block given back beyond this is freed. Well
/// above the catalogue's largest program (192 MiB), well below any GPU's memory.
pub const IDLE_CAP_BYTES: usize = 1 << 30;

/// Makes, resets and frees blocks of one kind of memory. The driver's is in `buffers.rs`; the
/// tests use a fake one.
pub trait Allocator {
    type Block;
    /// Whether a new pageable block's pages are present already (`pageable.rs`): then no fill
    /// is needed to fault them in before a copy reads them (`Buffers::untouched`).
    const PAGEABLE_PRESENT: bool = false;
    fn alloc(place: Place, bytes: usize) -> Result<Self::Block, Error>;
    /// Sets every `f32` of the block to `value`; device blocks are complete when this returns.
    fn fill(block: &mut Self::Block, value: f32) -> Result<(), Error>;
    /// Frees a block; the caller makes sure nothing on the GPU still uses it.
    fn free(block: Self::Block);
}

/// What a block holds, where known: the bits of the `f32` every element was set to.
pub type Known = Option<u32>;

/// Idle blocks of one place and size, each with what it is known to hold.
type Idle<B> = Vec<(B, Known)>;

/// Idle blocks by place and size.
pub struct Pool<A: Allocator> {
    idle: HashMap<(Place, usize), Idle<A::Block>>,
    idle_bytes: usize,
    cap_bytes: usize,
}

impl<A: Allocator> Default for Pool<A> {
    fn default() -> Self {
        Pool::with_cap(IDLE_CAP_BYTES)
    }
}

impl<A: Allocator> Pool<A> {
    pub fn with_cap(cap_bytes: usize) -> Pool<A> {
        Pool {
            idle: HashMap::new(),
            idle_bytes: 0,
            cap_bytes,
        }
    }

    /// A block of `bytes` at `place`, and whether it was reused: an idle one if the pool has
    /// one, else a new one. Its contents are whatever its last user left: reset it before use.
    pub fn take(&mut self, place: Place, bytes: usize) -> Result<(A::Block, bool), Error> {
        let (block, reused, _) = self.take_holding(place, bytes, None)?;
        Ok((block, reused))
    }

    /// [`Pool::take`], preferring an idle block known to hold `want`, then one with no note; also
    /// says what the block holds, where known (a new block: unknown).
    pub fn take_holding(
        &mut self,
        place: Place,
        bytes: usize,
        want: Known,
    ) -> Result<(A::Block, bool, Known), Error> {
        if let Some(idle) = self.idle.get_mut(&(place, bytes)).filter(|v| !v.is_empty()) {
            // One that holds `want`, else one that holds nothing known (keeping known blocks
            // for those who want them), else any.
            let at = idle
                .iter()
                .rposition(|b| want.is_some() && b.1 == want)
                .or_else(|| idle.iter().rposition(|b| b.1.is_none()))
                .unwrap_or(idle.len() - 1);
            let (block, known) = idle.swap_remove(at);
            self.idle_bytes -= bytes;
            return Ok((block, true, known));
        }
        Ok((A::alloc(place, bytes)?, false, None))
    }

    /// Gives a block back for a later [`Pool::take`], once nothing on the GPU uses it; freed
    /// instead if the pool already holds [`IDLE_CAP_BYTES`].
    pub fn give(&mut self, place: Place, bytes: usize, block: A::Block) {
        self.give_holding(place, bytes, block, None);
    }

    /// [`Pool::give`] with what the block holds, where known.
    pub fn give_holding(&mut self, place: Place, bytes: usize, block: A::Block, known: Known) {
        if self.idle_bytes + bytes > self.cap_bytes {
            A::free(block);
            return;
        }
        self.idle_bytes += bytes;
        self.idle
            .entry((place, bytes))
            .or_default()
            .push((block, known));
    }

    /// Bytes held idle.
    #[cfg(test)]
    pub fn idle_bytes(&self) -> usize {
        self.idle_bytes
    }
}

impl<A: Allocator> Drop for Pool<A> {
    fn drop(&mut self) {
        for (b, _) in self.idle.drain().flat_map(|(_, v)| v) {
            A::free(b);
        }
    }
}

/// Test allocator: host vectors for every place, counting allocations and frees per thread.
#[cfg(test)]
pub mod fake {
    use super::*;
    use std::cell::Cell;

    thread_local! {
        pub static ALLOCS: Cell<usize> = const { Cell::new(0) };
        pub static FREES: Cell<usize> = const { Cell::new(0) };
    }

    pub struct Fake;

    impl Allocator for Fake {
        type Block = Vec<f32>;
        fn alloc(_: Place, bytes: usize) -> Result<Vec<f32>, Error> {
            ALLOCS.with(|c| c.set(c.get() + 1));
            Ok(vec![0.0; bytes / 4])
        }
        fn fill(block: &mut Vec<f32>, value: f32) -> Result<(), Error> {
            block.fill(value);
            Ok(())
        }
        fn free(_: Vec<f32>) {
            FREES.with(|c| c.set(c.get() + 1));
        }
    }

    pub fn allocs() -> usize {
        ALLOCS.with(Cell::get)
    }

    pub fn frees() -> usize {
        FREES.with(Cell::get)
    }
}

#[cfg(test)]
mod tests {
    use super::fake::{allocs, frees, Fake};
    use super::*;

    #[test]
    fn a_block_given_back_is_taken_again_by_place_and_size() {
        let (a0, f0) = (allocs(), frees());
        let mut pool: Pool<Fake> = Pool::default();
        let (mut b, reused) = pool.take(Place::Pinned, 64).unwrap();
        assert!(!reused);
        b[0] = 7.0;
        pool.give(Place::Pinned, 64, b);
        assert_eq!(pool.idle_bytes(), 64);
        // Another size or place allocates; the same key reuses the very block, as left.
        let (other, reused) = pool.take(Place::Device, 64).unwrap();
        assert!(!reused);
        let (again, reused) = pool.take(Place::Pinned, 64).unwrap();
        assert!(reused);
        assert_eq!(
            again[0], 7.0,
            "the pool promises no contents: the user resets"
        );
        assert_eq!(allocs() - a0, 2);
        pool.give(Place::Device, 64, other);
        pool.give(Place::Pinned, 64, again);
        drop(pool);
        assert_eq!(frees() - f0, 2, "dropping the pool frees what it held");
    }

    #[test]
    fn a_block_known_to_hold_the_wanted_value_is_preferred() {
        let mut pool: Pool<Fake> = Pool::default();
        let (a, _) = pool.take(Place::Pinned, 64).unwrap();
        let (b, _) = pool.take(Place::Pinned, 64).unwrap();
        pool.give_holding(Place::Pinned, 64, a, Some(1.0f32.to_bits()));
        pool.give_holding(Place::Pinned, 64, b, None);
        let (_, reused, known) = pool
            .take_holding(Place::Pinned, 64, Some(1.0f32.to_bits()))
            .unwrap();
        assert_eq!((reused, known), (true, Some(1.0f32.to_bits())));
        let (_, reused, known) = pool
            .take_holding(Place::Pinned, 64, Some(2.0f32.to_bits()))
            .unwrap();
        assert_eq!(
            (reused, known),
            (true, None),
            "any block, said to be unknown"
        );
        let (_, reused, known) = pool.take_holding(Place::Pinned, 64, None).unwrap();
        assert_eq!((reused, known), (false, None));
    }

    #[test]
    fn blocks_beyond_the_cap_are_freed() {
        let f0 = frees();
        let mut pool: Pool<Fake> = Pool::with_cap(100);
        let (a, _) = pool.take(Place::Device, 64).unwrap();
        let (b, _) = pool.take(Place::Device, 64).unwrap();
        pool.give(Place::Device, 64, a);
        pool.give(Place::Device, 64, b);
        assert_eq!(frees() - f0, 1);
        assert_eq!(pool.idle_bytes(), 64);
    }
}
