//! Reading a results file claim by claim, so that memory holds one claim's stamps at a time.
//!
//! The bytes pass through the same guard as every file we read
//! ([`crate::border::bounded_json::Guarded`]: strings, arrays, blanks and nesting counted as they
//! arrive), then through [`Splitter`], which cuts each element of the top-level `claims` array
//! out of the text, and each of a claim's `trials.timelines` out of the claim. That is one
//! thread's work; the caller's thread parses each timeline from memory as soon as it is cut
//! (serde_json parses a slice about twice as fast as a reader), its stamps packed as they are
//! parsed ([`crate::measured::blocks::Packer`]), then the rest of the claim (its program, checks
//! and judgement, with `"timelines": []`), and hands the record on. Text waiting between the two
//! is bounded ([`super::flow`]). Everything else (the header and the timing, a few kilobytes) is
//! kept as the run's skeleton, with `"claims": []`, and parsed at the end. So memory holds one
//! claim's stamps, packed, and a trial's text or two: a claim's text (1.7 GB for
//! `scenario.sleep.grid` at 1,000 trials) is never held whole.
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
use crate::measured::timeline::Timeline;
use std::io::Read;

/// Reads `reader`'s results text, handing each claim to `each` (with its index in the file) as
/// soon as it is parsed; returns the skeleton's text, which holds everything but the claims
/// (`"claims": []`). `limit` bounds each claim's text and the skeleton's, and also what the caller
/// keeps of all claims together: their whole text where `whole` (a run loaded whole), else the
/// part of each claim's text that its kept trials make up (`ClaimRecord::kept`: the first
/// [`KEPT_TRIALS`] and the witness), so that a small gzip of a million little claims cannot
/// fill memory through what is kept of each.
///
/// Two threads share the work: one decompresses, guards and cuts the text ([`cut`]), the
/// caller's parses and judges what was cut ([`Assembler`]), the pieces handed over in order,
/// with at most [`super::flow::IN_FLIGHT_BYTES`] of text cut and not yet parsed. On a file of
/// five claims of a million stamps each, cutting took about as long as parsing and judging, so
/// the file is read in about half the time. The first error in the file's order is the one
/// returned: a piece the assembler refuses stops the cutter, whose own error came later.
pub fn read_claims(
    reader: impl Read + Send,
    limit: u64,
    whole: bool,
    each: &mut dyn FnMut(usize, ClaimRecord) -> Result<(), RecordError>,
) -> Result<Vec<u8>, RecordError> {
    let (hand, taken) = std::sync::mpsc::channel::<Piece>();
    let flow = Flow::default();
    std::thread::scope(|scope| {
        let flow = &flow;
        let cutter = std::thread::Builder::new()
            .name("results-cutter".into())
            .spawn_scoped(scope, move || cut(reader, limit, Cutter { hand, flow }))
            .map_err(|e| RecordError::Thread(e.to_string()))?;
        // However this thread leaves (a refusal, or a panic of `each`), the cutter is told
        // before the scope waits for it: it waits no more, and its next hand-over fails.
        let stop = flow.stop_on_drop();
        let mut assembler = Assembler::new(limit, whole);
        let mine = taken.iter().try_for_each(|piece| {
            let n = piece.text_bytes() + PIECE_BYTES;
            let r = assembler.take(piece, each);
            flow.release(n);
            r
        });
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
fn cut(reader: impl Read, limit: u64, mut sink: Cutter) -> Result<Vec<u8>, RecordError> {
    // The guard counts strings, arrays and blanks; its own total is the file's, which memory does
    // not hold, so it is not bounded here.
    let mut guarded = Guarded::new(reader, u64::MAX).watching_closes(TIMELINES as usize);
    let mut split = Splitter::new(limit);
    let mut buf = vec![0u8; 1 << 16];
    loop {
        if sink.flow.stopped() {
            return Err(RecordError::Stopped);
        }
        let n = match guarded.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                return Err(guarded
                    .refused()
                    .map_or_else(|| RecordError::Read(e.to_string()), RecordError::Refused))
            }
        };
        split.feed(&buf[..n], guarded.closes(), &mut sink)?;
    }
    if !guarded.started() {
        return Err(RecordError::Empty);
    }
    split.finish()
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

    fn take(
        &mut self,
        piece: Piece,
        each: &mut dyn FnMut(usize, ClaimRecord) -> Result<(), RecordError>,
    ) -> Result<(), RecordError> {
        match piece {
            Piece::Timeline { claim, index, text } => {
                let timeline =
                    serde_json::from_slice::<Timeline>(&text).map_err(|e| RecordError::Claim {
                        claim,
                        problem: ClaimProblem::Json {
                            timeline: Some(index),
                            message: crate::border::error::shortened(&e.to_string()),
                        },
                    })?;
                self.timelines.push(timeline);
                Ok(())
            }
            Piece::Claim { index, text, bytes } => self.claim(index, &text, bytes, each),
        }
    }

    fn claim(
        &mut self,
        i: usize,
        text: &[u8],
        bytes: u64,
        each: &mut dyn FnMut(usize, ClaimRecord) -> Result<(), RecordError>,
    ) -> Result<(), RecordError> {
        let timelines = std::mem::take(&mut self.timelines);
        let mut record =
            serde_json::from_slice::<ClaimRecord>(text).map_err(|e| RecordError::Claim {
                claim: i,
                problem: ClaimProblem::Json {
                    timeline: None,
                    message: crate::border::error::shortened(&e.to_string()),
                },
            })?;
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
        each(i, record)?;
        // The claim's stamps, or all but what the caller keeps, were just dropped.
        crate::border::heap::return_freed();
        Ok(())
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
                a.take(p, &mut |_, _| Ok(()))?;
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
                &mut |i, _| {
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
            &mut |_, _| {
                read += 1;
                Ok(())
            },
        )
        .unwrap();
        assert!(read > 3, "{read} claims");
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
            let r = read_claims(text.as_bytes(), u64::MAX, false, &mut |_, _| Ok(()));
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
