//! `stream-litmus fuzz`: random programs on the GPU against the model.

use crate::FuzzArgs;
use std::process::ExitCode;
use std::time::Duration;
use stream_litmus::Lab;

pub fn fuzz(args: FuzzArgs) -> ExitCode {
    use std::io::{IsTerminal, Write};
    use stream_litmus::fuzz::{FuzzConfig, Shape};
    use stream_litmus::model::Refinement;
    let lab = Lab::new().with_trials(1);
    let gpu = match super::open_gpu(&lab, 1) {
        Ok(gpu) => gpu,
        Err(code) => return code,
    };
    let config = FuzzConfig {
        cases: args.cases,
        seed: args.seed,
        shape: Shape {
            spin: Duration::from_micros(args.spin_us.max(1)),
            ..Shape::default()
        },
        refinement: Refinement::for_connections(
            std::env::var("CUDA_DEVICE_MAX_CONNECTIONS").ok().as_deref(),
        ),
    };
    let tty = std::io::stderr().is_terminal();
    let mut exec = |p: &stream_litmus::Program| {
        let trials = gpu.run(p, 1)?;
        let tol = trials.calibration.tolerances();
        let timeline = trials.timelines.into_iter().next().expect("one trial");
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
    print!("{}", stream_litmus::report::fuzz::fuzz_report(&report));
    let write = |path: &std::path::Path, json: String| {
        std::fs::write(path, json).map_err(|e| eprintln!("stream-litmus: {}: {e}", path.display()))
    };
    if let Some(path) = &args.json {
        if write(
            path,
            serde_json::to_string_pretty(&report).expect("serializes"),
        )
        .is_err()
        {
            return ExitCode::from(2);
        }
    }
    if !report.violations.is_empty() {
        let programs: Vec<_> = report.violations.iter().map(|v| &v.program).collect();
        let json = serde_json::to_string_pretty(&programs).expect("serializes");
        if write(&args.regressions, json).is_ok() {
            println!(
                "shrunk violations written to {}",
                args.regressions.display()
            );
        }
    }
    if report.violations.is_empty() && report.errors == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
