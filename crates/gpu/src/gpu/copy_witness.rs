//! The executor's side of the copy witness: CUPTI when it started, events otherwise.
//!
//! Both put a marker kernel (one block, a couple of µs, stamped) before and after every trial
//! on a stream of their own, outside the timed region: anchors that align the witness's clock to
//! `%globaltimer` even in a trial without any kernel of its own. Under CUPTI every stamped kernel
//! of the trial is an anchor too; with events, the marker is bracketed by events the same way the
//! copies are. The alignment itself is pure (`crate::measured::witness`).

use super::buffers::Driver;
use super::cupti::{Activity, Record, Tracing};
use super::kernels::{Kernels, WORDS_PER_BLOCK};
use super::pool::Pool;
use super::probe::call;
use super::resources::DeviceWords;
use crate::border::error::Error;
use crate::measured::timeline::Span;
use crate::measured::witness::{Anchor, WitnessKind, WitnessSpan, WitnessSync};
use crate::program::{ApiCall, OpId, OpKind, Program};
use cudarc::driver::{result, sys};
use std::cell::Cell;

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
    /// Whether CUPTI's records were last taken by [`Witness::collect`] of a recorded trial, so
    /// that nothing of an earlier trial's (no marker) can reach the next trial's collect.
    collected: Cell<bool>,
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
                collected: Cell::new(false),
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

    /// Drops whatever the witness saw before this trial (the warm-up's records, buffer fills).
    /// Right after a recorded trial's collect there is nothing to drop that matters: that flush
    /// took both of its markers, and the records made since (fills, clock pings, the readback)
    /// come before this trial's first marker, where matching never looks. So the flush, a
    /// `cuptiActivityFlushAll` per trial, is skipped then.
    pub fn reset(&self) -> Result<(), Error> {
        if self.collected.replace(false) {
            return Ok(());
        }
        if let Mode::Cupti = &self.mode {
            Tracing::collect().map_err(|e| Error::Driver {
                call: "CUPTI".into(),
                message: e.to_string(),
            })?;
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

    /// After the trial and both markers: the witnessed spans and the alignment, from the trial's
    /// stamped spans.
    pub fn collect(
        &self,
        program: &Program,
        spans: &[Span],
    ) -> Result<(Vec<WitnessSpan>, Option<WitnessSync>), Error> {
        let mut words = vec![0u64; 2 * WORDS_PER_BLOCK];
        self.stamps.read(&mut words)?;
        let marker = |k: usize| {
            (
                words[k * WORDS_PER_BLOCK] as i64,
                words[k * WORDS_PER_BLOCK + 1] as i64,
            )
        };
        let stamped = |op: OpId| {
            spans
                .iter()
                .find(|s| s.op == op)
                .map(|s| (s.start() as i64, s.end() as i64))
        };
        let mut anchors = Vec::new();
        let mut witnessed = Vec::new();
        match &self.mode {
            Mode::Cupti => {
                let records = Tracing::collect().map_err(|e| Error::Driver {
                    call: "CUPTI".into(),
                    message: e.to_string(),
                })?;
                self.collected.set(true);
                let Some(matched) = match_records(program, &records) else {
                    return Ok((Vec::new(), None));
                };
                for (k, r) in matched.markers.iter().enumerate() {
                    anchors.push(Anchor {
                        stamped: marker(k),
                        witnessed: (r.start as i64, r.end as i64),
                    });
                }
                for (op, r) in matched.ops {
                    let w = (r.start as i64, r.end as i64);
                    match r.activity {
                        Activity::Kernel => anchors.extend(stamped(op).map(|stamped| Anchor {
                            stamped,
                            witnessed: w,
                        })),
                        Activity::Memcpy | Activity::Memset => witnessed.push(WitnessSpan {
                            op,
                            start_ns: w.0,
                            end_ns: w.1,
                        }),
                    }
                }
            }
            Mode::Events { around, markers } => {
                let at = |e: sys::CUevent| -> Result<i64, Error> {
                    // SAFETY: both events were recorded and have completed.
                    let ms = unsafe { result::event::elapsed(markers[0], e) }
                        .map_err(call("cuEventElapsedTime"))?;
                    Ok((f64::from(ms) * 1e6).round() as i64)
                };
                for k in 0..2 {
                    anchors.push(Anchor {
                        stamped: marker(k),
                        witnessed: (at(markers[2 * k])?, at(markers[2 * k + 1])?),
                    });
                }
                for (i, pair) in around.iter().enumerate() {
                    if let Some((b, a)) = *pair {
                        witnessed.push(WitnessSpan {
                            op: OpId(i),
                            start_ns: at(b)?,
                            end_ns: at(a)?,
                        });
                    }
                }
            }
        }
        Ok((witnessed, WitnessSync::align(self.kind(), &anchors)))
    }
}

/// The trial's records matched to what made them.
struct Matched<'a> {
    markers: [&'a Record; 2],
    ops: Vec<(OpId, &'a Record)>,
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

/// Matches records (in issue order) to ops: the records between the two markers belong, one by
/// one and in order, to the ops that leave one. Any mismatch in number or kind (a graph launch,
/// a record CUPTI dropped) leaves the trial without a witness rather than with a wrong one.
fn match_records<'a>(program: &Program, records: &'a [Record]) -> Option<Matched<'a>> {
    let marks: Vec<usize> = (0..records.len()).filter(|&i| records[i].marker).collect();
    let [m0, m1] = marks[..] else {
        return None;
    };
    let between = &records[m0 + 1..m1];
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
    Some(Matched {
        markers: [&records[m0], &records[m1]],
        ops: expected.iter().map(|(op, _)| *op).zip(between).collect(),
    })
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
