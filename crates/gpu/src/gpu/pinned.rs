//! Page-locked host blocks for the pool, made in less than half of `cuMemHostAlloc`'s time.
//!
//! Pinning is the lab's own cost (`pool.rs`): the pipeline claim's first 128 MiB of pinned
//! buffers took about 60 ms of the catalogue's setup, the copy claims' sizes another 40. Most of
//! it is the kernel faulting in and zeroing 4 KiB pages one at a time. Measured on an NVIDIA H200
//! host (issue 52, docs/measurements.md), 128 MiB took 71 ms through `cuMemHostAlloc`, 55 ms
//! through an anonymous mapping registered with `cuMemHostRegister`, and 29 ms when that mapping
//! is aligned to 2 MiB and asks for transparent huge pages (`MADV_HUGEPAGE`); freeing it, 21 ms
//! against 3 ms. So a pinned block is such a mapping, registered portable and mapped, as
//! `cuMemHostAlloc`'s blocks are under unified addressing.
//!
//! The block must be what a claim's "pinned" means: page-locked host memory that every context
//! reaches at the host pointer's own address (the executor hands that address to copies and
//! kernels). The driver says so through `cuMemHostGetDevicePointer`; where it gives another
//! address, or refuses the mapping, the block is made by `cuMemHostAlloc` as before. Without huge
//! pages (`transparent_hugepage` set to `never`) the mapping still pins in its 4 KiB pages. The
//! mapping is kept from child processes (`MADV_DONTFORK`, as the driver does for its own): a
//! forked copy of a pinned page would part the parent from the page the GPU reads.

use super::probe::call;
use crate::border::error::Error;
use cudarc::driver::sys;
use std::ffi::c_void;

/// The size of a transparent huge page on x86-64 and most ARM64 kernels; the mapping starts at a
/// multiple of it so that every whole 2 MiB of the block can be one page.
const HUGE_PAGE: usize = 2 << 20;

/// How a pinned block was made, so that it is freed the same way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// An anonymous mapping of this many bytes, registered with the driver.
    Mapped { bytes: usize },
    /// `cuMemHostAlloc`.
    HostAlloc,
}

/// A page-locked block of at least `bytes` (one byte at least), reachable from the GPU at its own
/// address.
pub fn alloc(bytes: usize) -> Result<(*mut f32, Origin), Error> {
    if let Some(block) = mapped(bytes.max(1)) {
        return Ok(block);
    }
    let mut p: *mut c_void = std::ptr::null_mut();
    // SAFETY: out-pointer valid; flags 0 (not write-combined: the CPU reads it back); freed in
    // `free`.
    unsafe { sys::cuMemHostAlloc(&mut p, bytes.max(1), 0) }
        .result()
        .map_err(call("cuMemHostAlloc"))?;
    Ok((p as *mut f32, Origin::HostAlloc))
}

/// Frees a block made by [`alloc`]; the caller makes sure nothing on the GPU still uses it.
pub fn free(p: *mut f32, origin: Origin) {
    match origin {
        Origin::Mapped { bytes } => {
            // SAFETY: `p` starts a mapping of `bytes` registered in `mapped`, unregistered and
            // unmapped once, here.
            unsafe {
                let _ = sys::cuMemHostUnregister(p as *mut c_void);
                libc::munmap(p as *mut c_void, bytes);
            }
        }
        // SAFETY: allocated by `cuMemHostAlloc` in `alloc`, freed once.
        Origin::HostAlloc => unsafe {
            let _ = sys::cuMemFreeHost(p as *mut c_void);
        },
    }
}

/// An anonymous mapping of `bytes` rounded up to whole pages, starting at a multiple of
/// [`HUGE_PAGE`], registered with the driver; `None` where any step fails (nothing is left
/// mapped then) or the GPU would reach it at another address.
fn mapped(bytes: usize) -> Option<(*mut f32, Origin)> {
    // SAFETY: sysconf has no preconditions.
    let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) })
        .ok()
        .filter(|p| p.is_power_of_two())?;
    let len = bytes.checked_next_multiple_of(page)?;
    // Mapped one huge page longer, so that an aligned start with `len` bytes after it lies inside.
    let span = len.checked_add(HUGE_PAGE)?;
    // SAFETY: a new private anonymous mapping; no existing memory is touched.
    let raw = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            span,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if raw == libc::MAP_FAILED {
        return None;
    }
    let raw = raw as usize;
    let (start, head, tail) = carve(raw);
    // SAFETY: both ranges lie inside the mapping just made and outside `start..start + len`
    // (`carve`); both are whole pages (`raw`, `start` and `len` are page multiples).
    unsafe {
        if head > 0 {
            libc::munmap(raw as *mut c_void, head);
        }
        if tail > 0 {
            libc::munmap((start + len) as *mut c_void, tail);
        }
    }
    let p = start as *mut c_void;
    // SAFETY: advice on the mapping we own; a refusal (no huge pages) leaves ordinary pages, and
    // `MADV_DONTFORK` failing only leaves what `fork` does to any memory.
    unsafe {
        libc::madvise(p, len, libc::MADV_HUGEPAGE);
        libc::madvise(p, len, libc::MADV_DONTFORK);
    }
    let flags = sys::CU_MEMHOSTREGISTER_PORTABLE | sys::CU_MEMHOSTREGISTER_DEVICEMAP;
    // SAFETY: `p..p + len` is our mapping, readable and writable, registered once.
    let registered = unsafe { sys::cuMemHostRegister_v2(p, len, flags) };
    if registered != sys::CUresult::CUDA_SUCCESS {
        // SAFETY: the mapping made above, not registered.
        unsafe { libc::munmap(p, len) };
        return None;
    }
    let mut device: sys::CUdeviceptr = 0;
    // SAFETY: out-pointer valid; `p` was registered mapped just above.
    let got = unsafe { sys::cuMemHostGetDevicePointer_v2(&mut device, p, 0) };
    if got != sys::CUresult::CUDA_SUCCESS || device != start as sys::CUdeviceptr {
        free(p as *mut f32, Origin::Mapped { bytes: len });
        return None;
    }
    Some((p as *mut f32, Origin::Mapped { bytes: len }))
}

/// In a mapping at `raw` of a block's bytes and one huge page more: where the block starts (the
/// first multiple of [`HUGE_PAGE`] at or after `raw`), and the bytes before and after it that are
/// given back.
fn carve(raw: usize) -> (usize, usize, usize) {
    let start = raw.next_multiple_of(HUGE_PAGE);
    let head = start - raw;
    (start, head, HUGE_PAGE - head)
}

#[cfg(test)]
mod tests {
    use super::{carve, HUGE_PAGE};

    /// Wherever the mapping lands, the block starts on a huge page inside it, and the block with
    /// the two pieces given back is the whole mapping.
    #[test]
    fn the_block_is_carved_on_a_huge_page_inside_the_mapping() {
        for page in [4096usize, 65536] {
            for k in 0..(HUGE_PAGE / page) {
                let raw = (7 << 30) + k * page;
                for len in [page, 3 * page, HUGE_PAGE, 5 * HUGE_PAGE + page] {
                    let (start, head, tail) = carve(raw);
                    assert_eq!(start % HUGE_PAGE, 0);
                    assert!(start >= raw && start + len <= raw + len + HUGE_PAGE);
                    assert_eq!(raw + head, start);
                    assert_eq!(head + len + tail, len + HUGE_PAGE);
                    assert_eq!((head % page, tail % page), (0, 0));
                }
            }
        }
    }
}
