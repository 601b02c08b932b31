//! The issuer: the driver objects of one program, and the driver call each op becomes. Made by
//! the executor before the timed region; inside it, issuing an op is one call here.

use super::buffers::Buffers;
use super::capture::Graphs;
use super::host_fn::HostFns;
use super::kernels::{Kernels, WORDS_PER_BLOCK};
use super::memory::Memory;
use super::probe::call;
use super::resources::{issue_ordering, DeviceWords, Events, Streams};
use crate::border::error::Error;
use crate::program::{BufferId, CopyDir, OpKind, Program, SyncTarget};
use cudarc::driver::{result, sys};

/// The driver objects of one program, and where each op's stamps go.
pub(super) struct Issuer<'a> {
    pub(super) kernels: &'a Kernels,
    pub(super) program: &'a Program,
    pub(super) streams: Streams,
    pub(super) events: Events,
    pub(super) stamps: DeviceWords,
    pub(super) host_fns: HostFns,
    pub(super) memory: Memory,
    pub(super) buffers: Buffers,
    pub(super) graphs: Graphs,
    /// Per op: its first stamp record.
    pub(super) first_record: Vec<usize>,
    /// Per graph launch after its graph's first: each stamped node's first record in it.
    pub(super) relaunch_records: Vec<Option<Vec<(usize, usize)>>>,
    /// Per op: the cycles to spin, computed outside the timed region.
    pub(super) cycles: Vec<i64>,
    /// Whether the trial being issued is the warm-up, whose spins do not spin (see `run_trials`).
    pub(super) warming: bool,
}

impl Drop for Issuer<'_> {
    /// Runs before the fields are freed: on every path out of [`execute_with`], an early `?`
    /// included, no queued host function, kernel or copy can still use a slot, a buffer or a
    /// stream when it is freed. If the context cannot be synchronized (it is broken), a host
    /// function may still be queued: its slots are leaked rather than freed under it.
    fn drop(&mut self) {
        if result::ctx::synchronize().is_err() {
            self.host_fns.leak();
        }
    }
}

impl Issuer<'_> {
    /// Issues op `i`; returns the value it read, if it reads one.
    pub(super) fn issue(&mut self, i: usize) -> Result<Option<i64>, Error> {
        let stream = |s: crate::program::StreamId| self.streams.get(s.0);
        let event = |e: crate::program::EventId| self.events.get(e.0);
        if issue_ordering(&self.program.ops[i].kind, stream, event)? {
            return Ok(None);
        }
        match self.program.ops[i].kind {
            OpKind::Spin {
                stream: s,
                grid,
                block,
                ..
            } => self.kernels.launch_spin(
                stream(s),
                self.stamps.addr(self.first_record[i] * WORDS_PER_BLOCK),
                if self.warming { 0 } else { self.cycles[i] },
                grid,
                block,
            )?,
            OpKind::Record { .. } | OpKind::Wait { .. } | OpKind::HostSync { .. } => {
                unreachable!("issued by issue_ordering")
            }
            OpKind::Elapsed { from, to } => return self.elapsed(event(from), event(to)).map(Some),
            OpKind::HostFn { stream: s, api, .. } => self.host_fns.enqueue(i, stream(s), api)?,
            OpKind::Query { target } => return self.query(target).map(Some),
            OpKind::Api { call: c, bytes } => self.memory.api(i, c, bytes)?,
            OpKind::AllocAsync { stream: s, bytes } => {
                let addr = self.memory.alloc_async(i, stream(s), bytes)?;
                return Ok(Some(addr as i64));
            }
            OpKind::FreeAsync { stream: s, alloc } => self.memory.free_async(alloc.0, stream(s))?,
            OpKind::BeginCapture { stream: s } => Graphs::begin(stream(s))?,
            OpKind::EndCapture { stream: s } => self.graphs.end(i, stream(s))?,
            OpKind::GraphLaunch { stream: s, graph } => self.graph_launch(i, stream(s), graph.0)?,
            OpKind::Copy {
                stream: s,
                src,
                dst,
                bytes,
            } => self.copy(stream(s), src, dst, bytes)?,
            OpKind::DeviceSync { .. } | OpKind::AllReduce { .. } => {
                return Err(Error::Driver {
                    call: "the single-device executor".into(),
                    message: "device syncs and all-reduces run in programs on several GPUs \
                              (gpu/multi.rs)"
                        .into(),
                })
            }
            OpKind::Add {
                stream: s,
                a,
                b,
                out,
                grid,
                block,
            } => self.add(i, stream(s), (out, a, b), (grid, block))?,
        }
        Ok(None)
    }

    /// The time from event `from` to event `to` in nanoseconds, once `to` has completed.
    fn elapsed(&self, from: sys::CUevent, to: sys::CUevent) -> Result<i64, Error> {
        // SAFETY: `to` is one of the program's events, created for it before the first op
        // and destroyed only at its teardown, so the handle is valid here.
        unsafe { result::event::synchronize(to) }.map_err(call("cuEventSynchronize"))?;
        // SAFETY: `from` and `to` are the program's events, alive until its teardown;
        // validation requires both to be recorded before this op, and `to` has just
        // completed, so the driver can read both timestamps.
        let ms = unsafe { result::event::elapsed(from, to) }.map_err(call("cuEventElapsedTime"))?;
        Ok((f64::from(ms) * 1e6).round() as i64)
    }

    /// What a query of `target` answers: 1 when its work is done, 0 when it is not.
    fn query(&self, target: SyncTarget) -> Result<i64, Error> {
        let (answer, name) = match target {
            SyncTarget::Stream(s) => {
                // SAFETY: `s` is one of the program's streams (or a built-in handle),
                // valid until the program's teardown; a query only reads its state.
                (
                    unsafe { sys::cuStreamQuery(self.streams.get(s.0)) },
                    "cuStreamQuery",
                )
            }
            SyncTarget::Event(e) => {
                // SAFETY: `e` is one of the program's events, valid until the program's
                // teardown; a query only reads its state.
                (
                    unsafe { sys::cuEventQuery(self.events.get(e.0)) },
                    "cuEventQuery",
                )
            }
            SyncTarget::Device => (sys::CUresult::CUDA_ERROR_INVALID_VALUE, "a device query"),
        };
        match answer {
            sys::CUresult::CUDA_SUCCESS => Ok(1),
            sys::CUresult::CUDA_ERROR_NOT_READY => Ok(0),
            other => Err(call(name)(result::DriverError(other))),
        }
    }

    /// Launch `i` of graph `graph`: as captured the first time, its stamped nodes moved to the
    /// launch's own records after.
    fn graph_launch(&self, i: usize, stream: sys::CUstream, graph: usize) -> Result<(), Error> {
        match &self.relaunch_records[i] {
            None => self.graphs.launch(graph, stream),
            Some(records) => {
                let at = |record: usize| self.stamps.addr(record * WORDS_PER_BLOCK);
                let retarget = |captured_with: sys::CUdeviceptr| {
                    let &(node, record) = records
                        .iter()
                        .find(|(node, _)| at(self.first_record[*node]) == captured_with)?;
                    Some((at(record), Kernels::params_of(&self.program.ops[node].kind)))
                };
                self.graphs.relaunch(graph, stream, retarget)
            }
        }
    }

    /// Add `i`: `out = a + b` over the shortest of the three buffers.
    fn add(
        &self,
        i: usize,
        stream: sys::CUstream,
        (out, a, b): (BufferId, BufferId, BufferId),
        (grid, block): (u32, u32),
    ) -> Result<(), Error> {
        // The warm-up adds nothing, as its spins spin nothing: the first launch is what
        // it is there for, and the slow-kernel prefetch claims' adds cost a trial each.
        let n = [a, b, out]
            .iter()
            .filter_map(|&x| self.program.buffer(x))
            .map(|x| x.elements())
            .min()
            .filter(|_| !self.warming)
            .unwrap_or(0);
        let p = |x| self.buffers.ptr(x);
        self.kernels.launch_add(
            stream,
            self.stamps.addr(self.first_record[i] * WORDS_PER_BLOCK),
            (p(out), p(a), p(b)),
            n,
            grid,
            block,
        )
    }
}

impl Issuer<'_> {
    /// `cuMemcpy{HtoD,DtoH,DtoD}Async` by the buffers' places.
    fn copy(
        &self,
        stream: sys::CUstream,
        src: BufferId,
        dst: BufferId,
        bytes: u64,
    ) -> Result<(), Error> {
        let place = |b: BufferId| self.program.buffers[b.0].place;
        let (s, d, n) = (self.buffers.ptr(src), self.buffers.ptr(dst), bytes as usize);
        // SAFETY: `s` and `d` point into the program's buffers, which live for the whole run and
        // hold at least `bytes` bytes each (validated), in the places `CopyDir` reads from them;
        // `stream` is one of the program's streams, alive until its teardown.
        unsafe {
            match CopyDir::of(place(src), place(dst)) {
                CopyDir::H2D => sys::cuMemcpyHtoDAsync_v2(d, s as *const _, n, stream)
                    .result()
                    .map_err(call("cuMemcpyHtoDAsync")),
                CopyDir::D2H => sys::cuMemcpyDtoHAsync_v2(d as *mut _, s, n, stream)
                    .result()
                    .map_err(call("cuMemcpyDtoHAsync")),
                CopyDir::D2D | CopyDir::H2H | CopyDir::P2P => {
                    sys::cuMemcpyDtoDAsync_v2(d, s, n, stream)
                        .result()
                        .map_err(call("cuMemcpyDtoDAsync"))
                }
            }
        }
    }
}
