//! `stream-litmus fuzz`: random programs on the GPU against the model.

use super::arguments::writable_file;
use super::arguments::FuzzArgs;
use super::{out, outln, CliError, CliResult};
use std::process::ExitCode;
use std::time::Duration;
use stream_litmus::Lab;

pub fn fuzz(args: FuzzArgs) -> CliResult {
    use std::io::{IsTerminal, Write};
    use stream_litmus::fuzz::{FuzzConfig, Shape};
    use stream_litmus::model::Refinement;
    outputs_checked(&args)?;
    // The model's queues come from this process's environment: checked before the GPU opens.
    let refinement =
        Refinement::for_connections(std::env::var("CUDA_DEVICE_MAX_CONNECTIONS").ok().as_deref())
            .map_err(|e| CliError::usage(format!("{e}; set it to 1..=32 or unset it")))?;
    // The committed corpus, then the violations an earlier run wrote to --regressions (read,
    // bounded and validated before the GPU opens).
    let earlier = earlier_regressions(&args.regressions)?;
    let mut regressions = stream_litmus::fuzz::regressions();
    regressions.extend(earlier.iter().cloned());
    let lab = Lab::new().with_trials(1);
    let gpu = super::open_gpu(&lab, 1)?;
    let config = FuzzConfig {
        cases: args.cases,
        seed: args.seed,
        shape: Shape {
            spin: Duration::from_micros(args.spin_us),
            ..Shape::default()
        },
        refinement,
        regressions,
    };
    let tty = std::io::stderr().is_terminal();
    // Where the executor's time went, summed over every program (the phases of `run --bench`).
    let mut spent = stream_litmus::timing::ClaimTiming::default();
    // Without the warm-up trial by default: a first-use cost only delays an op, which can make
    // a pair look serialized although ready (the precision table), never make ordered ops
    // overlap or run out of order (what the model is checked for).
    let how = stream_litmus::TrialPlan {
        warm_up: args.warm_up,
        watch_host: false,
    };
    let mut exec = |p: &stream_litmus::Program| {
        let run = gpu.run_as(p, 1, how)?;
        spent.absorb(&run.timing);
        let tol = gpu.calibration().tolerances();
        let timeline = run.timelines.into_iter().next().expect("one trial");
        Ok((timeline, tol))
    };
    let mut progress = |done: usize, total: usize| {
        if tty && (done % 25 == 0 || done == total) {
            eprint!("\rfuzz {done}/{total}");
            let _ = std::io::stderr().flush();
            if done == total {
                eprintln!();
            }
        }
    };
    let report = stream_litmus::fuzz::fuzz(&config, &mut exec, &mut progress);
    out!(
        "{}",
        stream_litmus::report::fuzz_report::fuzz_report(&report)
    );
    outln!(
        "exec   {}",
        stream_litmus::report::timing_text::executor_line(&spent)
    );
    if let Some(path) = &args.json {
        write_json(path, &report)?;
    }
    if !report.violations.is_empty() {
        save_regressions(&args.regressions, earlier, &report)?;
    }
    Ok(if report.violations.is_empty() && report.errors == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The output files known writable, and `--json` not the regressions file.
fn outputs_checked(args: &FuzzArgs) -> Result<(), CliError> {
    if let Some(path) = &args.json {
        writable_file(path)?;
        if stream_litmus::atomic_write::same_file(path, &args.regressions)
            || *path == args.regressions
        {
            return Err(CliError::usage(format!(
                "--json and --regressions both name {}; give them different files",
                stream_litmus::report::shown::path(path)
            )));
        }
    }
    writable_file(&args.regressions)?;
    Ok(())
}

/// Writes the shrunk violations to `path` after the programs it held (`earlier`).
fn save_regressions(
    path: &std::path::Path,
    earlier: Vec<stream_litmus::Program>,
    report: &stream_litmus::fuzz::FuzzReport,
) -> Result<(), CliError> {
    // The file keeps what it held: the earlier programs, then each new one once.
    let mut programs = earlier;
    for v in &report.violations {
        if !programs.contains(&v.program) {
            programs.push(v.program.clone());
        }
    }
    write_json(path, &stream_litmus::fuzz::Regressions { programs })?;
    outln!(
        "shrunk violations written to {}",
        stream_litmus::report::shown::path(path)
    );
    Ok(())
}

/// The programs an earlier run wrote to `path` (none if there is no such file), each validated:
/// a file that is not such a list, or holds a program the executor would refuse, is an error
/// naming it.
fn earlier_regressions(path: &std::path::Path) -> Result<Vec<stream_litmus::Program>, CliError> {
    if !path.exists() {
        return Ok(Vec::new());
    }
    let bad = |detail: String| {
        CliError::usage(format!(
            "{}: not a regressions file written by `fuzz` ({detail}); move it away or name \
             another with --regressions",
            stream_litmus::report::shown::path(path)
        ))
    };
    let file = stream_litmus::input_file::open_regular(path).map_err(|e| bad(e.to_string()))?;
    let programs = stream_litmus::bounded_json::read_json::<stream_litmus::fuzz::Regressions>(
        std::io::BufReader::new(file),
        stream_litmus::limits::read_limit(),
    )
    .map_err(|e| bad(e.to_string()))?
    .programs;
    for (i, p) in programs.iter().enumerate() {
        p.validate().map_err(|e| bad(format!("program {i}: {e}")))?;
    }
    Ok(programs)
}

/// Writes `value` as pretty JSON to `path`, atomically.
fn write_json(path: &std::path::Path, value: &impl serde::Serialize) -> Result<(), CliError> {
    stream_litmus::atomic_write::write_atomically(path, |w| {
        serde_json::to_writer_pretty(w, value).map_err(std::io::Error::from)
    })?;
    Ok(())
}
