//! The house's plan, held against the code: the folders under `src/` and under the floors'
//! crates (`crates/{core,gpu,traces,claims}/src/`) are the pipeline's layers, and a layer imports
//! only the layers below it (docs/design.md, "Where each concern lives"). Cargo keeps a crate
//! from importing a crate above it; this test keeps the layers inside one crate in order too.
//!
//! Read from the source text, as `farm-studio` reads it: every path that starts with `crate::` or
//! `super::` on a line that is not a comment, `use` lines and paths written inline alike. Three
//! rules:
//! - a file imports no layer that its layer's row of [`LAYERS`] does not list (the table itself
//!   only ever points down, so the layers cannot form a circle);
//! - no files import each other in a circle, inside a layer or across (re-exports, `pub use`, are
//!   the folders' faces and not imports);
//! - only `gpu` names cudarc.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Each layer, from the ground up, with the layers it may import. A layer may only list layers
/// above it in this table, that is, below it in the house.
const LAYERS: &[(&str, &[&str])] = &[
    ("border", &[]),
    ("program", &["border"]),
    ("model", &["program", "border"]),
    ("measured", &["program", "border"]),
    ("gpu", &["measured", "program", "border"]),
    ("trace", &["model", "measured", "program", "border"]),
    ("judge", &["model", "measured", "program", "border"]),
    ("record", &["judge", "measured", "program", "border"]),
    (
        "trace_claims",
        &["trace", "judge", "model", "measured", "program", "border"],
    ),
    (
        "explain",
        &["trace", "model", "measured", "program", "border"],
    ),
    (
        "litmus",
        &[
            "explain",
            "trace_claims",
            "trace",
            "judge",
            "model",
            "program",
            "border",
        ],
    ),
    ("catalogue", &["litmus", "judge", "program", "border"]),
    ("fuzz", &["judge", "model", "measured", "program", "border"]),
    (
        "lab",
        &[
            "gpu", "record", "judge", "model", "measured", "program", "border",
        ],
    ),
    (
        "report",
        &[
            "lab",
            "fuzz",
            "explain",
            "trace_claims",
            "trace",
            "catalogue",
            "record",
            "judge",
            "model",
            "measured",
            "program",
            "border",
        ],
    ),
];

/// The source folders of the house: the root crate's, then the floors' (the injection crate,
/// a library loaded into other programs, holds no layer).
fn roots() -> Vec<PathBuf> {
    let top = Path::new(env!("CARGO_MANIFEST_DIR"));
    let floors =
        ["core", "gpu", "traces", "claims"].map(|c| top.join("crates").join(c).join("src"));
    std::iter::once(top.join("src")).chain(floors).collect()
}

/// Every `.rs` file under `dir`, as a path relative to `root` (its crate's `src/`), with the
/// file's own path. A floor's `lib.rs` only names its layers: it is no file of the house.
fn rust_files(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(root, &path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            let rel = path.strip_prefix(root).unwrap().to_path_buf();
            let floor = root != roots()[0];
            if floor && rel == Path::new("lib.rs") {
                continue;
            }
            assert!(
                out.insert(rel.clone(), path).is_none(),
                "{} twice",
                rel.display()
            );
        }
    }
}

/// The module path of a file: `judge/relation/order.rs` is `[judge, relation, order]`, a
/// `mod.rs` is its folder's module, `lib.rs` the root.
fn module_of(file: &Path) -> Vec<String> {
    let mut parts: Vec<String> = file
        .with_extension("")
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// The code of a file without comments, tests, or re-export lines. `#[cfg(test)] mod tests`
/// blocks are test code, which may reach anywhere.
fn code_lines(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_pub_use = false;
    for line in text.lines() {
        let t = line.trim_start();
        if t.starts_with("#[cfg(test)]") {
            break;
        }
        if t.starts_with("//") {
            continue;
        }
        if t.starts_with("pub use ") || t.starts_with("pub(crate) use ") || in_pub_use {
            in_pub_use = !t.trim_end().ends_with(';');
            continue;
        }
        let code = t.split(" //").next().unwrap_or(t);
        out.push(code.to_string());
    }
    out
}

/// The module paths a file names: `crate::a::b` and `super::x` written anywhere in its code,
/// resolved against the file's own module. Group imports (`use crate::a::{b, c}`) name `a`,
/// and the members `b`, `c` too, which may be modules themselves.
fn named_paths(file: &Path, text: &str) -> Vec<Vec<String>> {
    let me = module_of(file);
    let joined = code_lines(text).join("\n");
    let mut out = Vec::new();
    let bytes = joined.as_bytes();
    let mut i = 0;
    while i < joined.len() {
        let rest = &joined[i..];
        let starts_path = (rest.starts_with("crate::") || rest.starts_with("super::"))
            && (i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_'));
        if !starts_path {
            i += rest.chars().next().map_or(1, char::len_utf8);
            continue;
        }
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
            .unwrap_or(rest.len());
        let mut segs: Vec<&str> = rest[..end].split("::").filter(|s| !s.is_empty()).collect();
        let mut base: Vec<String> = if segs[0] == "crate" {
            segs.remove(0);
            Vec::new()
        } else {
            // Each `super` is the parent module, for a file module and a folder's face alike.
            let mut m = me.clone();
            while segs.first() == Some(&"super") {
                segs.remove(0);
                m.pop();
            }
            m
        };
        base.extend(segs.iter().map(|s| s.to_string()));
        let after = rest[end..].trim_start();
        if let Some(group) = after.strip_prefix('{') {
            let close = group.find('}').unwrap_or(group.len());
            for member in group[..close].split(',') {
                let name = member.trim().split("::").next().unwrap_or("").trim();
                if !name.is_empty()
                    && name != "self"
                    && name.chars().all(|c| c.is_alphanumeric() || c == '_')
                {
                    let mut p = base.clone();
                    p.push(name.to_string());
                    out.push(p);
                }
            }
        }
        out.push(base);
        i += end.max(1);
    }
    out
}

/// The file that defines module `path`'s longest existing prefix: `[judge, relation, Check]`
/// is `judge/relation/mod.rs`; a name no folder or file holds (`crate::Program`) is the crate
/// root's, `lib.rs`, which no layer may reach for.
fn file_of(path: &[String], files: &BTreeSet<PathBuf>) -> Option<PathBuf> {
    for n in (1..=path.len()).rev() {
        let dir: PathBuf = path[..n].iter().collect();
        for candidate in [dir.with_extension("rs"), dir.join("mod.rs")] {
            if files.contains(&candidate) {
                return Some(candidate);
            }
        }
    }
    (!path.is_empty()).then(|| PathBuf::from("lib.rs"))
}

fn layer_of(file: &Path) -> Option<&'static str> {
    let first = file.iter().next()?.to_str()?;
    LAYERS.iter().map(|(l, _)| *l).find(|l| *l == first)
}

struct House {
    files: BTreeSet<PathBuf>,
    /// file → where it is on disk.
    paths: BTreeMap<PathBuf, PathBuf>,
    /// file → the files it imports.
    edges: BTreeMap<PathBuf, BTreeSet<PathBuf>>,
}

fn house() -> House {
    let mut paths = BTreeMap::new();
    for root in roots() {
        rust_files(&root, &root, &mut paths);
    }
    let files: BTreeSet<PathBuf> = paths.keys().cloned().collect();
    let mut edges = BTreeMap::new();
    for file in &files {
        let text = std::fs::read_to_string(&paths[file]).unwrap();
        let mut to = BTreeSet::new();
        for path in named_paths(file, &text) {
            if let Some(target) = file_of(&path, &files) {
                if &target != file {
                    to.insert(target);
                }
            }
        }
        edges.insert(file.clone(), to);
    }
    House {
        files,
        paths,
        edges,
    }
}

#[test]
fn the_table_only_points_down() {
    for (i, (layer, allowed)) in LAYERS.iter().enumerate() {
        for a in *allowed {
            let at = LAYERS.iter().position(|(l, _)| l == a);
            assert!(
                at.is_some_and(|at| at < i),
                "layer `{layer}` may import `{a}`, which is not below it in the table"
            );
        }
    }
}

#[test]
fn every_folder_of_src_is_a_layer_and_no_file_is_loose() {
    let h = house();
    let mut loose = Vec::new();
    for f in &h.files {
        let top = f.iter().next().unwrap().to_string_lossy().into_owned();
        let is_root = matches!(top.as_str(), "lib.rs" | "main.rs");
        if !is_root && top != "commands" && layer_of(f).is_none() {
            loose.push(f.display().to_string());
        }
    }
    assert!(
        loose.is_empty(),
        "files outside every layer (add them to a layer's folder, or a layer to LAYERS): {loose:?}"
    );
    // And every layer is found, in whichever crate holds it.
    for (layer, _) in LAYERS {
        assert!(
            h.files.iter().any(|f| layer_of(f) == Some(layer)),
            "no file of layer `{layer}` under src/ or crates/*/src/"
        );
    }
}

#[test]
fn no_layer_imports_a_layer_above_it() {
    let h = house();
    let mut wrong = Vec::new();
    for (from, tos) in &h.edges {
        let Some(mine) = layer_of(from) else { continue };
        let allowed = LAYERS.iter().find(|(l, _)| *l == mine).unwrap().1;
        for to in tos {
            let theirs = layer_of(to);
            match theirs {
                Some(t) if t == mine || allowed.contains(&t) => {}
                _ => wrong.push(format!(
                    "{} ({mine}) imports {} ({})",
                    from.display(),
                    to.display(),
                    theirs.unwrap_or("the crate root")
                )),
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports against the layers:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn no_files_import_each_other_in_a_circle() {
    let h = house();
    // Depth-first search for a back edge; the first circle found is printed whole.
    fn visit(
        at: &PathBuf,
        h: &House,
        state: &mut BTreeMap<PathBuf, u8>,
        stack: &mut Vec<PathBuf>,
    ) -> Option<Vec<PathBuf>> {
        state.insert(at.clone(), 1);
        stack.push(at.clone());
        for next in h.edges.get(at).into_iter().flatten() {
            match state.get(next).copied().unwrap_or(0) {
                1 => {
                    let from = stack.iter().position(|p| p == next).unwrap();
                    return Some(stack[from..].to_vec());
                }
                0 => {
                    if let Some(c) = visit(next, h, state, stack) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(at.clone(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for f in &h.files {
        if state.get(f).copied().unwrap_or(0) == 0 {
            if let Some(circle) = visit(f, &h, &mut state, &mut Vec::new()) {
                let names: Vec<String> = circle.iter().map(|p| p.display().to_string()).collect();
                panic!(
                    "files that import each other in a circle: {}",
                    names.join(" → ")
                );
            }
        }
    }
}

#[test]
fn only_the_gpu_layer_names_cudarc() {
    let h = house();
    let mut named = Vec::new();
    for f in &h.files {
        if layer_of(f) == Some("gpu") {
            continue;
        }
        let text = std::fs::read_to_string(&h.paths[f]).unwrap();
        if code_lines(&text).iter().any(|l| l.contains("cudarc")) {
            named.push(f.display().to_string());
        }
    }
    assert!(
        named.is_empty(),
        "cudarc named outside crates/gpu/src/gpu: {named:?}"
    );
}

#[test]
fn the_reader_sees_what_it_must() {
    // The rules are only as good as the reading: a path inline, a group, `super` from a file
    // and from a folder's face, and what is skipped.
    let file = Path::new("judge/relation/order.rs");
    let text = "use super::waits::{HostWaits, label};\nlet x = crate::measured::timeline::f();\n// crate::gpu::nothing\npub use crate::lab::x;\n";
    let paths = named_paths(file, text);
    let has = |p: &[&str]| {
        paths
            .iter()
            .any(|q| q.iter().map(String::as_str).eq(p.iter().copied()))
    };
    assert!(has(&["judge", "relation", "waits"]), "{paths:?}");
    assert!(has(&["judge", "relation", "waits", "label"]), "{paths:?}");
    assert!(has(&["measured", "timeline", "f"]), "{paths:?}");
    assert!(
        !paths.iter().any(|p| p[0] == "gpu" || p[0] == "lab"),
        "{paths:?}"
    );
    let files: BTreeSet<PathBuf> = ["lib.rs", "program/mod.rs"].map(PathBuf::from).into();
    let root = file_of(&["Program".to_string()], &files);
    assert_eq!(
        root,
        Some(PathBuf::from("lib.rs")),
        "a root re-export is the root's"
    );
    let face = named_paths(Path::new("judge/relation/mod.rs"), "use super::model::X;");
    assert_eq!(
        face,
        vec![vec!["judge".to_string(), "model".into(), "X".into()]]
    );
}

/// The paths a file of `commands/` names outside `commands/`, that is, in `main.rs` (`crate::`
/// is the binary's root there), as `file: crate::path`.
fn paths_out_of_commands(file: &Path, text: &str) -> Vec<String> {
    named_paths(file, text)
        .into_iter()
        .filter(|path| path.first().map(String::as_str) != Some("commands"))
        .map(|path| format!("{}: crate::{}", file.display(), path.join("::")))
        .collect()
}

#[test]
fn the_binarys_reader_sees_an_arrow_back_up() {
    // `crate::RunArgs` from commands/ is main.rs's item, `super::` from the folder's face is
    // main.rs too; `crate::commands::…`, `super::` between its files and `$crate::commands::…`
    // in a macro stay inside.
    let run = Path::new("commands/run_catalogue.rs");
    assert_eq!(
        paths_out_of_commands(run, "use crate::RunArgs;\n"),
        vec!["commands/run_catalogue.rs: crate::RunArgs".to_string()]
    );
    assert_eq!(
        paths_out_of_commands(run, "fn f(a: crate::Cli) {}\n").len(),
        1,
        "a path written inline"
    );
    let face = Path::new("commands/mod.rs");
    assert_eq!(
        paths_out_of_commands(face, "use super::Command;\n").len(),
        1
    );
    let inside = "use crate::commands::arguments::RunArgs;\nuse super::timing_lines::x;\n\
                  $crate::commands::CliError::stdout\n";
    assert!(paths_out_of_commands(run, inside).is_empty());
}

/// The binary's two floors: `main.rs` parses the command line and dispatches, `commands/` does
/// the work (its argument structs in `commands/arguments.rs`). `commands/` names nothing of
/// `main.rs`: a `crate::` path there would be an arrow back up, which the library's table does
/// not see (`crate::` is the binary's root in these files, not the library's).
#[test]
fn commands_never_import_the_binarys_root() {
    let src = &roots()[0];
    let mut list = BTreeMap::new();
    rust_files(src, &src.join("commands"), &mut list);
    assert!(!list.is_empty());
    let mut up = Vec::new();
    for (file, path) in &list {
        let text = std::fs::read_to_string(path).unwrap();
        up.extend(paths_out_of_commands(file, &text));
    }
    assert!(up.is_empty(), "commands/ imports main.rs: {up:#?}");
    let main = std::fs::read_to_string(src.join("main.rs")).unwrap();
    assert!(
        !code_lines(&main)
            .iter()
            .any(|l| l.starts_with("struct ") || l.starts_with("enum ")),
        "main.rs only parses and dispatches: its argument types live in commands/arguments.rs"
    );
}
