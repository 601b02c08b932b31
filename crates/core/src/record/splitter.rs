//! Cutting a results file's text into pieces as it streams: each claim out of the top-level
//! `claims` array, and each of a claim's `trials.timelines` out of the claim, in the file's
//! order ([`Piece`]). Everything else (the header and the timing, a few kilobytes) is kept as the
//! run's skeleton, with `"claims": []`. Only strings, keys and depth are followed here; the
//! counting of every size is the guard's, upstream ([`crate::border::bounded_json::Guarded`]).

use super::error::{ClaimProblem, RecordError};
use crate::border::limits::{KEPT_TEXT_SHARE, MAX_TIMELINES};

/// The claim being cut out: its text without its trials' timelines (`"timelines": []`), how
/// many timelines were cut out of it, and how many bytes of text it took in all.
struct Cut {
    text: Vec<u8>,
    timelines: usize,
    bytes: u64,
}

/// What the splitter hands on, in the file's order: each timeline as it closes, then the claim
/// it belongs to.
#[derive(Debug)]
pub(super) enum Piece {
    /// The text of timeline `index` of claim `claim`.
    Timeline {
        claim: usize,
        index: usize,
        text: Vec<u8>,
    },
    /// Claim `index`'s text without its timelines, and the bytes it took with them.
    Claim {
        index: usize,
        text: Vec<u8>,
        bytes: u64,
    },
}

impl Piece {
    /// The bytes of its text.
    pub(super) fn text_bytes(&self) -> u64 {
        match self {
            Piece::Timeline { text, .. } | Piece::Claim { text, .. } => text.len() as u64,
        }
    }
}

/// Where the pieces go as they are cut; an error stops the reading.
pub(super) trait Sink {
    /// `n` more bytes are about to be copied into the timeline being cut, which holds `so_far`.
    fn grow(&mut self, n: usize, so_far: usize) -> Result<(), RecordError>;
    /// Takes a piece, cut whole.
    fn hand(&mut self, piece: Piece) -> Result<(), RecordError>;
}

/// Pieces kept in a list (no bound on what waits: for tests).
impl Sink for Vec<Piece> {
    fn grow(&mut self, _: usize, _: usize) -> Result<(), RecordError> {
        Ok(())
    }

    fn hand(&mut self, piece: Piece) -> Result<(), RecordError> {
        self.push(piece);
        Ok(())
    }
}

/// Depths of the results text: the file's object, the `claims` array, a claim, its `trials`,
/// their `timelines`, one timeline.
const CLAIMS: u32 = 2;
const CLAIM: u32 = 3;
const TRIALS: u32 = 4;
pub(super) const TIMELINES: u32 = 5;

/// Cuts the claims out of a results file's text as it streams, and each claim's timelines out of
/// the claim: a claim of 1,000 trials of `scenario.sleep.grid` is 1.7 GB of text, of which memory
/// holds one trial's (1.7 MB) at a time beside the stamps already parsed.
pub(super) struct Splitter {
    limit: u64,
    /// The most bytes a claim's text besides its timelines, or the skeleton, may keep: a share
    /// of `limit` ([`KEPT_TEXT_SHARE`]).
    kept_limit: u64,
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

/// The least a claim's own text may keep, whatever the read limit: a small limit set to test
/// the reading of stamps leaves room for a claim of the catalogue (205 KB at most).
const MIN_KEPT_TEXT: u64 = 1 << 20;

/// Keys are compared on their first bytes: `claims`, `trials` and `timelines` are short, and
/// each written with every letter escaped (`\u0063…`) is at most 54 bytes.
const KEY_BYTES: usize = 64;

impl Splitter {
    pub(super) fn new(limit: u64) -> Splitter {
        Splitter {
            limit,
            kept_limit: (limit / KEPT_TEXT_SHARE).max(MIN_KEPT_TEXT).min(limit),
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
    /// The skeleton's text, once the file has ended; an error where it ended inside a claim.
    pub(super) fn finish(self) -> Result<Vec<u8>, RecordError> {
        match self.claim {
            Some(_) => Err(RecordError::Claim {
                claim: self.claims_seen,
                problem: ClaimProblem::CutShort,
            }),
            None => Ok(self.skeleton),
        }
    }

    /// Feeds `bytes`, in which the guard found brackets closing back to [`TIMELINES`] or
    /// shallower at `closes` (sorted; [`Guarded::watching_closes`]); each piece completed is
    /// handed to `done`.
    ///
    /// [`Guarded::watching_closes`]: crate::border::bounded_json::Guarded::watching_closes
    pub(super) fn feed(
        &mut self,
        bytes: &[u8],
        closes: &[usize],
        done: &mut dyn Sink,
    ) -> Result<(), RecordError> {
        let mut i = 0;
        while i < bytes.len() {
            if self.timeline.is_some() {
                i = self.in_timeline(bytes, closes, i, done)?;
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

    /// Copies a timeline's bytes from `bytes[i..]` up to its closing brace, the first of
    /// `closes` from `i` on (the guard has followed its strings and depth: a timeline is nearly
    /// all of a results file, and following it twice took a sixth of the time), and hands it on
    /// once closed; returns where it stopped.
    fn in_timeline(
        &mut self,
        bytes: &[u8],
        closes: &[usize],
        start: usize,
        done: &mut dyn Sink,
    ) -> Result<usize, RecordError> {
        let (i, closed) = match closes.get(closes.partition_point(|&c| c < start)) {
            Some(&c) => (c + 1, true),
            None => (bytes.len(), false),
        };
        if closed {
            (self.depth, self.in_string, self.escaped) = (TIMELINES, false, false);
        }
        let claim = (self.claim.as_mut()).ok_or(RecordError::Lost("a timeline outside a claim"))?;
        let timeline = (self.timeline.as_mut()).ok_or(RecordError::Lost("no timeline"))?;
        done.grow(i - start, timeline.len())?;
        timeline.extend_from_slice(&bytes[start..i]);
        claim.bytes += (i - start) as u64;
        if claim.bytes > self.limit {
            return Err(too_large(self.claims_seen, self.limit));
        }
        if closed {
            let text = self.timeline.take().unwrap_or_default();
            let index = claim.timelines;
            if index == MAX_TIMELINES {
                return Err(RecordError::Claim {
                    claim: self.claims_seen,
                    problem: ClaimProblem::TooManyTimelines,
                });
            }
            claim.timelines += 1;
            let claim = self.claims_seen;
            done.hand(Piece::Timeline { claim, index, text })?;
        }
        Ok(i)
    }

    /// One byte of a claim outside its timelines: kept in the claim's text, except the timelines
    /// and their commas; the claim handed to `done` once closed.
    fn in_claim(&mut self, b: u8, done: &mut dyn Sink) -> Result<(), RecordError> {
        if !self.in_string {
            match b {
                b'{' if self.in_timelines && self.depth == TIMELINES => {
                    self.depth += 1;
                    done.grow(1, 0)?;
                    self.timeline = Some(vec![b]);
                    return self.count(1);
                }
                b',' if self.in_timelines && self.depth == TIMELINES => return self.count(1),
                b']' if self.in_timelines && self.depth == TIMELINES => {}
                _ if self.in_timelines && self.depth == TIMELINES && !b.is_ascii_whitespace() => {
                    return Err(RecordError::Claim {
                        claim: self.claims_seen,
                        problem: ClaimProblem::TimelineNotAnObject(
                            self.claim.as_ref().map_or(0, |c| c.timelines),
                        ),
                    });
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
            let cut = self.claim.take().ok_or(RecordError::Lost("no claim"))?;
            let index = self.claims_seen;
            self.claims_seen += 1;
            done.hand(Piece::Claim {
                index,
                text: cut.text,
                bytes: cut.bytes,
            })?;
        }
        Ok(())
    }

    fn keep_in_claim(&mut self, b: u8) -> Result<(), RecordError> {
        let text = &mut (self.claim.as_mut())
            .ok_or(RecordError::Lost("no claim"))?
            .text;
        text.push(b);
        if text.len() as u64 > self.kept_limit {
            return Err(RecordError::TooMuchKept {
                claim: Some(self.claims_seen),
                limit: self.kept_limit,
            });
        }
        self.count(1)
    }

    /// Counts `n` more bytes of the claim's text against the read limit.
    fn count(&mut self, n: u64) -> Result<(), RecordError> {
        let claim = self.claim.as_mut().ok_or(RecordError::Lost("no claim"))?;
        claim.bytes += n;
        if claim.bytes > self.limit {
            return Err(too_large(self.claims_seen, self.limit));
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
                unescape(&mut self.key);
            }
            b'{' | b'[' => self.depth += 1,
            b'}' | b']' => self.depth = self.depth.saturating_sub(1),
            _ => {}
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
    fn outside(&mut self, b: u8) -> Result<(), RecordError> {
        if !self.in_string && self.in_claims && self.depth == CLAIMS {
            match b {
                b'{' => {
                    self.depth = CLAIM;
                    self.claim = Some(Cut {
                        text: vec![b],
                        timelines: 0,
                        bytes: 1,
                    });
                    self.key.clear();
                    return Ok(());
                }
                b',' => return Ok(()),
                b']' => {}
                _ if !b.is_ascii_whitespace() => {
                    return Err(RecordError::Claim {
                        claim: self.claims_seen,
                        problem: ClaimProblem::NotAnObject,
                    });
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

    fn keep(&mut self, b: u8) -> Result<(), RecordError> {
        self.skeleton.push(b);
        if self.skeleton.len() as u64 > self.kept_limit {
            return Err(RecordError::TooMuchKept {
                claim: None,
                limit: self.kept_limit,
            });
        }
        Ok(())
    }
}

/// Claim `i`'s text past the read limit.
fn too_large(i: usize, limit: u64) -> RecordError {
    RecordError::TooLarge {
        what: format!("claims[{i}]"),
        limit,
    }
}

/// A key as serde reads it: a key written with escapes (`"cl\u0061ims"`) is the key it spells,
/// so that the cutting here and the parsing after it read one file the same way (a results file
/// whose `claims` was escaped was once cut as having none, and parsed as having twelve). A key
/// kept only in part (over [`KEY_BYTES`]) or not valid stays as it is: it is none of ours.
fn unescape(key: &mut Vec<u8>) {
    if !key.contains(&b'\\') || key.len() >= KEY_BYTES {
        return;
    }
    let mut quoted = Vec::with_capacity(key.len() + 2);
    quoted.push(b'"');
    quoted.extend_from_slice(key);
    quoted.push(b'"');
    if let Ok(plain) = serde_json::from_slice::<String>(&quoted) {
        *key = plain.into_bytes();
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::border::bounded_json::Guarded;
    use std::io::Read;

    /// A reader that gives one byte a read, as the guard is fed in the tests.
    struct ByteByByte<'a>(&'a [u8]);

    impl Read for ByteByByte<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let Some((first, rest)) = self.0.split_first() else {
                return Ok(0);
            };
            buf[0] = *first;
            self.0 = rest;
            Ok(1)
        }
    }

    /// The pieces of `text`, fed a byte at a time (claims cut across reads are joined), and its
    /// skeleton.
    pub(in crate::record) fn pieces(text: &str) -> Result<(Vec<Piece>, String), RecordError> {
        let mut seen = Vec::new();
        let mut s = Splitter::new(1 << 20);
        let mut guard =
            Guarded::new(ByteByByte(text.as_bytes()), u64::MAX).watching_closes(TIMELINES as usize);
        let mut b = [0u8];
        while guard
            .read(&mut b)
            .map_err(|e| RecordError::Read(e.to_string()))?
            == 1
        {
            s.feed(&b, guard.closes(), &mut seen)?;
        }
        Ok((seen, String::from_utf8_lossy(&s.skeleton).into_owned()))
    }

    pub(in crate::record) fn split(text: &str) -> Result<(Vec<String>, String), RecordError> {
        let (pieces, skeleton) = pieces(text)?;
        let claims = pieces.into_iter().filter_map(|p| match p {
            Piece::Claim { text, .. } => Some(String::from_utf8_lossy(&text).into_owned()),
            Piece::Timeline { .. } => None,
        });
        Ok((claims.collect(), skeleton))
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
        s.kept_limit = 1 << 20;
        let err = s
            .feed(
                br#"{"claims":[{"trials":{"timelines":[{"a": "0123456789"}]}}]}"#,
                &[],
                &mut Vec::new(),
            )
            .unwrap_err();
        assert!(err.is_read_limit(), "{err}");
        assert!(
            err.to_string().starts_with("larger than") && err.to_string().contains("claims[0]"),
            "{err}"
        );
        // Its own text, besides the timelines, is kept whole: past 1/32 of the limit (here 32
        // bytes of 1 KiB) it is refused.
        let mut s = Splitter::new(1024);
        s.kept_limit = 32;
        let err = s
            .feed(
                br#"{"claims":[{"a": "0123456789012345678901234"}]}"#,
                &[],
                &mut Vec::new(),
            )
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("claims[0] holds over")
                && err.contains("besides its trials' timelines"),
            "{err}"
        );
        let mut s = Splitter::new(1024);
        s.kept_limit = 32;
        let err = s
            .feed(
                br#"{"other": "0123456789012345678901234"}"#,
                &[],
                &mut Vec::new(),
            )
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("what surrounds its claims holds over"),
            "{err}"
        );
        let err = split(r#"{"claims": [{}, 3]}"#).unwrap_err();
        assert!(err.is_in_a_claim(), "{err}");
        assert!(
            err.to_string().contains("claims[1] is not an object"),
            "{err}"
        );
    }
}
