//! Text from files is shown, not obeyed.
//!
//! Claim ids, statements, labels and sources come from files anyone can write. A terminal obeys
//! control characters (`ESC [2J` clears the screen, OSC sequences set the title or write the
//! clipboard, `\r` overwrites a line), bidirectional overrides reorder what a line seems to say,
//! and XML 1.0 forbids most control characters outright, even as character references. So every
//! terminal line and every string in the HTML report passes through [`shown`], which writes each
//! such character as visible text (`\u{1b}`) and borrows the text unchanged when, as almost
//! always, there is nothing to escape. Line feeds and tabs are kept: the tool's own output uses
//! them, and they do nothing but lay text out. Everything else, Chinese section names of the
//! seed notes included, is printed as it is.

use std::borrow::Cow;

/// Whether `c` must be escaped: C0 controls other than line feed and tab, DEL, C1 controls, and
/// the bidirectional embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069).
pub fn is_hidden(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || ('\u{202a}'..='\u{202e}').contains(&c)
        || ('\u{2066}'..='\u{2069}').contains(&c)
}

/// `text` with every [`is_hidden`] character written as `\u{…}`.
pub fn shown(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_hidden) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_hidden(c) {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `text` for a place inside one line of ours: [`shown`], and line feeds, carriage returns and
/// tabs written as `\n`, `\r`, `\t`. A claim's id, statement or an op's name comes from a file;
/// with a line feed it could print a line of its own (`ok   some.claim  Holds …`).
pub fn one_line(text: &str) -> Cow<'_, str> {
    match super::error::flat(text) {
        Cow::Borrowed(t) => shown(t),
        Cow::Owned(flat) => Cow::Owned(shown(&flat).into_owned()),
    }
}

/// A path as text inside one line of ours (a message, a report, a file the tool writes): a
/// path is input too, and a file named with a line feed and `ok   forged.claim  Holds` once
/// printed a line of its own.
pub fn path(p: &std::path::Path) -> String {
    one_line(&p.display().to_string()).into_owned()
}

/// A number from a file, for a message: as written where its size is everyday, in exponent
/// form where it is not (`1e308` written out is 309 digits; `1e-30` is thirty zeros).
pub fn number(x: f64) -> String {
    match x == 0.0 || (1e-6..1e9).contains(&x.abs()) || !x.is_finite() {
        true => x.to_string(),
        false => format!("{x:e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_keeps_a_value_on_its_line() {
        assert_eq!(
            one_line("x\nok   some.claim  Holds\t\r\u{1b}"),
            "x\\nok   some.claim  Holds\\t\\r\\u{1b}"
        );
        assert!(matches!(one_line("fifo.blocking"), Cow::Borrowed(_)));
    }

    #[test]
    fn plain_text_is_borrowed_and_kept() {
        for text in ["plain ASCII", "流同步 → §7.6", "two\nlines\tand a tab", ""] {
            assert!(
                matches!(shown(text), Cow::Borrowed(t) if t == text),
                "{text}"
            );
        }
    }

    #[test]
    fn every_hidden_class_is_escaped() {
        assert_eq!(shown("a\u{1b}[2Jb"), "a\\u{1b}[2Jb");
        assert_eq!(shown("\0\r\u{7f}"), "\\u{0}\\u{d}\\u{7f}");
        assert_eq!(shown("x\u{9b}31m"), "x\\u{9b}31m");
        assert_eq!(shown("abc\u{202e}fed"), "abc\\u{202e}fed");
        assert_eq!(shown("\u{2066}i\u{2069}"), "\\u{2066}i\\u{2069}");
        // The boundaries of each range stay printable.
        assert_eq!(shown("\u{a0}\u{2029}\u{202f}\u{2065}\u{206a}").len(), 14);
    }
}
