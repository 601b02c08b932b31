//! `stream-litmus [run]`: the catalogue on the GPU, a verdict line per claim, the reports.

use super::{write_reports, Progress};
use crate::RunArgs;
use std::process::ExitCode;
use std::time::{Duration, Instant};
use stream_litmus::report::terminal;
use stream_litmus::{catalogue, Claim, ClaimRecord, Lab, RunRecord};

fn selected(args: &RunArgs) -> Vec<Claim> {
    catalogue::all(Duration::from_micros(args.spin_us.max(1)))
        .into_iter()
        .filter(|c| {
            args.filters.is_empty() || args.filters.iter().any(|f| c.id.contains(f.as_str()))
        })
        .collect()
}

pub fn run(args: RunArgs) -> ExitCode {
    let claims = selected(&args);
    if claims.is_empty() {
        eprintln!(
            "stream-litmus: no claim matches {:?}; see `stream-litmus list`",
            args.filters
        );
        return ExitCode::from(2);
    }
    run_claims(&claims, &args)
}

/// Runs `claims` on the GPU as the catalogue runs (verdict lines, tables, details, footer,
/// `--json`, `--out`); `run` and `check` share it. `args.filters` and `args.spin_us` are not read.
pub fn run_claims(claims: &[Claim], args: &RunArgs) -> ExitCode {
    let started = Instant::now();
    let mut lab = Lab::new();
    if let Some(n) = args.trials {
        lab = lab.with_trials(n);
    }
    let gpu = match super::open_gpu(&lab, lab.trials()) {
        Ok(gpu) => gpu,
        Err(code) => return code,
    };
    let mut record = RunRecord::new(Some(gpu.calibration().clone()), lab.trials());
    let mut progress = Progress::new(claims.len());
    record.claims = lab.check_all(claims, |rec| {
        progress.clear();
        println!("{}", terminal::claim_line(rec));
        progress.step(&rec.claim.id);
    });
    progress.clear();
    for table in stream_litmus::scenario::tables(&record.claims) {
        println!("\n{table}");
    }
    for rec in &record.claims {
        if args.details || !rec.as_expected() {
            println!("\n{}", terminal::details(rec));
        }
    }
    record.timing.setup_ns = gpu.setup_time().as_nanos() as u64;
    record.timing.child_ns = lab.child_time().as_nanos() as u64;
    record.timing.gpu_ns = record
        .claims
        .iter()
        .filter_map(ClaimRecord::trials)
        .map(|t| t.gpu_time_ns)
        .sum();
    record.timing.wall_ns = started.elapsed().as_nanos() as u64;
    println!("{}", terminal::footer(&record));
    if let Some(path) = &args.json {
        if let Err(e) = record.save(path) {
            eprintln!("stream-litmus: {e}");
            return ExitCode::from(2);
        }
        println!("results written to {}", path.display());
    }
    if let Some(dir) = &args.out {
        let saved = std::fs::create_dir_all(dir)
            .map_err(|e| format!("{}: {e}", dir.display()))
            .and_then(|_| {
                record
                    .save(&dir.join("results.json"))
                    .map_err(|e| e.to_string())
            })
            .and_then(|_| write_reports(&record, dir));
        if let Err(e) = saved {
            eprintln!("stream-litmus: {e}");
            return ExitCode::from(2);
        }
    }
    if record.all_as_expected() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
