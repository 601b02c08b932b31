//! The examples' claims on traces (`examples/pytorch/*.litmus`) as tests, found when the tests run:
//! - `traces::FILE` re-judges each claim on the trace committed beside it and fails when a
//!   verdict differs from the one recorded in [`RECORDED`] (a finding stays a finding);
//! - `gpu::SCRIPT` runs the example under the profiler on the GPU, when there is one
//!   (`cfg(gpu)`) and `python3 -c "import torch"` works (else ignored, with the reason), and
//!   judges a fresh trace to the same verdicts.

use libtest_mimic::{Arguments, Completion, Failed, Trial};
use std::path::{Path, PathBuf};
use stream_litmus::litmus;
use stream_litmus::trace::{judge, Trace};

/// The verdict each example claim had on its committed trace (H100, 2026-11-25). Where it
/// differs from the claim's expectation, that is a finding (docs/claims.md).
const RECORDED: &[(&str, &str)] = &[
    ("pytorch.launches_return_before_kernels_end", "Holds"),
    ("pytorch.pinned_copy_overlaps_compute", "Holds"),
    ("pytorch.pinned_copy_returns_at_once", "Holds"),
    ("pytorch.pageable_copy_overlaps_compute", "Holds"),
    ("pytorch.pageable_copy_holds_the_host", "Holds"),
    ("pytorch.four_stream_pipeline_is_faster", "Holds"),
    ("pytorch.pipeline_overlaps_copies_with_compute", "Holds"),
    ("pytorch.one_stream_runs_in_issue_order", "Holds"),
];

fn main() {
    let args = Arguments::from_args();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/pytorch");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    files.retain(|p| p.extension().is_some_and(|e| e == "litmus"));
    files.sort();
    let mut trials = Vec::new();
    for path in files {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let p = path.clone();
        trials.push(Trial::test(format!("traces::{name}"), move || {
            rejudge(&p, None)
        }));
        trials.push(Trial::ignorable_test(format!("gpu::{name}"), move || {
            fresh(&path)
        }));
    }
    libtest_mimic::run(&args, trials).exit();
}

/// Judges every claim of `file` on its own traces (or on `traces`) against [`RECORDED`].
fn rejudge(file: &Path, traces: Option<&[PathBuf]>) -> Result<(), Failed> {
    let claims = litmus::load_traced(file).map_err(|e| e.to_string())?;
    for c in claims {
        let paths: Vec<PathBuf> = match traces {
            Some(t) => t.to_vec(),
            None => c
                .traces
                .iter()
                .map(|t| file.parent().unwrap().join(t))
                .collect(),
        };
        let trace = Trace::read(&paths)?;
        let j = judge(&c, &trace)?;
        let Some((_, want)) = RECORDED.iter().find(|(id, _)| *id == c.id) else {
            return Err(format!(
                "{}: no recorded verdict (add it to RECORDED): {}",
                c.id, j.verdict
            )
            .into());
        };
        if j.verdict.to_string() != *want {
            return Err(format!(
                "{}: {} {} trials, recorded {want}: {}",
                c.id,
                j.verdict,
                j.counts,
                j.evidence(&c)
            )
            .into());
        }
    }
    Ok(())
}

#[cfg(not(gpu))]
fn fresh(_: &Path) -> Result<Completion, Failed> {
    Ok(Completion::ignored_with(
        "needs a CUDA GPU (GPU_TESTS=1) and python3 with torch",
    ))
}

/// Runs the example's script into a temporary folder and re-judges its claims on that trace.
#[cfg(gpu)]
fn fresh(file: &Path) -> Result<Completion, Failed> {
    let torch = std::process::Command::new("python3")
        .args(["-c", "import torch; assert torch.cuda.is_available()"])
        .output();
    if !torch.is_ok_and(|o| o.status.success()) {
        return Ok(Completion::ignored_with(
            "python3 -c \"import torch\" does not work here (or sees no GPU)",
        ));
    }
    let script = file.with_extension("py");
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let out = dir.path().join("trace.json.gz");
    let run = std::process::Command::new("python3")
        .arg(&script)
        .arg(&out)
        .output()
        .map_err(|e| e.to_string())?;
    if !run.status.success() {
        return Err(format!(
            "{} failed: {}",
            script.display(),
            String::from_utf8_lossy(&run.stderr)
        )
        .into());
    }
    rejudge(file, Some(&[out])).map(|()| Completion::Completed)
}
