//! Reading a results file claim by claim, so that memory holds one claim's stamps at a time.
//!
//! The bytes pass through the same guard as every file we read
//! ([`crate::border::bounded_json::Guarded`]: strings, arrays, blanks and nesting counted as they
//! arrive), then through [`Splitter`], which cuts each element of the top-level `claims` array
//! out of the text, and each of a claim's `trials.timelines` out of the claim. Each timeline is
//! parsed from memory as soon as it is cut (serde_json parses a slice about twice as fast as a
//! reader), then the rest of the claim (its program, checks and judgement, with
//! `"timelines": []`), and the record is handed on before the next claim is read. Everything
//! else (the header and the timing, a few kilobytes) is kept as the run's skeleton, with
//! `"claims": []`, and parsed at the end. So memory holds one claim's stamps, parsed, and one
//! trial's text: a claim's text (1.7 GB for `scenario.sleep.grid` at 1,000 trials) is never
//! held whole.
//!
//! The read limit ([`crate::border::limits::read_limit`]) applies to each claim's text and to the
//! skeleton, not to the file: memory is what it guards (a claim's parsed stamps take less than
//! their text), and the file's length only costs time, linear in it. A file of the whole
//! catalogue at 1,000 trials reads back in one claim's memory.

use super::run::{ClaimRecord, KEPT_TRIALS};
use crate::border::bounded_json::Guarded;
use crate::border::limits::{describe_bytes, MAX_TIMELINES, READ_LIMIT_ENV};
use crate::measured::timeline::Timeline;
use std::io::Read;

/// One claim as it was cut out: its text without its trials' timelines (`"timelines": []`), the
/// timelines parsed one by one as they streamed past, and how many bytes of text it took in all.
struct Cut {
    text: Vec<u8>,
    timelines: Vec<Timeline>,
    bytes: u64,
}

/// Takes each claim as it is cut out, with its index; an error stops the reading.
type ClaimCut<'a> = dyn FnMut(usize, Cut) -> Result<(), String> + 'a;

/// Depths of the results text: the file's object, the `claims` array, a claim, its `trials`,
/// their `timelines`, one timeline.
const CLAIMS: u32 = 2;
const CLAIM: u32 = 3;
const TRIALS: u32 = 4;
const TIMELINES: u32 = 5;

/// Cuts the claims out of a results file's text as it streams, and each claim's timelines out of
/// the claim: a claim of 1,000 trials of `scenario.sleep.grid` is 1.7 GB of text, of which memory
/// holds one trial's (1.7 MB) at a time beside the stamps already parsed.
struct Splitter {
    limit: u64,
    depth: u32,
    in_string: bool,
    escaped: bool,
    /// The last string read outside any timeline (its first bytes), and the key it became.
    string: Vec<u8>,
    key: Vec<u8>,
    /// Inside the top-level `claims` array; inside a claim's `trials`; inside their `timelines`.
    in_claims: bool,
    in_trials: bool,
    in_timelines: bool,
    /// The claim being cut out, from its `{`.
    claim: Option<Cut>,
    /// The timeline being cut out of it, from its `{`.
    timeline: Option<Vec<u8>>,
    claims_seen: usize,
    skeleton: Vec<u8>,
}

/// Keys are compared on their first bytes: `claims`, `trials` and `timelines` are short.
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
            in_trials: false,
            in_timelines: false,
            claim: None,
            timeline: None,
            claims_seen: 0,
            skeleton: Vec::new(),
        }
    }

    /// Feeds `bytes`; each claim completed is handed to `done`.
    fn feed(&mut self, bytes: &[u8], done: &mut ClaimCut) -> Result<(), String> {
        let mut i = 0;
        while i < bytes.len() {
            if self.timeline.is_some() {
                i = self.in_timeline(bytes, i)?;
                continue;
            }
            let b = bytes[i];
            i += 1;
            if self.claim.is_some() {
                self.in_claim(b, done)?;
            } else {
                self.outside(b)?;
            }
        }
        Ok(())
    }

    /// Copies a timeline's bytes from `bytes[i..]` up to its closing brace, tracking strings and
    /// depth only, and parses it once closed; returns where it stopped.
    fn in_timeline(&mut self, bytes: &[u8], mut i: usize) -> Result<usize, String> {
        let start = i;
        let mut closed = false;
        while i < bytes.len() {
            if self.in_string {
                i = self.past_string_run(bytes, i);
                continue;
            }
            let b = bytes[i];
            i += 1;
            match b {
                b'"' => self.in_string = true,
                b'{' | b'[' => self.depth += 1,
                b'}' | b']' => {
                    self.depth -= 1;
                    if self.depth == TIMELINES {
                        closed = true;
                        break;
                    }
                }
                _ => {}
            }
        }
        let claim = self.claim.as_mut().ok_or("a timeline outside a claim")?;
        let timeline = self.timeline.as_mut().ok_or("no timeline")?;
        timeline.extend_from_slice(&bytes[start..i]);
        claim.bytes += (i - start) as u64;
        if claim.bytes > self.limit {
            return Err(too_large(
                &format!("claims[{}]", self.claims_seen),
                self.limit,
            ));
        }
        if closed {
            let text = self.timeline.take().unwrap_or_default();
            let n = claim.timelines.len();
            if n == MAX_TIMELINES {
                return Err(format!(
                    "claims[{}]: trials.timelines: more than {MAX_TIMELINES} items, the most a \
                     results file may hold here",
                    self.claims_seen
                ));
            }
            let timeline = serde_json::from_slice::<Timeline>(&text).map_err(|e| {
                format!(
                    "claims[{}]: trials.timelines[{n}]: {}",
                    self.claims_seen,
                    crate::border::error::shortened(&e.to_string())
                )
            })?;
            claim.timelines.push(timeline);
        }
        Ok(i)
    }

    /// One byte of a claim outside its timelines: kept in the claim's text, except the timelines
    /// and their commas; the claim handed to `done` once closed.
    fn in_claim(&mut self, b: u8, done: &mut ClaimCut) -> Result<(), String> {
        if !self.in_string {
            match b {
                b'{' if self.in_timelines && self.depth == TIMELINES => {
                    self.depth += 1;
                    self.timeline = Some(vec![b]);
                    return self.count(1);
                }
                b',' if self.in_timelines && self.depth == TIMELINES => return self.count(1),
                b']' if self.in_timelines && self.depth == TIMELINES => {}
                _ if self.in_timelines && self.depth == TIMELINES && !b.is_ascii_whitespace() => {
                    return Err(format!(
                        "claims[{}]: trials.timelines[{}] is not an object; every trial is one",
                        self.claims_seen,
                        self.claim.as_ref().map_or(0, |c| c.timelines.len())
                    ));
                }
                _ => {}
            }
        }
        self.track(b);
        if self.in_string || !matches!(b, b'{' | b'[' | b'}' | b']') {
            return self.keep_in_claim(b);
        }
        self.in_trials = match (b, self.depth) {
            (b'{', TRIALS) => self.key == b"trials",
            (_, d) => self.in_trials && d >= TRIALS,
        };
        self.in_timelines = match (b, self.depth) {
            (b'[', TIMELINES) => self.in_trials && self.key == b"timelines",
            (_, d) => self.in_timelines && d >= TIMELINES,
        };
        if matches!(b, b'{' | b'[') {
            self.key.clear();
        }
        self.keep_in_claim(b)?;
        if self.depth == CLAIMS {
            let cut = self.claim.take().ok_or("no claim")?;
            done(self.claims_seen, cut)?;
            self.claims_seen += 1;
        }
        Ok(())
    }

    fn keep_in_claim(&mut self, b: u8) -> Result<(), String> {
        self.claim.as_mut().ok_or("no claim")?.text.push(b);
        self.count(1)
    }

    /// Counts `n` more bytes of the claim's text against the read limit.
    fn count(&mut self, n: u64) -> Result<(), String> {
        let claim = self.claim.as_mut().ok_or("no claim")?;
        claim.bytes += n;
        if claim.bytes > self.limit {
            return Err(too_large(
                &format!("claims[{}]", self.claims_seen),
                self.limit,
            ));
        }
        Ok(())
    }

    /// Follows strings, keys and depth through one byte outside any timeline.
    fn track(&mut self, b: u8) {
        if self.in_string {
            self.string_byte(b);
            if self.in_string && self.string.len() < KEY_BYTES {
                self.string.push(b);
            }
            return;
        }
        match b {
            b'"' => {
                self.in_string = true;
                self.string.clear();
            }
            b':' => {
                std::mem::swap(&mut self.key, &mut self.string);
                self.string.clear();
            }
            b'{' | b'[' => self.depth += 1,
            b'}' | b']' => self.depth = self.depth.saturating_sub(1),
            _ => {}
        }
    }

    /// Skips a string's bytes from `bytes[i..]` up to and including its next quote or
    /// backslash (and the byte a backslash escapes), found by `memchr`; returns where it stopped.
    /// A timeline's strings are the keys of its stamps: taken a byte at a time, they were a tenth
    /// of `judge`'s time on a file of a million stamps.
    fn past_string_run(&mut self, bytes: &[u8], i: usize) -> usize {
        if self.escaped {
            self.escaped = false;
            return i + 1;
        }
        match memchr::memchr2(b'"', b'\\', &bytes[i..]) {
            None => bytes.len(),
            Some(k) => {
                match bytes[i + k] {
                    b'"' => self.in_string = false,
                    _ => self.escaped = true,
                }
                i + k + 1
            }
        }
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
        if !self.in_string && self.in_claims && self.depth == CLAIMS {
            match b {
                b'{' => {
                    self.depth = CLAIM;
                    self.claim = Some(Cut {
                        text: vec![b],
                        timelines: Vec::new(),
                        bytes: 1,
                    });
                    self.key.clear();
                    return Ok(());
                }
                b',' => return Ok(()),
                b']' => {}
                _ if !b.is_ascii_whitespace() => {
                    return Err(format!(
                        "claims[{}] is not an object; every claim is one",
                        self.claims_seen
                    ));
                }
                _ => {}
            }
        }
        self.track(b);
        if !self.in_string {
            match b {
                b'{' | b'[' => {
                    self.in_claims = b == b'[' && self.depth == CLAIMS && self.key == b"claims";
                    self.key.clear();
                }
                b']' | b'}' if self.depth < CLAIMS => self.in_claims = false,
                _ => {}
            }
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
    let mut parse = |i: usize, cut: Cut| -> Result<(), String> {
        let mut record = serde_json::from_slice::<ClaimRecord>(&cut.text).map_err(|e| {
            format!(
                "claims[{i}]: {}",
                crate::border::error::shortened(&e.to_string())
            )
        })?;
        if let super::run::Outcome::Ran { trials, .. } = &mut record.outcome {
            trials.timelines = cut.timelines;
        }
        let ran = record.trials().map_or(0, |t| t.timelines.len()) as u64;
        let kept = match whole {
            true => ran,
            false => ran.min(KEPT_TRIALS as u64 + 1),
        };
        held += cut.bytes.saturating_mul(kept.max(1)) / ran.max(1);
        if held > limit {
            return Err(too_large(
                &format!("the claims up to claims[{i}] together"),
                limit,
            ));
        }
        each(i, record)?;
        // The claim's stamps, or all but what the caller keeps, were just dropped.
        crate::border::heap::return_freed();
        Ok(())
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
            s.feed(std::slice::from_ref(b), &mut |_, c| {
                seen.push(String::from_utf8_lossy(&c.text).into_owned());
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
    fn timelines_are_cut_out_of_their_claim_and_parsed() {
        let tl = r#"{"spans": [], "host_calls": [], "x": "}]\""}"#;
        let text = format!(
            r#"{{"claims": [{{"claim": {{"trials": {{"timelines": [1]}}}}, "trials": {{"wanted": 1, "timelines": [ {tl} , {tl} ], "n": 2}}, "judgement": {{"timelines": [3]}}}}]}}"#
        );
        let mut cuts = Vec::new();
        let mut s = Splitter::new(1 << 20);
        for b in text.as_bytes() {
            s.feed(std::slice::from_ref(b), &mut |_, c| {
                cuts.push(c);
                Ok(())
            })
            .unwrap();
        }
        assert_eq!(cuts.len(), 1);
        assert_eq!(
            String::from_utf8_lossy(&cuts[0].text),
            r#"{"claim": {"trials": {"timelines": [1]}}, "trials": {"wanted": 1, "timelines": [    ], "n": 2}, "judgement": {"timelines": [3]}}"#
        );
        assert_eq!(
            cuts[0].timelines,
            [Timeline::default(), Timeline::default()]
        );
        assert_eq!(
            cuts[0].bytes,
            text.len() as u64 - r#"{"claims": []}"#.len() as u64
        );
        let err = split(
            r#"{"claims": [{"trials": {"timelines": [{"spans": [], "host_calls": []}, 3]}}]}"#,
        )
        .unwrap_err();
        assert!(
            err.contains("trials.timelines[1] is not an object"),
            "{err}"
        );
        let err = split(r#"{"claims": [{"trials": {"timelines": [{"spans": 3}]}}]}"#).unwrap_err();
        assert!(
            err.contains("claims[0]: trials.timelines[0]: invalid type"),
            "{err}"
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
