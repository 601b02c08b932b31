//! Reading a results file claim by claim, so that memory holds one claim's stamps at a time.
//!
//! The bytes pass through the same guard as every file we read
//! ([`crate::border::bounded_json::Guarded`]: strings, arrays, blanks and nesting counted as they
//! arrive), then through [`Splitter`], which cuts each element of the top-level `claims` array
//! out of the text, parses it from memory (serde_json parses a slice about twice as fast as a
//! reader) and hands the record on before the next one is read. Everything else (the header and
//! the timing, a few kilobytes) is kept as the run's skeleton, with `"claims": []`, and parsed at
//! the end.
//!
//! The read limit ([`crate::border::limits::read_limit`]) applies to each claim and to the
//! skeleton, not to the file: memory is what it guards, and the file's length only costs time,
//! linear in it. A file of the whole catalogue at 1,000 trials (6 GB of JSON) reads back in
//! one claim's memory.

use super::run::{ClaimRecord, KEPT_TRIALS};
use crate::border::bounded_json::Guarded;
use crate::border::limits::{describe_bytes, READ_LIMIT_ENV};
use std::io::Read;

/// Takes each claim's text as it is cut out, with its index; an error stops the reading.
type ClaimText<'a> = dyn FnMut(usize, &[u8]) -> Result<(), String> + 'a;

/// Cuts the claims out of a results file's text as it streams.
struct Splitter {
    limit: u64,
    depth: u32,
    in_string: bool,
    escaped: bool,
    /// The last string read outside any claim (its first bytes), and the key it became.
    string: Vec<u8>,
    key: Vec<u8>,
    /// Inside the top-level `claims` array.
    in_claims: bool,
    /// The claim being cut out, from its `{`.
    claim: Option<Vec<u8>>,
    claims_seen: usize,
    skeleton: Vec<u8>,
}

/// Keys are compared on their first bytes: `claims` is short.
const KEY_BYTES: usize = 16;

impl Splitter {
    fn new(limit: u64) -> Splitter {
        Splitter {
            limit,
            depth: 0,
            in_string: false,
            escaped: false,
            string: Vec::new(),
            key: Vec::new(),
            in_claims: false,
            claim: None,
            claims_seen: 0,
            skeleton: Vec::new(),
        }
    }

    /// Feeds `bytes`; each claim completed is handed to `done` as its text.
    fn feed(&mut self, bytes: &[u8], done: &mut ClaimText) -> Result<(), String> {
        let mut i = 0;
        while i < bytes.len() {
            if self.claim.is_some() {
                // Inside a claim: copy up to its closing brace, tracking strings and depth only.
                let start = i;
                let mut closed = false;
                while i < bytes.len() {
                    let b = bytes[i];
                    i += 1;
                    if self.in_string {
                        self.string_byte(b);
                        continue;
                    }
                    match b {
                        b'"' => self.in_string = true,
                        b'{' | b'[' => self.depth += 1,
                        b'}' | b']' => {
                            self.depth -= 1;
                            if self.depth == 2 {
                                closed = true;
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                let held = self.claim.as_mut().map_or(0, |claim| {
                    claim.extend_from_slice(&bytes[start..i]);
                    claim.len()
                });
                if held as u64 > self.limit {
                    return Err(too_large(
                        &format!("claims[{}]", self.claims_seen),
                        self.limit,
                    ));
                }
                if closed {
                    let text = self.claim.take().unwrap_or_default();
                    done(self.claims_seen, &text)?;
                    self.claims_seen += 1;
                }
                continue;
            }
            let b = bytes[i];
            i += 1;
            self.outside(b)?;
        }
        Ok(())
    }

    /// One byte inside a string: escapes followed, the closing quote found.
    fn string_byte(&mut self, b: u8) {
        match (self.escaped, b) {
            (true, _) => self.escaped = false,
            (false, b'\\') => self.escaped = true,
            (false, b'"') => self.in_string = false,
            _ => {}
        }
    }

    /// One byte outside every claim: kept in the skeleton, except the claims and their commas.
    fn outside(&mut self, b: u8) -> Result<(), String> {
        if self.in_string {
            self.string_byte(b);
            if self.in_string && self.string.len() < KEY_BYTES {
                self.string.push(b);
            }
            return self.keep(b);
        }
        match b {
            b'"' => {
                self.in_string = true;
                self.string.clear();
            }
            b':' if self.depth == 1 => self.key = std::mem::take(&mut self.string),
            b'{' if self.in_claims && self.depth == 2 => {
                self.depth = 3;
                self.claim = Some(vec![b]);
                return Ok(());
            }
            b'{' | b'[' => {
                self.depth += 1;
                self.in_claims = b == b'[' && self.depth == 2 && self.key == b"claims";
                self.key.clear();
            }
            b']' | b'}' => {
                if self.depth == 2 {
                    self.in_claims = false;
                }
                self.depth = self.depth.saturating_sub(1);
            }
            b',' if self.in_claims && self.depth == 2 => return Ok(()),
            _ if self.in_claims && self.depth == 2 && !b.is_ascii_whitespace() => {
                return Err(format!(
                    "claims[{}] is not an object; every claim is one",
                    self.claims_seen
                ));
            }
            _ => {}
        }
        self.keep(b)
    }

    fn keep(&mut self, b: u8) -> Result<(), String> {
        self.skeleton.push(b);
        if self.skeleton.len() as u64 > self.limit {
            return Err(too_large("what surrounds its claims", self.limit));
        }
        Ok(())
    }
}

fn too_large(what: &str, limit: u64) -> String {
    format!(
        "larger than the {} read limit (after decompression) in {what}; memory holds one claim \
         at a time, and this is far beyond any claim we write; if it is real, raise the limit \
         with {READ_LIMIT_ENV}=<MiB>",
        describe_bytes(limit)
    )
}

/// Reads `reader`'s results text, handing each claim to `each` (with its index in the file) as
/// soon as it is parsed; returns the skeleton's text, which holds everything but the claims
/// (`"claims": []`). `limit` bounds each claim's text and the skeleton's, and also what the caller
/// keeps of all claims together: their whole text where `whole` (a run loaded whole), else the
/// part of each claim's text that its kept trials make up (`ClaimRecord::kept`: the first
/// [`KEPT_TRIALS`] and the witness), so that a small gzip of a million little claims cannot
/// fill memory through what is kept of each. The message says what was wrong; one that starts
/// with "larger than" is the read limit.
pub(crate) fn read_claims(
    reader: impl Read,
    limit: u64,
    whole: bool,
    each: &mut dyn FnMut(usize, ClaimRecord) -> Result<(), String>,
) -> Result<Vec<u8>, String> {
    // The guard counts strings, arrays and blanks; its own total is the file's, which memory does
    // not hold, so it is not bounded here.
    let mut guarded = Guarded::new(reader, u64::MAX);
    let mut split = Splitter::new(limit);
    let mut buf = vec![0u8; 1 << 16];
    let mut held = 0u64;
    let mut parse = |i: usize, text: &[u8]| -> Result<(), String> {
        let record = serde_json::from_slice::<ClaimRecord>(text).map_err(|e| {
            format!(
                "claims[{i}]: {}",
                crate::border::error::shortened(&e.to_string())
            )
        })?;
        let ran = record.trials().map_or(0, |t| t.timelines.len()) as u64;
        let kept = match whole {
            true => ran,
            false => ran.min(KEPT_TRIALS as u64 + 1),
        };
        held += (text.len() as u64).saturating_mul(kept.max(1)) / ran.max(1);
        if held > limit {
            return Err(too_large(
                &format!("the claims up to claims[{i}] together"),
                limit,
            ));
        }
        each(i, record)
    };
    loop {
        let n = match guarded.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(guarded.refused().unwrap_or_else(|| e.to_string())),
        };
        split.feed(&buf[..n], &mut parse)?;
    }
    if !guarded.started() {
        return Err("it is empty".into());
    }
    if split.claim.is_some() {
        return Err(format!(
            "claims[{}] is cut short: the file ends inside it",
            split.claims_seen
        ));
    }
    Ok(split.skeleton)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(text: &str) -> Result<(Vec<String>, String), String> {
        let mut seen = Vec::new();
        let mut s = Splitter::new(1 << 20);
        // Fed a byte at a time: claims cut across reads are joined.
        for b in text.as_bytes() {
            s.feed(std::slice::from_ref(b), &mut |_, t| {
                seen.push(String::from_utf8_lossy(t).into_owned());
                Ok(())
            })?;
        }
        Ok((seen, String::from_utf8_lossy(&s.skeleton).into_owned()))
    }

    #[test]
    fn claims_are_cut_out_and_the_rest_kept() {
        let text = r#"{"schema": 1, "x": {"claims": [1]}, "claims": [ {"a": "}\"]", "b": [{}]} , {"c": 2} ], "t": [3]}"#;
        let (claims, skeleton) = split(text).unwrap();
        assert_eq!(claims, [r#"{"a": "}\"]", "b": [{}]}"#, r#"{"c": 2}"#]);
        assert_eq!(
            skeleton,
            r#"{"schema": 1, "x": {"claims": [1]}, "claims": [    ], "t": [3]}"#
        );
    }

    #[test]
    fn a_claim_over_the_limit_or_not_an_object_is_refused() {
        let mut s = Splitter::new(16);
        let err = s
            .feed(br#"{"claims":[{"a": "0123456789"}]}"#, &mut |_, _| Ok(()))
            .unwrap_err();
        assert!(
            err.starts_with("larger than") && err.contains("claims[0]"),
            "{err}"
        );
        let err = split(r#"{"claims": [{}, 3]}"#).unwrap_err();
        assert!(err.contains("claims[1] is not an object"), "{err}");
    }
}
