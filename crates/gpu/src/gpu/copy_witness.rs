//! The executor's side of the copy witness: CUPTI when it started, events otherwise.
//!
//! Both put a marker kernel (one block, a couple of µs, stamped) before and after every trial
//! on a stream of their own, outside the timed region: anchors that align the witness's clock to
//! `%globaltimer` even in a trial without any kernel of its own. Under CUPTI every stamped kernel
//! of the trial is an anchor too; with events, the marker is bracketed by events the same way the
//! copies are. The alignment itself is pure (`crate::measured::witness`).

use super::buffers::Driver;
use super::cupti::{Activity, Record, Tracing};
use super::kernels::{Kernels, MARKERS_UNCOLLECTED, WORDS_PER_BLOCK};
use super::pool::Pool;
use super::probe::call;
use super::resources::DeviceWords;
use crate::border::error::Error;
use crate::measured::timeline::Span;
use crate::measured::witness::{Anchor, WitnessKind, WitnessSpan, WitnessSync};
use crate::program::{ApiCall, OpId, OpKind, Program};
use cudarc::driver::{result, sys};
use std::cell::{Cell, RefCell};
use std::sync::atomic::Ordering;

/// How long a marker spins.
const MARKER_NS: f64 = 2_000.0;

enum Mode {
    /// CUPTI, with tracing kept on by the caller (`Kept::tracing`) while the witness lives.
    Cupti,
    /// Per op, the events around it (copies only); the four events around the two markers.
    Events {
        around: Vec<Option<(sys::CUevent, sys::CUevent)>>,
        markers: [sys::CUevent; 4],
    },
}

pub struct Witness {
    mode: Mode,
    stream: sys::CUstream,
    stamps: DeviceWords,
    marker_cycles: i64,
    /// Whether the records from before this program's first marker were dropped
    /// ([`Witness::reset`]).
    started: Cell<bool>,
    /// Markers launched so far, the warm-up's included.
    launched: Cell<usize>,
    /// Under CUPTI, per recorded trial in order: what [`Witness::finish`] needs to match its
    /// records after the last trial.
    held: RefCell<Vec<HeldTrial>>,
}

/// A trial's witnessed spans, and the alignment of the witness's clock with the stamps.
pub type Witnessed = (Vec<WitnessSpan>, Option<WitnessSync>);

/// A recorded trial under CUPTI, waiting for the records of its two markers.
struct HeldTrial {
    /// Which pair of markers is the trial's (0: the first two launched).
    pair: usize,
    /// The markers' own stamps (start, end).
    stamped: [(i64, i64); 2],
    /// The trial's stamped kernels (op, start, end): anchors once their records are known.
    kernels: Vec<(OpId, i64, i64)>,
}

impl Witness {
    /// A witness for `program`: CUPTI if it starts, else events. The second value says why CUPTI
    /// was not used.
    /// `tracing` is the caller's: switched on here if it is not yet, and left on.
    pub fn new(
        program: &Program,
        cycles_per_ns: f64,
        pool: &mut Pool<Driver>,
        tracing: &mut Option<Tracing>,
    ) -> Result<(Witness, Option<String>), Error> {
        let on = match tracing {
            Some(_) => Ok(()),
            None => Tracing::begin().map(|t| *tracing = Some(t)),
        };
        let (mode, note) = match on {
            Ok(()) => (Mode::Cupti, None),
            Err(why) => (events(program)?, Some(why.to_string())),
        };
        let (stamps, _) = DeviceWords::take(2 * WORDS_PER_BLOCK, pool)?;
        let stream = result::stream::create(result::stream::StreamKind::NonBlocking)
            .map_err(call("cuStreamCreate"))?;
        Ok((
            Witness {
                mode,
                stream,
                stamps,
                marker_cycles: (MARKER_NS * cycles_per_ns) as i64,
                started: Cell::new(false),
                launched: Cell::new(0),
                held: RefCell::new(Vec::new()),
            },
            note,
        ))
    }

    /// Gives the marker stamps back to `pool`, once the GPU is idle.
    pub fn release(&mut self, pool: &mut Pool<Driver>) {
        self.stamps.release(pool);
    }

    pub fn kind(&self) -> WitnessKind {
        match self.mode {
            Mode::Cupti => WitnessKind::Cupti,
            Mode::Events { .. } => WitnessKind::Events,
        }
    }

    /// Before this program's first marker: under CUPTI, drops every marker record from before
    /// it (see [`MARKERS_UNCOLLECTED`]), once. The trials' records are taken together after the
    /// last trial ([`Witness::finish`]), and only those between a trial's own two markers are
    /// ever matched, so what happens between trials (fills, clock pings, readbacks) and before
    /// the first (an earlier program's fills) needs no flush of its own. A
    /// `cuptiActivityFlushAll` per trial cost the catalogue about a third of a second on an
    /// H200: each flush about 0.3 ms, and the next kernel launch after it 2–3 ms.
    pub fn reset(&self) -> Result<(), Error> {
        if self.started.replace(true) {
            return Ok(());
        }
        if let Mode::Cupti = &self.mode {
            if MARKERS_UNCOLLECTED.load(Ordering::SeqCst) {
                Tracing::collect().map_err(cupti_error)?;
                MARKERS_UNCOLLECTED.store(false, Ordering::SeqCst);
            }
        }
        Ok(())
    }

    /// Runs marker `k` (0 before the trial, 1 after it) and waits for it.
    pub fn marker(&self, kernels: &Kernels, k: usize) -> Result<(), Error> {
        self.launch_marker(kernels, k)?;
        // SAFETY: the stream is alive.
        unsafe { result::stream::synchronize(self.stream) }.map_err(call("cuStreamSynchronize"))
    }

    /// Enqueues marker `k` without waiting for it: the caller synchronizes the context before
    /// the trial's first op (the executor's clock alignment does).
    pub fn launch_marker(&self, kernels: &Kernels, k: usize) -> Result<(), Error> {
        let stamps = self.stamps.addr(k * WORDS_PER_BLOCK);
        self.launched.set(self.launched.get() + 1);
        match &self.mode {
            Mode::Cupti => kernels.launch_marker(self.stream, stamps, self.marker_cycles)?,
            Mode::Events { markers, .. } => {
                record(markers[2 * k], self.stream)?;
                kernels.launch_marker(self.stream, stamps, self.marker_cycles)?;
                record(markers[2 * k + 1], self.stream)?;
            }
        }
        Ok(())
    }

    /// Before op `i` is issued on `stream`.
    pub fn before(&self, i: usize, stream: Option<sys::CUstream>) -> Result<(), Error> {
        if let Mode::Events { around, .. } = &self.mode {
            if let (Some((b, _)), Some(s)) = (around[i], stream) {
                record(b, s)?;
            }
        }
        Ok(())
    }

    /// After op `i` was issued on `stream`.
    pub fn after(&self, i: usize, stream: Option<sys::CUstream>) -> Result<(), Error> {
        if let Mode::Events { around, .. } = &self.mode {
            if let (Some((_, a)), Some(s)) = (around[i], stream) {
                record(a, s)?;
            }
        }
        Ok(())
    }

    /// After the trial and both markers. With events: the witnessed spans and the alignment,
    /// from the trial's stamped spans. Under CUPTI: `None`, the trial held until
    /// [`Witness::finish`] takes every trial's records at once.
    pub fn collect(&self, spans: &[Span]) -> Result<Option<Witnessed>, Error> {
        let mut words = vec![0u64; 2 * WORDS_PER_BLOCK];
        self.stamps.read(&mut words)?;
        let marker = |k: usize| {
            (
                words[k * WORDS_PER_BLOCK] as i64,
                words[k * WORDS_PER_BLOCK + 1] as i64,
            )
        };
        let Mode::Events { around, markers } = &self.mode else {
            self.held.borrow_mut().push(HeldTrial {
                pair: (self.launched.get() / 2).saturating_sub(1),
                stamped: [marker(0), marker(1)],
                kernels: spans
                    .iter()
                    .map(|s| (s.op, s.start() as i64, s.end() as i64))
                    .collect(),
            });
            return Ok(None);
        };
        let at = |e: sys::CUevent| -> Result<i64, Error> {
            // SAFETY: both events were recorded and have completed.
            let ms = unsafe { result::event::elapsed(markers[0], e) }
                .map_err(call("cuEventElapsedTime"))?;
            Ok((f64::from(ms) * 1e6).round() as i64)
        };
        let mut anchors = Vec::new();
        for k in 0..2 {
            anchors.push(Anchor {
                stamped: marker(k),
                witnessed: (at(markers[2 * k])?, at(markers[2 * k + 1])?),
            });
        }
        let mut witnessed = Vec::new();
        for (i, pair) in around.iter().enumerate() {
            if let Some((b, a)) = *pair {
                witnessed.push(WitnessSpan {
                    op: OpId(i),
                    start_ns: at(b)?,
                    end_ns: at(a)?,
                });
            }
        }
        Ok(Some((witnessed, WitnessSync::align(self.kind(), &anchors))))
    }

    /// Under CUPTI, after the last trial: one flush for every held trial, in the order they were
    /// held; each trial's witnessed spans and alignment, or nothing where its records do not
    /// match (see [`match_records`]). If the records hold another number of markers than were
    /// launched, no pair can be told for sure to be a given trial's, and no trial has a witness.
    pub fn finish(&self, program: &Program) -> Result<Vec<Witnessed>, Error> {
        let held = std::mem::take(&mut *self.held.borrow_mut());
        if held.is_empty() {
            return Ok(Vec::new());
        }
        let records = Tracing::collect().map_err(cupti_error)?;
        MARKERS_UNCOLLECTED.store(false, Ordering::SeqCst);
        Ok(witnessed_trials(
            program,
            &records,
            self.launched.get(),
            &held,
        ))
    }
}

/// Each held trial's witnessed spans and alignment from `records` (in issue order), where
/// `launched` markers were launched: none for any trial if the records hold another number of
/// markers, and none for a trial whose records between its markers do not match its ops.
fn witnessed_trials(
    program: &Program,
    records: &[Record],
    launched: usize,
    held: &[HeldTrial],
) -> Vec<Witnessed> {
    let marks: Vec<usize> = (0..records.len()).filter(|&i| records[i].marker).collect();
    let none = || (Vec::new(), None);
    if marks.len() != launched {
        return held.iter().map(|_| none()).collect();
    }
    held.iter()
        .map(|trial| {
            let pair = marks.get(2 * trial.pair).zip(marks.get(2 * trial.pair + 1));
            let Some((&m0, &m1)) = pair else {
                return none();
            };
            match_records(program, &records[m0 + 1..m1]).map_or_else(none, |ops| {
                witnessed(trial, [&records[m0], &records[m1]], &ops)
            })
        })
        .collect()
}

/// A held trial's witnessed spans and alignment, from its markers' records and its ops'.
fn witnessed(trial: &HeldTrial, markers: [&Record; 2], ops: &[(OpId, &Record)]) -> Witnessed {
    let mut anchors: Vec<Anchor> = (0..2)
        .map(|k| Anchor {
            stamped: trial.stamped[k],
            witnessed: (markers[k].start as i64, markers[k].end as i64),
        })
        .collect();
    let mut spans = Vec::new();
    for &(op, r) in ops {
        let w = (r.start as i64, r.end as i64);
        match r.activity {
            Activity::Kernel => anchors.extend(trial.kernels.iter().find(|k| k.0 == op).map(
                |&(_, start, end)| Anchor {
                    stamped: (start, end),
                    witnessed: w,
                },
            )),
            Activity::Memcpy | Activity::Memset => spans.push(WitnessSpan {
                op,
                start_ns: w.0,
                end_ns: w.1,
            }),
        }
    }
    (spans, WitnessSync::align(WitnessKind::Cupti, &anchors))
}

fn cupti_error(e: super::cupti::CuptiError) -> Error {
    Error::Driver {
        call: "CUPTI".into(),
        message: e.to_string(),
    }
}

/// Matches the records between a trial's two markers (in issue order) to ops: one by one and in
/// order, to the ops that leave one. Any mismatch in number or kind (a graph launch, a record
/// CUPTI dropped) leaves the trial without a witness rather than with a wrong one.
fn match_records<'a>(program: &Program, between: &'a [Record]) -> Option<Vec<(OpId, &'a Record)>> {
    let expected: Vec<(OpId, Activity)> = program
        .ops
        .iter()
        .filter_map(|o| Some((o.id, activity_of(&o.kind)?)))
        .collect();
    if between.len() != expected.len()
        || between
            .iter()
            .zip(&expected)
            .any(|(r, (_, a))| r.activity != *a)
    {
        return None;
    }
    Some(expected.iter().map(|(op, _)| *op).zip(between).collect())
}

/// The activity record op `kind` leaves, if any.
fn activity_of(kind: &OpKind) -> Option<Activity> {
    match kind {
        OpKind::Spin { .. } | OpKind::Add { .. } => Some(Activity::Kernel),
        OpKind::Copy { .. }
        | OpKind::Api {
            call: ApiCall::CopyD2D,
            ..
        } => Some(Activity::Memcpy),
        OpKind::Api {
            call: ApiCall::Memset,
            ..
        } => Some(Activity::Memset),
        _ => None,
    }
}

fn record(e: sys::CUevent, s: sys::CUstream) -> Result<(), Error> {
    // SAFETY: both handles are alive.
    unsafe { result::event::record(e, s) }.map_err(call("cuEventRecord"))
}

fn timed_event() -> Result<sys::CUevent, Error> {
    result::event::create(sys::CUevent_flags::CU_EVENT_DEFAULT).map_err(call("cuEventCreate"))
}

fn events(program: &Program) -> Result<Mode, Error> {
    let mut around = Vec::with_capacity(program.ops.len());
    for op in &program.ops {
        around.push(match op.kind {
            OpKind::Copy { .. } => Some((timed_event()?, timed_event()?)),
            _ => None,
        });
    }
    Ok(Mode::Events {
        around,
        markers: [
            timed_event()?,
            timed_event()?,
            timed_event()?,
            timed_event()?,
        ],
    })
}

impl Drop for Witness {
    fn drop(&mut self) {
        // SAFETY: all handles were created here and are destroyed once, after the last trial.
        unsafe {
            let _ = result::stream::synchronize(self.stream);
            let _ = result::stream::destroy(self.stream);
            if let Mode::Events { around, markers } = &self.mode {
                for e in around
                    .iter()
                    .flatten()
                    .flat_map(|(a, b)| [*a, *b])
                    .chain(*markers)
                {
                    let _ = result::event::destroy(e);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::program::{Place, ProgramBuilder, StreamKind};
    use std::time::Duration;

    /// A kernel then a copy on one stream.
    fn program() -> Program {
        let mut b = ProgramBuilder::new("witness");
        let s = b.stream(StreamKind::NonBlocking);
        let (h, d) = (
            b.buffer("h", Place::Pinned, 4096, 0),
            b.buffer("d", Place::Device, 4096, 0),
        );
        b.spin(s, "K", Duration::from_micros(10));
        b.copy(s, "C", h, d);
        b.build()
    }

    fn record(activity: Activity, marker: bool, correlation: u32, start: u64) -> Record {
        Record {
            activity,
            marker,
            correlation,
            start,
            end: start + 10,
        }
    }

    /// The records of one trial beginning at `t`: its markers around its kernel and copy, with a
    /// fill kernel before it (never matched).
    fn trial_records(first: u32, t: u64) -> Vec<Record> {
        vec![
            record(Activity::Kernel, false, first, t),
            record(Activity::Kernel, true, first + 1, t + 100),
            record(Activity::Kernel, false, first + 2, t + 200),
            record(Activity::Memcpy, false, first + 3, t + 300),
            record(Activity::Kernel, true, first + 4, t + 400),
        ]
    }

    fn held(pair: usize, t: i64) -> HeldTrial {
        HeldTrial {
            pair,
            // Stamps 1000 ns later than CUPTI's clock.
            stamped: [(t + 1100, t + 1110), (t + 1400, t + 1410)],
            kernels: vec![(OpId(0), t + 1200, t + 1210)],
        }
    }

    #[test]
    fn each_trial_gets_the_records_between_its_own_markers() {
        // A warm-up (pair 0) and two recorded trials (pairs 1 and 2).
        let records: Vec<Record> = [(1, 0), (10, 10_000), (20, 20_000)]
            .iter()
            .flat_map(|&(c, t)| trial_records(c, t))
            .collect();
        let out = witnessed_trials(&program(), &records, 6, &[held(1, 10_000), held(2, 20_000)]);
        assert_eq!(out.len(), 2);
        for ((spans, sync), t) in out.iter().zip([10_000, 20_000]) {
            assert_eq!(spans.len(), 1);
            assert_eq!((spans[0].op, spans[0].start_ns), (OpId(1), t + 300));
            let sync = sync.expect("aligned");
            assert_eq!(sync.offset_ns, 1000);
        }
    }

    #[test]
    fn a_missing_marker_leaves_every_trial_without_a_witness() {
        let mut records: Vec<Record> = [(1, 0), (10, 10_000)]
            .iter()
            .flat_map(|&(c, t)| trial_records(c, t))
            .collect();
        records.remove(1); // the warm-up's first marker
        let out = witnessed_trials(&program(), &records, 4, &[held(1, 10_000)]);
        assert_eq!(out, vec![(Vec::new(), None)]);
    }

    #[test]
    fn a_trial_whose_records_do_not_match_its_ops_has_no_witness() {
        let mut records = trial_records(1, 0);
        records[3].activity = Activity::Memset;
        let out = witnessed_trials(&program(), &records, 2, &[held(0, 0)]);
        assert_eq!(out, vec![(Vec::new(), None)]);
        // A pair past the markers there are (more trials held than launched) has none either.
        let out = witnessed_trials(&program(), &trial_records(1, 0), 2, &[held(1, 0)]);
        assert_eq!(out, vec![(Vec::new(), None)]);
    }
}
