//! The claim catalogue: the claims of the study notes, kept as claim files under
//! `claims/catalogue/` and read by the same parser as a user's (`litmus`), so that the claims
//! the lab ships and the claims a user writes are one format, printed and read one way.
//!
//! Every claim cites its source: a seed file of the study notes (`shared/seeds/`, Chinese notes;
//! the section is quoted in its original words) or a section of NVIDIA's documentation.
//! docs/claims.md lists each claim with its verdict on the GPUs it was measured on.
//!
//! Every kernel and host function of the catalogue lasts a number of `spin`s (`K2: spin
//! 0.25spin on s1`), multiples of the spin length, so the whole catalogue can be shortened or
//! lengthened at once (`--spin-us`) to find how short reliable verdicts can go. The files are
//! compiled into the binary: `stream-litmus run` needs no file beside it.
//!
//! **May import:** `litmus` (the parser), `judge` (claims), `program`, `border`.

use crate::judge::claim::Claim;
use std::time::Duration;

pub use crate::program::DEFAULT_SPIN;

/// The catalogue's claim files, in the order the catalogue runs them: a name (the file's stem
/// under `claims/catalogue/`) and its text.
pub const FILES: [(&str, &str); 6] = [
    (
        "core",
        include_str!("../../../../claims/catalogue/core.litmus"),
    ),
    (
        "synchronization",
        include_str!("../../../../claims/catalogue/synchronization.litmus"),
    ),
    (
        "host_and_memory",
        include_str!("../../../../claims/catalogue/host_and_memory.litmus"),
    ),
    (
        "copies",
        include_str!("../../../../claims/catalogue/copies.litmus"),
    ),
    (
        "scenarios",
        include_str!("../../../../claims/catalogue/scenarios.litmus"),
    ),
    (
        "multi_gpu",
        include_str!("../../../../claims/catalogue/multi_gpu.litmus"),
    ),
];

/// The shortest spin length the catalogue runs with: its shortest kernel is 0.04 spins (the
/// graph launch cost claims), which must last a nanosecond at least.
pub const MIN_SPIN: Duration = Duration::from_nanos(25);

/// The longest spin length the catalogue runs with: its longest kernel is 120 spins, and a
/// kernel over a second (`MAX_SPIN_NS`) is taken for a unit mixed up.
pub const MAX_SPIN: Duration = Duration::from_millis(8);

/// Devices the `multi.*` claims (the `multi_gpu` file) need.
pub const MULTI_GPU_DEVICES: u32 = 2;

/// The claims of the catalogue file `name` (one of [`FILES`]), with spins of `spin`.
///
/// # Panics
/// When `spin` is outside [`MIN_SPIN`]..=[`MAX_SPIN`] (a kernel would last no time or over a
/// second), or `name` is not one of [`FILES`]. The files themselves are read at every spin in
/// that range by a test.
pub fn file(name: &str, spin: Duration) -> Vec<Claim> {
    assert!(
        (MIN_SPIN..=MAX_SPIN).contains(&spin),
        "the catalogue runs with spins of {MIN_SPIN:?}..={MAX_SPIN:?}, not {spin:?}"
    );
    let (_, text) = FILES
        .iter()
        .find(|(n, _)| *n == name)
        .unwrap_or_else(|| panic!("no catalogue file `{name}`"));
    let path = format!("claims/catalogue/{name}.litmus");
    crate::litmus::parse_with_spin(&path, text, spin)
        .unwrap_or_else(|e| panic!("the catalogue's own file does not read: {e}"))
}

/// The five core claims of the lab, with the same-stream FIFO claim once per stream kind.
pub fn core(spin: Duration) -> Vec<Claim> {
    file("core", spin)
}

/// The synchronization claims of the notes about streams, events, priorities and connections.
pub fn synchronization(spin: Duration) -> Vec<Claim> {
    file("synchronization", spin)
}

/// The host side of streams, implicit synchronization, the stream-ordered allocator and graphs:
/// the claims that need host-clock alignment, driver calls beyond streams and events, or graphs.
pub fn host_and_memory(spin: Duration) -> Vec<Claim> {
    file("host_and_memory", spin)
}

/// Copies, overlap and data: the claims whose copy spans come from the witness (CUPTI or events).
pub fn copies(spin: Duration) -> Vec<Claim> {
    file("copies", spin)
}

/// The notes' example systems: seed 000's sleep experiment, seed 004's pipeline, seed 002's
/// weight prefetch (with each of its five dependencies removed in turn).
pub fn scenarios(spin: Duration) -> Vec<Claim> {
    file("scenarios", spin)
}

/// The claims over [`MULTI_GPU_DEVICES`] GPUs (`multi.*`): run only where that many are visible.
pub fn multi_gpu(spin: Duration) -> Vec<Claim> {
    file("multi_gpu", spin)
}

/// Every claim in the catalogue that runs on one GPU.
pub fn all(spin: Duration) -> Vec<Claim> {
    FILES
        .iter()
        .filter(|(name, _)| *name != "multi_gpu")
        .flat_map(|(name, _)| file(name, spin))
        .collect()
}

/// The catalogue claim `id` (the multi-GPU ones too), with spins of `spin`.
pub fn claim(id: &str, spin: Duration) -> Option<Claim> {
    FILES
        .iter()
        .flat_map(|(name, _)| file(name, spin))
        .find(|c| c.id == id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_reads_at_every_spin_it_may_run_with() {
        for spin in [
            MIN_SPIN,
            Duration::from_nanos(1_001),
            DEFAULT_SPIN,
            MAX_SPIN,
        ] {
            let n: usize = FILES.iter().map(|(name, _)| file(name, spin).len()).sum();
            assert_eq!(n, 89, "{spin:?}");
        }
    }

    #[test]
    fn spins_scale_with_the_spin_length() {
        let short = claim("fifo.blocking", DEFAULT_SPIN).unwrap();
        let long = claim("fifo.blocking", DEFAULT_SPIN * 4).unwrap();
        let ns = |c: &Claim| -> Vec<u64> {
            c.program
                .ops
                .iter()
                .filter_map(|op| match op.kind {
                    crate::program::OpKind::Spin { duration_ns, .. } => Some(duration_ns),
                    _ => None,
                })
                .collect()
        };
        assert_eq!(ns(&short), [50_000, 12_500, 50_000, 12_500]);
        assert_eq!(ns(&long), [200_000, 50_000, 200_000, 50_000]);
    }
}
