//! Giving freed memory back to the system, where the C library keeps it.
//!
//! A run of many trials frees far more than it holds at once: each claim's stamps (480 MB for
//! `scenario.sleep.grid` at 1,000 trials) are dropped once written, and claims of many small
//! spans (`graph.launch_cost.*`: a hundred thousand of them) leave their pages half used. glibc's
//! allocator keeps such pages, so the process's resident size only grew: on an H100, the
//! catalogue at 1,000 trials reached 1,069 MiB where one claim alone peaked at 616 MiB, each
//! claim's allocations landing beside the holes of the ones before. `malloc_trim` returns every
//! free page of every arena, so that the peak is what is held, not what was ever held.

/// Returns the allocator's free pages to the system (glibc's `malloc_trim`); elsewhere nothing
/// is needed or done. Costs a walk of the free lists: call it after freeing much, not often.
pub fn return_freed() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        extern "C" {
            fn malloc_trim(pad: usize) -> std::os::raw::c_int;
        }
        // SAFETY: `malloc_trim` takes a byte count and touches only the allocator's own free
        // lists, under its own locks; it is safe to call from any thread at any time.
        unsafe {
            malloc_trim(0);
        }
    }
}

/// Bytes freed after which [`Trimmer`] hands the free pages back: a walk of the free lists
/// after each of a thousand small claims cost the reader's thread a tenth of its time, and a
/// run of the catalogue walked them after each of its 77 claims (a few MB each at 5 trials),
/// the allocations after each walk faulting their pages in again. Growth beyond what is held
/// stays below this.
pub const TRIM_AFTER_BYTES: u64 = 32 << 20;

/// Counts what was freed, and returns the free pages ([`return_freed`]) each time
/// [`TRIM_AFTER_BYTES`] have been.
#[derive(Debug, Default)]
pub struct Trimmer {
    freed: u64,
}

impl Trimmer {
    /// Notes `bytes` just freed.
    pub fn freed(&mut self, bytes: u64) {
        self.freed = self.freed.saturating_add(bytes);
        if self.freed >= TRIM_AFTER_BYTES {
            return_freed();
            self.freed = 0;
        }
    }
}

/// Blocks of 256 KiB and more mapped on their own, and unmapped when freed. Reading a trace
/// frees lists while it builds others from them (its ops in chunks, turned into the trace's
/// ops; its calls, once joined): glibc's default moves that threshold up past the first
/// large block freed, after which freed chunks stay in the heap, resident, beside the list
/// that replaces them (a 200 MB trace's `check` peaked at 84 MB so, 67 MB with this; issue 51,
/// docs/limits.md). Other allocators give large blocks back already.
pub fn give_back_large_blocks() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` only sets the allocator's parameter, under its own lock;
    // M_MMAP_THRESHOLD takes a size in bytes, and glibc ignores a value it does not accept (it
    // returns 0, which is not an error here). Called at the start, before large blocks exist.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 256 * 1024);
    }
}
