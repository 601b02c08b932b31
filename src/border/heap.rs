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
