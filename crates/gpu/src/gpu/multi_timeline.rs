//! One device's side of a program on several GPUs ([`Side`], taken before the trials), and one
//! trial read back into a [`Timeline`] on device 0's axis: every device's stamps moved by its
//! clock alignment (the span keeps its device), every device's witnessed spans moved the same
//! way, every device's buffers read back. Split from `multi.rs`, which issues; this only takes
//! what a device holds and reads what the trial left.

use super::buffers::{Buffers, Driver};
use super::clock::Alignment;
use super::kernels::Kernels;
use super::kernels::WORDS_PER_BLOCK;
use super::multi_witness::DeviceWitness;
use super::pool::Pool;
use super::probe::call;
use super::resources::DeviceWords;
use crate::border::error::Error;
use crate::measured::timeline::{
    BlockStamp, ClockSync, DeviceClock, HostCall, Pause, Span, Timeline,
};
use crate::measured::witness::{WitnessKind, WitnessSpan, WitnessSync};
use crate::program::{BufferId, Program};
use cudarc::driver::CudaContext;
use std::sync::Arc;

/// One device's side of a program.
pub(super) struct Side<'a> {
    pub ctx: &'a Arc<CudaContext>,
    pub kernels: &'a Kernels,
    pub stamps: DeviceWords,
    pub buffers: Buffers<Driver>,
    /// Program buffer ids of `buffers`, in order.
    pub buffer_ids: Vec<BufferId>,
    pub witness: DeviceWitness,
}

impl<'a> Side<'a> {
    /// Device `d`'s side, taken in its context: `records` stamp records, its buffers and witness.
    pub fn take(
        program: &Program,
        d: usize,
        ctx: &'a Arc<CudaContext>,
        kernels: &'a Kernels,
        records: usize,
        pool: &mut Pool<Driver>,
        cycles_per_ns: f64,
    ) -> Result<Side<'a>, Error> {
        ctx.bind_to_thread().map_err(call("cuCtxSetCurrent"))?;
        let buffer_ids: Vec<BufferId> = (0..program.buffers.len())
            .map(BufferId)
            .filter(|b| program.buffers[b.0].device as usize == d)
            .collect();
        let decls: Vec<_> = buffer_ids
            .iter()
            .map(|b| program.buffers[b.0].clone())
            .collect();
        let (stamps, _) = DeviceWords::take(records * WORDS_PER_BLOCK, pool)?;
        Ok(Side {
            ctx,
            kernels,
            stamps,
            buffers: Buffers::take(&decls, pool)?,
            buffer_ids,
            witness: DeviceWitness::new(program, d as u32, cycles_per_ns)?,
        })
    }

    pub fn bind(&self) -> Result<(), Error> {
        self.ctx.bind_to_thread().map_err(call("cuCtxSetCurrent"))
    }
}

/// One trial's timeline on device 0's axis.
pub(super) fn timeline(
    program: &Program,
    device: &[usize],
    first_record: &[usize],
    sides: &[Side<'_>],
    aligned: &[Alignment],
    t0: u64,
    host_calls: Vec<HostCall>,
) -> Result<Timeline, Error> {
    let mut words = Vec::with_capacity(sides.len());
    for side in sides {
        side.bind()?;
        let mut host = vec![0u64; side.stamps.len()];
        side.stamps.read(&mut host)?;
        words.push(host);
    }
    let spans = spans(program, device, first_record, &words, aligned)?;
    let clocks: Vec<DeviceClock> = aligned
        .iter()
        .enumerate()
        .map(|(d, a)| DeviceClock {
            device: d as u32,
            offset_ns: a.offset_ns + t0 as i64,
            error_ns: a.error_ns,
        })
        .collect();
    let clock = ClockSync {
        shared: false,
        offset_ns: aligned[0].offset_ns + t0 as i64,
        error_ns: aligned[0].error_ns,
    };
    let mut t = Timeline::new(spans, host_calls).with_host(Vec::new(), Some(clock));
    t.devices = clocks;
    let (witnessed, sync) = witnessed(program, sides, aligned, &t)?;
    if !witnessed.is_empty() {
        t = t.with_witness(witnessed, sync);
    }
    let mut contents = Vec::new();
    for side in sides {
        side.bind()?;
        for mut c in side.buffers.contents(side.kernels)? {
            c.buffer = side.buffer_ids[c.buffer.0];
            contents.push(c);
        }
    }
    sides[0].bind()?;
    Ok(t.with_contents(contents))
}

/// What moves a time of device `d` onto device 0's axis.
fn shift(aligned: &[Alignment], d: usize) -> i64 {
    aligned[0].offset_ns - aligned[d].offset_ns
}

/// Every stamped op's span from the words read back, on device 0's axis.
fn spans(
    program: &Program,
    device: &[usize],
    first_record: &[usize],
    words: &[Vec<u64>],
    aligned: &[Alignment],
) -> Result<Vec<Span>, Error> {
    let mut spans = Vec::new();
    for (i, op) in program.ops.iter().enumerate() {
        let grid = op.kind.stamped_grid() as usize;
        let d = device[i];
        let mut blocks = Vec::with_capacity(grid);
        for b in 0..grid {
            let w = &words[d][(first_record[i] + b) * WORDS_PER_BLOCK..][..WORDS_PER_BLOCK];
            if w[0] == 0 || w[1] < w[0] {
                return Err(Error::MissingStamps {
                    op: i,
                    label: op.label.clone(),
                    block: b,
                });
            }
            let to0 = |t: u64| t.saturating_add_signed(shift(aligned, d));
            blocks.push(BlockStamp {
                start_ns: to0(w[0]),
                end_ns: to0(w[1]),
                sm: w[2] as u32,
                cycles: w[3],
                pause: (w[5] >= Pause::RECORDED_NS).then_some(Pause {
                    at_ns: to0(w[4]),
                    ns: w[5],
                }),
            });
        }
        if grid > 0 {
            spans.push(Span {
                op: op.id,
                blocks: blocks.into(),
                device: d as u32,
            });
        }
    }
    Ok(spans)
}

/// Witnessed spans, each device's moved onto device 0's axis, and how they were aligned.
fn witnessed(
    program: &Program,
    sides: &[Side<'_>],
    aligned: &[Alignment],
    t: &Timeline,
) -> Result<(Vec<WitnessSpan>, Option<WitnessSync>), Error> {
    let mut witnessed: Vec<WitnessSpan> = Vec::new();
    let mut sync: Option<WitnessSync> = None;
    for (d, side) in sides.iter().enumerate() {
        side.bind()?;
        let Some((spans, s)) = side.witness.collect(program)? else {
            continue;
        };
        let offset = s.offset_ns + shift(aligned, d);
        witnessed.extend(spans.into_iter().map(|w| WitnessSpan {
            op: w.op,
            start_ns: w.start_ns + offset,
            end_ns: w.end_ns + offset,
        }));
        let error = s.error_ns + t.device_slack_ns(d as u32);
        sync = Some(match sync {
            None => WitnessSync {
                kind: WitnessKind::Events,
                offset_ns: 0,
                error_ns: error,
                anchors: s.anchors,
                disagreement_ns: s.disagreement_ns,
            },
            Some(w) => WitnessSync {
                error_ns: w.error_ns.max(error),
                anchors: w.anchors + s.anchors,
                disagreement_ns: w.disagreement_ns.max(s.disagreement_ns),
                ..w
            },
        });
    }
    Ok((witnessed, sync))
}
