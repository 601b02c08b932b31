//! Hand-made values that several tests build alike: a calibration of a made-up H100, and a
//! snapshot of a folder's files.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use stream_litmus::{Calibration, Device};

/// The calibration of a made-up H100 (132 SMs, 1.98 GHz, 32 ns timer step, 2 µs dependent gap)
/// with the launch jitter given.
pub fn calibration(launch_jitter_ns: u64) -> Calibration {
    Calibration {
        device: Device {
            name: "test".into(),
            driver_version: 13000,
            driver_release: None,
            compute_capability: (9, 0),
            sm_count: 132,
            clock_khz: 1_980_000,
            priority_range: None,
            async_engines: None,
            cupti: None,
        },
        cycles_per_ns: 1.98,
        timer_step_ns: 32,
        launch_jitter_ns,
        launch_latency_ns: None,
        copy_rates: None,
        dependent_gap_ns: 2_000,
        environment: vec![],
    }
}

/// Every file under `dir` with its bytes (a folder as `<folder>`).
pub fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(snapshot(&path));
            out.insert(path, b"<folder>".to_vec());
        } else {
            let bytes = std::fs::read(&path).unwrap();
            out.insert(path, bytes);
        }
    }
    out
}
