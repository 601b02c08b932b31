//! The CLI run as a child, with its exit code, standard error and peak memory (its maximum
//! resident size, from `wait4`), for the tests that bound what reading a file may take.

use std::ffi::OsStr;
use std::process::{Command, Stdio};

/// Runs the CLI with `args` (no GPU, `env` added); returns its exit code, stderr and peak
/// resident memory in KiB.
// The child is reaped by `wait4` (which also gives its peak memory), not by `Child::wait`.
#[allow(clippy::zombie_processes)]
pub fn run_cli(args: &[&OsStr], env: &[(&str, &str)]) -> (Option<i32>, String, i64) {
    let child = Command::new(env!("CARGO_BIN_EXE_stream-litmus"))
        .args(args)
        .env("CUDA_VISIBLE_DEVICES", "")
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let mut stderr = child.stderr.unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut stderr, &mut s).unwrap();
        s
    });
    let mut status = 0;
    // SAFETY: an all-zero rusage is valid; wait4 fills it for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our child, not yet reaped; the pointers are valid for the call.
    let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(reaped, pid);
    let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    (code, reader.join().unwrap(), usage.ru_maxrss)
}
