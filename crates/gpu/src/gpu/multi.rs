//! The executor of programs on several GPUs: one primary context per device, each with its own
//! stamp kernel, stamp words, buffers, clock alignment and event witness.
//!
//! Kept apart from `executor.rs`, which stays the single-device path bit for bit; this one runs
//! the ops a multi-device program may have (`Program::device_problems`): spins, event records
//! and waits (across devices too), stream, event and device syncs, copies, peer copies
//! (`cuMemcpyPeerAsync`) and NCCL all-reduces. Before each op the op's device's context is made
//! current, so every driver call sees the context CUDA documents for it.
//!
//! **One time axis.** Each device's `%globaltimer` is aligned to the host clock right before
//! each trial (`clock.rs`, a mailbox per device); a stamp of device `d` is moved onto device 0's
//! axis by `offset(0) − offset(d)` and the span keeps its device, so relations across devices
//! widen by both alignment errors (`Timeline::device_slack_ns`).
//!
//! **Ops that cannot stamp** (peer copies, NCCL kernels) get their spans from timed events
//! recorded around them on their stream, aligned per device through two stamped marker kernels
//! bracketed by events the same way (`crate::measured::witness`), then moved onto device 0's axis. The
//! ranks of one all-reduce are issued inside one `ncclGroupStart`/`ncclGroupEnd`, which launches
//! every rank's kernel at the group's end: the events before them are recorded before the group,
//! the events after them after it, and every rank counts as issued when the group ended.

use super::buffers::Driver;
use super::clock::{now_ns, Alignment, ROUNDS};
use super::fleet::{peer_access, Fleet};
use super::kernels::{Kernels, WORDS_PER_BLOCK};
use super::multi_timeline::Side;
use super::pool::Pool;
use super::probe::call;
use super::resources::{issue_ordering, Streams};
use super::Execution;
use crate::border::error::Error;
use crate::measured::timeline::{HostCall, Timeline};
use crate::measured::timing::ClaimTiming;
use crate::program::{BufferId, OpKind, Place, Program};
use cudarc::driver::{result, sys, CudaContext};
use std::sync::Arc;

/// Synchronizes every device on the way out, errors included, before anything is freed.
struct Quiesce<'a>(Vec<&'a Arc<CudaContext>>);

impl Drop for Quiesce<'_> {
    fn drop(&mut self) {
        for ctx in &self.0 {
            if ctx.bind_to_thread().is_ok() {
                let _ = result::ctx::synchronize();
            }
        }
        if let Some(c) = self.0.first() {
            let _ = c.bind_to_thread();
        }
    }
}

/// Runs `trials` recorded trials (plus one warm-up) of a validated multi-device program.
pub fn execute(
    ctx0: &Arc<CudaContext>,
    kernels0: &Kernels,
    fleet: &mut Fleet,
    cycles_per_ns: f64,
    program: &Program,
    trials: usize,
) -> Result<Execution, Error> {
    let started = now_ns();
    let warnings = program.validate()?;
    let n = program.device_count() as usize;
    if !program.collectives().is_empty() {
        fleet.comms(ctx0)?;
    }
    let ctxs: Vec<&Arc<CudaContext>> = std::iter::once(ctx0)
        .chain(fleet.peers.iter().map(|p| &p.ctx))
        .take(n)
        .collect();
    let kernels: Vec<&Kernels> = std::iter::once(kernels0)
        .chain(fleet.peers.iter().map(|p| &p.kernels))
        .take(n)
        .collect();
    let quiesce = Quiesce(ctxs.clone());
    let (device, first_record, next) = stamp_layout(program, n);
    let (streams, events) = streams_and_events(program, &ctxs)?;
    let mut sides = Vec::with_capacity(n);
    for d in 0..n {
        let pool = &mut fleet.pools[d];
        sides.push(Side::take(
            program,
            d,
            ctxs[d],
            kernels[d],
            next[d],
            pool,
            cycles_per_ns,
        )?);
    }
    peer_access(&ctxs, program.peer_access)?;
    let mut timing = ClaimTiming {
        setup_ns: now_ns() - started,
        batches: 1,
        ..ClaimTiming::default()
    };
    let issue = Issue {
        program,
        streams: &streams,
        events: &events,
        device: &device,
        first_record: &first_record,
        cycles_per_ns,
        comms: fleet.comms.as_ref().and_then(|c| c.as_ref().ok()),
    };
    let outcome = issue.trials(&mut sides, &fleet.mailboxes, trials, &mut timing);
    let teardown = now_ns();
    let held = Held {
        quiesce,
        sides,
        streams,
        events,
    };
    held.release(program.peer_access, &ctxs, &mut fleet.pools);
    let _ = ctx0.bind_to_thread();
    timing.teardown_ns = now_ns() - teardown;
    timing.wall_ns = now_ns() - started;
    let (timelines, gpu_time_ns) = outcome?;
    timing.gpu_ns = gpu_time_ns;
    Ok(Execution {
        timelines,
        gpu_time_ns,
        warnings,
        timing,
    })
}

/// Per op: its device, and its first stamp record on that device; and how many stamp records
/// each device holds.
fn stamp_layout(program: &Program, n: usize) -> (Vec<usize>, Vec<usize>, Vec<usize>) {
    let device: Vec<usize> = (0..program.ops.len())
        .map(|i| program.device_of(program.ops[i].id).unwrap_or(0) as usize)
        .collect();
    let mut first_record = Vec::with_capacity(program.ops.len());
    let mut next = vec![0usize; n];
    for (i, op) in program.ops.iter().enumerate() {
        first_record.push(next[device[i]]);
        next[device[i]] += op.kind.stamped_grid() as usize;
    }
    (device, first_record, next)
}

/// Streams and events, each created in its device's context.
fn streams_and_events(
    program: &Program,
    ctxs: &[&Arc<CudaContext>],
) -> Result<(Vec<Streams>, Vec<super::multi_witness::Event>), Error> {
    let mut streams = Vec::with_capacity(program.streams.len());
    for s in &program.streams {
        ctxs[s.device as usize]
            .bind_to_thread()
            .map_err(call("cuCtxSetCurrent"))?;
        streams.push(Streams::create(std::slice::from_ref(s))?);
    }
    let mut events = Vec::with_capacity(program.events.len());
    for e in 0..program.events.len() {
        let d = program.event_device(crate::program::EventId(e)) as usize;
        ctxs[d].bind_to_thread().map_err(call("cuCtxSetCurrent"))?;
        events.push(super::multi_witness::Event::new(false)?);
    }
    Ok((streams, events))
}

/// What the trials held, given back in order once they are done.
struct Held<'a> {
    quiesce: Quiesce<'a>,
    sides: Vec<Side<'a>>,
    streams: Vec<Streams>,
    events: Vec<super::multi_witness::Event>,
}

impl Held<'_> {
    /// Every device synchronized, peer access closed again, the words and buffers of each
    /// device that synchronized returned to its pool; then the sides, streams and events freed.
    fn release(self, peer: bool, ctxs: &[&Arc<CudaContext>], pools: &mut [Pool<Driver>]) {
        let Held {
            quiesce,
            mut sides,
            streams,
            events,
        } = self;
        drop(quiesce);
        if peer {
            let _ = peer_access(ctxs, false);
        }
        for (d, side) in sides.iter_mut().enumerate() {
            if side.bind().is_ok() && result::ctx::synchronize().is_ok() {
                side.stamps.release(&mut pools[d]);
                side.buffers.release(&mut pools[d]);
            }
        }
        drop(sides);
        drop(streams);
        drop(events);
    }
}

/// What issuing needs, borrowed for the trial loop.
struct Issue<'a> {
    program: &'a Program,
    streams: &'a [Streams],
    events: &'a [super::multi_witness::Event],
    device: &'a [usize],
    first_record: &'a [usize],
    cycles_per_ns: f64,
    comms: Option<&'a super::nccl::Comms>,
}

impl Issue<'_> {
    fn trials(
        &self,
        sides: &mut [Side<'_>],
        mailboxes: &[super::clock::Mailbox],
        trials: usize,
        timing: &mut ClaimTiming,
    ) -> Result<(Vec<Timeline>, u64), Error> {
        let program = self.program;
        let mut timelines = Vec::with_capacity(trials);
        let mut gpu_time_ns = 0;
        let groups = program.collectives();
        for trial in 0..=trials {
            let prepare = now_ns();
            prepare_trial(sides)?;
            timing.prepare_ns += now_ns() - prepare;
            let clock = now_ns();
            let mut aligned: Vec<Alignment> = Vec::with_capacity(sides.len());
            if trial > 0 {
                for (side, mailbox) in sides.iter().zip(mailboxes) {
                    side.bind()?;
                    aligned.push(mailbox.align(side.kernels, ROUNDS)?);
                }
            }
            timing.clock_ns += now_ns() - clock;
            let (t0, elapsed, mut host_calls) = self.issue_trial(sides, &groups)?;
            if trial == 0 {
                timing.warmup_ns += elapsed;
                continue;
            }
            gpu_time_ns += elapsed;
            // Every rank of a collective was enqueued when its group ended.
            for group in &groups {
                let end = group.iter().map(|o| host_calls[o.0].end_ns).max();
                for o in group {
                    host_calls[o.0].end_ns = end.unwrap_or(host_calls[o.0].end_ns);
                }
            }
            let readback = now_ns();
            let t = super::multi_timeline::timeline(
                program,
                self.device,
                self.first_record,
                sides,
                &aligned,
                t0,
                host_calls,
            )?;
            timelines.push(t);
            timing.readback_ns += now_ns() - readback;
        }
        Ok((timelines, gpu_time_ns))
    }

    /// One trial's ops issued between the two markers of every device: when issuing began, how
    /// long until every device was idle, and each op's host call.
    fn issue_trial(
        &self,
        sides: &[Side<'_>],
        groups: &[Vec<crate::program::OpId>],
    ) -> Result<(u64, u64, Vec<HostCall>), Error> {
        for side in sides.iter() {
            side.bind()?;
            side.witness.marker(side.kernels, 0)?;
        }
        let mut host_calls = Vec::with_capacity(self.program.ops.len());
        let t0 = now_ns();
        for (i, op) in self.program.ops.iter().enumerate() {
            let begin = now_ns() - t0;
            self.issue(sides, i, groups)?;
            host_calls.push(HostCall {
                op: op.id,
                begin_ns: begin,
                end_ns: now_ns() - t0,
            });
        }
        for side in sides.iter() {
            side.bind()?;
            result::ctx::synchronize().map_err(call("cuCtxSynchronize"))?;
        }
        let elapsed = now_ns() - t0;
        for side in sides.iter() {
            side.bind()?;
            side.witness.marker(side.kernels, 1)?;
            result::ctx::synchronize().map_err(call("cuCtxSynchronize"))?;
        }
        Ok((t0, elapsed, host_calls))
    }

    /// The CUDA stream of stream `s`.
    fn stream(&self, s: crate::program::StreamId) -> sys::CUstream {
        self.streams[s.0].get(0)
    }

    /// The address of buffer `b`, on whichever device holds it.
    fn ptr(&self, sides: &[Side<'_>], b: BufferId) -> sys::CUdeviceptr {
        let d = self.program.buffers[b.0].device as usize;
        let local = sides[d]
            .buffer_ids
            .iter()
            .position(|&x| x == b)
            .unwrap_or(0);
        sides[d].buffers.ptr(BufferId(local))
    }

    /// Issues op `i` in its device's context.
    fn issue(
        &self,
        sides: &[Side<'_>],
        i: usize,
        groups: &[Vec<crate::program::OpId>],
    ) -> Result<(), Error> {
        let op = &self.program.ops[i];
        let side = &sides[self.device[i]];
        side.bind()?;
        let event = |e: crate::program::EventId| self.events[e.0].0;
        if issue_ordering(&op.kind, |s| self.stream(s), event)? {
            return Ok(());
        }
        match op.kind {
            OpKind::Spin {
                stream: s,
                duration_ns,
                grid,
                block,
            } => side.kernels.launch_spin(
                self.stream(s),
                side.stamps.addr(self.first_record[i] * WORDS_PER_BLOCK),
                (duration_ns as f64 * self.cycles_per_ns).ceil() as i64,
                grid,
                block,
            )?,
            OpKind::Record { .. } | OpKind::Wait { .. } | OpKind::HostSync { .. } => {
                unreachable!("issued by issue_ordering")
            }
            OpKind::DeviceSync { .. } => {
                result::ctx::synchronize().map_err(call("cuCtxSynchronize"))?
            }
            OpKind::Copy {
                stream: s,
                src,
                dst,
                bytes,
            } => {
                side.witness.before(i, self.stream(s))?;
                self.copy(sides, s, src, dst, bytes as usize)?;
                side.witness.after(i, self.stream(s))?;
            }
            OpKind::AllReduce { stream: s, buffer } => {
                self.all_reduce(sides, i, groups, s, buffer)?
            }
            _ => {
                return Err(Error::Driver {
                    call: "the multi-device executor".into(),
                    message: format!("op {i} '{}' is not supported on several GPUs", op.label),
                })
            }
        }
        Ok(())
    }

    /// A copy of `n` bytes from `src` to `dst` on stream `s`: between devices, within one, or
    /// between a device and the host.
    fn copy(
        &self,
        sides: &[Side<'_>],
        s: crate::program::StreamId,
        src: BufferId,
        dst: BufferId,
        n: usize,
    ) -> Result<(), Error> {
        let (sb, db) = (&self.program.buffers[src.0], &self.program.buffers[dst.0]);
        let (p, q) = (self.ptr(sides, src), self.ptr(sides, dst));
        let stream = self.stream(s);
        // SAFETY: the program's stream and contexts, alive; `p` and `q` hold at least
        // `n` bytes each (validated), on the devices or hosts their places say.
        unsafe {
            match (sb.place, db.place) {
                (Place::Device, Place::Device) if sb.device != db.device => sys::cuMemcpyPeerAsync(
                    q,
                    sides[db.device as usize].ctx.cu_ctx(),
                    p,
                    sides[sb.device as usize].ctx.cu_ctx(),
                    n,
                    stream,
                )
                .result()
                .map_err(call("cuMemcpyPeerAsync"))?,
                (Place::Device, Place::Device) => sys::cuMemcpyDtoDAsync_v2(q, p, n, stream)
                    .result()
                    .map_err(call("cuMemcpyDtoDAsync"))?,
                (_, Place::Device) => sys::cuMemcpyHtoDAsync_v2(q, p as *const _, n, stream)
                    .result()
                    .map_err(call("cuMemcpyHtoDAsync"))?,
                _ => sys::cuMemcpyDtoHAsync_v2(q as *mut _, p, n, stream)
                    .result()
                    .map_err(call("cuMemcpyDtoHAsync"))?,
            }
        }
        Ok(())
    }

    /// Rank `i` of an all-reduce on stream `s`: the first rank of its group records every
    /// rank's events before and opens the group, the last closes it and records the events
    /// after.
    fn all_reduce(
        &self,
        sides: &[Side<'_>],
        i: usize,
        groups: &[Vec<crate::program::OpId>],
        s: crate::program::StreamId,
        buffer: BufferId,
    ) -> Result<(), Error> {
        let op = &self.program.ops[i];
        let comms = self.comms.ok_or_else(|| Error::NoNccl {
            detail: "the communicators were not opened".into(),
        })?;
        let group = groups
            .iter()
            .find(|g| g.contains(&op.id))
            .expect("an all-reduce is in a collective");
        if group[0] == op.id {
            for &o in group {
                let k = o.0;
                let s = self.program.ops[k].kind.stream().expect("on a stream");
                sides[self.device[k]].bind()?;
                sides[self.device[k]].witness.before(k, self.stream(s))?;
            }
            super::nccl::group_start()?;
        }
        sides[self.device[i]].bind()?;
        let count = (self.program.buffers[buffer.0].bytes / 4) as usize;
        comms.all_reduce(
            self.device[i],
            self.ptr(sides, buffer),
            count,
            self.stream(s),
        )?;
        if *group.last().expect("not empty") == op.id {
            super::nccl::group_end()?;
            for &o in group {
                let k = o.0;
                let s = self.program.ops[k].kind.stream().expect("on a stream");
                sides[self.device[k]].bind()?;
                sides[self.device[k]].witness.after(k, self.stream(s))?;
            }
        }
        Ok(())
    }
}

/// Every device's stamps zeroed and buffers filled, then the device synchronized.
fn prepare_trial(sides: &mut [Side<'_>]) -> Result<(), Error> {
    for side in sides.iter_mut() {
        side.bind()?;
        side.stamps.zero()?;
        side.buffers.fill_on(side.kernels)?;
        result::ctx::synchronize().map_err(call("cuCtxSynchronize"))?;
    }
    Ok(())
}
