//! The `stream-litmus` command: runs the claim catalogue on the GPU and prints a verdict per
//! claim; writes and compares reports; fuzzes the model; sweeps; lists and shows claims.

use clap::Parser;
use std::process::ExitCode;
use stream_litmus::catalogue;

mod commands;

use commands::arguments::{Cli, Command};
use commands::{
    check, compare, explain, fuzz, hog, judge, outln, predict, render, run, show, sweep, trace,
    CliResult,
};

fn main() -> ExitCode {
    // Output piped into `head` or `less` should end the program quietly when the reader leaves,
    // as for any Unix filter, not panic in `println!`: restore the default SIGPIPE action, which
    // the Rust runtime sets to "ignore".
    // SAFETY: called before any other thread exists; SIG_DFL is a valid action for SIGPIPE.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    // Large blocks given back when freed (`border/heap.rs`): the peak is what is held.
    stream_litmus::heap::give_back_large_blocks();
    let cli = Cli::parse();
    if let Err(e) = stream_litmus::limits::check_env() {
        return commands::CliError::usage(e).report();
    }
    let result: CliResult = match cli.command {
        None => run(cli.run),
        Some(Command::Run(args)) => run(args),
        Some(Command::List) => list(),
        Some(Command::Show { id, json, litmus }) => show(&id, json, litmus),
        Some(Command::Check(args)) => check(args),
        Some(Command::Explain(args)) => explain(args),
        Some(Command::Hog { seconds }) => hog(seconds),
        Some(Command::Predict { files }) => predict(&files),
        Some(Command::Judge { results, write }) => judge(&results, write.as_deref()),
        Some(Command::Render { results, out }) => render(&results, &out),
        Some(Command::Compare { a, b }) => compare(&a, &b),
        Some(Command::Fuzz(args)) => fuzz(args),
        Some(Command::Sweep {
            trials,
            max_streams,
        }) => sweep(trials, max_streams),
        Some(Command::Trace {
            out,
            overhead,
            command,
        }) => trace(&out, overhead, &command),
        Some(Command::Child) => Ok(ExitCode::from(stream_litmus::serve_child() as u8)),
    };
    // The one place where an error becomes a message and an exit status.
    result.unwrap_or_else(commands::CliError::report)
}

fn list() -> CliResult {
    for c in catalogue::all(catalogue::DEFAULT_SPIN) {
        outln!(
            "{:<36} expect {:<9} {} — {}",
            c.id,
            c.expect,
            c.source,
            c.statement
        );
    }
    for c in catalogue::multi_gpu(catalogue::DEFAULT_SPIN) {
        outln!(
            "{:<36} expect {:<9} (needs {} GPUs) {} — {}",
            c.id,
            c.expect,
            catalogue::MULTI_GPU_DEVICES,
            c.source,
            c.statement
        );
    }
    Ok(ExitCode::SUCCESS)
}
