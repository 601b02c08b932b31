//! `stream-litmus check FILE…`: the claims of claim files on the GPU, as the catalogue runs.
//! Every file is read and checked before the GPU is opened, so a typo costs no GPU time, and
//! every rule the results file is held to when it is read back is asked here too, so that no
//! run is lost to a refusal at its end.

use super::arguments::not_the_input;
use super::arguments::CheckArgs;
use super::{errln, outln, CliError, CliResult};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use stream_litmus::{litmus, Claim, EnvVar};

/// The claim files `paths` name: files as given, folders' `.litmus` files (see [`load_all`]).
fn walk(paths: &[PathBuf]) -> Walk {
    let mut walk = Walk::default();
    for path in paths {
        if path.is_dir() {
            let mut found = Vec::new();
            walk.folder(path, &mut found, &|d| std::fs::read_dir(d)?.collect());
            found.sort();
            walk.files.extend(found);
        } else if walk.first_time(path) {
            walk.files.push(path.clone());
        }
    }
    walk
}

pub fn check(mut args: CheckArgs) -> CliResult {
    // `--trace R0 R1 claims.litmus` takes every value after `--trace` as a trace: claim files
    // (`.litmus`) and folders among them are the claims the user meant.
    let (claims, traces): (Vec<PathBuf>, Vec<PathBuf>) = std::mem::take(&mut args.traces)
        .into_iter()
        .partition(|p| p.is_dir() || p.extension().is_some_and(|x| x == "litmus"));
    args.files.extend(claims);
    args.traces = traces;
    if args.files.is_empty() {
        return Err(CliError::usage(
            "no claim file given: `stream-litmus check CLAIMS… --trace TRACE…`",
        ));
    }
    // Folders count by the files in them: a folder of claims on traces is judged as they are.
    let found = walk(&args.files);
    let files = match found.problems.is_empty() && !found.files.is_empty() {
        true => found.files,
        false => args.files.clone(),
    };
    let parsed = match args.traces.is_empty() {
        true => super::traced::all_traced(&files),
        false => None,
    };
    if !args.traces.is_empty() || parsed.is_some() {
        // Options of GPU runs that a judgement on a trace cannot honour are refused, not
        // ignored: its trials are the trace's, and its outputs go to --out.
        let o = &args.options;
        let refused = [
            (
                o.trials.is_some(),
                "--trials: a claim on a trace has the trace's trials (`trial each …`)",
            ),
            (
                o.exclusive.is_some(),
                "--exclusive: claims on traces use no GPU",
            ),
            (o.bench, "--bench: claims on traces use no GPU"),
        ];
        if let Some((_, why)) = refused.iter().find(|(given, _)| *given) {
            return Err(CliError::usage(format!("{why}; run again without it")));
        }
        let parsed = parsed.unwrap_or_else(|| super::traced::load_each(&files));
        let outputs = super::traced::Outputs {
            out: o.out.as_deref(),
            json: o.json.as_deref(),
            junit: o.junit.as_deref(),
        };
        return super::traced::check_traced(parsed, &args.traces, &args.filters, &outputs);
    }
    let spin = std::time::Duration::from_micros(args.spin_us);
    let (claims, files) = load_all(&args.files, spin)?;
    let claims: Vec<Claim> =
        super::filters::kept(claims, |c| c.id.as_str(), &args.filters, "in these files")?;
    let outputs = (args.options.json.iter().chain(&args.options.junit))
        .cloned()
        .chain(
            args.options
                .out
                .iter()
                .flat_map(|d| ["results.json", "report.html", "trace.json"].map(|f| d.join(f))),
        );
    for output in outputs {
        for file in &files {
            not_the_input(&output, file, "output")?;
        }
    }
    print_environments(&claims)?;
    let claims = super::run_catalogue::split_multi(claims)?;
    super::run_catalogue::run_claims(&claims, &args.options)
}

/// Says, before anything runs, which environment each group of claims gets in its child process.
fn print_environments(claims: &[Claim]) -> Result<(), CliError> {
    let mut groups: BTreeMap<&[EnvVar], usize> = BTreeMap::new();
    for c in claims.iter().filter(|c| !c.env.is_empty()) {
        *groups.entry(&c.env).or_default() += 1;
    }
    for (env, n) in groups {
        let env: Vec<String> = env.iter().map(ToString::to_string).collect();
        outln!(
            "{n} claim(s) run in a child process under {}",
            env.join(", ")
        );
    }
    Ok(())
}

/// The claims of every file, in order (durations in `spin`s as multiples of `spin`), and the files read (a directory stands for its `*.litmus`
/// files, in name order, searched recursively; each real folder and file once, however many
/// links lead to it). On any error, each problem is printed and the exit code is 2. Claims are
/// held to the results file's rules here, and their ids must be unique across files.
pub fn load_all(
    paths: &[PathBuf],
    spin: std::time::Duration,
) -> Result<(Vec<Claim>, Vec<PathBuf>), CliError> {
    let walk = walk(paths);
    let mut failed = !walk.problems.is_empty();
    for problem in &walk.problems {
        errln!("error: {problem}\n");
    }
    let mut claims = Vec::new();
    let mut defined: HashMap<String, &Path> = HashMap::new();
    for path in &walk.files {
        match litmus::load_with_spin(path, spin) {
            Ok(more) => {
                for c in more {
                    if let Some(first) = defined.get(&c.id) {
                        errln!(
                            "error: claim `{}` of {} is defined in {} too; claim ids must be \
                             unique across the files of one run\n",
                            c.id.escape_debug(),
                            stream_litmus::report::shown::path(path),
                            stream_litmus::report::shown::path(first)
                        );
                        failed = true;
                    } else if let Err(e) = stream_litmus::claim_rules(&c) {
                        errln!(
                            "error: claim `{}` of {}: {e}\n",
                            c.id.escape_debug(),
                            stream_litmus::report::shown::path(path)
                        );
                        failed = true;
                    } else {
                        defined.insert(c.id.clone(), path);
                        claims.push(c);
                    }
                }
            }
            Err(e) => {
                errln!("{e}\n");
                failed = true;
            }
        }
    }
    if walk.files.is_empty() && !failed {
        return Err(CliError::usage(format!(
            "no claim file (*.litmus) in {paths:?}"
        )));
    }
    if failed {
        return Err(CliError::usage(
            "nothing was run; fix the claim files above",
        ));
    }
    Ok((claims, walk.files))
}

/// A walk of claim folders that visits each real folder and file once (a link loop ends) and
/// keeps every folder it could not read as a problem, not a silent skip.
#[derive(Default)]
struct Walk {
    files: Vec<PathBuf>,
    problems: Vec<String>,
    seen: HashSet<(u64, u64)>,
}

type ReadDir<'a> = &'a dyn Fn(&Path) -> std::io::Result<Vec<std::fs::DirEntry>>;

impl Walk {
    /// Whether `path` (a folder or a file, through links) is met for the first time; a path
    /// that cannot be looked at counts as new, so that reading it reports why.
    fn first_time(&mut self, path: &Path) -> bool {
        use std::os::unix::fs::MetadataExt;
        match std::fs::metadata(path) {
            Ok(m) => self.seen.insert((m.dev(), m.ino())),
            Err(_) => true,
        }
    }

    fn folder(&mut self, dir: &Path, out: &mut Vec<PathBuf>, read_dir: ReadDir<'_>) {
        if !self.first_time(dir) {
            return;
        }
        let entries = match read_dir(dir) {
            Ok(entries) => entries,
            Err(e) => {
                self.problems.push(format!(
                    "cannot read the folder {}: {e}; its claim files were not read",
                    stream_litmus::report::shown::path(dir)
                ));
                return;
            }
        };
        for path in entries.into_iter().map(|e| e.path()) {
            if path.is_dir() {
                self.folder(&path, out, read_dir);
            } else if path.extension().is_some_and(|e| e == "litmus") && self.first_time(&path) {
                out.push(path);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_loops_end_and_each_real_file_is_read_once() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        std::fs::write(sub.join("a.litmus"), "").unwrap();
        std::os::unix::fs::symlink(dir.path(), sub.join("up")).unwrap();
        std::os::unix::fs::symlink(&sub, sub.join("self")).unwrap();
        std::os::unix::fs::symlink(sub.join("a.litmus"), dir.path().join("b.litmus")).unwrap();
        let mut walk = Walk::default();
        let mut found = Vec::new();
        walk.folder(dir.path(), &mut found, &|d| std::fs::read_dir(d)?.collect());
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(walk.problems.is_empty());
    }

    #[test]
    fn an_unreadable_folder_is_a_problem_not_a_skip() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("locked")).unwrap();
        let mut walk = Walk::default();
        let mut found = Vec::new();
        // Root reads every folder, so the refusal is made by the reading function.
        walk.folder(dir.path(), &mut found, &|d| {
            if d.ends_with("locked") {
                return Err(std::io::Error::from(std::io::ErrorKind::PermissionDenied));
            }
            std::fs::read_dir(d)?.collect()
        });
        assert_eq!(walk.problems.len(), 1);
        assert!(walk.problems[0].contains("locked"), "{:?}", walk.problems);
        assert!(
            walk.problems[0].contains("ermission denied"),
            "{:?}",
            walk.problems
        );
    }
}
