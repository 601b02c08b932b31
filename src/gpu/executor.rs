//! The executor: runs a program's trials and reads their stamps back.
//!
//! Everything the program needs (streams, events, the stamp buffer, the host copy of it, the
//! cycle counts) is created before the first op is issued; the timed region holds nothing but
//! the program's own driver calls. One warm-up trial runs first and is discarded, so first-use
//! costs (lazy module loading, a stream's first launch) do not land in trial 1.

use super::kernels::{Kernels, WORDS_PER_BLOCK};
use super::probe::call;
use super::resources::{DeviceWords, Events, Streams};
use crate::error::Error;
use crate::program::{OpKind, Program, SyncTarget, Warning};
use crate::timeline::{BlockStamp, HostCall, Reading, Span, Timeline};
use cudarc::driver::result;
use std::time::Instant;

/// What an execution returns before the lab attaches its calibration.
pub struct Execution {
    pub timelines: Vec<Timeline>,
    /// Host wall time from the first issue to the end of the final synchronize, summed over the
    /// recorded trials.
    pub gpu_time_ns: u64,
    pub warnings: Vec<Warning>,
}

/// Runs `trials` recorded trials (plus one warm-up) of a validated program.
pub fn execute(
    kernels: &Kernels,
    cycles_per_ns: f64,
    program: &Program,
    trials: usize,
) -> Result<Execution, Error> {
    let warnings = program.validate()?;
    let streams = Streams::create(&program.streams)?;
    let events = Events::create(program)?;
    let words = program.stamped_blocks() * WORDS_PER_BLOCK;
    let stamps = DeviceWords::alloc(words)?;
    let mut host = vec![0u64; words];
    // Per op: first stamp record and the cycles to spin, computed outside the timed region.
    let mut first_record = Vec::with_capacity(program.ops.len());
    let mut next = 0usize;
    for op in &program.ops {
        first_record.push(next);
        if let OpKind::Spin { grid, .. } = op.kind {
            next += grid as usize;
        }
    }
    let cycles: Vec<i64> = program
        .ops
        .iter()
        .map(|op| match op.kind {
            OpKind::Spin { duration_ns, .. } => (duration_ns as f64 * cycles_per_ns).ceil() as i64,
            _ => 0,
        })
        .collect();

    let mut timelines = Vec::with_capacity(trials);
    let mut gpu_time_ns = 0u64;
    let mut host_calls = Vec::with_capacity(program.ops.len());
    let mut readings = Vec::new();
    for trial in 0..=trials {
        stamps.zero()?;
        result::ctx::synchronize().map_err(call("cuCtxSynchronize"))?;
        host_calls.clear();
        readings.clear();
        let t0 = Instant::now();
        for (i, op) in program.ops.iter().enumerate() {
            let begin = t0.elapsed().as_nanos() as u64;
            match op.kind {
                OpKind::Spin {
                    stream,
                    grid,
                    block,
                    ..
                } => kernels.launch_spin(
                    streams.get(stream.0),
                    stamps.addr(first_record[i] * WORDS_PER_BLOCK),
                    cycles[i],
                    grid,
                    block,
                )?,
                // SAFETY (all below): handles were created above for this program and are alive.
                OpKind::Record { stream, event } => {
                    unsafe { result::event::record(events.get(event.0), streams.get(stream.0)) }
                        .map_err(call("cuEventRecord"))?
                }
                OpKind::Wait { stream, event } => unsafe {
                    result::stream::wait_event(
                        streams.get(stream.0),
                        events.get(event.0),
                        cudarc::driver::sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT,
                    )
                }
                .map_err(call("cuStreamWaitEvent"))?,
                OpKind::HostSync { target } => match target {
                    SyncTarget::Stream(s) => {
                        unsafe { result::stream::synchronize(streams.get(s.0)) }
                            .map_err(call("cuStreamSynchronize"))?
                    }
                    SyncTarget::Event(e) => unsafe { result::event::synchronize(events.get(e.0)) }
                        .map_err(call("cuEventSynchronize"))?,
                    SyncTarget::Device => {
                        result::ctx::synchronize().map_err(call("cuCtxSynchronize"))?
                    }
                },
                OpKind::Elapsed { from, to } => {
                    unsafe { result::event::synchronize(events.get(to.0)) }
                        .map_err(call("cuEventSynchronize"))?;
                    let ms =
                        unsafe { result::event::elapsed(events.get(from.0), events.get(to.0)) }
                            .map_err(call("cuEventElapsedTime"))?;
                    readings.push(Reading {
                        op: op.id,
                        value_ns: (f64::from(ms) * 1e6).round() as i64,
                    });
                }
            }
            let end = t0.elapsed().as_nanos() as u64;
            host_calls.push(HostCall {
                op: op.id,
                begin_ns: begin,
                end_ns: end,
            });
        }
        result::ctx::synchronize().map_err(call("cuCtxSynchronize"))?;
        let elapsed = t0.elapsed().as_nanos() as u64;
        if trial == 0 {
            continue; // warm-up
        }
        gpu_time_ns += elapsed;
        stamps.read(&mut host)?;
        timelines.push(
            timeline(program, &first_record, &host, host_calls.clone())?
                .with_readings(readings.clone()),
        );
    }
    Ok(Execution {
        timelines,
        gpu_time_ns,
        warnings,
    })
}

fn timeline(
    program: &Program,
    first_record: &[usize],
    host: &[u64],
    host_calls: Vec<HostCall>,
) -> Result<Timeline, Error> {
    let mut spans = Vec::new();
    for (i, op) in program.ops.iter().enumerate() {
        let OpKind::Spin { grid, .. } = op.kind else {
            continue;
        };
        let mut blocks = Vec::with_capacity(grid as usize);
        for b in 0..grid as usize {
            let w = &host[(first_record[i] + b) * WORDS_PER_BLOCK..][..WORDS_PER_BLOCK];
            if w[0] == 0 || w[1] < w[0] {
                return Err(Error::MissingStamps {
                    op: i,
                    label: op.label.clone(),
                    block: b,
                });
            }
            blocks.push(BlockStamp {
                start_ns: w[0],
                end_ns: w[1],
                sm: w[2] as u32,
                cycles: w[3],
            });
        }
        spans.push(Span { op: op.id, blocks });
    }
    Ok(Timeline::new(spans, host_calls))
}
