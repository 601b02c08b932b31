//! docs/cli.md against the CLI itself: every subcommand, every long option of every subcommand
//! and every `STREAM_LITMUS_*` variable the code reads is documented there, and the README stays
//! a front door (issue 53: the tables drifted from `--help` while they lived in the README).

use std::path::Path;
use std::process::Command;

fn help(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_stream-litmus"))
        .args(args)
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success(), "{args:?} --help failed");
    String::from_utf8(out.stdout).unwrap()
}

/// The long options of a help text (`--json`, `--spin-us`), `--help` left out.
fn options(text: &str) -> Vec<String> {
    let mut found: Vec<String> = text
        .lines()
        .filter_map(|l| {
            let l = l.trim_start();
            let l = l
                .strip_prefix("-")
                .filter(|r| !r.starts_with('-'))
                .map_or(l, |r| r.split_once(", ").map_or(r, |(_, rest)| rest));
            let name: String = l
                .strip_prefix("--")?
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            Some(format!("--{name}"))
        })
        .filter(|o| o != "--help" && o.len() > 2)
        .collect();
    found.sort();
    found.dedup();
    found
}

fn subcommands(top: &str) -> Vec<String> {
    top.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|c| c != "help")
        .collect()
}

fn doc(name: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(name)).unwrap()
}

#[test]
fn every_subcommand_and_option_is_in_docs_cli() {
    let cli = doc("docs/cli.md");
    let top = help(&[]);
    let mut missing = Vec::new();
    for o in options(&top) {
        if !cli.contains(&format!("`{o}")) {
            missing.push(format!("stream-litmus {o}"));
        }
    }
    let subs = subcommands(&top);
    assert!(subs.len() >= 10, "{subs:?}");
    for s in subs {
        if !cli.contains(&format!("`{s}")) {
            missing.push(format!("subcommand {s}"));
        }
        for o in options(&help(&[&s])) {
            if !cli.contains(&o) {
                missing.push(format!("{s} {o}"));
            }
        }
    }
    assert!(missing.is_empty(), "not in docs/cli.md: {missing:?}");
}

#[test]
fn every_environment_variable_the_code_reads_is_in_docs_cli() {
    let cli = doc("docs/cli.md");
    let mut names = Vec::new();
    // The root crate's and every member crate's sources (crates/*/src).
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut dirs = vec![root.join("src"), root.join("crates")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let text = std::fs::read_to_string(&p).unwrap();
                for (i, _) in text.match_indices("\"STREAM_LITMUS_") {
                    let name: String = text[i + 1..]
                        .chars()
                        .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
                        .collect();
                    names.push(name);
                }
            }
        }
    }
    names.sort();
    names.dedup();
    assert!(names.len() >= 8, "{names:?}");
    let missing: Vec<_> = names.iter().filter(|n| !cli.contains(n.as_str())).collect();
    assert!(missing.is_empty(), "not in docs/cli.md: {missing:?}");
}

#[test]
fn the_readme_is_a_front_door() {
    let lines = doc("README.md").lines().count();
    assert!(
        lines <= 250,
        "README.md has {lines} lines: details belong in docs/"
    );
}
