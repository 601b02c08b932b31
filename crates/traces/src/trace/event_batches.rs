//! A trace's events parsed on several threads, and taken by the collector in the file's order.
//!
//! Parsing an event's JSON was a quarter of what the reading thread did on the docs' 200 MB
//! benchmark, and events are independent until the collector joins them. So the splitter
//! (`split.rs`) cuts events into [`Batch`]es of about [`BATCH_BYTES`] and hands them round to
//! [`parse_threads`] workers, which parse each event from memory and keep those the collector
//! reads ([`Collector::wanted`]); the batches come back in the order they went out, and the
//! collector takes their events one by one, as it took them when one thread did everything. An
//! event's number, the first error in the file's order and every message stay what they were:
//! a worker stops a batch at its first damaged event, the events before it are taken first, and
//! nothing after it is.

use super::collector::Collector;
use super::error::EventError;
use super::shapes::Event;
use crate::border::in_order::{InOrder, WorkerGone};
use std::cell::RefCell;

/// The text of one batch, about: a few thousand events, so that a hand-over costs little beside
/// their parsing, while the batches in flight ([`IN_FLIGHT_PER_WORKER`] a worker) hold a few MB.
pub(super) const BATCH_BYTES: usize = 256 << 10;

/// Batches handed out and not yet taken back, per worker.
const IN_FLIGHT_PER_WORKER: usize = 2;

/// The most workers: four keep up with the splitter and the collector (one thread) on the docs'
/// benchmark; eight were no faster on 16 cores and held 5 MiB more (each thread's heap).
const MAX_WORKERS: usize = 4;

/// Workers for the machine: its cores less the two that split and inflate. With fewer than
/// three cores, none: the batches are parsed on the splitter's thread (a worker that only shared
/// two cores with the inflating thread made the benchmark 5 % slower there).
pub(super) fn parse_threads() -> usize {
    crate::border::in_order::spare_cores(2).min(MAX_WORKERS)
}

/// Events cut out of the text, end to end.
pub(super) struct Batch {
    /// The number of its first event in `traceEvents`, counting from 1.
    pub(super) first: u64,
    pub(super) text: Vec<u8>,
    /// Where each event ends in `text`; bytes past the last end belong to an event not yet cut.
    pub(super) ends: Vec<usize>,
}

impl Batch {
    pub(super) fn starting_at(first: u64) -> Batch {
        Batch {
            first,
            text: Vec::with_capacity(BATCH_BYTES + (BATCH_BYTES >> 2)),
            ends: Vec::new(),
        }
    }

    /// The number of the event being cut.
    pub(super) fn next(&self) -> u64 {
        self.first + self.ends.len() as u64
    }

    /// The next batch, which starts after this one's events.
    fn after(&self) -> Batch {
        Batch::starting_at(self.next())
    }

    /// Each event parsed in turn, its words borrowed from the text, under its number; an empty
    /// item or damaged JSON is that event's error.
    fn events(&self) -> impl Iterator<Item = (u64, Result<Event<'_>, EventError>)> {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        (starts.zip(self.ends.iter().copied()).enumerate()).map(|(k, (start, end))| {
            let n = self.first + k as u64;
            let bytes = &self.text[start..end];
            let e = match bytes.iter().all(u8::is_ascii_whitespace) {
                true => Err(EventError::EmptyItem(n)),
                false => serde_json::from_slice::<Event>(bytes).map_err(|e| placed(&e, n)),
            };
            (n, e)
        })
    }
}

/// A batch parsed: the events the collector reads, with their numbers; the number of the last
/// event counted; and the error that stopped it, after the events before it.
struct Parsed {
    events: Vec<(u64, Event<'static>)>,
    last: u64,
    error: Option<EventError>,
}

fn parse(batch: Batch) -> Parsed {
    let mut events = Vec::new();
    for (n, e) in batch.events() {
        match e {
            Ok(e) if Collector::wanted(&e) => events.push((n, e.into_owned())),
            Ok(_) => {}
            Err(error) => {
                return Parsed {
                    events,
                    last: n.saturating_sub(1),
                    error: Some(error),
                }
            }
        }
    }
    Parsed {
        events,
        last: batch.next().saturating_sub(1),
        error: None,
    }
}

/// serde_json's error in event `n`, its place counted from the event's first byte.
fn placed(e: &serde_json::Error, n: u64) -> EventError {
    let text = e.to_string();
    let at = format!(" at line {} column {}", e.line(), e.column());
    let what = text.strip_suffix(&at).unwrap_or(&text);
    let what = crate::border::error::shortened(what);
    match e.classify() {
        serde_json::error::Category::Eof => EventError::CutShort { n, what },
        _ => EventError::NotAnEvent {
            n,
            what,
            line: e.line(),
            column: e.column(),
        },
    }
}

/// The workers of one trace's reading, and the batches handed out, in order
/// ([`InOrder`]).
pub(super) struct Workers<'w>(InOrder<'w, Batch, Parsed>);

/// Why taking a parsed batch stopped: an event's error, or a worker gone.
enum Stop {
    Event(EventError),
    Gone,
}

impl From<WorkerGone> for Stop {
    fn from(_: WorkerGone) -> Stop {
        Stop::Gone
    }
}

impl<'w> Workers<'w> {
    /// Starts `n` workers in `scope` (none: [`Workers::send`] parses each batch itself); they
    /// end when this is dropped.
    pub(super) fn start<'s>(scope: &'s std::thread::Scope<'s, '_>, n: usize) -> Workers<'w>
    where
        'w: 's,
    {
        Workers(InOrder::start(
            scope,
            n,
            "trace-parse",
            IN_FLIGHT_PER_WORKER,
            &parse,
        ))
    }

    /// Hands `batch` on, and the next one's start back: first taking the oldest batch where
    /// enough wait, so that memory holds a few. An error is the first in the file's order.
    pub(super) fn send(
        &mut self,
        batch: &mut Batch,
        collector: &RefCell<Collector>,
    ) -> Result<(), EventError> {
        let next = batch.after();
        let batch = std::mem::replace(batch, next);
        if batch.ends.is_empty() {
            return Ok(());
        }
        if self.0.workers() == 0 {
            return take_here(&batch, collector);
        }
        let r = self
            .0
            .send(batch, &mut |p| take(p, collector).map_err(Stop::Event));
        stopped(r, collector)
    }

    /// Takes every batch handed out, in order.
    pub(super) fn finish(&mut self, collector: &RefCell<Collector>) -> Result<(), EventError> {
        let r = self
            .0
            .finish(&mut |p| take(p, collector).map_err(Stop::Event));
        stopped(r, collector)
    }
}

/// An event's error as it is; a worker gone (it panicked: the scope passes the panic on when it
/// ends) as the event after the last one taken, unread.
fn stopped(r: Result<(), Stop>, collector: &RefCell<Collector>) -> Result<(), EventError> {
    r.map_err(|s| match s {
        Stop::Event(e) => e,
        Stop::Gone => EventError::Unread {
            n: collector.borrow().events + 1,
            why: "a thread parsing the trace's events stopped".into(),
        },
    })
}

/// Parses `batch` on this thread, each event handed to the collector as it is parsed, its
/// words borrowed from the text (no copies: without workers, the reading is as it was).
fn take_here(batch: &Batch, collector: &RefCell<Collector>) -> Result<(), EventError> {
    let mut c = collector.borrow_mut();
    for (n, e) in batch.events() {
        c.events = n - 1;
        c.take(e?)?;
    }
    Ok(())
}

/// Gives the collector a parsed batch's events, each under its number.
fn take(parsed: Parsed, collector: &RefCell<Collector>) -> Result<(), EventError> {
    let mut c = collector.borrow_mut();
    for (n, e) in parsed.events {
        c.events = n - 1;
        c.take(e)?;
    }
    c.events = parsed.last;
    parsed.error.map_or(Ok(()), Err)
}
