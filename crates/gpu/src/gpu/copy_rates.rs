//! Copy rates: how fast each kind of copy runs on this GPU, measured at start-up and kept.
//!
//! A neighbour's copies share the copy engines and the bus with ours, and slow them without any
//! stall the stamps could show (`crate::judge::disturbance`). A copy that ran at its idle pace was
//! not slowed, neighbour or not; to know that pace, the GPU is opened with one copy of each kind
//! (H2D and D2H, page-locked and pageable host memory) at two sizes, timed by events in a stream of
//! their own, the fastest of [`REPEATS`]: the small one gives the fixed cost, the large one the
//! bandwidth. About 6 ms on an H100.
//!
//! Rates measured beside a neighbour's copies are its pace, not the GPU's. So rates measured with
//! no other process on the GPU (NVML lists nobody) are kept in the cache folder
//! (`crate::gpu::ptx_cache`'s, one file per GPU and driver, written whole and renamed into place);
//! a later run starts from the faster of its own and the kept ones. Rates that were never measured
//! alone are marked so, and the disturbance rule does not trust them.

use super::probe::call;
use crate::border::error::Error;
use crate::measured::calibration::{CopyRate, CopyRates};
use cudarc::driver::{result, sys};
use std::ffi::c_void;
use std::path::PathBuf;

/// Timed copies per kind and size; the fastest counts.
const REPEATS: usize = 3;
/// The two sizes: small enough that the fixed cost shows, large enough that bandwidth dominates.
const SMALL: usize = 256 << 10;
const LARGE: usize = 8 << 20;
/// Larger than any rates file of ours.
const MAX_FILE_BYTES: u64 = 64 << 10;

/// Measures every kind; a kind whose copies fail or time inconsistently is left out.
pub fn measure(alone: bool) -> Result<CopyRates, Error> {
    let stream = result::stream::create(result::stream::StreamKind::NonBlocking)
        .map_err(call("cuStreamCreate"))?;
    let outcome = measure_on(stream, alone);
    // SAFETY: created above; every copy on it has been waited for.
    let _ = unsafe { result::stream::destroy(stream) };
    outcome
}

fn measure_on(stream: sys::CUstream, alone: bool) -> Result<CopyRates, Error> {
    // Page-locked memory made as the claims' pinned buffers are (`pinned.rs`), so the rates are
    // theirs.
    let (pinned, origin) = super::pinned::alloc(LARGE)?;
    let pinned = pinned as *mut c_void;
    let pageable = vec![0u8; LARGE];
    // SAFETY: plain allocation, freed below.
    let device = match unsafe { result::malloc_sync(LARGE) } {
        Ok(d) => d,
        Err(e) => {
            super::pinned::free(pinned as *mut f32, origin);
            return Err(call("cuMemAlloc")(e));
        }
    };
    let host = |pageable_: bool| -> *mut c_void {
        if pageable_ {
            pageable.as_ptr() as *mut c_void
        } else {
            pinned
        }
    };
    let rate = |up: bool, pageable_: bool| -> Result<Option<CopyRate>, Error> {
        let mut best = [u64::MAX; 2];
        for (slot, bytes) in [SMALL, LARGE].into_iter().enumerate() {
            for _ in 0..REPEATS {
                let ns = timed(stream, || {
                    // SAFETY: both buffers hold at least LARGE bytes and outlive the copy, which
                    // `timed` waits for.
                    unsafe {
                        if up {
                            sys::cuMemcpyHtoDAsync_v2(device, host(pageable_), bytes, stream)
                        } else {
                            sys::cuMemcpyDtoHAsync_v2(host(pageable_), device, bytes, stream)
                        }
                    }
                    .result()
                    .map_err(call(if up {
                        "cuMemcpyHtoDAsync"
                    } else {
                        "cuMemcpyDtoHAsync"
                    }))
                })?;
                best[slot] = best[slot].min(ns);
            }
        }
        Ok(fit(best[0], best[1]))
    };
    let outcome = (|| {
        Ok(CopyRates {
            h2d_pinned: rate(true, false)?,
            d2h_pinned: rate(false, false)?,
            h2d_pageable: rate(true, true)?,
            d2h_pageable: rate(false, true)?,
            alone,
        })
    })();
    // SAFETY: allocated above; every copy has finished.
    let _ = unsafe { result::free_sync(device) };
    super::pinned::free(pinned as *mut f32, origin);
    outcome
}

/// The fixed cost and bandwidth through two timings (of [`SMALL`] and [`LARGE`] bytes).
pub fn fit(small_ns: u64, large_ns: u64) -> Option<CopyRate> {
    let extra_ns = large_ns.checked_sub(small_ns).filter(|&d| d > 0)?;
    let bytes_per_us = ((LARGE - SMALL) as u128 * 1000 / u128::from(extra_ns)) as u64;
    let moving = (SMALL as u128 * 1000 / u128::from(bytes_per_us.max(1))) as u64;
    Some(CopyRate {
        overhead_ns: small_ns.saturating_sub(moving),
        bytes_per_us: bytes_per_us.max(1),
    })
}

/// GPU time of what `issue` puts in `stream`, between two events, in ns.
fn timed(stream: sys::CUstream, issue: impl FnOnce() -> Result<(), Error>) -> Result<u64, Error> {
    let create = || {
        result::event::create(sys::CUevent_flags::CU_EVENT_DEFAULT).map_err(call("cuEventCreate"))
    };
    let (from, to) = (create()?, create()?);
    let outcome = (|| {
        // SAFETY: events and stream are live; the copy's buffers outlive the synchronize.
        unsafe {
            result::event::record(from, stream).map_err(call("cuEventRecord"))?;
            issue()?;
            result::event::record(to, stream).map_err(call("cuEventRecord"))?;
            result::event::synchronize(to).map_err(call("cuEventSynchronize"))?;
            let ms = result::event::elapsed(from, to).map_err(call("cuEventElapsedTime"))?;
            Ok((f64::from(ms) * 1e6).max(0.0) as u64)
        }
    })();
    // SAFETY: created above, no longer in use.
    unsafe {
        let _ = result::event::destroy(from);
        let _ = result::event::destroy(to);
    }
    outcome
}

/// Where rates measured alone on this GPU are kept: one file per PCI bus id and driver.
pub fn kept_file(pci_bus_id: &str, driver: &str) -> Option<PathBuf> {
    let name: String = format!("copy-rates-{pci_bus_id}-{driver}.json")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    Some(super::ptx_cache::cache_dir()?.join(name))
}

/// The rates kept in `path`, if a plausible file is there (best effort: anything else is no rates).
pub fn read_kept(path: &std::path::Path) -> Option<CopyRates> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .ok()?
        .take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .ok()?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return None;
    }
    let rates: CopyRates = serde_json::from_slice(&bytes).ok()?;
    rates.alone.then_some(rates)
}

/// Keeps `rates` (measured alone) in `path`, whole or not at all; failures are ignored (the cache
/// is best effort).
pub fn keep(path: &std::path::Path, rates: &CopyRates) {
    if let (Some(dir), Ok(text)) = (path.parent(), serde_json::to_vec(rates)) {
        let _ = std::fs::create_dir_all(dir);
        let _ = crate::border::atomic_write::write_atomically(path, |w| w.write_all(&text));
    }
}

/// This start-up's rates and the kept ones, each kind at the faster; the kept file is refreshed
/// when this start-up ran alone.
pub fn settle(measured: CopyRates, kept: Option<&std::path::Path>) -> CopyRates {
    let Some(path) = kept else {
        return measured;
    };
    let settled = match read_kept(path) {
        Some(old) => CopyRates::fastest(&measured, &old, LARGE as u64),
        None => measured,
    };
    if measured.alone {
        keep(path, &settled);
    }
    settled
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_timings_give_the_fixed_cost_and_the_bandwidth() {
        // 50 GB/s with 5 µs of fixed cost: 256 KiB in 10.24 µs, 8 MiB in 172.77 µs.
        let r = fit(10_243, 172_772).unwrap();
        assert!((49_900..=50_100).contains(&r.bytes_per_us), "{r:?}");
        assert!((4_900..=5_100).contains(&r.overhead_ns), "{r:?}");
        assert!(r.expected_ns(LARGE as u64).abs_diff(172_772) < 200);
        assert_eq!(fit(10_000, 10_000), None, "no bandwidth in equal timings");
        assert_eq!(fit(10_000, 9_000), None);
    }

    #[test]
    fn kept_rates_are_merged_and_only_alone_ones_written() {
        let dir = std::env::temp_dir().join(format!("sl-rates-{}", std::process::id()));
        let path = dir.join("rates.json");
        let fast = CopyRates {
            h2d_pinned: fit(10_000, 170_000),
            alone: true,
            ..CopyRates::default()
        };
        let slow = CopyRates {
            h2d_pinned: fit(20_000, 340_000),
            d2h_pinned: fit(10_000, 170_000),
            alone: false,
            ..CopyRates::default()
        };
        assert_eq!(settle(fast, Some(&path)), fast, "nothing kept yet");
        let merged = settle(slow, Some(&path));
        assert_eq!(merged.h2d_pinned, fast.h2d_pinned, "the kept one is faster");
        assert_eq!(merged.d2h_pinned, slow.d2h_pinned);
        assert!(merged.alone, "resting on rates measured alone");
        assert_eq!(
            read_kept(&path),
            Some(fast),
            "beside a neighbour nothing is written"
        );
        std::fs::write(&path, "{not json").unwrap();
        assert_eq!(settle(slow, Some(&path)), slow, "a bad file is no rates");
        let _ = std::fs::remove_dir_all(dir);
    }
}
