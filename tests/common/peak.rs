//! The CLI run as a child, with its exit code, standard error and peak memory (its maximum
//! resident size, from `wait4`), for the tests that bound what reading a file may take.
//!
//! The CLI is started by a small process, not by the test itself. A process's maximum resident
//! size counts the memory it was started from: `exec` folds in the peak of the memory it
//! replaces, and a child spawned straight from the test (by `vfork`, sharing the test's memory
//! until `exec`) took the test's own peak, which other cases of the binary running beside it
//! raise (343 MiB reported for every child once one case read a 40 MB trace in the test's
//! memory). `setsid -f` forks a shell from its own small memory and ends; the shell becomes the
//! CLI, which, orphaned, comes back to the test, a subreaper, which reaps it with its own peak.

use std::ffi::OsStr;
use std::io::Read;
use std::process::{Command, Stdio};

/// Held while one command is timed: one measured command at a time in the test binary, since a
/// bound on one command's time is not a bound on its share of a machine running another beside
/// it. Taken before the clock starts, so that the wait is not counted.
pub fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    ONE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs the CLI with `args` (no GPU, `env` added); returns its exit code, stderr and peak
/// resident memory in KiB.
pub fn run_cli(args: &[&OsStr], env: &[(&str, &str)]) -> (Option<i32>, String, i64) {
    static SUBREAPER: std::sync::Once = std::sync::Once::new();
    SUBREAPER.call_once(|| {
        // SAFETY: prctl with PR_SET_CHILD_SUBREAPER takes an integer flag and changes only
        // which process adopts this one's orphaned descendants.
        let done = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
        assert_eq!(done, 0, "prctl(PR_SET_CHILD_SUBREAPER)");
    });
    // `setsid -f` forks and ends at once without waiting; its child, a shell, says its own pid
    // (the CLI's once it has replaced itself by it) and starts the CLI in its place. A shell
    // that put the CLI in the background and ended could reap it first, if it ended quickly.
    let mut shell = Command::new("setsid")
        .args(["-f", "/bin/sh", "-c"])
        .arg(r#"echo $$; exec "$0" "$@" >/dev/null"#)
        .arg(env!("CARGO_BIN_EXE_stream-litmus"))
        .args(args)
        .env("CUDA_VISIBLE_DEVICES", "")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("setsid (util-linux) starts the CLI");
    let mut stderr = shell.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        stderr.read_to_string(&mut s).unwrap();
        s
    });
    let mut pid = String::new();
    shell
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut pid)
        .unwrap();
    assert!(
        shell.wait().unwrap().success(),
        "setsid, which starts the CLI"
    );
    let pid: libc::pid_t = pid.trim().parse().unwrap();
    let mut status = 0;
    // SAFETY: an all-zero rusage is valid; wait4 fills it for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let reaped = loop {
        // SAFETY: `pid` is the CLI, orphaned when the shell ended and adopted by this process
        // (a subreaper), not yet reaped; the pointers are valid for the call.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        let e = std::io::Error::last_os_error();
        if r != -1 || e.kind() != std::io::ErrorKind::Interrupted {
            break (r, e);
        }
    };
    assert_eq!(reaped.0, pid, "wait4 of the CLI ({pid}): {}", reaped.1);
    let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    (code, reader.join().unwrap(), usage.ru_maxrss)
}
