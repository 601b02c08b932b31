//! Running programs in a child process, for environment variables the driver reads only once.
//!
//! `CUDA_DEVICE_MAX_CONNECTIONS` (and friends) are read when the driver initialises, so a
//! process cannot change them for itself. The lab re-invokes the `stream-litmus` binary as
//! `stream-litmus child` with the wanted environment: a [`ChildRequest`] goes in on stdin as one
//! line of JSON, a [`ChildReply`] with the child's own calibration and every program's trials
//! comes back on stdout. All programs that need the same environment share one child, so the cost
//! of opening the GPU is paid once per environment, not once per claim, and the request carries
//! the parent's compiled kernels, so that a child does not run NVRTC again. Both directions are
//! read with the size limit of results files (`limits.rs`), and the request's trial count is
//! checked.
//!
//! **Started ahead.** A child waits on stdin between opening its GPU (context, CUPTI, kernels)
//! and calibrating it, for the go (one byte) that [`Started::finish`] sends; stdin ending first
//! (a parent killed, or stopped before the child's turn) ends the child with nothing run.
//! So the lab may [`start`] a child before its own GPU is open, and the two open at once
//! (`ahead.rs`).

use crate::border::bounded_json::JsonError;
use crate::border::error::Error;
use crate::border::limits::MAX_TRIALS;
use crate::gpu::{Gpu, RatesFrom, WatchFrom};
use crate::judge::claim::EnvVar;
use crate::judge::relation::Check;
use crate::lab::collect::collect_trials;
use crate::measured::timing::ClaimTiming;
use crate::program::Program;
use crate::record::Trials;
use serde::{Deserialize, Serialize};
use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The environment variable that names the `stream-litmus` binary when the lab cannot find it.
pub const BIN_ENV: &str = "STREAM_LITMUS_BIN";

/// What the parent asks for.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ChildRequest {
    pub trials: usize,
    pub jobs: Vec<Job>,
    /// The parent's compiled kernels (`Gpu::ptx`), when it has opened the GPU: the child loads
    /// them instead of running NVRTC, and compiles its own if the driver refuses them (another
    /// device chosen by the environment).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ptx: Option<String>,
    /// The parent's copy rates (`Calibration::copy_rates`): the child takes them instead of
    /// timing copies and asking NVML again (about 10 ms a child).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copy_rates: Option<crate::measured::calibration::CopyRates>,
}

/// One program to run, with the checks that decide whether a trial counts (undecided trials are
/// replaced, as the verdict rules say); no checks: exactly `trials` trials.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Job {
    pub program: Program,
    pub checks: Vec<Check>,
}

/// What the child answers: one result per job, in request order.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ChildReply {
    pub runs: Vec<Result<Trials, Error>>,
    /// Where the child's own setup went (context, CUPTI, kernels, calibration).
    #[serde(default)]
    pub setup: crate::measured::timing::SetupTiming,
}

/// The child's side: reads a request from stdin, answers on stdout. Returns the exit code.
pub fn serve() -> i32 {
    let stdin_err = |detail: String| Error::File {
        path: "<stdin>".into(),
        detail,
    };
    let mut stdin = std::io::stdin().lock();
    let reply: Result<ChildReply, Error> = crate::border::bounded_json::read_json::<ChildRequest>(
        FirstLine::new(&mut stdin),
        crate::border::limits::read_limit(),
    )
    .map_err(|e| stdin_err(format!("not a child request: {e}")))
    .and_then(|request| {
        if !(1..=MAX_TRIALS).contains(&request.trials) {
            return Err(stdin_err(format!(
                "the child request asks for {} trials; it must be 1..={MAX_TRIALS}",
                request.trials
            )));
        }
        // The go: the next byte. Stdin ending first means the parent is gone (killed, or it
        // stopped before this child's turn): nothing is run for nobody.
        let go = |_: &mut crate::gpu::Watch| {
            if stdin.read_exact(&mut [0u8]).is_err() {
                eprintln!("stream-litmus child: stdin ended before the go; nothing was run");
                std::process::exit(2);
            }
            None
        };
        let rates = request
            .copy_rates
            .map_or(RatesFrom::KeptElseMeasured, RatesFrom::Given);
        let gpu = Gpu::process_with(request.ptx.as_deref(), rates, WatchFrom::FirstLook, go)?;
        let runs = request
            .jobs
            .iter()
            .map(|job| collect_trials(gpu, &job.program, &job.checks, request.trials, false))
            .collect();
        Ok(ChildReply {
            runs,
            setup: gpu.setup_split(),
        })
    });
    let json = serde_json::to_string(&reply).expect("replies always serialize");
    // A request that could not be served at all (bad input, no GPU) is an error of this
    // process: exit status 2 and the message on stderr, the reply on stdout for the parent.
    let failed = match &reply {
        Err(e) => {
            eprintln!("stream-litmus child: {e}");
            true
        }
        Ok(_) => false,
    };
    let mut out = std::io::stdout().lock();
    let written = out.write_all(json.as_bytes()).and_then(|_| out.flush());
    drop(out);
    end_stdout();
    match written {
        Ok(()) if failed => 2,
        Ok(()) => 0,
        Err(_) => 1,
    }
}

/// Ends this process's stdout before it exits (the pipe's write end is replaced by
/// `/dev/null`): the reply is whole, and the parent goes on while the driver tears this
/// process's context down, 22–27 ms on an H200's host (`Started::answer`).
fn end_stdout() {
    use std::os::fd::AsRawFd;
    if let Ok(null) = std::fs::OpenOptions::new().write(true).open("/dev/null") {
        // SAFETY: makes fd 1 a copy of an open descriptor; nothing writes to stdout after this.
        unsafe {
            libc::dup2(null.as_raw_fd(), 1);
        }
    }
}

/// A child given its request, opening its GPU or waiting for the go; killed if dropped before
/// [`Started::finish`].
pub struct Started {
    child: std::process::Child,
    /// Writes the request, then the go when it comes through `go`; dropping `go` unsent ends
    /// the child's stdin instead.
    writer: Option<JoinHandle<()>>,
    go: Option<std::sync::mpsc::Sender<()>>,
    reader: Option<JoinHandle<Result<Result<ChildReply, Error>, JsonError>>>,
    /// Ends (its sender dropped) once `reader` has read the child's stdout to its end.
    read: std::sync::mpsc::Receiver<()>,
    err_reader: Option<JoinHandle<String>>,
    env_text: String,
    jobs: usize,
    finished: bool,
    /// How long starting it took: the child's cost too, wherever it is started.
    pub start: Duration,
}

/// The parent's side: starts `binary child` under `env` with `request`; it opens its GPU and
/// waits for [`Started::finish`].
pub fn start(binary: &Path, env: &[EnvVar], request: &ChildRequest) -> Result<Started, Error> {
    let began = Instant::now();
    let env_text = env
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    let mut child = command(binary, env).spawn().map_err(|e| Error::Child {
        env: env_text.clone(),
        detail: format!(
            "could not start {}: {e}; set {BIN_ENV} to the stream-litmus binary",
            binary.display()
        ),
    })?;
    crate::gpu::own_child(child.id());
    // One line: serde_json writes no raw newline.
    let mut input = serde_json::to_vec(request).expect("requests always serialize");
    input.push(b'\n');
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let (go, told) = std::sync::mpsc::channel::<()>();
    // A thread of its own: a request larger than the pipe waits for the child to read it, and a
    // child that never does is killed by `finish`'s timeout, which ends the write.
    let writer = std::thread::spawn(move || {
        if stdin.write_all(&input).is_ok() && told.recv().is_ok() {
            let _ = stdin.write_all(b"g");
        }
    });
    let mut stdout = child.stdout.take().expect("stdout is piped");
    let limit = crate::border::limits::read_limit();
    let (ended, read) = std::sync::mpsc::channel::<()>();
    let reader = std::thread::spawn(move || {
        let _ended = ended;
        crate::border::bounded_json::read_json::<Result<ChildReply, Error>>(&mut stdout, limit)
    });
    let mut stderr = child.stderr.take().expect("stderr is piped");
    let err_reader = std::thread::spawn(move || {
        let mut buf = String::new();
        let _ = stderr.read_to_string(&mut buf);
        buf
    });
    Ok(Started {
        child,
        writer: Some(writer),
        go: Some(go),
        reader: Some(reader),
        read,
        err_reader: Some(err_reader),
        env_text,
        jobs: request.jobs.len(),
        finished: false,
        start: began.elapsed(),
    })
}

impl Started {
    /// Tells the child to go, and waits for its reply, killing it after `timeout`.
    pub fn finish(self, timeout: Duration) -> Result<ChildReply, Error> {
        self.answer(timeout).finish()
    }

    /// Tells the child to go, and waits at most `timeout` for its answer: its stdout ends once
    /// the reply is whole, which the child does before it exits (`end_stdout`), or when it
    /// dies. The child may still be exiting: [`Answered::finish`] waits for that too.
    pub fn answer(mut self, timeout: Duration) -> Answered {
        let deadline = Instant::now() + timeout;
        // The go, written once the request is; then stdin ends. A child that died meanwhile
        // cannot take it; its exit status and stderr say why in `finish`.
        if let Some(go) = self.go.take() {
            let _ = go.send(());
        }
        // The reader's sender is dropped when it ends: `Disconnected`, or `Timeout`.
        let _ = self.read.recv_timeout(timeout);
        Answered {
            started: self,
            deadline,
            timeout,
        }
    }
}

/// A child that answered (or ran out of time), perhaps still exiting.
pub struct Answered {
    started: Started,
    deadline: Instant,
    timeout: Duration,
}

impl Answered {
    /// Whether the child has exited (or can no longer be waited for).
    pub fn exited(&mut self) -> bool {
        !matches!(self.started.child.try_wait(), Ok(None))
    }

    /// Waits for the child's exit (killing it at the deadline), and takes its reply.
    pub fn finish(self) -> Result<ChildReply, Error> {
        let mut started = self.started;
        let env_text = started.env_text.clone();
        let fail = |detail: String| Error::Child {
            env: env_text.clone(),
            detail,
        };
        let status = wait(&mut started.child, (self.deadline, self.timeout), &fail);
        started.finished = true;
        // The child is gone, so its stdin is closed and the writer has ended.
        if let Some(writer) = started.writer.take() {
            let _ = writer.join();
        }
        let status = status?;
        let out = (started.reader.take())
            .expect("finished once")
            .join()
            .map_err(|_| fail("reading its output panicked".into()))?;
        let err_text = (started.err_reader.take())
            .and_then(|r| r.join().ok())
            .unwrap_or_default();
        reply_of(status, out, &err_text, started.jobs, &fail)
    }
}

impl Drop for Started {
    /// A child never told to go (the run stopped first) is killed; its pipes close with it.
    fn drop(&mut self) {
        if !self.finished {
            self.go = None;
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        crate::gpu::forget_child(self.child.id());
    }
}

/// The bytes of `inner` up to its first newline, which is taken and ends them; what follows
/// stays in `inner` (the child's go).
struct FirstLine<R> {
    inner: R,
    done: bool,
}

impl<R: BufRead> FirstLine<R> {
    fn new(inner: R) -> FirstLine<R> {
        FirstLine { inner, done: false }
    }
}

impl<R: BufRead> Read for FirstLine<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.done || buf.is_empty() {
            return Ok(0);
        }
        let available = self.inner.fill_buf()?;
        let (n, newline) = match available.iter().position(|&b| b == b'\n') {
            Some(at) => (at.min(buf.len()), at <= buf.len()),
            None => (available.len().min(buf.len()), false),
        };
        buf[..n].copy_from_slice(&available[..n]);
        self.inner.consume(n + usize::from(newline));
        self.done = newline;
        Ok(n)
    }
}

/// `binary child` with its pipes, under `env`.
fn command(binary: &Path, env: &[EnvVar]) -> Command {
    let mut cmd = Command::new(binary);
    cmd.arg("child")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for var in env {
        match &var.value {
            Some(v) => cmd.env(&var.name, v),
            None => cmd.env_remove(&var.name),
        };
    }
    cmd
}

/// How often [`wait`] asks whether the child has exited, for its first [`EXIT_POLL_FOR`]: it
/// waits only for the exit once the child's answer is in ([`Started::answer`]), 22–27 ms on an
/// H200's host; then, for a child that takes longer, every 2 ms.
const EXIT_POLL: Duration = Duration::from_micros(500);
const EXIT_POLL_FOR: Duration = Duration::from_millis(50);

/// How the child exited, or the error when it did not by `deadline`, `timeout` after its go (it
/// is killed).
fn wait(
    child: &mut std::process::Child,
    (deadline, timeout): (Instant, Duration),
    fail: &dyn Fn(String) -> Error,
) -> Result<std::process::ExitStatus, Error> {
    let waiting = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Ok(status),
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(fail(format!(
                    "no answer within {:.0} s; it was killed",
                    timeout.as_secs_f64()
                )));
            }
            Ok(None) if waiting.elapsed() < EXIT_POLL_FOR => std::thread::sleep(EXIT_POLL),
            Ok(None) => std::thread::sleep(Duration::from_millis(2)),
            Err(e) => return Err(fail(format!("waiting for it failed: {e}"))),
        }
    }
}

/// The child's reply to `request`, from its exit status, its output read as a reply and its
/// stderr; the error that says why there is none.
fn reply_of(
    status: std::process::ExitStatus,
    out: Result<Result<ChildReply, Error>, JsonError>,
    err_text: &str,
    jobs: usize,
    fail: &dyn Fn(String) -> Error,
) -> Result<ChildReply, Error> {
    if !status.success() {
        // A child that could not serve the request says why in its reply too.
        if let Ok(Err(e)) = out {
            return Err(e);
        }
        return Err(fail(format!(
            "it exited with {status}: {}",
            err_text.trim()
        )));
    }
    let reply = out.map_err(|e| {
        fail(format!(
            "its answer was not a child reply ({e}); stderr: {}",
            err_text.trim()
        ))
    })??;
    if reply.runs.len() != jobs {
        return Err(fail(format!(
            "it answered {} programs of {jobs}",
            reply.runs.len()
        )));
    }
    Ok(reply)
}

/// The `stream-litmus` binary to run a child with: `given` ([`crate::Lab::with_child_binary`]),
/// else [`BIN_ENV`], else this executable if it is `stream-litmus`, else the one cargo built
/// beside this test binary.
pub(super) fn binary(given: Option<&Path>) -> Result<PathBuf, Error> {
    if let Some(p) = given {
        return Ok(p.to_path_buf());
    }
    if let Some(p) = std::env::var_os(BIN_ENV) {
        return Ok(PathBuf::from(p));
    }
    let exe = std::env::current_exe().ok();
    if let Some(p) = exe
        .as_ref()
        .filter(|p| p.file_stem().is_some_and(|s| s == "stream-litmus"))
    {
        return Ok(p.clone());
    }
    exe.as_deref()
        .and_then(beside_test_binary)
        .ok_or_else(|| Error::Child {
            env: String::new(),
            detail: format!(
                "this claim needs its own process, and the stream-litmus binary was not found \
                 (neither this program nor beside it in cargo's target folder): set {BIN_ENV} or \
                 call Lab::with_child_binary"
            ),
        })
}

/// The `stream-litmus` binary that cargo built beside a test binary of this package: tests run
/// from `target/PROFILE/deps/`, and `cargo test` builds the package's binary into
/// `target/PROFILE/` for its integration tests. So a user's own test file finds it with no
/// setting.
fn beside_test_binary(exe: &std::path::Path) -> Option<PathBuf> {
    let deps = exe.parent()?;
    if deps.file_name()? != "deps" {
        return None;
    }
    let bin = deps
        .parent()?
        .join(format!("stream-litmus{}", std::env::consts::EXE_SUFFIX));
    bin.is_file().then_some(bin)
}

/// Charges a child's own cost (its wall time less its programs' walls) to its programs' timings,
/// in equal shares, so that the claims' walls add up to the time the parent waited.
pub(super) fn share_cost(runs: &mut [Result<Trials, Error>], waited_ns: u64) {
    let timed: Vec<&mut ClaimTiming> = runs
        .iter_mut()
        .filter_map(|r| r.as_mut().ok()?.timing.as_mut())
        .collect();
    if timed.is_empty() {
        return;
    }
    let own = timed.iter().fold(0u64, |a, t| a.saturating_add(t.wall_ns));
    let share = waited_ns.saturating_sub(own) / timed.len() as u64;
    for t in timed {
        t.child_ns += share;
        t.wall_ns += share;
    }
}

#[cfg(test)]
mod tests {
    use super::{beside_test_binary, FirstLine};
    use std::io::Read;

    /// The request is the first line, read in pieces of any size; the go after it stays unread.
    #[test]
    fn the_request_ends_at_the_first_newline_and_leaves_the_go() {
        for piece in [1, 2, 3, 7, 64] {
            let mut input: &[u8] = b"{\"a\": 1}\ngo";
            let mut line = Vec::new();
            let mut reader = FirstLine::new(&mut input);
            let mut buf = vec![0u8; piece];
            loop {
                let n = reader.read(&mut buf).unwrap();
                if n == 0 {
                    break;
                }
                line.extend_from_slice(&buf[..n]);
            }
            assert_eq!(line, b"{\"a\": 1}", "pieces of {piece}");
            assert_eq!(input, b"go", "pieces of {piece}");
        }
        // Without a newline the line ends with the input.
        let mut input: &[u8] = b"{}";
        let mut line = String::new();
        FirstLine::new(&mut input)
            .read_to_string(&mut line)
            .unwrap();
        assert_eq!(line, "{}");
    }

    /// A user's test binary in `target/PROFILE/deps/` finds the package's CLI one folder up;
    /// a binary elsewhere, or a folder without the CLI, finds nothing.
    #[test]
    fn the_cli_is_found_beside_a_test_binary_in_cargo_s_layout() {
        let root = tempfile::tempdir().unwrap();
        let deps = root.path().join("release/deps");
        std::fs::create_dir_all(&deps).unwrap();
        let test = deps.join("my_claims-0123abcd");
        std::fs::write(&test, b"").unwrap();
        assert_eq!(beside_test_binary(&test), None, "no CLI built yet");
        let cli = root.path().join(format!(
            "release/stream-litmus{}",
            std::env::consts::EXE_SUFFIX
        ));
        std::fs::write(&cli, b"").unwrap();
        assert_eq!(beside_test_binary(&test), Some(cli));
        let elsewhere = root.path().join("release/my_claims");
        assert_eq!(beside_test_binary(&elsewhere), None, "not under deps/");
    }
}
