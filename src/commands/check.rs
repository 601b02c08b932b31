//! `stream-litmus check FILE…`: the claims of claim files on the GPU, as the catalogue runs.
//! Every file is read and checked before the GPU is opened, so a typo costs no GPU time.

use super::{CliError, CliResult};
use crate::CheckArgs;
use std::path::PathBuf;
use stream_litmus::{litmus, Claim};

pub fn check(args: CheckArgs) -> CliResult {
    let claims = load_all(&args.files)?;
    let claims: Vec<Claim> = claims
        .into_iter()
        .filter(|c| {
            args.filters.is_empty() || args.filters.iter().any(|f| c.id.contains(f.as_str()))
        })
        .collect();
    if claims.is_empty() {
        return Err(CliError::usage(format!(
            "no claim in these files matches {:?}",
            args.filters
        )));
    }
    super::run::run_claims(&claims, &args.options)
}

/// The claims of every file, in order (a directory stands for its `*.litmus` files, in name
/// order, searched recursively); on any error, each file's first error is printed and the exit
/// code is 2.
pub fn load_all(paths: &[PathBuf]) -> Result<Vec<Claim>, CliError> {
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
            let mut found = Vec::new();
            litmus_files(path, &mut found);
            found.sort();
            files.extend(found);
        } else {
            files.push(path.clone());
        }
    }
    let mut claims = Vec::new();
    let mut failed = false;
    for path in &files {
        match litmus::load(path) {
            Ok(mut more) => claims.append(&mut more),
            Err(e) => {
                eprintln!("{e}\n");
                failed = true;
            }
        }
    }
    if files.is_empty() {
        return Err(CliError::usage(format!(
            "no claim file (*.litmus) in {paths:?}"
        )));
    }
    if failed {
        return Err(CliError::usage(
            "nothing was run; fix the claim files above",
        ));
    }
    Ok(claims)
}

fn litmus_files(dir: &std::path::Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for path in entries.flatten().map(|e| e.path()) {
        if path.is_dir() {
            litmus_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "litmus") {
            out.push(path);
        }
    }
}
