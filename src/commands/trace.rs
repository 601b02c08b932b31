//! `stream-litmus trace [--out FILE] [--overhead[=PAIRS]] -- CMD ARGS…`: runs any CUDA program with our
//! CUPTI injection library (`CUDA_INJECTION64_PATH`), then joins what each of its processes
//! recorded into one trace for `check --trace`.
//!
//! The command's output and exit status pass through unchanged (a signal becomes 128 + its
//! number, as a shell reports it); everything this command says goes to stderr. It never clears
//! the command's environment, only adds the two variables it needs. Refused, with exit status 2
//! and no trace file: a command that does not exist, no injection library beside the binary, no
//! CUPTI, or a command already run under another CUDA tool (`CUDA_INJECTION64_PATH` set).

use super::{errln, CliError, CliResult};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;
use stream_litmus::atomic_write::check_writable;
use stream_litmus::trace::join;

/// Names the injection library by path, instead of the one beside the binary.
pub const INJECTION_ENV: &str = "STREAM_LITMUS_INJECTION";
const LIBRARY: &str = "libstream_litmus_inject.so";

/// The file a command names: itself where it holds a `/`, else the first match on `PATH` (the
/// file the shell would run), else the name as given.
fn program_path(program: &OsString) -> PathBuf {
    let named = Path::new(program);
    if named.components().count() > 1 {
        return named.to_path_buf();
    }
    (std::env::var_os("PATH").iter())
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join(named))
        .find(|p| p.is_file())
        .unwrap_or_else(|| named.to_path_buf())
}

pub fn trace(out: &Path, overhead: Option<u32>, command: &[OsString]) -> CliResult {
    let Some(program) = command.first() else {
        return Err(CliError::usage(
            "no command given: stream-litmus trace -- CMD ARGS…",
        ));
    };
    let library = ready(out, program, command)?;
    let shown = command
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>();
    // Every process counts its times from one instant a minute before now (CUPTI's clock is the
    // system clock in ns): small numbers, exact to the ns when written as µs.
    let base = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs().saturating_sub(60) * 1_000_000_000);
    let runs = runs(program, &command[1..], &library, overhead, base)?;
    use std::os::unix::process::ExitStatusExt;
    let signal = runs.status.signal();
    let meta = serde_json::json!({
        "command": shown,
        "exit_code": runs.status.code(),
        "signal": signal,
        "cut_short": signal.is_some(),
        "wall_s": runs.wall,
        "untraced_wall_s": runs.untraced,
        "overhead_pairs": runs.pairs,
        "base_ns": base,
    });
    let joined = join(runs.dir.path(), out, meta).map_err(CliError::usage)?;
    tell(&joined, out, signal, &runs);
    let code = match (runs.status.code(), signal) {
        (Some(c), _) => c,
        (None, Some(s)) => 128 + s,
        (None, None) => 1,
    };
    Ok(ExitCode::from(code.clamp(0, 255) as u8))
}

/// The injection library, once the trace file is known writable and not an input, and the
/// command is known to run under no other CUDA tool, with CUPTI found.
fn ready(out: &Path, program: &OsString, command: &[OsString]) -> Result<PathBuf, CliError> {
    check_writable(out)?;
    for input in std::iter::once(program_path(program)).chain(command.iter().map(PathBuf::from)) {
        super::arguments::not_the_input(out, &input, "--out")?;
    }
    let library = injection_library()?;
    if let Some(other) = std::env::var_os("CUDA_INJECTION64_PATH") {
        return Err(CliError::usage(format!(
            "CUDA_INJECTION64_PATH is already set ({}): the command runs under another CUDA tool \
             (Nsight Systems or Compute?); trace it outside that tool",
            other.to_string_lossy()
        )));
    }
    if stream_litmus::find_cupti().is_none() {
        return Err(CliError::usage(
            "CUPTI not found: looked for libcupti.so, libcupti.so.13, .12 and .11 through the \
             loader; it ships with the CUDA toolkit (extras/CUPTI/lib64): add its directory to \
             LD_LIBRARY_PATH",
        ));
    }
    Ok(library)
}

/// The command's runs: the traced one kept, with its records' folder, and the untraced and
/// traced walls of `--overhead`.
struct Runs {
    dir: tempfile::TempDir,
    status: std::process::ExitStatus,
    wall: f64,
    untraced: Option<f64>,
    pairs: Vec<(f64, f64)>,
}

/// Runs the command: with `--overhead=N`, N untraced runs and N traced ones in turn, the last
/// traced one kept.
fn runs(
    program: &OsString,
    args: &[OsString],
    library: &Path,
    overhead: Option<u32>,
    base: u64,
) -> Result<Runs, CliError> {
    let scratch =
        || tempfile::tempdir().map_err(|e| CliError::usage(format!("a temporary folder: {e}")));
    let mut pairs: Vec<(f64, f64)> = Vec::new();
    let mut untraced = None;
    let mut statuses = Vec::new();
    for k in 1..=overhead.unwrap_or(0) {
        let (s, u) = run(program, args, None)?;
        statuses.push(s);
        if k < overhead.unwrap_or(0) {
            let thrown = scratch()?;
            let (s, t) = run(program, args, Some((library, thrown.path(), base)))?;
            statuses.push(s);
            pairs.push((u, t));
        }
        untraced = Some(u);
    }
    let dir = scratch()?;
    let (status, wall) = run(program, args, Some((library, dir.path(), base)))?;
    if let Some(other) = statuses.iter().find(|s| **s != status) {
        errln!(
            "stream-litmus trace: the runs for --overhead did not all end alike ({other} against \
             {status} for the traced run kept): their times may not compare"
        );
    }
    if let Some(u) = untraced {
        pairs.push((u, wall));
    }
    Ok(Runs {
        dir,
        status,
        wall,
        untraced,
        pairs,
    })
}

/// What the trace holds and how long the command ran, on stderr.
fn tell(joined: &stream_litmus::trace::Joined, out: &Path, signal: Option<i32>, runs: &Runs) {
    for note in &joined.notes {
        errln!("stream-litmus trace: in the command: {note}");
    }
    errln!(
        "stream-litmus trace: {} kernels, {} copies, {} memsets, {} CUDA calls, {} syncs with \
         their streams, {} NVTX ranges from {} process(es) in {}",
        joined.kernels,
        joined.copies,
        joined.memsets,
        joined.calls,
        joined.syncs,
        joined.ranges,
        joined.processes,
        stream_litmus::report::shown::path(out)
    );
    if joined.gpu_events() == 0 {
        errln!(
            "stream-litmus trace: no GPU events: {}",
            match joined.processes {
                0 => "the command used no CUDA".to_string(),
                n => format!(
                    "{n} process(es) started CUDA but CUPTI handed us nothing: does the command \
                     use CUPTI itself (a profiler; stream-litmus's own copy witness: run it with \
                     STREAM_LITMUS_CUPTI=off)?"
                ),
            }
        );
    }
    if let Some(s) = signal {
        errln!("stream-litmus trace: the command was killed by signal {s}: the trace holds what CUPTI had flushed ({} cut line(s) dropped)", joined.cut_lines);
    }
    let wall = runs.wall;
    match (runs.untraced, runs.pairs.len()) {
        (Some(u), 1) => errln!(
            "stream-litmus trace: the command ran {wall:.3} s traced, {u:.3} s untraced ({:+.1} %)",
            (wall / u - 1.0) * 100.0
        ),
        (Some(_), n) => errln!(
            "stream-litmus trace: {n} runs in turn: {}",
            overhead_summary(&runs.pairs)
        ),
        (None, _) => errln!("stream-litmus trace: the command ran {wall:.3} s"),
    }
}

/// "traced 0.547 s (0.486–0.622), untraced 0.381 s (0.325–0.412): median +43.6 % (pairs +24.0
/// to +70.2 %)": the medians of (untraced, traced) wall pairs, and each pair's own overhead.
pub fn overhead_summary(pairs: &[(f64, f64)]) -> String {
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        let n = v.len();
        match n {
            0 => f64::NAN,
            _ if n % 2 == 1 => v[n / 2],
            _ => (v[n / 2 - 1] + v[n / 2]) / 2.0,
        }
    };
    let range = |v: &[f64]| {
        let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (lo, hi)
    };
    let u: Vec<f64> = pairs.iter().map(|p| p.0).collect();
    let t: Vec<f64> = pairs.iter().map(|p| p.1).collect();
    let each: Vec<f64> = pairs.iter().map(|(u, t)| (t / u - 1.0) * 100.0).collect();
    let (ul, uh) = range(&u);
    let (tl, th) = range(&t);
    let (el, eh) = range(&each);
    let (mu, mt) = (median(u), median(t));
    format!(
        "traced {mt:.3} s ({tl:.3}–{th:.3}), untraced {mu:.3} s ({ul:.3}–{uh:.3}): median \
         {:+.1} % (pairs {el:+.1} to {eh:+.1} %)",
        (mt / mu - 1.0) * 100.0
    )
}

/// Runs the command, traced when `inject` gives the library and the folder for its records.
fn run(
    program: &OsString,
    args: &[OsString],
    inject: Option<(&Path, &Path, u64)>,
) -> Result<(std::process::ExitStatus, f64), CliError> {
    let mut cmd = Command::new(program);
    cmd.args(args);
    if let Some((library, dir, base)) = inject {
        // NVTX hands its ranges to CUPTI when told where CUPTI is (unless the user said).
        if std::env::var_os("NVTX_INJECTION64_PATH").is_none() {
            if let Some(cupti) = stream_litmus::find_cupti() {
                cmd.env("NVTX_INJECTION64_PATH", cupti);
            }
        }
        cmd.env("CUDA_INJECTION64_PATH", library)
            .env(stream_litmus::TRACE_DIR_ENV, dir)
            .env(stream_litmus::TRACE_BASE_ENV, base.to_string());
    }
    let began = Instant::now();
    let status = cmd.status().map_err(|e| {
        let name = program.to_string_lossy();
        CliError::usage(match e.kind() {
            std::io::ErrorKind::NotFound => format!("command not found: {name}"),
            std::io::ErrorKind::PermissionDenied => format!("{name}: permission denied"),
            _ => format!("cannot run {name}: {e}"),
        })
    })?;
    Ok((status, began.elapsed().as_secs_f64()))
}

/// `$STREAM_LITMUS_INJECTION`, else `libstream_litmus_inject.so` beside the binary (cargo builds it
/// there with the binary), or in `../lib` from it (where the Python wheel installs it: the binary
/// in `<prefix>/bin`, the library in `<prefix>/lib`).
fn injection_library() -> Result<PathBuf, CliError> {
    if let Some(p) = std::env::var_os(INJECTION_ENV) {
        let p = PathBuf::from(p);
        return match p.is_file() {
            // The user's own environment, so no escalation; but a library loaded into the traced
            // command is said, with where it really lies.
            true => {
                let real = p.canonicalize().unwrap_or_else(|_| p.clone());
                errln!(
                    "stream-litmus trace: the injection library is {} ({INJECTION_ENV})",
                    stream_litmus::report::shown::path(&real)
                );
                Ok(p)
            }
            false => Err(CliError::usage(format!(
                "{INJECTION_ENV} names {}, which is no file",
                stream_litmus::report::shown::path(&p)
            ))),
        };
    }
    let exe = std::env::current_exe()
        .map_err(|e| CliError::usage(format!("cannot find this executable: {e}")))?;
    let dir = exe.parent().unwrap_or(Path::new("."));
    let candidates = [
        dir.join(LIBRARY),
        dir.join("..").join(LIBRARY),
        dir.join("..").join("lib").join(LIBRARY),
    ];
    candidates
        .iter()
        .find(|p| p.is_file())
        .map(|p| p.canonicalize().unwrap_or_else(|_| p.clone()))
        .ok_or_else(|| {
            CliError::usage(format!(
                "the CUPTI injection library {LIBRARY} is not beside this executable (looked at \
                 {}): `cargo build --release` builds it with the binary, or name it with \
                 {INJECTION_ENV}",
                candidates
                    .iter()
                    .map(|p| stream_litmus::report::shown::path(p))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::overhead_summary;

    #[test]
    fn the_summary_gives_medians_ranges_and_each_pairs_overhead() {
        let s = overhead_summary(&[(1.0, 1.5), (2.0, 2.2), (1.2, 1.3)]);
        assert_eq!(
            s,
            "traced 1.500 s (1.300–2.200), untraced 1.200 s (1.000–2.000): median +25.0 % \
             (pairs +8.3 to +50.0 %)"
        );
        let even = overhead_summary(&[(1.0, 1.1), (3.0, 3.3)]);
        assert!(even.starts_with("traced 2.200 s"), "{even}");
    }
}
