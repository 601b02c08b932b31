//! Claim files: claims written as small text files, in which a program reads like the code it
//! stands for, so that a claim can be added, run and shared without writing Rust.
//!
//! ```text
//! claim event.wait_orders
//! statement "A stream that waits on an event starts its next kernel only after the recorded work ends"
//! source "000_a5eb0762e7ac500e.txt" section "7.6 两个比较直观的例子"
//! expect holds
//!
//! stream s1, s2 = non-blocking
//! event E
//!
//! A: spin 50us on s1
//! record E on s1
//! wait E on s2
//! B: spin 50us on s2
//!
//! check precedes(A, B)
//! ```
//!
//! Why a format of our own rather than JSON (which `show --json` already prints): a claim is
//! read far more often than written, and JSON buries a five-line program under ids and braces.
//! The op keywords are the builder's method names, so the file and the Rust API teach each
//! other. Every program and check the builder can make is writable ([`print_claim`] writes any
//! claim, and a test reads the whole catalogue back to equal claims).
//!
//! The layers: `syntax` (the grammar, `winnow`) turns text into statements with spans;
//! `resolve` and `check_lines` turn statements into [`Claim`]s, looking names up and enforcing units
//! and limits; `claim_error` renders every error as rustc does, with file, line, column and a caret;
//! `print` writes claims back (their programs with `program::text`, the one printer of programs); `prediction` asks the happens-before model about each check;
//! `trace_claim_file` reads claims on traces (`select`, `trial`, quantified checks).
//! docs/writing-claims.md has the grammar.
//!
//! **May import:** `trace` (claims on traces), `judge` (claims and the model), `program`,
//! `border`. Inside, from the ground
//! up: `ast`, `units`, `words`, `syntax`, `claim_error` (with the context `Cx`), `header` (the lines every
//! claim starts with), `draft` (a claim being read), `ops`, `check_lines`, `resolve`; each file imports
//! only files before it.

mod ast;
mod check_lines;
mod claim_error;
mod draft;
mod explained;
mod header;
mod ops;
mod prediction;
mod print;
mod resolve;
mod syntax;
mod trace_claim_file;
mod traced_checks;
mod units;
mod words;

pub use crate::program::text::default_label;
pub use check_lines::RELATIONS;
pub use claim_error::LitmusError;
pub use explained::{claims_from, NothingToClaim};
pub use prediction::{predict, Answer, Prediction, MAX_MODEL_OPS};
pub use print::{claim as print_claim, claims as print_claims};

use crate::judge::claim::Claim;
use crate::trace_claims::TraceClaim;
use std::io::Read;
use std::path::Path;

/// The largest claim file read: claims are a few kilobytes, and a bounded read keeps a wrong
/// path (a log, a device file) from filling memory.
pub const MAX_FILE_BYTES: usize = 1 << 20;

/// The claims in `text`; `path` names the file in errors.
pub fn parse(path: &str, text: &str) -> Result<Vec<Claim>, LitmusError> {
    parse_with_spin(path, text, crate::program::DEFAULT_SPIN)
}

/// The claims in `text`, their durations in `spin`s (`0.25spin`) taken as multiples of `spin`
/// (`--spin-us`); [`parse`] takes the default, 50 µs. The catalogue is read this way.
pub fn parse_with_spin(
    path: &str,
    text: &str,
    spin: std::time::Duration,
) -> Result<Vec<Claim>, LitmusError> {
    let (text, lines) = lines(path, text)?;
    let spin_ns = u64::try_from(spin.as_nanos()).unwrap_or(u64::MAX);
    let cx = claim_error::Cx {
        path,
        text,
        spin_ns: Some(spin_ns),
    };
    if let Some(block) = blocks(&lines)
        .into_iter()
        .find(|b| trace_claim_file::is_traced(b))
    {
        return Err(cx.help(
            &block[0].span,
            "this is a claim on a trace (it has `select`, `trial` or `trace` lines)",
            "a claim on a trace",
            "judge it with `stream-litmus check --trace TRACE FILE` (docs/checking-your-program.md)",
        ));
    }
    resolve::claims(cx, lines)
}

/// The claims on traces in `text` (docs/checking-your-program.md); `path` names the file in
/// errors. Every claim of the file must be one.
pub fn parse_traced(path: &str, text: &str) -> Result<Vec<TraceClaim>, LitmusError> {
    let (text, lines) = lines(path, text)?;
    traced_claims(path, text, &lines)
}

/// The claims on traces of statements read from `text` (as [`parse_traced`] reads them).
fn traced_claims(
    path: &str,
    text: &str,
    lines: &[syntax::Line],
) -> Result<Vec<TraceClaim>, LitmusError> {
    let cx = claim_error::Cx {
        path,
        text,
        spin_ns: None,
    };
    let blocks = blocks(lines);
    if let Some(block) = blocks.iter().find(|b| !trace_claim_file::is_traced(b)) {
        let span = block.first().map_or(0..0, |l| l.span.clone());
        return Err(cx.help(
            &span,
            "this claim selects no ops of a trace",
            "not a claim on a trace",
            "a claim on a trace names its ops with `select NAME = KIND ...`; claims with a \
             program run on the GPU with `stream-litmus check FILE`",
        ));
    }
    if blocks.is_empty() {
        let end = text.len();
        return Err(cx.help(
            &(end..end),
            "no claim in this file",
            "expected `claim ID`",
            "a claim file holds one or more claims, each starting with `claim ID`",
        ));
    }
    let claims = trace_claim_file::claims(cx, blocks.into_iter().map(<[_]>::to_vec).collect())?;
    for (i, c) in claims.iter().enumerate() {
        if claims[..i].iter().any(|d| d.id == c.id) {
            return Err(LitmusError::file(
                path,
                format!("{path}: claim `{}` is defined twice", c.id),
            ));
        }
    }
    Ok(claims)
}

/// Reads the claims on traces of the file at `path` (as [`load`] reads claims).
pub fn load_traced(path: &Path) -> Result<Vec<TraceClaim>, LitmusError> {
    let (shown, text) = read_text(path)?;
    parse_traced(&shown, &text)
}

/// The file at `path` read and parsed once: `None` when it holds no claim on a trace (no claim
/// has `select`, `trial` or `trace` lines, or it cannot be read or its lines do not parse),
/// else what [`load_traced`] returns; a claim on a trace with a mistake is told its mistake,
/// not that it is a claim on a trace.
pub fn load_if_traced(path: &Path) -> Option<Result<Vec<TraceClaim>, LitmusError>> {
    let (shown, text) = read_text(path).ok()?;
    let (text, lines) = lines(&shown, &text).ok()?;
    if !blocks(&lines)
        .iter()
        .any(|b| trace_claim_file::is_traced(b))
    {
        return None;
    }
    Some(traced_claims(&shown, text, &lines))
}

/// The text without a byte-order mark, and its statements; the error for a binary file or the
/// first line that does not parse.
fn lines<'t>(path: &str, text: &'t str) -> Result<(&'t str, Vec<syntax::Line>), LitmusError> {
    // A byte-order mark, as some editors write one: not part of the text.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if let Some(e) = binary(path, text, text.len()) {
        return Err(e);
    }
    let lines = syntax::file(text).map_err(|(at, message)| {
        let found = found(&text[at..]);
        LitmusError::at(path, text, at..at + found.1, message, &found.0, None)
    })?;
    Ok((text, lines))
}

/// The lines of each claim: from a `claim` line to the next (lines before the first claim
/// make a block of their own, which the readers refuse).
fn blocks(lines: &[syntax::Line]) -> Vec<&[syntax::Line]> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, l) in lines.iter().enumerate() {
        if matches!(l.stmt, syntax::Stmt::Claim(_)) && i > start {
            out.push(&lines[start..i]);
            start = i;
        }
    }
    if start < lines.len() {
        out.push(&lines[start..]);
    }
    out
}

/// The claims in the file at `path`, read up to [`MAX_FILE_BYTES`].
pub fn load(path: &Path) -> Result<Vec<Claim>, LitmusError> {
    load_with_spin(path, crate::program::DEFAULT_SPIN)
}

/// The claims in the file at `path`, with durations in `spin`s taken as multiples of `spin`
/// (as [`parse_with_spin`] reads them).
pub fn load_with_spin(path: &Path, spin: std::time::Duration) -> Result<Vec<Claim>, LitmusError> {
    let (shown, text) = read_text(path)?;
    parse_with_spin(&shown, &text, spin)
}

/// The text of the file at `path`, up to [`MAX_FILE_BYTES`], as UTF-8.
fn read_text(path: &Path) -> Result<(String, String), LitmusError> {
    let shown = crate::border::shown::path(path);
    let file = crate::border::input_file::open_regular(path)
        .map_err(|e| LitmusError::file(&shown, format!("{shown}: {e}")))?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| LitmusError::file(&shown, format!("cannot read {shown}: {e}")))?;
    if bytes.len() > MAX_FILE_BYTES {
        return Err(LitmusError::file(
            &shown,
            format!(
                "the file is over {} KiB, the limit of a claim file; is it the right file?",
                MAX_FILE_BYTES / 1024
            ),
        ));
    }
    match String::from_utf8(bytes) {
        Ok(text) => Ok((shown, text)),
        Err(e) => {
            let at = e.utf8_error().valid_up_to();
            let text = String::from_utf8_lossy(e.as_bytes()).into_owned();
            Err(binary(&shown, &text, at).unwrap_or_else(|| {
                let msg = "not a text file: invalid UTF-8";
                LitmusError::at(&shown, &text, at..at + 1, msg, "invalid byte", Some(TEXT))
            }))
        }
    }
}

const TEXT: &str = "claim files are plain UTF-8 text; is this a binary file?";

/// The error for the first control character (other than tab and line ends) in `text[..end]`.
fn binary(path: &str, text: &str, end: usize) -> Option<LitmusError> {
    let (at, c) = text[..end]
        .char_indices()
        .find(|(_, c)| c.is_control() && !matches!(c, '\n' | '\r' | '\t'))?;
    let msg = format!("not a text file: control character U+{:04X}", c as u32);
    Some(LitmusError::at(
        path,
        text,
        at..at + c.len_utf8(),
        msg,
        "not text",
        Some(TEXT),
    ))
}

/// What the parser found where it stopped, for the caret's label, and its length in bytes.
fn found(rest: &str) -> (String, usize) {
    let word: String = rest
        .chars()
        .take_while(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.'))
        .collect();
    if !word.is_empty() {
        return (format!("found `{word}`"), word.len());
    }
    match rest.chars().next() {
        None => ("found the end of the file".to_string(), 0),
        Some('\n' | '\r') => ("found the end of the line".to_string(), 0),
        Some(c) => (format!("found `{c}`"), c.len_utf8()),
    }
}
