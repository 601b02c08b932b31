//! Reading JSON from a file or a pipe with every size counted while it streams, before memory is
//! taken for it.
//!
//! The bytes of a results file (or a profiler trace, or a child's message) pass through [`Guarded`], a small lexer
//! that counts, as they arrive and before they are kept: the total
//! ([`crate::border::limits::read_limit`]), the length of each string ([`MAX_STRING_BYTES`]), the items
//! of each array ([`MAX_ARRAY_ITEMS`]; [`MAX_TIMELINES`] for a `timelines` array), the nesting
//! and the runs of blanks ([`MAX_BLANK_RUN`]). A 2 MB gzip holding a 1.8 GiB string ends at the
//! 16 MiB mark, one of a million timelines at the timeline past the limit. The text that passes
//! is kept and parsed from memory: serde_json parses a slice about twice as fast as a reader
//! (measured on the largest fixture: 2.6 s against 6.3 s to judge it), and the text is a small
//! multiple of the records it becomes, so memory stays within about three times what the
//! accepted content needs. serde_json refuses anything after the value (a second object, a
//! second gzip member's data). [`bounded_vec`] holds the same count once more where the records
//! are built.

use crate::border::json_bytes::{self, InArray};
use crate::border::limits::{
    describe_bytes, max_trace_events, MAX_ARRAY_ITEMS, MAX_BLANK_RUN, MAX_STRING_BYTES,
    MAX_TIMELINES,
};
use serde::de::{DeserializeOwned, Deserializer, SeqAccess, Visitor};
use serde::Deserialize;
use std::io::Read;

/// The deepest nesting the lexer follows; serde_json stops at 128 levels already.
const MAX_DEPTH: usize = 256;

/// Why JSON read through [`read_json`] was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JsonError {
    /// The guard stopped the bytes at a limit.
    #[error(transparent)]
    Refused(#[from] Refusal),
    /// Nothing but blanks came.
    #[error("it is empty")]
    Empty,
    /// The source could not be read (the I/O error's message).
    #[error("{0}")]
    Read(String),
    /// The text is not JSON of the type asked for (serde_json's message).
    #[error("{0}")]
    Syntax(String),
    /// Something follows the value (serde_json's message).
    #[error("data follows its JSON object ({0}); a results file is one object")]
    Trailing(String),
}

/// Parses one JSON value of type `T` from `reader`, reading at most `limit` bytes and holding
/// every string, array and blank run to its limit while reading.
pub fn read_json<T: DeserializeOwned>(reader: impl Read, limit: u64) -> Result<T, JsonError> {
    let mut guarded = Guarded::new(reader, limit);
    let mut text = Vec::new();
    if let Err(e) = guarded.read_to_end(&mut text) {
        return Err(guarded
            .lexer
            .refused
            .map_or_else(|| JsonError::Read(e.to_string()), JsonError::Refused));
    }
    if !guarded.lexer.started {
        return Err(JsonError::Empty);
    }
    serde_json::from_slice(&text).map_err(|e| {
        let e = e.to_string();
        match e.starts_with("trailing characters") {
            true => JsonError::Trailing(e),
            false => JsonError::Syntax(e),
        }
    })
}

/// A reader that passes bytes through and stops with an error at the first limit they break.
pub struct Guarded<R> {
    inner: R,
    limit: u64,
    read: u64,
    lexer: Lexer,
}

impl<R: Read> Guarded<R> {
    pub fn new(inner: R, limit: u64) -> Guarded<R> {
        Guarded {
            inner,
            limit,
            read: 0,
            lexer: Lexer::default(),
        }
    }
}

impl<R> Guarded<R> {
    /// Notes, in each read, where a bracket closes back to `depth` or shallower (the file's
    /// object is depth 1): a reader that cuts the text at that depth need not follow it itself.
    pub fn watching_closes(mut self, depth: usize) -> Guarded<R> {
        self.lexer.watch = Some(depth);
        self
    }

    /// Where, in the bytes of the last read, a bracket closed back to the watched depth.
    pub fn closes(&self) -> &[usize] {
        &self.lexer.closes
    }

    /// Why the guard stopped the bytes, if it did.
    pub fn refused(&self) -> Option<Refusal> {
        self.lexer.refused
    }

    /// Whether anything but blanks came through.
    pub fn started(&self) -> bool {
        self.lexer.started
    }
}

impl<R: Read> Read for Guarded<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if let Some(why) = self.lexer.refused {
            return Err(std::io::Error::other(why));
        }
        let n = self.inner.read(buf)?;
        self.read = self.read.saturating_add(n as u64);
        if self.read > self.limit {
            let why = Refusal::TooLarge(self.limit);
            self.lexer.refused = Some(why);
            return Err(std::io::Error::other(why));
        }
        if let Err(why) = self.lexer.feed(&buf[..n]) {
            self.lexer.refused = Some(why);
            return Err(std::io::Error::other(why));
        }
        Ok(n)
    }
}

/// Just enough of JSON's lexical structure to count: strings (with escapes), arrays' items,
/// nesting, blanks, and the key an array stands under (for the arrays with limits of their own).
#[derive(Default)]
struct Lexer {
    started: bool,
    in_string: bool,
    escaped: bool,
    string_bytes: u64,
    /// The start of the last string, enough to know a key.
    last_string: Vec<u8>,
    /// The key just read (a string followed by `:`), until its value begins.
    key: Vec<u8>,
    blanks: u64,
    /// Per open bracket: `Some((commas, most items))` for an array, `None` for an object.
    open: Vec<Option<(u64, u64)>>,
    refused: Option<Refusal>,
    /// Every byte stepped alone, without [`Lexer::items_run`]: the reference its tests compare
    /// it with.
    stepwise: bool,
    /// The depth whose closes are noted, and where they were in the bytes last fed.
    watch: Option<usize>,
    closes: Vec<usize>,
}

/// Keys are compared on their first bytes only; every key with a limit of its own is shorter.
const KEY_BYTES: usize = 32;

impl Lexer {
    /// Follows `bytes`: a string's bytes are taken in runs up to its next quote or backslash,
    /// each run counted before the next is looked at; a number's or a literal's bytes in one run
    /// ([`json_bytes`]); every other byte one at a time. Each step says why it refused in a
    /// [`Refusal`] of two words, made a message only when shown: stepping byte by byte with a
    /// `String` for an error took a third of the time `judge` spent on a results file.
    fn feed(&mut self, bytes: &[u8]) -> Result<(), Refusal> {
        self.closes.clear();
        let mut i = 0;
        while i < bytes.len() {
            if self.in_string {
                i = self.string_run(bytes, i)?;
                continue;
            }
            let j = self.items_run(bytes, i)?;
            if j > i {
                i = j;
                continue;
            }
            let j = self.members_run(bytes, i)?;
            if j > i {
                i = j;
                continue;
            }
            let b = bytes[i];
            if self.started && json_bytes::is_scalar(b) {
                // A number, `true`, `false` or `null` (serde refuses anything else).
                i += json_bytes::scalar_run(&bytes[i..]);
                self.blanks = 0;
                self.key.clear();
                continue;
            }
            self.step(b)?;
            if matches!(b, b'}' | b']') && self.watch.is_some_and(|w| self.open.len() <= w) {
                self.closes.push(i);
            }
            i += 1;
        }
        Ok(())
    }

    /// Inside an array, takes the bytes between and of its scalar items (numbers, literals,
    /// commas and blanks) in one loop, its counts held in locals: a results file is nearly all
    /// arrays of numbers, and stepping each comma and blank alone made the guard the slowest
    /// part of re-judging a file on many cores. Each byte is counted as [`Lexer::step`] would
    /// count it; returns where it stopped (at `i` outside an array).
    fn items_run(&mut self, bytes: &[u8], i: usize) -> Result<usize, Refusal> {
        let Some(Some((commas, most))) = self.open.last_mut().filter(|_| !self.stepwise) else {
            return Ok(i);
        };
        let (mut n, most, mut blanks) = (*commas, *most, self.blanks);
        let (mut j, mut item) = (i, false);
        let end = loop {
            // Eight bytes at a time while they are digits, commas and spaces, and no limit can
            // be reached among them; else one byte.
            if let Some(word) = bytes.get(j..j + 8) {
                let w = u64::from_le_bytes(word.try_into().unwrap_or([0; 8]));
                if let Some(plain) = json_bytes::plain_items(w) {
                    if n + plain.commas < most && blanks + 8 <= MAX_BLANK_RUN {
                        n += plain.commas;
                        blanks = match plain.trailing_blanks {
                            8 => blanks + 8,
                            t => {
                                item = true;
                                t
                            }
                        };
                        j += 8;
                        continue;
                    }
                }
            }
            let Some(&b) = bytes.get(j) else {
                break Ok(j);
            };
            match json_bytes::IN_ARRAY[b as usize] {
                InArray::Scalar => {
                    blanks = 0;
                    item = true;
                }
                InArray::Comma => {
                    blanks = 0;
                    item = true;
                    n += 1;
                    if n >= most {
                        break Err(Refusal::Items(most));
                    }
                }
                InArray::Blank => {
                    blanks += 1;
                    if blanks > MAX_BLANK_RUN {
                        break Err(Refusal::Blanks);
                    }
                }
                InArray::Other => break Ok(j),
            }
            j += 1;
        };
        *commas = n;
        self.blanks = blanks;
        if item {
            // As a scalar or a comma stepped alone would.
            self.key.clear();
        }
        end
    }

    /// Inside an object, takes its members' keys, colons, commas, blanks and scalar values (and
    /// any string a member holds, when it ends in these bytes without an escape) in one loop,
    /// up to the first bracket: a trace is nearly all objects of short keys and scalars, and a
    /// results file a third. Each byte is counted as [`Lexer::step`] and [`Lexer::string_run`]
    /// would count it; returns where it stopped (at `i` outside an object).
    fn members_run(&mut self, bytes: &[u8], i: usize) -> Result<usize, Refusal> {
        if self.stepwise || !matches!(self.open.last(), Some(None)) {
            return Ok(i);
        }
        let (mut j, mut blanks) = (i, self.blanks);
        while let Some(&b) = bytes.get(j) {
            match b {
                b'"' => {
                    let rest = &bytes[j + 1..];
                    let Some(k) = json_bytes::quote_or_backslash(rest)
                        .filter(|&k| rest[k] == b'"' && k as u64 <= MAX_STRING_BYTES)
                    else {
                        break; // stepped alone: an escape, or the string goes on past `bytes`
                    };
                    self.last_string.clear();
                    self.last_string
                        .extend_from_slice(&rest[..k.min(KEY_BYTES)]);
                    self.string_bytes = k as u64;
                    blanks = 0;
                    j += k + 2;
                }
                b':' => {
                    std::mem::swap(&mut self.key, &mut self.last_string);
                    self.last_string.clear();
                    blanks = 0;
                    j += 1;
                }
                b',' => {
                    self.key.clear();
                    blanks = 0;
                    j += 1;
                }
                _ if b.is_ascii_whitespace() => {
                    if blanks >= MAX_BLANK_RUN {
                        break; // stepped alone, which refuses it
                    }
                    blanks += 1;
                    j += 1;
                }
                _ if json_bytes::is_scalar(b) => {
                    j += json_bytes::scalar_run(&bytes[j..]);
                    self.key.clear();
                    blanks = 0;
                }
                _ => break,
            }
        }
        self.blanks = blanks;
        Ok(j)
    }

    /// Takes the string's bytes from `bytes[i..]` up to and including its next quote or
    /// backslash (and the byte a backslash escapes); returns where it stopped.
    fn string_run(&mut self, bytes: &[u8], i: usize) -> Result<usize, Refusal> {
        let rest = &bytes[i..];
        if self.escaped {
            self.escaped = false;
            self.string_bytes_of(&rest[..1])?;
            return Ok(i + 1);
        }
        let Some(k) = json_bytes::quote_or_backslash(rest) else {
            self.string_bytes_of(rest)?;
            return Ok(bytes.len());
        };
        self.string_bytes_of(&rest[..k])?;
        match rest[k] {
            b'"' => self.in_string = false,
            _ => {
                self.escaped = true;
                self.string_bytes_of(&rest[k..=k])?;
            }
        }
        Ok(i + k + 1)
    }

    /// Counts bytes of a string, keeping its first [`KEY_BYTES`].
    fn string_bytes_of(&mut self, run: &[u8]) -> Result<(), Refusal> {
        let room = KEY_BYTES.saturating_sub(self.last_string.len());
        self.last_string
            .extend_from_slice(&run[..run.len().min(room)]);
        self.string_bytes += run.len() as u64;
        match self.string_bytes > MAX_STRING_BYTES {
            true => Err(Refusal::LongString),
            false => Ok(()),
        }
    }

    /// One byte outside every string.
    fn step(&mut self, b: u8) -> Result<(), Refusal> {
        if b.is_ascii_whitespace() {
            self.blanks += 1;
            return match self.blanks > MAX_BLANK_RUN {
                true => Err(Refusal::Blanks),
                false => Ok(()),
            };
        }
        self.blanks = 0;
        if !self.started {
            self.started = true;
            if b != b'{' {
                return Err(Refusal::NotAnObject);
            }
        }
        match b {
            b'"' => {
                self.in_string = true;
                self.string_bytes = 0;
                self.last_string.clear();
            }
            // Swapped, not taken: the key of every stamp would be an allocation.
            b':' => {
                std::mem::swap(&mut self.key, &mut self.last_string);
                self.last_string.clear();
            }
            b'[' | b'{' => {
                if self.open.len() >= MAX_DEPTH {
                    return Err(Refusal::Deep);
                }
                let most = match self.key.as_slice() {
                    b"timelines" => MAX_TIMELINES as u64,
                    b"traceEvents" => max_trace_events(),
                    _ => MAX_ARRAY_ITEMS,
                };
                self.open.push((b == b'[').then_some((0, most)));
                self.key.clear();
            }
            b']' | b'}' => {
                self.open.pop();
            }
            b',' => {
                self.key.clear();
                if let Some(Some((commas, most))) = self.open.last_mut() {
                    *commas += 1;
                    if *commas >= *most {
                        return Err(Refusal::Items(*most));
                    }
                }
            }
            _ => self.key.clear(),
        }
        Ok(())
    }
}

/// Why the guard stopped the bytes, in two words (the message is made only when shown).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// More bytes than the read limit (after decompression).
    #[error(
        "larger than the {} read limit (after decompression), far beyond any real run; if it is \
         real, raise the limit with {}=<MiB>",
        describe_bytes(*.0),
        crate::border::limits::READ_LIMIT_ENV
    )]
    TooLarge(u64),
    #[error(
        "it holds a string longer than {}, which no file we read has",
        describe_bytes(MAX_STRING_BYTES)
    )]
    LongString,
    #[error(
        "it holds a run of over {} of blanks, which no file we read has",
        describe_bytes(MAX_BLANK_RUN)
    )]
    Blanks,
    #[error("it does not start with a JSON object ('{{')")]
    NotAnObject,
    #[error("it nests deeper than {MAX_DEPTH} levels")]
    Deep,
    /// An array of over this many items.
    #[error("it holds an array of over {0} items, more than any file we read holds there")]
    Items(u64),
}

/// Deserializes a `Vec` of at most `MAX` items, refusing the item past the limit before it is
/// built (for `#[serde(deserialize_with = "…")]`).
pub fn bounded_vec<'de, D, T, const MAX: usize>(d: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    struct Bounded<T, const MAX: usize>(std::marker::PhantomData<T>);
    impl<'de, T: Deserialize<'de>, const MAX: usize> Visitor<'de> for Bounded<T, MAX> {
        type Value = Vec<T>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            write!(f, "a list of at most {MAX} items")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<T>, A::Error> {
            let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(MAX).min(1024));
            while let Some(item) = seq.next_element()? {
                if out.len() == MAX {
                    return Err(serde::de::Error::custom(format!(
                        "more than {MAX} items, the most a results file may hold here"
                    )));
                }
                out.push(item);
            }
            Ok(out)
        }
    }
    d.deserialize_seq(Bounded::<T, MAX>(std::marker::PhantomData))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &[u8]) -> Result<serde_json::Value, JsonError> {
        read_json(text, 1 << 30)
    }

    #[test]
    fn a_source_that_is_not_json_ends_at_its_first_bytes() {
        let zeros = std::io::repeat(0).take(1 << 40);
        let err = read_json::<serde_json::Value>(zeros, 1 << 40).unwrap_err();
        assert_eq!(err, JsonError::Refused(Refusal::NotAnObject));
        assert!(
            err.to_string()
                .contains("does not start with a JSON object"),
            "{err}"
        );
    }

    #[test]
    fn a_source_over_the_limit_is_refused_with_the_limit() {
        let long = b"{\"a\": [".chain(std::io::repeat(b'0').take(3 << 20));
        let err = read_json::<serde_json::Value>(long, 2 << 20).unwrap_err();
        assert_eq!(err, JsonError::Refused(Refusal::TooLarge(2 << 20)));
        assert!(
            err.to_string()
                .starts_with("larger than the 2.0 MiB read limit"),
            "{err}"
        );
        assert_eq!(read(b"{ }").unwrap(), serde_json::json!({}));
    }

    #[test]
    fn strings_arrays_blanks_and_nesting_are_counted_while_reading() {
        let long = b"{\"a\": \"".chain(std::io::repeat(b'x').take(MAX_STRING_BYTES + 1));
        let err = read_json::<serde_json::Value>(long, 1 << 40)
            .unwrap_err()
            .to_string();
        assert!(err.contains("a string longer than 16.0 MiB"), "{err}");
        // Escaped quotes stay inside the string; a string at the limit passes.
        let mut fits = b"{\"a\": \"\\\"".to_vec();
        fits.extend(std::iter::repeat(b'x').take(MAX_STRING_BYTES as usize - 2));
        fits.extend(b"\"}");
        assert!(read(&fits).is_ok());
        let items = b"{\"a\": [0".chain(std::io::repeat(b',').take(MAX_ARRAY_ITEMS));
        let err = read_json::<serde_json::Value>(items, 1 << 40).unwrap_err();
        assert_eq!(err, JsonError::Refused(Refusal::Items(MAX_ARRAY_ITEMS)));
        // A `timelines` array has its own, smaller limit.
        let many = b"{\"timelines\" : [{}".chain(std::io::repeat(b',').take(MAX_TIMELINES as u64));
        let err = read_json::<serde_json::Value>(many, 1 << 40)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(&format!("an array of over {MAX_TIMELINES} items")),
            "{err}"
        );
        let mut fits = b"{\"timelines\": [{}".to_vec();
        fits.extend(b",{}".repeat(MAX_TIMELINES - 1));
        fits.extend(b"], \"x\": [0");
        fits.extend(b",0".repeat(MAX_TIMELINES));
        fits.extend(b"]}");
        assert!(read(&fits).is_ok());
        // Commas inside strings or objects are not items.
        assert!(read(b"{\"a\": [\",,,\", {\"b\": 1, \"c\": 2}]}").is_ok());
        let blanks = b"{".chain(std::io::repeat(b' ').take(MAX_BLANK_RUN + 1));
        let err = read_json::<serde_json::Value>(blanks, 1 << 40)
            .unwrap_err()
            .to_string();
        assert!(err.contains("run of over"), "{err}");
        let deep = [b"{\"a\":".as_slice(), &[b'['; MAX_DEPTH + 1]].concat();
        assert_eq!(read(&deep).unwrap_err(), Refusal::Deep.into());
    }

    /// What a lexer made of `text` fed in pieces of `piece` bytes: its refusal, the closes it
    /// noted, and its state after.
    fn lexed(text: &[u8], piece: usize, stepwise: bool) -> String {
        let mut lexer = Lexer {
            stepwise,
            watch: Some(2),
            ..Lexer::default()
        };
        let mut closes = Vec::new();
        let mut refused = None;
        for (k, bytes) in text.chunks(piece.max(1)).enumerate() {
            let r = lexer.feed(bytes);
            closes.extend(lexer.closes.iter().map(|c| c + k * piece.max(1)));
            if let Err(why) = r {
                refused = Some(why);
                break;
            }
        }
        format!(
            "{refused:?} {closes:?} {} {} {} {} {:?} {:?} {:?}",
            lexer.started,
            lexer.in_string,
            lexer.escaped,
            lexer.blanks,
            lexer.key,
            lexer.last_string,
            lexer.open
        )
    }

    proptest::proptest! {
        /// Items taken eight bytes at a time and in runs count as every byte stepped alone.
        #[test]
        fn items_in_runs_count_as_bytes_stepped_alone(
            text in proptest::collection::vec(proptest::sample::select(
                b"0123456789,,,,    \n\t[]{}\":-.eEtx\\".to_vec()), 0..400),
            piece in 1usize..70,
        ) {
            let mut text = text;
            text.insert(0, b'{');
            proptest::prop_assert_eq!(lexed(&text, piece, false), lexed(&text, piece, true));
            let mut array = b"{\"timelines\": [".to_vec();
            array.extend(&text[1..]);
            proptest::prop_assert_eq!(lexed(&array, piece, false), lexed(&array, piece, true));
        }
    }

    proptest::proptest! {
        /// Objects' members taken in runs count as every byte stepped alone, keys with limits of
        /// their own, escapes and strings cut between pieces included.
        #[test]
        fn members_in_runs_count_as_bytes_stepped_alone(
            tokens in proptest::collection::vec(proptest::sample::select(vec![
                "{", "}", "[", "]", ":", ",", " ", "\n", "\"op\"", "\"timelines\"",
                "\"traceEvents\"", "\"a\\\"b\"", "\"\"", "12", "-1.5e3", "true", "\"x",
                "\"a long key of more than thirty-two bytes\"",
            ]), 0..120),
            piece in 1usize..70,
        ) {
            let text = ["{"].iter().chain(&tokens).copied().collect::<String>();
            proptest::prop_assert_eq!(
                lexed(text.as_bytes(), piece, false),
                lexed(text.as_bytes(), piece, true)
            );
        }
    }

    #[test]
    fn items_in_runs_stop_at_the_limits_where_bytes_stepped_alone_stop() {
        let mut many = b"{\"timelines\": [".to_vec();
        many.extend(b"1, 2,".repeat(MAX_TIMELINES));
        let mut blanks = b"{\"a\": [1,".to_vec();
        blanks.extend(std::iter::repeat(b' ').take(MAX_BLANK_RUN as usize + 9));
        let mut member_blanks = b"{\"a\": 1,".to_vec();
        member_blanks.extend(std::iter::repeat(b' ').take(MAX_BLANK_RUN as usize + 9));
        for text in [many, blanks, member_blanks] {
            for piece in [7, 8, 64 << 10] {
                let fast = lexed(&text, piece, false);
                assert_eq!(fast, lexed(&text, piece, true));
                assert!(fast.starts_with("Some("), "{fast}");
            }
        }
    }

    #[test]
    fn anything_after_the_value_is_refused() {
        let err = read(b"{} {}").unwrap_err();
        assert!(matches!(err, JsonError::Trailing(_)), "{err}");
        assert!(err.to_string().contains("trailing characters"), "{err}");
        assert!(read(b"{}\n  ").is_ok());
        assert_eq!(read(b"").unwrap_err(), JsonError::Empty);
    }

    #[test]
    fn a_bounded_list_stops_at_the_item_past_its_limit() {
        #[derive(Deserialize, Debug)]
        struct T {
            #[serde(deserialize_with = "bounded_vec::<_, _, 3>")]
            v: Vec<u8>,
        }
        assert_eq!(
            read_json::<T>(&b"{\"v\": [1,2,3]}"[..], 99)
                .unwrap()
                .v
                .len(),
            3
        );
        let err = read_json::<T>(&b"{\"v\": [1,2,3,4]}"[..], 99)
            .unwrap_err()
            .to_string();
        assert!(err.contains("more than 3 items"), "{err}");
    }
}
