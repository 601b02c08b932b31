//! Decides whether GPU tests are compiled in (`cfg(gpu)`) or shown as ignored.
//!
//! Stock libtest cannot skip a test at run time, so the decision is made at build time:
//! - `GPU_TESTS=1` forces GPU tests on (a missing GPU then fails them loudly, naming the cause);
//! - `GPU_TESTS=0` forces them off;
//! - unset: on when this machine has an NVIDIA kernel driver (`/proc/driver/nvidia/version`).
//!
//! The same goes for the report's browser test (`cfg(chromium)`): on when `CHROMIUM` names a
//! browser binary, or when Debian's `/usr/bin/chromium` exists. Without it the test shows as
//! ignored with its reason.
//!
//! And for the multi-GPU tests (`cfg(gpus2)`): on when `MULTI_GPU_TESTS=1` or `GPU_TESTS=2`
//! (both also force `cfg(gpu)`), off when `MULTI_GPU_TESTS=0`; unset, on when the machine shows
//! two or more NVIDIA GPUs in `/proc/driver/nvidia/gpus/`. Off, those tests show as ignored with
//! the reason "needs 2 GPUs"; forced on a machine with fewer, they fail naming the cause.
//!
//! And for the seed notes the catalogue cites (`cfg(seeds)`): on when `../shared/seeds` exists
//! beside the checkout. Without them the test that checks every cited seed file shows as ignored
//! with its reason, instead of passing without checking anything.
fn main() {
    println!("cargo::rustc-check-cfg=cfg(gpu)");
    println!("cargo::rustc-check-cfg=cfg(chromium)");
    println!("cargo::rustc-check-cfg=cfg(seeds)");
    println!("cargo::rustc-check-cfg=cfg(gpus2)");
    let seeds = std::path::Path::new("../shared/seeds");
    if seeds.is_dir() {
        println!("cargo::rustc-cfg=seeds");
        println!("cargo::rerun-if-changed=../shared/seeds");
    }
    println!("cargo::rerun-if-env-changed=GPU_TESTS");
    println!("cargo::rerun-if-env-changed=MULTI_GPU_TESTS");
    println!("cargo::rerun-if-env-changed=CHROMIUM");
    let chromium = std::env::var_os("CHROMIUM")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| "/usr/bin/chromium".into());
    if chromium.exists() {
        println!("cargo::rustc-cfg=chromium");
        println!(
            "cargo::rustc-env=STREAM_LITMUS_CHROMIUM={}",
            chromium.display()
        );
    }
    println!("cargo::rerun-if-changed=build.rs");
    let gpu_tests = std::env::var("GPU_TESTS").ok();
    let gpus2 = match std::env::var("MULTI_GPU_TESTS").ok().as_deref() {
        Some("1") | Some("true") | Some("yes") => true,
        Some(_) => false,
        None => match gpu_tests.as_deref() {
            Some(v) => v == "2",
            None => nvidia_gpus() >= 2,
        },
    };
    let gpu = gpus2
        || match gpu_tests.as_deref() {
            Some("1") | Some("2") | Some("true") | Some("yes") => true,
            Some(_) => false,
            None => std::path::Path::new("/proc/driver/nvidia/version").exists(),
        };
    if gpu {
        println!("cargo::rustc-cfg=gpu");
    }
    if gpus2 {
        println!("cargo::rustc-cfg=gpus2");
    }
}

/// NVIDIA GPUs the kernel driver lists (one folder each under `/proc/driver/nvidia/gpus/`).
fn nvidia_gpus() -> usize {
    std::fs::read_dir("/proc/driver/nvidia/gpus").map_or(0, |d| d.count())
}
