//! Claim files as tests: every `*.litmus` file under `claims/` is two tests, found when the
//! tests run, so that a user adds a test by adding a file.
//! - `parses::FILE` reads the file on the CPU: a parse error fails it, GPU or not;
//! - `gpu::FILE` runs its claims on the GPU through the [`Lab`] and fails when a verdict differs
//!   from the expectation, printing the evidence. Without a GPU (decided at build time, like
//!   the other GPU tests: `cfg(gpu)` from build.rs) it is ignored, with the reason.
//!
//! `malformed::*` runs the CLI on broken files: each must give one error with file, line and
//! column, exit 2, and reach no GPU; `cli::*` runs `show --litmus` and `predict`.

#[path = "claim_files/cli.rs"]
mod cli;

use libtest_mimic::{Arguments, Completion, Failed, Trial};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use stream_litmus::report::terminal;
use stream_litmus::{litmus, Lab};

fn main() {
    let args = Arguments::from_args();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    collect(&root.join("claims"), &mut files);
    files.sort();
    let mut trials = Vec::new();
    let all = files.clone();
    for path in files {
        let name = path
            .strip_prefix(root)
            .unwrap_or(&path)
            .display()
            .to_string();
        let p = path.clone();
        trials.push(Trial::test(format!("parses::{name}"), move || {
            litmus::load(&p)
                .map(drop)
                .map_err(|e| Failed::from(e.to_string()))
        }));
        // The catalogue's own files run claim by claim in the `gpu` test binary, and as
        // `stream-litmus run`; here they are read only.
        if !is_catalogue(&path) {
            trials.push(Trial::ignorable_test(format!("gpu::{name}"), move || {
                on_gpu(&path)
            }));
        }
    }
    let files = all.clone();
    trials.push(Trial::test("claims::ids_are_unique_and_new", move || {
        unique_ids(&all)
    }));
    trials.push(Trial::test(
        "claims::the_catalogue_is_its_files",
        move || catalogue_files(&files),
    ));
    trials.extend(cli::trials());
    libtest_mimic::run(&args, trials).exit();
}

/// Whether `path` is one of the catalogue's files (`claims/catalogue/`).
fn is_catalogue(path: &Path) -> bool {
    path.parent()
        .is_some_and(|d| d.ends_with("claims/catalogue"))
}

/// The files under `claims/catalogue/` are exactly those compiled into the catalogue
/// (`catalogue::FILES`), and hold its claims: a file added there but not listed would be
/// silently left out of `stream-litmus run`.
fn catalogue_files(files: &[PathBuf]) -> Result<(), Failed> {
    use stream_litmus::catalogue::{self, DEFAULT_SPIN};
    let mut on_disk: Vec<String> = files
        .iter()
        .filter(|p| is_catalogue(p))
        .filter_map(|p| Some(p.file_stem()?.to_str()?.to_string()))
        .collect();
    on_disk.sort();
    let mut compiled: Vec<String> = catalogue::FILES
        .iter()
        .map(|(n, _)| n.to_string())
        .collect();
    compiled.sort();
    if on_disk != compiled {
        return Err(format!(
            "claims/catalogue/ holds {on_disk:?}, but catalogue::FILES compiles {compiled:?}"
        )
        .into());
    }
    let mut from_files: Vec<String> = Vec::new();
    for path in files.iter().filter(|p| is_catalogue(p)) {
        let claims = litmus::load(path).map_err(|e| Failed::from(e.to_string()))?;
        from_files.extend(claims.into_iter().map(|c| c.header.id));
    }
    let mut ids: Vec<String> = catalogue::all(DEFAULT_SPIN)
        .into_iter()
        .chain(catalogue::multi_gpu(DEFAULT_SPIN))
        .map(|c| c.header.id)
        .collect();
    from_files.sort();
    ids.sort();
    if from_files != ids {
        return Err("the catalogue's claims differ from its files' claims".into());
    }
    Ok(())
}

/// No two claim files define the same claim, and none redefines a catalogue claim: results files
/// and reports name claims by id. (The catalogue's own files are the catalogue.)
fn unique_ids(files: &[PathBuf]) -> Result<(), Failed> {
    let mut seen: std::collections::HashMap<String, String> =
        stream_litmus::catalogue::all(stream_litmus::catalogue::DEFAULT_SPIN)
            .into_iter()
            .map(|c| (c.header.id, "the catalogue".to_string()))
            .collect();
    for path in files.iter().filter(|p| !is_catalogue(p)) {
        let Ok(claims) = litmus::load(path) else {
            continue;
        };
        for c in claims {
            if let Some(other) = seen.insert(c.id.clone(), path.display().to_string()) {
                return Err(
                    format!("claim {} in {} is also in {other}", c.id, path.display()).into(),
                );
            }
        }
    }
    Ok(())
}

/// Every `*.litmus` file under `dir`, recursively.
fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, out);
        } else if path.extension().is_some_and(|e| e == "litmus") {
            out.push(path);
        }
    }
}

/// Runs the file's claims and fails, with each unexpected claim's evidence, when a verdict is
/// not the expected one.
fn on_gpu(path: &Path) -> Result<Completion, Failed> {
    if !cfg!(gpu) {
        return Ok(Completion::ignored_with("needs a CUDA GPU (GPU_TESTS=1)"));
    }
    let claims = litmus::load(path).map_err(|e| Failed::from(e.to_string()))?;
    // One lab for the binary, and one claim file at a time on the GPU: parallel trials would
    // disturb each other's timing.
    static LAB: OnceLock<Lab> = OnceLock::new();
    static GPU: Mutex<()> = Mutex::new(());
    let _turn = GPU.lock().unwrap_or_else(|e| e.into_inner());
    let lab = LAB.get_or_init(|| Lab::new().with_child_binary(env!("CARGO_BIN_EXE_stream-litmus")));
    if let Err(e) = lab.gpu() {
        return Err(format!("GPU tests were requested (GPU_TESTS=1, or an NVIDIA driver on the build machine), but {e}").into());
    }
    let records = lab.check_all(&claims, |rec| println!("{}", terminal::claim_line(rec)));
    let unexpected: Vec<String> = records
        .iter()
        .filter(|r| !r.as_expected())
        .map(|r| {
            format!(
                "{} did not meet its expectation\n{}",
                r.claim.id,
                terminal::details(r)
            )
        })
        .collect();
    if unexpected.is_empty() {
        Ok(Completion::Completed)
    } else {
        Err(unexpected.join("\n\n").into())
    }
}
