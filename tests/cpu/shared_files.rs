//! Opening files from others: a claim file cannot choose what the child process loads, every
//! refusal the results loader would make comes before the GPU opens, and special files are
//! refused, not waited on (issue 22; docs/writing-claims.md, "Opening files from others").
//!
//! Every command here stops before the GPU is opened (`CUDA_VISIBLE_DEVICES` is empty all the
//! same, so that a slip would fail instead of running claims).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

fn cli() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_stream-litmus"));
    c.env("CUDA_VISIBLE_DEVICES", "");
    c
}

/// Runs `cmd`, killing it after 20 s: a command that blocks is a failure, not a hung test.
fn output(cmd: &mut Command) -> Output {
    use std::process::Stdio;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(20) {
            child.kill().unwrap();
            panic!("{cmd:?} did not end within 20 s");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().unwrap()
}

fn refused(out: &Output, message: &str) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "stderr: {stderr}");
    assert!(stderr.contains(message), "wanted {message:?} in: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr
}

fn claim(id: &str, env: &str, check: &str) -> String {
    format!(
        "claim {id}\nstatement \"x\"\nsource \"000_a5eb0762e7ac500e.txt\" section \"7\"\n\
         expect holds\n{env}\nstream s1, s2 = non-blocking\nA: spin 50us on s1\n\
         B: spin 50us on s2\n{check}\n"
    )
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn env_lines_that_could_run_code_are_refused_where_they_stand() {
    let dir = tempfile::tempdir().unwrap();
    for (env, message) in [
        ("env LD_PRELOAD = \"/tmp/x.so\"", "may not set `LD_PRELOAD`"),
        (
            "env LD_LIBRARY_PATH = \"/tmp\"",
            "may not set `LD_LIBRARY_PATH`",
        ),
        ("env CUDA_INJECTION64_PATH = \"/tmp/x.so\"", "may not set"),
        ("env PATH unset", "may not set `PATH`"),
        ("env STREAM_LITMUS_BIN = \"/bin/sh\"", "may not set"),
        (
            "env CUDA_DEVICE_MAX_CONNECTIONS = 9223372036854775807",
            "from 1 to 32",
        ),
        (
            "env CUDA_DEVICE_MAX_CONNECTIONS = 4000000000",
            "from 1 to 32",
        ),
        ("env CUDA_DEVICE_MAX_CONNECTIONS = abc", "from 1 to 32"),
        ("env CUDA_DEVICE_MAX_CONNECTIONS = 0", "from 1 to 32"),
    ] {
        let file = write(
            dir.path(),
            "c.litmus",
            &claim("x.y", env, "check overlaps(A, B)"),
        );
        for command in ["predict", "check"] {
            let err = refused(&output(cli().arg(command).arg(&file)), message);
            // Located: the file, line 5 (the env line) and a caret.
            assert!(err.contains("c.litmus:5:"), "{command} {env}: {err}");
        }
    }
}

#[test]
fn predict_shows_the_environment_a_claim_runs_under() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "c.litmus",
        &claim(
            "x.y",
            "env CUDA_DEVICE_MAX_CONNECTIONS = 1",
            "check overlaps(A, B)",
        ),
    );
    let out = output(cli().arg("predict").arg(&file));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(
        text.contains("env    CUDA_DEVICE_MAX_CONNECTIONS=1 (in a child process)"),
        "{text}"
    );
    assert!(text.contains("with 1 hardware queue(s)"), "{text}");
}

#[test]
fn what_the_results_loader_refuses_is_refused_before_the_gpu_opens() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(
        dir.path(),
        "a.litmus",
        &claim("x.same", "", "check overlaps(A, B)"),
    );
    let b = write(
        dir.path(),
        "b.litmus",
        &claim("x.same", "", "check overlaps(A, B)"),
    );
    let err = refused(&output(cli().arg("check").arg(&a).arg(&b)), "defined in");
    assert!(
        err.contains("a.litmus") && err.contains("b.litmus"),
        "{err}"
    );
    assert!(err.contains("nothing was run"), "{err}");

    let reversed = write(
        dir.path(),
        "r.litmus",
        &claim("x.rev", "", "check faster(B..A, A..B)"),
    );
    refused(&output(cli().arg("check").arg(&reversed)), "runs backwards");

    // The output would overwrite a claim file.
    let err = refused(
        &output(cli().arg("check").arg(&a).arg("--json").arg(&a)),
        "",
    );
    assert!(err.contains("destroy the input"), "{err}");
    assert!(std::fs::read_to_string(&a)
        .unwrap()
        .starts_with("claim x.same"));

    // A name too long for the temporary file written before the rename.
    for len in [244, 255] {
        let long = dir.path().join("n".repeat(len));
        let err = refused(
            &output(cli().arg("check").arg(&a).arg("--json").arg(&long)),
            "",
        );
        assert!(err.contains("at most 243 bytes"), "{len}: {err}");
    }
}

fn mkfifo(path: &Path) {
    let name = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
}

#[test]
fn fifos_are_refused_for_input_and_output_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("claims.litmus");
    mkfifo(&fifo);
    refused(
        &output(cli().arg("check").arg(&fifo)),
        "a FIFO (named pipe)",
    );
    // Named `*.litmus` in a folder given to `check`.
    refused(
        &output(cli().arg("predict").arg(dir.path())),
        "a FIFO (named pipe)",
    );
    refused(
        &output(cli().arg("judge").arg(&fifo)),
        "a FIFO (named pipe)",
    );
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/core-h100.json");
    let out = output(cli().arg("judge").arg(&fixture).arg("--write").arg(&fifo));
    refused(&out, "a FIFO (named pipe)");
}

#[test]
fn claim_folders_with_link_loops_are_read_once() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    write(
        &sub,
        "a.litmus",
        &claim("x.once", "", "check overlaps(A, B)"),
    );
    std::os::unix::fs::symlink(dir.path(), sub.join("loop1")).unwrap();
    std::os::unix::fs::symlink(&sub, sub.join("loop2")).unwrap();
    let out = output(cli().arg("predict").arg(dir.path()));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(text.matches("claim  x.once").count(), 1, "{text}");
}

#[test]
fn out_naming_a_file_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(
        dir.path(),
        "a.litmus",
        &claim("x.out", "", "check overlaps(A, B)"),
    );
    let file = write(dir.path(), "taken", "");
    let err = refused(
        &output(cli().arg("check").arg(&a).arg("--out").arg(&file)),
        "",
    );
    assert!(err.contains("is a regular file, not a folder"), "{err}");
}

#[test]
fn the_hidden_child_exits_2_on_a_bad_request() {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = cli()
        .arg("child")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"{\"trials\": 0, \"jobs\": []}")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    refused(&out, "trials");
}
