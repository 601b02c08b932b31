//! Taking a trace's `traceEvents` out of its text one event at a time, each parsed from memory.
//!
//! serde_json parses from a reader a byte at a time, and an event read that way owns every
//! string in it; parsed from a slice, it borrows them. [`Split`] stands between the counting
//! reader ([`Guarded`](crate::border::bounded_json::Guarded), which has already held every byte
//! to the read limit and the string, array and nesting limits) and serde's reading of the
//! trace's object: the bytes pass through, except the items of the top-level `traceEvents`
//! array, which it cuts into batches that other threads parse with `serde_json::from_slice`, the
//! [`Collector`] taking their events in the file's order ([`super::event_batches`]). serde then
//! sees that array empty, with
//! its line breaks kept, so a damaged byte after it is still placed at its line. An event's
//! damage is placed by its number in `traceEvents`. A `traceEvents` key written with escapes is
//! not recognised here and is read by serde as before, a byte at a time.

use super::collector::Collector;
use super::error::EventError;
use super::event_batches::{parse_threads, Batch, Workers, BATCH_BYTES};
use std::cell::RefCell;
use std::io::{self, BufRead, Read};

/// The most bytes one event may take: a thousand times the largest a profiler writes, four
/// times the longest string allowed.
pub(super) const MAX_EVENT_BYTES: usize = 64 << 20;

/// Where the scan outside `traceEvents` stands with respect to that key.
#[derive(Clone, Copy, PartialEq)]
enum Armed {
    No,
    /// The key `traceEvents` of the top-level object was just read: its `:` comes next.
    Colon,
    /// Its value comes next.
    Value,
}

/// A reader of the trace's text for serde, with the events of `traceEvents` taken out.
pub(super) struct Split<'a, R> {
    inner: R,
    collector: &'a RefCell<Collector>,
    depth: u32,
    in_string: bool,
    escaped: bool,
    /// The first bytes of the last string read outside `traceEvents`.
    key: Vec<u8>,
    armed: Armed,
    /// Whether the `[` of `traceEvents` was passed on and its events are next.
    in_events: bool,
    /// What serde is given next in place of the events: their line breaks and the `]`.
    pending: Vec<u8>,
}

impl<'a, R: BufRead> Split<'a, R> {
    pub(super) fn new(inner: R, collector: &'a RefCell<Collector>) -> Split<'a, R> {
        Split {
            inner,
            collector,
            depth: 0,
            in_string: false,
            escaped: false,
            key: Vec::new(),
            armed: Armed::No,
            in_events: false,
            pending: Vec::new(),
        }
    }

    /// Follows one byte outside `traceEvents`; true where it opens that array.
    fn step(&mut self, b: u8) -> bool {
        const KEY: &[u8] = b"traceEvents";
        if self.in_string {
            if self.escaped {
                self.escaped = false;
            } else if b == b'\\' {
                self.escaped = true;
            } else if b == b'"' {
                self.in_string = false;
                self.armed = match self.depth == 1 && self.key == KEY {
                    true => Armed::Colon,
                    false => Armed::No,
                };
                return false;
            }
            if self.key.len() <= KEY.len() {
                self.key.push(b);
            }
            return false;
        }
        let armed = std::mem::replace(&mut self.armed, Armed::No);
        match b {
            b'"' => {
                self.in_string = true;
                self.key.clear();
            }
            b' ' | b'\n' | b'\r' | b'\t' => self.armed = armed,
            b':' if armed == Armed::Colon && self.depth == 1 => self.armed = Armed::Value,
            b'[' if armed == Armed::Value && self.depth == 1 => return true,
            b'{' | b'[' => self.depth += 1,
            b'}' | b']' => self.depth = self.depth.saturating_sub(1),
            _ => {}
        }
        false
    }

    /// Reads every event of `traceEvents`, through its `]`, cut into batches that workers parse
    /// and the collector takes in order ([`super::event_batches`]); then serde is given the line
    /// breaks they held and the `]`.
    fn events(&mut self) -> io::Result<()> {
        let collector = self.collector;
        let mut lines = 0usize;
        std::thread::scope(|scope| {
            let mut workers = Workers::start(scope, parse_threads());
            let mut batch = Batch::starting_at(1);
            let mut first = true;
            let cut = loop {
                match self.one_event(&mut lines, first, &mut batch) {
                    Ok(true) => break Ok(()),
                    Ok(false) => first = false,
                    Err(e) => break Err(e),
                }
                if batch.text.len() >= BATCH_BYTES {
                    if let Err(why) = workers.send(&mut batch, collector) {
                        return Err(self.refusal(why));
                    }
                }
            };
            // The events cut before the end, or before a refusal, are taken first: an error
            // among them came earlier in the file, and is the one reported.
            let taken =
                (workers.send(&mut batch, collector)).and_then(|()| workers.finish(collector));
            if let Err(why) = taken {
                return Err(self.refusal(why));
            }
            cut
        })?;
        self.pending = vec![b'\n'; lines];
        self.pending.push(b']');
        self.in_events = false;
        Ok(())
    }

    /// Cuts the next event into `batch`, through the `,` or `]` after it; true where that was
    /// the `]`. An empty array (`[]`, a blank first item that closes it) holds no event.
    fn one_event(&mut self, lines: &mut usize, first: bool, batch: &mut Batch) -> io::Result<bool> {
        let (mut depth, mut in_string, mut escaped) = (0u32, false, false);
        let start = batch.text.len();
        let n = batch.next();
        loop {
            if self.ended(n)? {
                return Err(self.refusal(EventError::EndsInside(n)));
            }
            let chunk = self.inner.fill_buf()?;
            let mut end = None;
            let mut i = 0;
            while i < chunk.len() {
                let b = chunk[i];
                if in_string {
                    if escaped {
                        escaped = false;
                    } else if let Some(k) = memchr::memchr2(b'"', b'\\', &chunk[i..]) {
                        i += k;
                        match chunk[i] {
                            b'"' => in_string = false,
                            _ => escaped = true,
                        }
                    } else {
                        i = chunk.len();
                        continue;
                    }
                } else {
                    match b {
                        b'"' => in_string = true,
                        b'\n' => *lines += 1,
                        b'{' | b'[' => depth += 1,
                        b',' | b']' if depth == 0 => {
                            end = Some((i, b == b']'));
                            break;
                        }
                        b'}' | b']' => depth = depth.saturating_sub(1),
                        _ => {}
                    }
                }
                i += 1;
            }
            let taken = end.map_or(chunk.len(), |(i, _)| i);
            if batch.text.len() - start + taken > MAX_EVENT_BYTES {
                return Err(self.refusal(EventError::Huge {
                    n,
                    mib: MAX_EVENT_BYTES >> 20,
                }));
            }
            let Some((i, closed)) = end else {
                batch.text.extend_from_slice(chunk);
                let n = chunk.len();
                self.inner.consume(n);
                continue;
            };
            batch.text.extend_from_slice(&chunk[..i]);
            self.inner.consume(i + 1);
            let blank = batch.text[start..].iter().all(u8::is_ascii_whitespace);
            match blank && first && closed {
                true => batch.text.truncate(start),
                false => batch.ends.push(batch.text.len()),
            }
            return Ok(closed);
        }
    }

    /// Stops the reading with `why`, kept where [`read`](super::kineto::read) finds it: serde
    /// would place it at the `[` of `traceEvents`.
    fn refusal(&self, why: EventError) -> io::Error {
        self.collector.borrow_mut().stopped = Some(why.clone());
        io::Error::other(why)
    }

    /// The refusal already made, again: the reading ended there.
    fn stopped(&self) -> Option<io::Error> {
        (self.collector.borrow().stopped.as_ref()).map(|why| io::Error::other(why.clone()))
    }

    /// Whether the text has ended, where the next bytes of event `n` are due; a refusal of the
    /// counting reader placed at that event.
    fn ended(&mut self, n: u64) -> io::Result<bool> {
        match self.inner.fill_buf() {
            Ok(chunk) => Ok(chunk.is_empty()),
            Err(e) if e.kind() == io::ErrorKind::Other => Err(self.refusal(EventError::Unread {
                n,
                why: e.to_string(),
            })),
            // gzip's own errors keep their kind: `kineto.rs` says what they mean.
            Err(e) => {
                let why = EventError::Unread {
                    n,
                    why: e.to_string(),
                };
                self.collector.borrow_mut().stopped = Some(why.clone());
                Err(io::Error::new(e.kind(), why))
            }
        }
    }
}

impl<R: BufRead> Read for Split<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some(e) = self.stopped() {
            return Err(e);
        }
        if self.in_events {
            self.events()?;
        }
        if !self.pending.is_empty() {
            let n = self.pending.len().min(buf.len());
            buf[..n].copy_from_slice(&self.pending[..n]);
            self.pending.drain(..n);
            return Ok(n);
        }
        let chunk = self.inner.fill_buf()?;
        let n = chunk.len().min(buf.len());
        buf[..n].copy_from_slice(&chunk[..n]);
        let mut used = n;
        for (i, &b) in buf[..n].iter().enumerate() {
            if self.step(b) {
                self.in_events = true;
                used = i + 1;
                break;
            }
        }
        self.inner.consume(used);
        Ok(used)
    }
}
