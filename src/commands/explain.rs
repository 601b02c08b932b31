//! `stream-litmus explain TRACE…`: what held a traced program back, step by step (no GPU).
//!
//! Reads the traces as `check` does, cuts them into steps, and prints the model's must-precede
//! pairs checked, the waits the program did not ask for with their causes and time lost, and
//! the surprises (`stream_litmus::explain`). `--out DIR` writes the same text, an HTML page with
//! a table of those waits per step, and a Perfetto trace with each drawn as a flow; `--claims FILE` writes what was found as claims
//! on traces. Outputs are checked before anything is read: never an input, never through a link.

use super::arguments::ExplainArgs;
use super::{outln, CliError, CliResult};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;
use stream_litmus::explain;
use stream_litmus::trace::Trace;

pub fn explain(args: ExplainArgs) -> CliResult {
    let began = Instant::now();
    let outputs = outputs(&args)?;
    let trace = Trace::read(&args.traces).map_err(CliError::usage)?;
    let spec = explain::steps_of(&trace, args.trial.as_deref()).map_err(CliError::usage)?;
    // Every wait is kept only for the outputs that list them all.
    let every = args.out.is_some() || args.json.is_some() || args.claims.is_some();
    let e = match every {
        true => explain::explain(&trace, &spec),
        false => explain::explain_for_terminal(&trace, &spec),
    }
    .map_err(CliError::usage)?;
    let ops: usize = trace.files.iter().map(|f| f.ops.len()).sum();
    let names: Vec<String> = args
        .traces
        .iter()
        .map(|p| stream_litmus::report::shown::path(p))
        .collect();
    outln!("trace  {} ({ops} GPU ops)", names.join(", "));
    let text = explain::text(&e, &trace, explain::Listing::Summary);
    for line in text.lines() {
        // Other control characters of a name escaped as everywhere text is shown.
        outln!("{}", stream_litmus::report::shown::one_line(line));
    }
    if let (Some(dir), Some(folder)) = (&args.out, outputs.folder) {
        // Each file written as it is made (the text, the page and the Perfetto trace of every
        // wait are tens of MB for a long trace). The text is shown as the terminal is: a name's
        // control characters as text.
        use stream_litmus::atomic_write::{write_each_or_none, Writer};
        use stream_litmus::report::explained_chrome::write_chrome_trace;
        use stream_litmus::report::explained_html::write_html;
        let mut files: Vec<(PathBuf, Writer)> = vec![
            (
                dir.join("explain.txt"),
                Box::new(|w| {
                    let mut buffered = std::io::BufWriter::new(w);
                    explain::text_each(&e, &trace, explain::Listing::All, &mut |part| {
                        let shown = stream_litmus::report::shown::shown(part);
                        std::io::Write::write_all(&mut buffered, shown.as_bytes())
                    })?;
                    std::io::Write::flush(&mut buffered)
                }),
            ),
            (
                dir.join("report.html"),
                Box::new(|w| {
                    let mut buffered = std::io::BufWriter::new(w);
                    write_html(&e, &trace, &spec, &mut buffered)?;
                    std::io::Write::flush(&mut buffered)
                }),
            ),
            (
                dir.join("trace.json"),
                Box::new(|w| {
                    let mut buffered = std::io::BufWriter::new(w);
                    write_chrome_trace(&e, &trace, &spec, &mut buffered)?;
                    std::io::Write::flush(&mut buffered)
                }),
            ),
        ];
        write_each_or_none(&mut files)?;
        folder.keep();
        outln!(
            "report {}",
            stream_litmus::report::shown::path(&dir.join("report.html"))
        );
        outln!(
            "trace  {} (open it in ui.perfetto.dev)",
            stream_litmus::report::shown::path(&dir.join("trace.json"))
        );
    }
    if let Some(file) = &args.json {
        // Written as it is made, a step at a time (`explained_json.rs`).
        use stream_litmus::atomic_write::{write_each_or_none, Writer};
        use stream_litmus::report::explained_json::write_json;
        let mut files: Vec<(PathBuf, Writer)> = vec![(
            file.clone(),
            Box::new(|w| {
                let mut buffered = std::io::BufWriter::new(w);
                write_json(&e, &trace, &mut buffered)?;
                std::io::Write::flush(&mut buffered)
            }),
        )];
        write_each_or_none(&mut files)?;
        outln!("json   {}", stream_litmus::report::shown::path(file));
    }
    if let Some(file) = &args.claims {
        let traces = relative_to(file, &args.traces);
        let claims = stream_litmus::litmus::claims_from(&e, &trace, &spec, &traces)
            .map_err(CliError::usage)?;
        stream_litmus::atomic_write::write_all_or_none(&[(file.clone(), claims.as_bytes())])?;
        outln!(
            "claims {} (judge them with `stream-litmus check {}`)",
            stream_litmus::report::shown::path(file),
            stream_litmus::report::shown::path(file)
        );
    }
    let broken: usize = e.steps.iter().map(|s| s.violations.len()).sum();
    outln!(
        "explained in {:.2} s, no GPU used",
        began.elapsed().as_secs_f64()
    );
    Ok(ExitCode::from(u8::from(broken > 0)))
}

struct Outputs {
    folder: Option<stream_litmus::atomic_write::Folder>,
}

/// The outputs checked before any trace is read: writable, no link, never a trace given, never
/// one another (`--claims` naming `--out`'s report would overwrite it).
fn outputs(args: &ExplainArgs) -> Result<Outputs, CliError> {
    let mut files: Vec<(PathBuf, &str)> = Vec::new();
    let folder = match &args.out {
        Some(dir) => {
            let f = super::arguments::writable_folder(dir)?;
            files.extend(
                ["explain.txt", "report.html", "trace.json"].map(|f| (dir.join(f), "--out")),
            );
            Some(f)
        }
        None => None,
    };
    for (file, flag) in [(&args.claims, "--claims"), (&args.json, "--json")] {
        if let Some(c) = file {
            super::arguments::writable_file(c)?;
            files.push((c.clone(), flag));
        }
    }
    for (i, (a, flag_a)) in files.iter().enumerate() {
        for (b, flag_b) in &files[..i] {
            if stream_litmus::atomic_write::same_place(a, b) {
                return Err(CliError::usage(format!(
                    "{flag_a} and {flag_b} both name {}: one would overwrite the other; give \
                     them different files",
                    stream_litmus::report::shown::one_line(&stream_litmus::report::shown::path(a))
                )));
            }
        }
    }
    for (output, _) in &files {
        for input in &args.traces {
            super::arguments::not_the_input(output, input, "output")?;
        }
        stream_litmus::atomic_write::check_writable(output)?;
    }
    Ok(Outputs { folder })
}

/// Each trace as the claim file will name it: relative to the claim file's folder where it lies
/// in it, else as an absolute path.
fn relative_to(file: &Path, traces: &[PathBuf]) -> Vec<String> {
    let dir = file
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    traces
        .iter()
        .map(|t| {
            let full = t.canonicalize().unwrap_or_else(|_| t.clone());
            full.strip_prefix(&dir)
                .unwrap_or(&full)
                .display()
                .to_string()
        })
        .collect()
}
