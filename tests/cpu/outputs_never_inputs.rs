//! Issue 36, rows 9 and 10: what a command writes is never one of its inputs and never reached
//! through a link, and both are refused before any work is done.

use crate::common;

use common::peak::run_cli;
use std::ffi::OsStr;
use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;

const CLAIM: &str = "claim t.c\nstatement \"s\"\nsource \"x\" section \"y\"\nexpect holds\n\
                     trace \"trace.json\"\nselect A = kernel \"a*\"\nselect B = kernel \"b*\"\n\
                     check overlaps(A, B)\n";

fn check_out(dir: &Path, out: &Path) -> (Option<i32>, String) {
    let claim = dir.join("c.litmus");
    let args = [
        OsStr::new("check"),
        claim.as_os_str(),
        OsStr::new("--out"),
        out.as_os_str(),
    ];
    let (code, err, _) = run_cli(&args, &[]);
    (code, err)
}

#[test]
fn check_out_never_replaces_the_trace_or_the_claims_nor_writes_through_a_link() {
    let dir = tempfile::tempdir().unwrap();
    let trace = common::kineto::two_kernels("a1", "b1");
    fs::write(dir.path().join("trace.json"), &trace).unwrap();
    fs::write(dir.path().join("c.litmus"), CLAIM).unwrap();
    // The report folder is the claims' own: its trace.json is the trace judged.
    let (code, err) = check_out(dir.path(), dir.path());
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("is the input") && err.contains("trace.json"),
        "{err}"
    );
    assert!(
        !err.contains("as expected"),
        "refused before judging: {err}"
    );
    assert_eq!(
        fs::read_to_string(dir.path().join("trace.json")).unwrap(),
        trace
    );
    // report.html, a hard link to the claim file.
    let out = dir.path().join("out");
    fs::create_dir(&out).unwrap();
    fs::hard_link(dir.path().join("c.litmus"), out.join("report.html")).unwrap();
    let (code, err) = check_out(dir.path(), &out);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("is the input"), "{err}");
    assert_eq!(
        fs::read_to_string(dir.path().join("c.litmus")).unwrap(),
        CLAIM
    );
    // report.html, a link to a file outside the folder.
    fs::remove_file(out.join("report.html")).unwrap();
    let outside = dir.path().join("outside.txt");
    fs::write(&outside, "keep").unwrap();
    symlink(&outside, out.join("report.html")).unwrap();
    let (code, err) = check_out(dir.path(), &out);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("is a link"), "{err}");
    assert_eq!(fs::read_to_string(&outside).unwrap(), "keep");
    // A folder of its own: written.
    fs::remove_file(out.join("report.html")).unwrap();
    let (code, err) = check_out(dir.path(), &out);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.join("report.html").is_file() && out.join("trace.json").is_file());
}

#[test]
fn render_out_writes_through_no_link() {
    let dir = tempfile::tempdir().unwrap();
    let outside = dir.path().join("outside.json");
    fs::write(&outside, "keep").unwrap();
    let out = dir.path().join("out");
    fs::create_dir(&out).unwrap();
    symlink(&outside, out.join("trace.json")).unwrap();
    let results = common::fixture("catalogue-h100.json.gz");
    let args = [
        OsStr::new("render"),
        results.as_os_str(),
        OsStr::new("--out"),
        out.as_os_str(),
    ];
    let (code, err, _) = run_cli(&args, &[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("is a link"), "{err}");
    assert_eq!(fs::read_to_string(&outside).unwrap(), "keep");
    assert!(!out.join("report.html").exists());
}

#[test]
fn trace_out_is_neither_a_link_nor_the_traced_command() {
    let dir = tempfile::tempdir().unwrap();
    let prog = dir.path().join("prog.sh");
    fs::write(&prog, "#!/bin/sh\ntrue\n").unwrap();
    let args = [
        OsStr::new("trace"),
        OsStr::new("--out"),
        prog.as_os_str(),
        OsStr::new("--"),
        prog.as_os_str(),
    ];
    let (code, err, _) = run_cli(&args, &[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("is the input"), "{err}");
    assert_eq!(fs::read_to_string(&prog).unwrap(), "#!/bin/sh\ntrue\n");
    let link = dir.path().join("t.json");
    symlink(&prog, &link).unwrap();
    let args = [
        OsStr::new("trace"),
        OsStr::new("--out"),
        link.as_os_str(),
        OsStr::new("--"),
        OsStr::new("true"),
    ];
    let (code, err, _) = run_cli(&args, &[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("is a link"), "{err}");
    assert_eq!(fs::read_to_string(&prog).unwrap(), "#!/bin/sh\ntrue\n");
}

/// Issue 36, "also": `STREAM_LITMUS_INJECTION` names the library loaded into the traced command;
/// the user's own environment, but where it points is said, through any link.
#[test]
fn trace_says_which_injection_library_it_was_given() {
    let dir = tempfile::tempdir().unwrap();
    let lib = dir.path().join("lib.so");
    fs::write(&lib, b"not a library").unwrap();
    let link = dir.path().join("link.so");
    symlink(&lib, &link).unwrap();
    let out = dir.path().join("t.json");
    let args = [
        OsStr::new("trace"),
        OsStr::new("--out"),
        out.as_os_str(),
        OsStr::new("--"),
        OsStr::new("true"),
    ];
    let (_, err, _) = run_cli(
        &args,
        &[("STREAM_LITMUS_INJECTION", link.to_str().unwrap())],
    );
    let real = lib.canonicalize().unwrap();
    assert!(
        err.contains(&format!("injection library is {}", real.display())),
        "{err}"
    );
}

/// Two outputs of one command are never one file (issue 51, point 6): `explain --claims` naming
/// the report `--out` writes is refused before anything is read or written.
#[test]
fn explain_refuses_claims_written_over_its_own_report() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.json");
    std::fs::write(&trace, common::kineto::two_kernels("a", "b")).unwrap();
    let out = dir.path().join("o");
    for (flag, file) in [("--claims", "report.html"), ("--json", "explain.txt")] {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_stream-litmus"))
            .arg("explain")
            .arg(&trace)
            .arg("--out")
            .arg(&out)
            .arg(flag)
            .arg(out.join(file))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains("both name"), "{err}");
        assert!(!out.join(file).exists());
    }
}
