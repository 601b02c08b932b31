//! Programs: what a claim asks the GPU to do, as plain data.
//!
//! A [`Program`] is a list of streams, events and ops in issue order. It holds no handles and
//! touches no driver, so it can be printed (as a claim file writes it: `text.rs`, the one
//! printer of programs), serialized to JSON, sent to a child process (for
//! environment variables the driver reads once, such as `CUDA_DEVICE_MAX_CONNECTIONS`), analysed
//! by a model of stream semantics, and replayed. The executor in [`crate::gpu`] is the only code
//! that turns it into driver calls.
//!
//! Ids are indices: `StreamId(i)` is `program.streams[i]`, `OpId(i)` is `program.ops[i]`, so a
//! program is valid JSON to write by hand and ids stay stable through serialization.
//!
//! **May import:** `border` only. A program knows nothing of how it runs or how it is judged.

mod buffer;
mod builder;
mod devices;
mod stream;
pub mod text;
mod validate;
mod warning;

pub use buffer::{Buffer, BufferId, CopyDir, Place};
pub use builder::{ProgramBuilder, DEFAULT_BLOCK};
pub use stream::is_zero;
pub use stream::{Priority, Stream, StreamKind};
pub use validate::{
    ProgramError, Warning, DEFAULT_SPIN, MAX_BLOCK, MAX_BYTES, MAX_GRID, MAX_SPIN_NS,
};

use serde::{Deserialize, Serialize};

/// Index of a stream in [`Program::streams`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct StreamId(pub usize);

/// Index of an event in [`Program::events`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct EventId(pub usize);

/// Index of an op in [`Program::ops`]; ops are issued in id order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct OpId(pub usize);

/// An event the program records and waits on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    pub label: String,
}

/// What the host waits for in a [`OpKind::HostSync`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SyncTarget {
    /// `cuStreamSynchronize`.
    Stream(StreamId),
    /// `cuEventSynchronize`.
    Event(EventId),
    /// `cuCtxSynchronize`.
    Device,
}

/// Which driver call enqueues a [`OpKind::HostFn`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HostFnApi {
    /// `cuLaunchHostFunc` (CUDA 10 and later).
    LaunchHostFunc,
    /// `cuStreamAddCallback`, the older call the notes use (`cudaStreamAddCallback`).
    StreamAddCallback,
}

/// A blocking driver call that the CUDA programming guide's "Implicit Synchronization" list
/// names, issued by the host on its own (no stream). Buffers it frees or uses are allocated
/// before the trial; what it allocates is freed after the trial, both outside the timed region.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApiCall {
    /// `cuMemAlloc`: a device memory allocation.
    MemAlloc,
    /// `cuMemFree` of a buffer allocated before the trial.
    MemFree,
    /// `cuMemHostAlloc`: a page-locked host memory allocation.
    HostAlloc,
    /// `cuMemFreeHost` of a page-locked buffer allocated before the trial.
    HostFree,
    /// `cuMemsetD8`: a device memory set (the synchronous form).
    Memset,
    /// `cuMemcpyDtoD`: a copy between two addresses of the same device's memory.
    CopyD2D,
}

impl ApiCall {
    /// The driver call's name.
    pub fn name(self) -> &'static str {
        match self {
            ApiCall::MemAlloc => "cuMemAlloc",
            ApiCall::MemFree => "cuMemFree",
            ApiCall::HostAlloc => "cuMemHostAlloc",
            ApiCall::HostFree => "cuMemFreeHost",
            ApiCall::Memset => "cuMemsetD8",
            ApiCall::CopyD2D => "cuMemcpyDtoD",
        }
    }
}

/// One operation, issued by the host in program order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum OpKind {
    /// The stamp kernel: every block spins for `duration_ns` and stamps its start, end and SM.
    Spin {
        stream: StreamId,
        duration_ns: u64,
        grid: u32,
        block: u32,
    },
    /// `cuEventRecord(event, stream)`.
    Record { stream: StreamId, event: EventId },
    /// `cuStreamWaitEvent(stream, event)`.
    Wait { stream: StreamId, event: EventId },
    /// The host blocks until the target completes.
    HostSync { target: SyncTarget },
    /// The host waits for `to` (`cuEventSynchronize`) and reads `cuEventElapsedTime(from, to)`;
    /// the value lands in the timeline's readings. Both events are created with timing.
    Elapsed { from: EventId, to: EventId },
    /// A host function enqueued on `stream` with `api`: when the stream reaches it, a driver
    /// thread calls it, and it spins on the host for `duration_ns` and stamps its start and end
    /// with the host clock (a host span on the timeline).
    HostFn {
        stream: StreamId,
        duration_ns: u64,
        api: HostFnApi,
    },
    /// `cuStreamQuery` or `cuEventQuery` (the target may not be the device): the answer, 1 for
    /// ready and 0 for not ready, lands in the timeline's readings.
    Query { target: SyncTarget },
    /// A blocking driver call of `bytes` bytes; see [`ApiCall`].
    Api { call: ApiCall, bytes: u64 },
    /// `cuMemAllocAsync(bytes, stream)` from the device's default memory pool; the address lands
    /// in the readings.
    AllocAsync { stream: StreamId, bytes: u64 },
    /// `cuMemFreeAsync` on `stream` of what the [`OpKind::AllocAsync`] op `alloc` allocated.
    FreeAsync { stream: StreamId, alloc: OpId },
    /// `cuStreamBeginCapture`: the ops that follow, up to the matching [`OpKind::EndCapture`],
    /// are captured into a graph instead of running (a spin among them runs, and stamps, when the
    /// graph is launched).
    BeginCapture { stream: StreamId },
    /// `cuStreamEndCapture` and `cuGraphInstantiate`: the graph is ready to launch.
    EndCapture { stream: StreamId },
    /// `cuGraphLaunch` on `stream` of the graph the [`OpKind::EndCapture`] op `graph` made.
    GraphLaunch { stream: StreamId, graph: OpId },
    /// `cuMemcpyAsync` of `bytes` bytes from buffer `src` to buffer `dst` on `stream`; the
    /// direction follows from the buffers' places (see [`CopyDir`]). No kernel can stamp a copy:
    /// its span comes from a witness (CUPTI, or events around it; see `docs/design.md`, decision 11).
    Copy {
        stream: StreamId,
        src: BufferId,
        dst: BufferId,
        bytes: u64,
    },
    /// The stamped vector add: `out[i] = a[i] + b[i]` over the shortest of the three buffers,
    /// with `grid` blocks of `block` threads striding over the elements (few threads make it
    /// slow, as the notes do to balance it against copies). Every block stamps like a spin.
    Add {
        stream: StreamId,
        a: BufferId,
        b: BufferId,
        out: BufferId,
        grid: u32,
        block: u32,
    },
    /// The host waits for every op of one device: `cuCtxSynchronize` with that device's primary
    /// context current. On a single-device program this is [`SyncTarget::Device`]'s call.
    DeviceSync { device: u32 },
    /// One rank of an NCCL all-reduce (sum, in place) of the floats of device buffer `buffer`
    /// on `stream`. Consecutive all-reduce ops form one collective, one op per device of the
    /// program, issued between `ncclGroupStart` and `ncclGroupEnd` by this one process (see
    /// [`Program::collectives`]). NCCL's kernels cannot stamp: the op's span comes from events
    /// around it. Reading the buffer back ([`crate::Check::Contents`]) checks the sum.
    AllReduce { stream: StreamId, buffer: BufferId },
}

impl OpKind {
    /// Whether the op occupies the device (or the host on the device's behalf) for a while, so
    /// that an op issued after it may wait for its end: kernels, copies, memsets, all-reduces and
    /// host functions. Records, waits, syncs and captures take no time of their own.
    pub fn takes_time(&self) -> bool {
        matches!(
            self,
            OpKind::Spin { .. }
                | OpKind::Add { .. }
                | OpKind::AllReduce { .. }
                | OpKind::Copy { .. }
                | OpKind::HostFn { .. }
                | OpKind::Api {
                    call: ApiCall::Memset,
                    ..
                }
        )
    }

    /// The stream the op is enqueued on; `None` for host-side ops.
    pub fn stream(&self) -> Option<StreamId> {
        match *self {
            OpKind::Spin { stream, .. }
            | OpKind::Record { stream, .. }
            | OpKind::Wait { stream, .. }
            | OpKind::HostFn { stream, .. }
            | OpKind::AllocAsync { stream, .. }
            | OpKind::FreeAsync { stream, .. }
            | OpKind::BeginCapture { stream }
            | OpKind::EndCapture { stream }
            | OpKind::GraphLaunch { stream, .. }
            | OpKind::Copy { stream, .. }
            | OpKind::AllReduce { stream, .. }
            | OpKind::Add { stream, .. } => Some(stream),
            OpKind::HostSync { .. }
            | OpKind::DeviceSync { .. }
            | OpKind::Elapsed { .. }
            | OpKind::Query { .. }
            | OpKind::Api { .. } => None,
        }
    }

    /// What the host blocks on before the op returns: a host sync's target, or the end event of
    /// an elapsed-time read. `None` for ops the host only enqueues.
    pub fn host_waits_for(&self) -> Option<SyncTarget> {
        match *self {
            OpKind::HostSync { target } => Some(target),
            OpKind::Elapsed { to, .. } => Some(SyncTarget::Event(to)),
            _ => None,
        }
    }

    /// Whether the op runs on the device and leaves stamps (a span on the timeline).
    pub fn is_stamped(&self) -> bool {
        matches!(self, OpKind::Spin { .. } | OpKind::Add { .. })
    }

    /// Blocks of a stamped op: each writes one stamp record.
    pub fn stamped_grid(&self) -> u32 {
        match *self {
            OpKind::Spin { grid, .. } | OpKind::Add { grid, .. } => grid,
            _ => 0,
        }
    }
}

/// An op with its id and a human label ("A", "N", "backward-3", ...).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Op {
    pub id: OpId,
    pub label: String,
    #[serde(flatten)]
    pub kind: OpKind,
}

/// A complete experiment: streams, events and ops in issue order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Program {
    pub name: String,
    pub streams: Vec<Stream>,
    pub events: Vec<Event>,
    /// Memory for copies and data kernels; see [`Buffer`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub buffers: Vec<Buffer>,
    pub ops: Vec<Op>,
    /// Programs on several GPUs: whether peer access is enabled between the devices while the
    /// trials run (see [`ProgramBuilder::peer_access`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub peer_access: bool,
}

impl Program {
    /// Starts a program; see [`ProgramBuilder`].
    pub fn builder(name: impl Into<String>) -> ProgramBuilder {
        ProgramBuilder::new(name)
    }

    pub fn op(&self, id: OpId) -> Option<&Op> {
        self.ops.get(id.0)
    }

    pub fn stream(&self, id: StreamId) -> Option<&Stream> {
        self.streams.get(id.0)
    }

    pub fn buffer(&self, id: BufferId) -> Option<&Buffer> {
        self.buffers.get(id.0)
    }

    /// The direction of a copy op; `None` for other ops or unknown buffers.
    pub fn copy_dir(&self, op: OpId) -> Option<CopyDir> {
        let OpKind::Copy { src, dst, .. } = self.op(op)?.kind else {
            return None;
        };
        Some(CopyDir::of(
            self.buffer(src)?.place,
            self.buffer(dst)?.place,
        ))
    }

    /// Whether any op copies memory: such programs need a witness for their copies' spans.
    pub fn has_copies(&self) -> bool {
        self.ops
            .iter()
            .any(|o| matches!(o.kind, OpKind::Copy { .. }))
    }

    /// Whether any op is enqueued on stream `id` (reports draw a lane only for those).
    pub fn uses_stream(&self, id: StreamId) -> bool {
        self.ops.iter().any(|op| op.kind.stream() == Some(id))
    }

    /// The op's label, or `#i` for an id the program does not have.
    pub fn label(&self, id: OpId) -> String {
        self.op(id)
            .map(|op| op.label.clone())
            .unwrap_or_else(|| format!("#{}", id.0))
    }

    /// Whether `op` waits on an event with no record issued before it. CUDA treats such a wait as
    /// "a functional no-op" (`cudaStreamWaitEvent`); on the GPU it does not even trigger the
    /// legacy stream's implicit synchronization (see docs/model.md).
    pub fn is_noop_wait(&self, op: OpId) -> bool {
        let Some(OpKind::Wait { event, .. }) = self.op(op).map(|o| &o.kind) else {
            return false;
        };
        !self.ops[..op.0]
            .iter()
            .any(|o| matches!(o.kind, OpKind::Record { event: e, .. } if e == *event))
    }

    /// Whether event `e` is used by an [`OpKind::Elapsed`] op, and so needs timing.
    pub fn is_timed_event(&self, e: EventId) -> bool {
        self.ops
            .iter()
            .any(|op| matches!(op.kind, OpKind::Elapsed { from, to } if from == e || to == e))
    }

    /// The [`OpKind::EndCapture`] op that closes the capture `op` was issued in, if any: such an
    /// op is recorded into a graph and runs when the graph is launched.
    pub fn captured_by(&self, op: OpId) -> Option<OpId> {
        let (mut open, mut inside) = (false, false);
        for o in &self.ops {
            match o.kind {
                OpKind::BeginCapture { .. } => open = true,
                OpKind::EndCapture { .. } if inside => return Some(o.id),
                OpKind::EndCapture { .. } => open = false,
                _ if o.id == op => {
                    if !open {
                        return None;
                    }
                    inside = true;
                }
                _ => {}
            }
        }
        None
    }

    /// The [`OpKind::GraphLaunch`] of the graph that `end_capture` made, if any.
    pub fn launch_of(&self, end_capture: OpId) -> Option<OpId> {
        self.ops
            .iter()
            .find(|o| matches!(o.kind, OpKind::GraphLaunch { graph, .. } if graph == end_capture))
            .map(|o| o.id)
    }

    /// [`Program::captured_by`] of every op, in one pass: asking it op by op is quadratic, and a
    /// graph claim has 2,000 ops (its readback and judging spent tens of ms on it per trial).
    pub fn captures(&self) -> Vec<Option<OpId>> {
        let mut out = vec![None; self.ops.len()];
        let mut open: Option<Vec<usize>> = None;
        for (i, o) in self.ops.iter().enumerate() {
            match o.kind {
                OpKind::BeginCapture { .. } => {
                    open.get_or_insert_with(Vec::new);
                }
                OpKind::EndCapture { .. } => {
                    for j in open.take().unwrap_or_default() {
                        out[j] = Some(o.id);
                    }
                }
                _ => {
                    if let Some(inside) = open.as_mut() {
                        inside.push(i);
                    }
                }
            }
        }
        out
    }

    /// For every op, the graph launch that issues it (`captured_by`, then `launch_of`), in one
    /// pass; `None` for an op issued directly or captured into a graph never launched.
    pub fn graph_launches(&self) -> Vec<Option<OpId>> {
        let mut first_launch: Vec<Option<OpId>> = vec![None; self.ops.len()];
        for o in &self.ops {
            if let OpKind::GraphLaunch { graph, .. } = o.kind {
                if let Some(slot) = first_launch.get_mut(graph.0) {
                    slot.get_or_insert(o.id);
                }
            }
        }
        self.captures()
            .into_iter()
            .map(|end| end.and_then(|e| first_launch[e.0]))
            .collect()
    }

    /// Whether the trial needs the host clock aligned to `%globaltimer`: host functions leave
    /// host-clock spans, and queries, syncs, elapsed reads (an event sync), API calls and copies
    /// (which may block the host) are judged against the stamps, and orders made by the host are
    /// judged by when its waits returned.
    pub fn needs_host_clock(&self) -> bool {
        self.ops.iter().any(|o| {
            matches!(
                o.kind,
                OpKind::HostFn { .. }
                    | OpKind::Query { .. }
                    | OpKind::Api { .. }
                    | OpKind::HostSync { .. }
                    | OpKind::Elapsed { .. }
                    | OpKind::Copy { .. }
            )
        })
    }

    /// Number of blocks of every spin op together: the size of the stamp buffer in records.
    pub fn stamped_blocks(&self) -> usize {
        self.ops
            .iter()
            .map(|op| op.kind.stamped_grid() as usize)
            .sum()
    }
}
