//! A JSON string literal written by hand, as serde_json writes it: the injection writes its lines
//! without a JSON library (it runs inside the user's program, once per record).

use std::fmt::Write as _;

/// `text` as a JSON string, quotes included: `"`, `\` and control characters escaped.
pub(crate) fn quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::quoted;

    #[test]
    fn strings_are_escaped_as_json_wants() {
        assert_eq!(quoted("k<int>"), r#""k<int>""#);
        assert_eq!(quoted(r#"a"b\c"#), r#""a\"b\\c""#);
        assert_eq!(quoted("l1\nl2\t\u{1}"), r#""l1\nl2\t\u0001""#);
        assert_eq!(quoted("µs ∑"), "\"µs ∑\"");
    }
}
