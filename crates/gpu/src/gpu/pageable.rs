//! Pageable host blocks for the pool, their pages made present in one call.
//!
//! A claim's "pageable" buffer is ordinary host memory that the driver does not know: what a
//! program's `malloc` gives. The CPU writes its fill into every page before the first trial, as
//! a program writes its data before copying it, and that first write used to fault each 4 KiB
//! page in on its own: on an NVIDIA H200's host, `calloc` and a fill took 18–20 ms for 32 MiB
//! against 13–15 ms for a mapping made with `MAP_POPULATE` and the same fill (issue 52,
//! docs/measurements.md): the copy claims' pageable sources cost the catalogue's first trials
//! about 25 ms. So a pageable block is an anonymous private mapping whose pages the kernel makes
//! present as it maps them. It stays what a claim means by pageable: 4 KiB pages, neither locked
//! nor registered, nor asked for huge pages, which a `malloc` of the same size would not get
//! where transparent huge pages are left to `madvise` (the common setting).

use std::ops::{Deref, DerefMut};

/// `n` zeroed `f32`s of ordinary pageable memory, unmapped when dropped.
pub struct Pageable {
    ptr: *mut f32,
    n: usize,
}

// SAFETY: the block is plain memory owned by this value; like a `Vec`, it may move between
// threads.
unsafe impl Send for Pageable {}

impl Pageable {
    /// `n` zeroed elements, their pages present; `None` where the mapping is refused.
    pub fn new(n: usize) -> Option<Pageable> {
        if n == 0 {
            return Some(Pageable {
                ptr: std::ptr::NonNull::dangling().as_ptr(),
                n,
            });
        }
        let bytes = n.checked_mul(4)?;
        // SAFETY: a new anonymous private mapping; no address is given, so nothing is replaced.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
                -1,
                0,
            )
        };
        (p != libc::MAP_FAILED).then_some(Pageable {
            ptr: p as *mut f32,
            n,
        })
    }
}

impl Deref for Pageable {
    type Target = [f32];
    fn deref(&self) -> &[f32] {
        // SAFETY: `n` elements mapped readable and writable (or none, at a dangling aligned
        // pointer), owned by `self`.
        unsafe { std::slice::from_raw_parts(self.ptr, self.n) }
    }
}

impl DerefMut for Pageable {
    fn deref_mut(&mut self) -> &mut [f32] {
        // SAFETY: as in `deref`, borrowed mutably through `self`.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.n) }
    }
}

impl Drop for Pageable {
    fn drop(&mut self) {
        if self.n > 0 {
            // SAFETY: the mapping of `n * 4` bytes made in `new`, unmapped once, here.
            unsafe {
                libc::munmap(self.ptr as *mut libc::c_void, self.n * 4);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Pageable;

    #[test]
    fn a_block_is_zeroed_writable_and_of_its_size() {
        for n in [0, 1, 1000, 1 << 20] {
            let mut b = Pageable::new(n).expect("mapped");
            assert_eq!(b.len(), n);
            assert!(b.iter().all(|&x| x == 0.0));
            b.fill(1.5);
            assert!(b.iter().all(|&x| x == 1.5));
        }
    }
}
