//! The witness of one device in a program on several GPUs: timed events around the ops that
//! cannot stamp (peer copies, NCCL kernels), and two stamped marker kernels bracketed by events
//! that align the events' clock to the device's `%globaltimer`.
//!
//! Events, not CUPTI: `cuEventElapsedTime` only compares events of one context, so each device
//! aligns its own events with its own markers ([`WitnessSync::align`], the same rule as the
//! single-device witness), and the executor then moves the spans onto device 0's axis. An event
//! pair is an outer bound of its op (it also holds what the op waited for in its stream), which
//! the evidence says (`WitnessKind::Events`). CUPTI kernel records for NCCL kernels would be
//! tighter; they are not wired into the multi-device path (docs/design.md, section 19).

use super::kernels::{Kernels, WORDS_PER_BLOCK};
use super::probe::call;
use super::resources::DeviceWords;
use crate::border::error::Error;
use crate::measured::witness::{Anchor, WitnessKind, WitnessSpan, WitnessSync};
use crate::program::{OpKind, Program};
use cudarc::driver::{result, sys};

/// How long a marker spins.
const MARKER_NS: f64 = 2_000.0;

/// An owned event handle, created in the current context.
pub struct Event(pub sys::CUevent);

impl Event {
    pub fn new(timed: bool) -> Result<Event, Error> {
        let flags = if timed {
            sys::CUevent_flags::CU_EVENT_DEFAULT
        } else {
            sys::CUevent_flags::CU_EVENT_DISABLE_TIMING
        };
        Ok(Event(
            result::event::create(flags).map_err(call("cuEventCreate"))?,
        ))
    }

    fn record(&self, stream: sys::CUstream) -> Result<(), Error> {
        // SAFETY: both handles are alive and belong to the current context.
        unsafe { result::event::record(self.0, stream) }.map_err(call("cuEventRecord"))
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        // SAFETY: created in `new`, destroyed once; the executor synchronized every device.
        let _ = unsafe { result::event::destroy(self.0) };
    }
}

struct Active {
    stream: sys::CUstream,
    stamps: DeviceWords,
    reference: Event,
    markers: [Event; 4],
    around: Vec<Option<(Event, Event)>>,
    marker_cycles: i64,
}

impl Drop for Active {
    fn drop(&mut self) {
        // SAFETY: created in `DeviceWitness::new`, destroyed once, after the devices synced.
        let _ = unsafe { result::stream::destroy(self.stream) };
    }
}

/// Nothing for a device without unwitnessed ops.
pub struct DeviceWitness(Option<Active>);

impl DeviceWitness {
    /// The witness of `device` (its context current).
    pub fn new(program: &Program, device: u32, cycles_per_ns: f64) -> Result<Self, Error> {
        let needs = |i: usize| {
            let op = &program.ops[i];
            matches!(op.kind, OpKind::Copy { .. } | OpKind::AllReduce { .. })
                && program.device_of(op.id) == Some(device)
        };
        if !(0..program.ops.len()).any(needs) {
            return Ok(DeviceWitness(None));
        }
        let mut around = Vec::with_capacity(program.ops.len());
        for i in 0..program.ops.len() {
            around.push(match needs(i) {
                true => Some((Event::new(true)?, Event::new(true)?)),
                false => None,
            });
        }
        Ok(DeviceWitness(Some(Active {
            stream: result::stream::create(result::stream::StreamKind::NonBlocking)
                .map_err(call("cuStreamCreate"))?,
            stamps: DeviceWords::alloc(2 * WORDS_PER_BLOCK)?,
            reference: Event::new(true)?,
            markers: [
                Event::new(true)?,
                Event::new(true)?,
                Event::new(true)?,
                Event::new(true)?,
            ],
            around,
            marker_cycles: (MARKER_NS * cycles_per_ns) as i64,
        })))
    }

    /// Marker `k` (0 before the trial, 1 after), bracketed by events; the first also records
    /// the reference event every time is read from.
    pub fn marker(&self, kernels: &Kernels, k: usize) -> Result<(), Error> {
        let Some(a) = &self.0 else { return Ok(()) };
        if k == 0 {
            a.stamps.zero()?;
            a.reference.record(a.stream)?;
        }
        a.markers[2 * k].record(a.stream)?;
        kernels.launch_marker(
            a.stream,
            a.stamps.addr(k * WORDS_PER_BLOCK),
            a.marker_cycles,
        )?;
        a.markers[2 * k + 1].record(a.stream)
    }

    /// The event before op `i`, on its stream.
    pub fn before(&self, i: usize, stream: sys::CUstream) -> Result<(), Error> {
        match self.0.as_ref().and_then(|a| a.around[i].as_ref()) {
            Some((b, _)) => b.record(stream),
            None => Ok(()),
        }
    }

    /// The event after op `i`, on its stream.
    pub fn after(&self, i: usize, stream: sys::CUstream) -> Result<(), Error> {
        match self.0.as_ref().and_then(|a| a.around[i].as_ref()) {
            Some((_, e)) => e.record(stream),
            None => Ok(()),
        }
    }

    /// After the trial (the device idle): the witnessed spans in this device's
    /// `%globaltimer`-aligned witness clock, with the alignment; `None` for a device without
    /// witnessed ops.
    pub fn collect(
        &self,
        program: &Program,
    ) -> Result<Option<(Vec<WitnessSpan>, WitnessSync)>, Error> {
        let Some(a) = &self.0 else { return Ok(None) };
        let at = |e: &Event| -> Result<i64, Error> {
            // SAFETY: both events were recorded in this trial and have completed.
            let ms = unsafe { result::event::elapsed(a.reference.0, e.0) }
                .map_err(call("cuEventElapsedTime"))?;
            Ok((f64::from(ms) * 1e6).round() as i64)
        };
        let mut words = vec![0u64; 2 * WORDS_PER_BLOCK];
        a.stamps.read(&mut words)?;
        let mut anchors = Vec::with_capacity(2);
        for k in 0..2 {
            let w = &words[k * WORDS_PER_BLOCK..];
            if w[0] == 0 || w[1] < w[0] {
                continue;
            }
            anchors.push(Anchor {
                stamped: (w[0] as i64, w[1] as i64),
                witnessed: (at(&a.markers[2 * k])?, at(&a.markers[2 * k + 1])?),
            });
        }
        let Some(sync) = WitnessSync::align(WitnessKind::Events, &anchors) else {
            return Ok(None);
        };
        let mut spans = Vec::new();
        for (i, pair) in a.around.iter().enumerate() {
            if let Some((b, e)) = pair {
                spans.push(WitnessSpan {
                    op: program.ops[i].id,
                    start_ns: at(b)?,
                    end_ns: at(e)?,
                });
            }
        }
        Ok(Some((spans, sync)))
    }
}
