//! Errors in claim files, shown as rustc shows them: the file, line and column, the line itself
//! with a caret under the culprit, and a hint. Rendering is `annotate-snippets`, rustc's own
//! renderer, so the layout is one users already know.
//!
//! Only the offending line is handed to the renderer (with its control characters made
//! visible), so a binary file or a line of a megabyte cannot flood the terminal.

use super::syntax::{Name, Span};
use annotate_snippets::{AnnotationKind, Level, Renderer, Snippet};
use std::fmt;
use std::ops::Range;

/// Longest part of a line shown in an error; longer lines are cut around the caret.
const SHOWN_LINE: usize = 160;

/// One error in one claim file, with where it is and a rendered report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LitmusError {
    path: String,
    line: usize,
    column: usize,
    message: String,
    rendered: String,
}

impl LitmusError {
    /// Where the error points: 1-based line and column, or (0, 0) for an error of the whole
    /// file (one that cannot be read, say).
    pub fn location(&self) -> (usize, usize) {
        (self.line, self.column)
    }

    /// An error at byte range `span` of `text`, with a label under the caret and an optional hint.
    pub fn at(
        path: &str,
        text: &str,
        span: Range<usize>,
        message: impl Into<String>,
        label: &str,
        help: Option<&str>,
    ) -> LitmusError {
        let message = message.into();
        let start = floor_char(text, span.start.min(text.len()));
        let line_start = text[..start].rfind('\n').map_or(0, |p| p + 1);
        let line_end = text[start..].find('\n').map_or(text.len(), |p| start + p);
        let line = 1 + text[..line_start].matches('\n').count();
        let column = 1 + text[line_start..start].chars().count();
        // The shown window: the line, cut to SHOWN_LINE bytes around the caret.
        let from = if start - line_start > SHOWN_LINE / 2 {
            floor_char(text, start - SHOWN_LINE / 2)
        } else {
            line_start
        };
        let to = floor_char(text, line_end.min(from + SHOWN_LINE));
        // Control characters are shown as `?`, one per byte, so that offsets stay the same.
        let shown: String = text[from..to]
            .trim_end_matches('\r')
            .chars()
            .map(|c| match c {
                '\t' => c.to_string(),
                c if c.is_control() => "?".repeat(c.len_utf8()),
                c => c.to_string(),
            })
            .collect();
        let caret_start = floor_char(&shown, start - from);
        let caret_end = floor_char(&shown, span.end.saturating_sub(from).min(shown.len()));
        let caret_end = if caret_end <= caret_start {
            shown[caret_start..]
                .chars()
                .next()
                .map_or(caret_start, |c| caret_start + c.len_utf8())
        } else {
            caret_end
        };
        let origin = format!("{path}:{line}:{column}");
        let mut snippet = Snippet::source(shown.as_str())
            .line_start(line)
            .path(origin.as_str())
            .annotation(
                AnnotationKind::Primary
                    .span(caret_start..caret_end)
                    .label(label),
            );
        if from != line_start {
            snippet = snippet.fold(false);
        }
        let mut group = Level::ERROR
            .primary_title(message.as_str())
            .element(snippet);
        if let Some(help) = help {
            group = group.element(Level::HELP.message(help));
        }
        let rendered = Renderer::plain().render(&[group]);
        let rendered = fix_origin(&rendered, &origin, path, line, column);
        LitmusError {
            path: path.to_string(),
            line,
            column,
            message,
            rendered,
        }
    }

    /// An error about the file as a whole (unreadable, too big), at line 1, column 1.
    pub fn file(path: &str, message: impl Into<String>) -> LitmusError {
        let message = message.into();
        LitmusError {
            rendered: format!("error: {message}\n --> {path}:1:1"),
            path: path.to_string(),
            line: 1,
            column: 1,
            message,
        }
    }

    pub fn path(&self) -> &str {
        &self.path
    }

    /// 1-based line of the error.
    pub fn line(&self) -> usize {
        self.line
    }

    /// 1-based column (in characters) of the error.
    pub fn column(&self) -> usize {
        self.column
    }

    /// The one-line message, without the snippet.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// annotate-snippets appends its own `:line:col` to the path; we pass the whole origin as the
/// path so that it is exact even when the shown line is a cut window, and remove the duplicate.
fn fix_origin(rendered: &str, origin: &str, path: &str, line: usize, column: usize) -> String {
    let mut out = String::with_capacity(rendered.len());
    for (i, l) in rendered.lines().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        match l.find(origin) {
            Some(at) if l[..at].trim_start().starts_with("-->") => {
                out.push_str(&l[..at]);
                out.push_str(&format!("{path}:{line}:{column}"));
            }
            _ => out.push_str(l),
        }
    }
    out
}

fn floor_char(text: &str, mut at: usize) -> usize {
    at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

impl fmt::Display for LitmusError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.rendered)
    }
}

impl std::error::Error for LitmusError {}

/// Where errors are reported: the file's name and text.
#[derive(Clone, Copy)]
pub(super) struct Cx<'a> {
    pub path: &'a str,
    pub text: &'a str,
    /// What a duration in `spin`s stands for: the run's spin length (`--spin-us`) for claims the
    /// lab runs; `None` for claims on traces, which have no spin length.
    pub spin_ns: Option<u64>,
}

impl Cx<'_> {
    pub(super) fn err(&self, span: &Span, msg: impl Into<String>, label: &str) -> LitmusError {
        LitmusError::at(self.path, self.text, span.clone(), msg, label, None)
    }

    pub(super) fn help(
        &self,
        span: &Span,
        msg: impl Into<String>,
        label: &str,
        help: &str,
    ) -> LitmusError {
        LitmusError::at(self.path, self.text, span.clone(), msg, label, Some(help))
    }
}

/// The error for a name that is not among `known` (streams, events, buffers, op labels).
pub(super) fn unknown<'a>(
    cx: Cx<'_>,
    n: &Name,
    what: &str,
    known: impl Iterator<Item = &'a String>,
    (place, hint): (&str, &str),
) -> LitmusError {
    let mut known: Vec<&String> = known.collect();
    known.sort();
    known.dedup();
    let help = if known.is_empty() {
        hint.to_string()
    } else {
        let list: Vec<String> = known.iter().take(12).map(|k| format!("`{k}`")).collect();
        format!(
            "known: {}{}; {hint}",
            list.join(", "),
            if known.len() > 12 { ", …" } else { "" }
        )
    };
    cx.help(
        &n.span,
        format!("unknown {what} `{}`", n.text),
        &format!("no {what} `{}` {place}", n.text),
        &help,
    )
}
