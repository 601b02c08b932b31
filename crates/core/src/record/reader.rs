//! Reading a results file claim by claim, so that memory holds a bounded number of claims'
//! stamps whatever the file's length.
//!
//! The bytes pass through the same guard as every file we read
//! ([`crate::border::bounded_json::Guarded`]: strings, arrays, blanks and nesting counted as they
//! arrive), then through [`Splitter`], which cuts each element of the top-level `claims` array
//! out of the text, and each of a claim's `trials.timelines` out of the claim. Each timeline is
//! parsed from memory as soon as it is cut (serde_json parses a slice about twice as fast as a
//! reader), its stamps packed as they are parsed ([`crate::measured::blocks::Packer`]), then the
//! rest of the claim (its program, checks and judgement, with `"timelines": []`); the claim is
//! checked alone ([`Alone`]), then in the file's order against the claims before it, and handed
//! on. Text cut and not yet parsed is bounded ([`super::flow`]), and so are the claims being
//! checked ([`CHECKED_BYTES`]). Everything else (the header and the timing, a few kilobytes) is
//! kept as the run's skeleton, with `"claims": []`, and parsed at the end. So memory holds a few
//! claims' stamps, packed, and a few trials' text: a claim's text (1.7 GB for
//! `scenario.sleep.grid` at 1,000 trials) is never held whole.
//!
//! **Threads.** The guard reads and counts on one (where the machine has three cores or more),
//! the splitter cuts on another, workers parse the pieces and check the claims
//! ([`crate::border::in_order::InOrder`]: up to [`MAX_PARSE_THREADS`] and
//! [`MAX_CHECK_THREADS`], the machine's cores less two; none on two cores), and the caller's
//! thread takes everything back in the file's order. On the benchmark's results file (the
//! catalogue's claims × 14, 177 MiB) on 16 cores, the guard's thread is the longest
//! (docs/measurements.md). Whatever the threads, the claims, their order, the first error in the
//! file's order and every message are those of one thread.
//!
//! The read limit ([`crate::border::limits::read_limit`]) applies to each claim's text and to the
//! skeleton, not to the file: memory is what it guards (a claim's parsed stamps take less than
//! their text), and the file's length only costs time, linear in it. A file of the whole
//! catalogue at 1,000 trials reads back in one claim's memory.

use super::error::{ClaimProblem, RecordError};
use super::flow::{Flow, PIECE_BYTES};
use super::run::{ClaimRecord, KEPT_TRIALS};
use super::splitter::{Piece, Sink, Splitter, TIMELINES};
use crate::border::bounded_json::Guarded;
use crate::border::in_order::InOrder;
use crate::measured::timeline::Timeline;
use std::io::Read;
use std::sync::mpsc::TryRecvError;

/// Reads `reader`'s results text, handing each claim to `each` (with its index in the file) as
/// soon as it is parsed; returns the skeleton's text, which holds everything but the claims
/// (`"claims": []`). `limit` bounds each claim's text and the skeleton's, and also what the caller
/// keeps of all claims together: their whole text where `whole` (a run loaded whole), else the
/// part of each claim's text that its kept trials make up (`ClaimRecord::kept`: the first
/// [`KEPT_TRIALS`] and the witness), so that a small gzip of a million little claims cannot
/// fill memory through what is kept of each.
///
/// The work is shared as the module says: one thread decompresses, guards and cuts the text
/// ([`cut`]; the guard on a thread of its own where a core is spare), workers parse the pieces
/// ([`parse`]) and check each claim alone (`alone`), and the caller's thread assembles the
/// claims ([`Assembler`]) and hands them to `each` in order, with at most
/// [`super::flow::IN_FLIGHT_BYTES`] of text cut and not yet parsed. The first error in the
/// file's order is the one returned: a piece the assembler refuses stops the cutter, whose own
/// error came later, and the claims before it are handed on first.
pub fn read_claims(
    reader: impl Read + Send,
    limit: u64,
    whole: bool,
    alone: &Alone,
    each: &mut Each,
) -> Result<Vec<u8>, RecordError> {
    let threads = Threads {
        parsers: parse_threads(),
        checkers: crate::border::in_order::spare_cores(2).min(MAX_CHECK_THREADS),
        guard: crate::border::in_order::spare_cores(3) > 0,
    };
    read_on(threads, reader, limit, whole, alone, each)
}

/// What is done to each claim alone, on any thread, before it is handed on (with its index in
/// the file): the reader's checks, which need no other claim.
pub type Alone<'a> = dyn Fn(&mut ClaimRecord) -> Result<(), RecordError> + Sync + 'a;

/// What takes each claim in the file's order, with its index and what [`Alone`] found.
pub type Each<'a> =
    dyn FnMut(usize, ClaimRecord, Result<(), RecordError>) -> Result<(), RecordError> + 'a;

/// The threads of a reading besides the caller's and the cutter's.
#[derive(Debug, Clone, Copy)]
struct Threads {
    /// Workers that parse the pieces.
    parsers: usize,
    /// Workers that check the claims ([`Alone`]).
    checkers: usize,
    /// Whether the guard counts on a thread of its own.
    guard: bool,
}

/// The most threads that check claims: checking is a tenth of what parsing them costs.
const MAX_CHECK_THREADS: usize = 2;

/// Claims' text held by the checkers at once, beyond one claim: a claim's stamps, parsed, take
/// less than their text, so this bounds what they hold.
const CHECKED_BYTES: u64 = 64 << 20;

/// [`read_claims`] on the threads given.
fn read_on(
    threads: Threads,
    reader: impl Read + Send,
    limit: u64,
    whole: bool,
    alone: &Alone,
    each: &mut Each,
) -> Result<Vec<u8>, RecordError> {
    let guard_thread = threads.guard;
    let check = |(i, mut c, bytes): (usize, ClaimRecord, u64)| {
        let r = alone(&mut c);
        (i, c, bytes, r)
    };
    let (hand, taken) = std::sync::mpsc::channel::<Piece>();
    let flow = Flow::default();
    std::thread::scope(|scope| {
        let flow = &flow;
        let cutter = std::thread::Builder::new()
            .name("results-cutter".into())
            .spawn_scoped(scope, move || {
                cut(reader, limit, guard_thread, Cutter { hand, flow })
            })
            .map_err(|e| RecordError::Thread(e.to_string()))?;
        // However this thread leaves (a refusal, or a panic of `each`), the cutter is told
        // before the scope waits for it: it waits no more, and its next hand-over fails.
        let stop = flow.stop_on_drop();
        let mut assembler = Assembler::new(limit, whole);
        let mut workers = InOrder::start(
            scope,
            threads.parsers,
            "results-parse",
            PARSED_PER_WORKER,
            &parse,
        );
        let mut checkers = InOrder::start(
            scope,
            threads.checkers,
            "results-check",
            PARSED_PER_WORKER,
            &check,
        )
        .within(CHECKED_BYTES);
        // The allocator's free pages go back after every few claims' stamps were dropped.
        let mut trimmer = crate::border::heap::Trimmer::default();
        // Whether `each` refused a claim: no claim after it is handed on.
        let refused = std::cell::Cell::new(false);
        let mut checked = |(i, c, bytes, r)| {
            each(i, c, r).inspect_err(|_| refused.set(true))?;
            // The claim's stamps, or all but what the caller keeps, were just dropped.
            trimmer.freed(bytes);
            Ok::<_, RecordError>(())
        };
        let mut take = |parsed: Parsed| {
            let r = assembler.take(parsed.piece, &mut |i, c, bytes| {
                checkers.send_weighed((i, c, bytes), bytes, &mut checked)
            });
            flow.release(parsed.charged);
            r
        };
        let mine = (|| {
            loop {
                // While pieces are with the workers, their answers are taken whenever no new
                // piece waits: the cutter may be waiting for the room they hold.
                let piece = match workers.waiting() {
                    0 => match taken.recv() {
                        Ok(piece) => piece,
                        Err(_) => break,
                    },
                    _ => match taken.try_recv() {
                        Ok(piece) => piece,
                        Err(TryRecvError::Empty) => {
                            workers.take_next(&mut take)?;
                            continue;
                        }
                        Err(TryRecvError::Disconnected) => break,
                    },
                };
                workers.send(piece, &mut take)?;
            }
            workers.finish(&mut take)
        })();
        // The claims with the checkers come before whatever stopped the parsing: they are
        // handed on first, and an error among them is the first in the file's order.
        let mine = match mine {
            Err(e) if refused.get() => Err(e),
            Err(e) => checkers.finish(&mut checked).and(Err(e)),
            Ok(()) => checkers.finish(&mut checked),
        };
        crate::border::heap::return_freed();
        drop(workers);
        drop(checkers);
        drop(stop);
        drop(taken);
        let theirs = match cutter.join() {
            Ok(r) => r,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        mine?;
        theirs
    })
}

/// The most threads that parse a file's pieces, and the pieces each may hold (parsed or being
/// parsed) before the oldest is taken back. Measured on the H200 host's 16 cores with the
/// benchmark's results file (`judge`, best of three): 4 threads and 2 pieces each, 0.93–0.96 s;
/// 8 threads alone 0.79 s; 3–4 pieces a worker for the parsers, checkers and judges alone 0.73
/// s; 6 threads, 3 pieces a worker and 8 chunks guarded ahead, 0.62 s, as fast as everything
/// doubled (0.61 s). A piece far larger than the rest (a claim of many trials) holds the
/// pieces after it until it is parsed: more in flight lets the other workers go on.
const MAX_PARSE_THREADS: usize = 6;
const PARSED_PER_WORKER: usize = 3;

/// Threads that parse pieces for the machine: its cores less the two that cut and assemble
/// them; none below three cores, where the assembling thread parses them as before.
fn parse_threads() -> usize {
    crate::border::in_order::spare_cores(2).min(MAX_PARSE_THREADS)
}

/// A piece parsed, and the text it was charged for in the flow.
struct Parsed {
    piece: ParsedPiece,
    charged: u64,
}

/// What a piece of text became.
enum ParsedPiece {
    Timeline(Result<Box<Timeline>, RecordError>),
    Claim {
        index: usize,
        bytes: u64,
        record: Result<Box<ClaimRecord>, RecordError>,
    },
}

/// Parses one piece, on any thread: its text is dropped here.
fn parse(piece: Piece) -> Parsed {
    let charged = piece.text_bytes() + PIECE_BYTES;
    let json = |claim, timeline: Option<usize>| {
        move |e: serde_json::Error| RecordError::Claim {
            claim,
            problem: ClaimProblem::Json {
                timeline,
                message: crate::border::error::shortened(&e.to_string()),
            },
        }
    };
    let piece = match piece {
        Piece::Timeline { claim, index, text } => ParsedPiece::Timeline(
            serde_json::from_slice::<Box<Timeline>>(&text).map_err(json(claim, Some(index))),
        ),
        Piece::Claim { index, text, bytes } => ParsedPiece::Claim {
            index,
            bytes,
            record: serde_json::from_slice::<Box<ClaimRecord>>(&text).map_err(json(index, None)),
        },
    };
    Parsed { piece, charged }
}

/// The cutter's end of the hand-over: pieces sent, their text charged to the flow.
struct Cutter<'a> {
    hand: std::sync::mpsc::Sender<Piece>,
    flow: &'a Flow,
}

impl Sink for Cutter<'_> {
    fn grow(&mut self, n: usize, so_far: usize) -> Result<(), RecordError> {
        self.flow.charge(n as u64, so_far as u64)
    }

    fn hand(&mut self, piece: Piece) -> Result<(), RecordError> {
        // A timeline's text was charged as it grew, and is the cutter's own until sent (it must
        // not wait for itself); a claim's is charged whole.
        match &piece {
            Piece::Claim { text, .. } => self.flow.charge(text.len() as u64 + PIECE_BYTES, 0)?,
            Piece::Timeline { text, .. } => self.flow.charge(PIECE_BYTES, text.len() as u64)?,
        }
        self.hand.send(piece).map_err(|_| RecordError::Stopped)
    }
}

/// Reads, guards and cuts `reader`'s text, handing each piece on; returns the skeleton's text.
/// Where the machine has a core to spare, the reading and the guard's counting run on a thread
/// of their own ([`guard`]), [`GUARDED_CHUNKS`] chunks ahead of the cutting: the guard was about
/// three fifths of the cutter's time, and the cutter the longest thread of a re-judging.
fn cut(
    reader: impl Read + Send,
    limit: u64,
    guard_thread: bool,
    mut sink: Cutter,
) -> Result<Vec<u8>, RecordError> {
    let mut split = Splitter::new(limit);
    let mut cut_chunk = |chunk: Passed| match chunk {
        Passed::Bytes { bytes, closes } => match sink.flow.stopped() {
            true => Err(RecordError::Stopped),
            false => split.feed(&bytes, &closes, &mut sink),
        },
        Passed::End { started: false } => Err(RecordError::Empty),
        Passed::End { started: true } => Ok(()),
        Passed::Failed(e) => Err(e),
    };
    if !guard_thread {
        guard(reader, &mut |chunk| cut_chunk(chunk).map(|()| true))?;
        return split.finish();
    }
    let (hand, chunks) = std::sync::mpsc::sync_channel::<Passed>(GUARDED_CHUNKS);
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("results-guard".into())
            .spawn_scoped(scope, move || {
                // The cutter stopped (it refused a piece, or the reading ended): nothing more
                // is wanted.
                let _ = guard(reader, &mut |chunk| Ok(hand.send(chunk).is_ok()));
            })
            .map_err(|e| RecordError::Thread(e.to_string()))?;
        let cut = chunks.iter().try_for_each(&mut cut_chunk);
        // Before the scope waits for the guard's thread: on an error, its next hand-over fails
        // and it ends.
        drop(chunks);
        cut
    })?;
    split.finish()
}

/// The chunks the guard may read ahead of the cutter (64 KiB each; see [`MAX_PARSE_THREADS`]).
const GUARDED_CHUNKS: usize = 8;

/// What the guard hands the cutter, in the file's order.
enum Passed {
    /// Bytes that passed, and where in them brackets closed back to [`TIMELINES`].
    Bytes { bytes: Vec<u8>, closes: Vec<usize> },
    /// The end of the file, and whether anything but blanks came.
    End { started: bool },
    /// Why the reading stopped, after the bytes before it.
    Failed(RecordError),
}

/// Reads `reader` through the guard, handing each chunk of 64 KiB to `hand` until it says no
/// more is wanted (`Ok(false)`) or fails; the file's end or the guard's refusal is the last.
fn guard(
    reader: impl Read,
    hand: &mut dyn FnMut(Passed) -> Result<bool, RecordError>,
) -> Result<(), RecordError> {
    // The guard counts strings, arrays and blanks; its own total is the file's, which memory does
    // not hold, so it is not bounded here.
    let mut guarded = Guarded::new(reader, u64::MAX).watching_closes(TIMELINES as usize);
    loop {
        let mut bytes = vec![0u8; 1 << 16];
        let n = match guarded.read(&mut bytes) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                let e = (guarded.refused())
                    .map_or_else(|| RecordError::Read(e.to_string()), RecordError::Refused);
                return hand(Passed::Failed(e)).map(|_| ());
            }
        };
        bytes.truncate(n);
        let closes = guarded.closes().to_vec();
        if !hand(Passed::Bytes { bytes, closes })? {
            return Ok(());
        }
    }
    let started = guarded.started();
    hand(Passed::End { started }).map(|_| ())
}

/// Parses the pieces the splitter cut, in order: each claim's timelines as they come, then the
/// claim, which is handed on with them.
struct Assembler {
    limit: u64,
    whole: bool,
    timelines: Vec<Timeline>,
    /// The text the claims handed on so far are kept with, counted against `limit`.
    held: u64,
}

impl Assembler {
    fn new(limit: u64, whole: bool) -> Assembler {
        Assembler {
            limit,
            whole,
            timelines: Vec::new(),
            held: 0,
        }
    }

    /// Takes a parsed piece, in the file's order: a timeline is kept for its claim, a claim
    /// gets the timelines kept and is handed on.
    fn take(
        &mut self,
        piece: ParsedPiece,
        each: &mut dyn FnMut(usize, ClaimRecord, u64) -> Result<(), RecordError>,
    ) -> Result<(), RecordError> {
        match piece {
            ParsedPiece::Timeline(timeline) => {
                self.timelines.push(*timeline?);
                Ok(())
            }
            ParsedPiece::Claim {
                index,
                bytes,
                record,
            } => self.claim(index, *record?, bytes, each),
        }
    }

    fn claim(
        &mut self,
        i: usize,
        mut record: ClaimRecord,
        bytes: u64,
        each: &mut dyn FnMut(usize, ClaimRecord, u64) -> Result<(), RecordError>,
    ) -> Result<(), RecordError> {
        let timelines = std::mem::take(&mut self.timelines);
        if let super::run::Outcome::Ran { trials, .. } = &mut record.outcome {
            trials.timelines = timelines;
        }
        let ran = record.trials().map_or(0, |t| t.timelines.len()) as u64;
        let kept = match self.whole {
            true => ran,
            false => ran.min(KEPT_TRIALS as u64 + 1),
        };
        self.held += bytes.saturating_mul(kept.max(1)) / ran.max(1);
        if self.held > self.limit {
            return Err(RecordError::TooLarge {
                what: format!("the claims up to claims[{i}] together"),
                limit: self.limit,
            });
        }
        each(i, record, bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::super::splitter::tests::{pieces, split};
    use super::*;

    /// Hands the timelines of `text` to an assembler, which parses them.
    fn assembled(text: &str) -> Result<Vec<Timeline>, RecordError> {
        let mut a = Assembler::new(1 << 20, false);
        for p in pieces(text)?.0 {
            if let Piece::Timeline { .. } = p {
                a.take(parse(p).piece, &mut |_, _, _| Ok(()))?;
            }
        }
        Ok(a.timelines)
    }

    #[test]
    fn timelines_are_cut_out_of_their_claim_and_parsed() {
        let tl = r#"{"spans": [], "host_calls": [], "x": "}]\""}"#;
        let text = format!(
            r#"{{"claims": [{{"claim": {{"trials": {{"timelines": [1]}}}}, "trials": {{"wanted": 1, "timelines": [ {tl} , {tl} ], "n": 2}}, "judgement": {{"timelines": [3]}}}}]}}"#
        );
        let (cut, _) = pieces(&text).unwrap();
        let [Piece::Timeline {
            claim: 0,
            index: 0,
            text: t0,
        }, Piece::Timeline {
            claim: 0,
            index: 1,
            text: t1,
        }, Piece::Claim {
            index: 0,
            text: c,
            bytes,
        }] = &cut[..]
        else {
            panic!("two timelines, then their claim: {cut:?}")
        };
        assert_eq!([t0, t1], [tl.as_bytes(); 2]);
        assert_eq!(
            String::from_utf8_lossy(c),
            r#"{"claim": {"trials": {"timelines": [1]}}, "trials": {"wanted": 1, "timelines": [    ], "n": 2}, "judgement": {"timelines": [3]}}"#
        );
        assert_eq!(*bytes, text.len() as u64 - r#"{"claims": []}"#.len() as u64);
        assert_eq!(
            assembled(&text).unwrap(),
            [Timeline::default(), Timeline::default()]
        );
        let err = split(
            r#"{"claims": [{"trials": {"timelines": [{"spans": [], "host_calls": []}, 3]}}]}"#,
        )
        .unwrap_err();
        assert!(
            matches!(
                err,
                RecordError::Claim {
                    claim: 0,
                    problem: ClaimProblem::TimelineNotAnObject(1)
                }
            ),
            "{err}"
        );
        let err = assembled(r#"{"claims": [{"trials": {"timelines": [{"spans": 3}]}}]}"#)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("claims[0]: trials.timelines[0]: invalid type"),
            "{err}"
        );
    }

    #[test]
    fn a_panic_of_the_caller_ends_the_reading_and_is_passed_on() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/core-h100.json"
        );
        let (mut seen, mut read) = (0, 0);
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            read_claims(
                std::fs::File::open(path).unwrap(),
                u64::MAX,
                false,
                &|_| Ok(()),
                &mut |i, _, _| {
                    seen += 1;
                    assert!(i < 2, "a claim past the second");
                    Ok(())
                },
            )
        }));
        assert!(outcome.is_err(), "the caller's panic comes back as a panic");
        assert_eq!(seen, 3, "the claims up to the panic were handed on");
        // The same file read whole, to know it holds more claims than were seen.
        read_claims(
            std::fs::File::open(path).unwrap(),
            u64::MAX,
            false,
            &|_| Ok(()),
            &mut |_, _, _| {
                read += 1;
                Ok(())
            },
        )
        .unwrap();
        assert!(read > 3, "{read} claims");
    }

    /// The claims and the skeleton are the same whether the pieces are parsed where they are
    /// assembled or by workers, and the guard counts on the cutter's thread or its own (odd
    /// counts of workers), and so is the first error, in the file's order.
    #[test]
    fn workers_parse_what_one_thread_parses_in_the_same_order() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/core-h100.json"
        );
        let text = std::fs::read(path).unwrap();
        // The fifth claim's own check fails where `refuse` says so.
        let read_checked = |parsers: usize, text: &[u8], refuse: bool| {
            let mut claims = Vec::new();
            let threads = Threads {
                parsers,
                checkers: parsers % 3,
                guard: parsers % 2 == 1,
            };
            let fifth = serde_json::from_slice::<serde_json::Value>(text)
                .ok()
                .and_then(|v| v["claims"][4]["claim"]["id"].as_str().map(str::to_owned));
            let alone = |c: &mut ClaimRecord| match refuse && Some(&c.claim.id) == fifth.as_ref() {
                true => Err(RecordError::Lost("the fifth")),
                false => Ok(()),
            };
            let skeleton = read_on(threads, text, u64::MAX, true, &alone, &mut |i, c, r| {
                claims.push((i, serde_json::to_string(&c).unwrap()));
                r
            });
            (skeleton.map(|s| s.len()).map_err(|e| e.to_string()), claims)
        };
        let read = |parsers: usize, text: &[u8]| read_checked(parsers, text, false);
        let refused = read_checked(0, &text, true);
        assert_eq!(refused.1.len(), 5, "the claims up to the fifth");
        assert!(refused.0.as_ref().is_err_and(|e| e.contains("the fifth")));
        for parsers in [1, 2, 3, 5] {
            assert!(
                read_checked(parsers, &text, true) == refused,
                "{parsers} workers"
            );
        }
        let one = read(0, &text);
        assert!(one.1.len() > 3, "{} claims", one.1.len());
        for parsers in [1, 2, 3, 5] {
            assert!(read(parsers, &text) == one, "{parsers} workers");
        }
        // Damage in a late timeline: the claims before it come, then its error, alike.
        let at = text.windows(7).rposition(|w| w == b"\"spans\"").unwrap();
        let mut damaged = text.clone();
        damaged[at + 1] = b'x';
        let one = read(0, &damaged);
        let err = one.0.clone().unwrap_err();
        assert!(err.contains("trials.timelines["), "{err}");
        for parsers in [1, 2, 3] {
            let many = read(parsers, &damaged);
            assert_eq!(many.1, one.1, "{parsers} workers");
            assert_eq!(many.0.unwrap_err(), err);
        }
        // Cut short, and refused by the guard (nested too deep) in a late timeline.
        let mut deep = text[..at].to_vec();
        deep.extend([b'['; 300]);
        deep.extend(&text[at..]);
        for text in [&text[..text.len() * 2 / 3], &deep[..]] {
            let one = read(0, text);
            assert!(one.0.is_err() && one.1.len() > 3, "{}", one.1.len());
            for parsers in [1, 2, 3] {
                assert!(read(parsers, text) == one, "{parsers} workers");
            }
        }
    }

    /// A timeline larger than the text allowed in flight is cut and handed over alone: the
    /// cutter never waits for its own text (it did once, for the cost of the hand-over).
    #[test]
    fn a_timeline_larger_than_the_flow_is_read_alone() {
        let row = format!("[{}0]", "0,".repeat(1_000_000));
        let rows =
            vec![row.as_str(); (super::super::flow::IN_FLIGHT_BYTES / 2_000_000 + 2) as usize];
        let text = format!(
            r#"{{"claims": [{{"trials": {{"timelines": [{{"spans": [], "host_calls": [], "x": [{}]}}]}}}}]}}"#,
            rows.join(",")
        );
        assert!(text.len() as u64 > super::super::flow::IN_FLIGHT_BYTES);
        let (done, finished) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let r = read_claims(
                text.as_bytes(),
                u64::MAX,
                false,
                &|_| Ok(()),
                &mut |_, _, r| r,
            );
            done.send(r).unwrap();
        });
        let r = finished
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("the reading ends");
        // The claim itself is not a claim: what matters is that it was reached.
        let err = r.unwrap_err();
        assert!(matches!(err, RecordError::Claim { claim: 0, .. }), "{err}");
    }
}
