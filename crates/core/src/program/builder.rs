//! The builder: a few lines per experiment, ids handed back for later ops and checks.

use super::{
    ApiCall, Buffer, BufferId, CopyDir, Event, EventId, HostFnApi, Op, OpId, OpKind, Place,
    Priority, Program, Stream, StreamId, StreamKind, SyncTarget,
};
use std::time::Duration;

/// Threads per block of a spin op unless a claim asks for more: one warp, so kernels only compete
/// for SMs when a claim wants them to.
pub const DEFAULT_BLOCK: u32 = 32;

/// Builds a [`Program`] op by op, in issue order.
///
/// ```
/// use stream_litmus_core::program::{Program, StreamKind};
/// use std::time::Duration;
///
/// let mut p = Program::builder("null-barrier");
/// let s1 = p.stream(StreamKind::Blocking);
/// let null = p.stream(StreamKind::LegacyNull);
/// let a = p.spin(s1, "A", Duration::from_micros(20));
/// let n = p.spin(null, "N", Duration::from_micros(20));
/// let program = p.build();
/// assert_eq!(program.ops.len(), 2);
/// assert!(program.validate().is_ok());
/// # let _ = (a, n);
/// ```
#[derive(Debug, Clone)]
pub struct ProgramBuilder {
    program: Program,
}

impl ProgramBuilder {
    pub fn new(name: impl Into<String>) -> Self {
        ProgramBuilder {
            program: Program {
                name: name.into(),
                streams: Vec::new(),
                events: Vec::new(),
                buffers: Vec::new(),
                ops: Vec::new(),
                peer_access: false,
            },
        }
    }

    /// A stream of `kind`. The legacy null and per-thread streams are one stream each: asking for
    /// them again returns the same id. Other kinds get a new stream labelled `s1`, `s2`, ...
    pub fn stream(&mut self, kind: StreamKind) -> StreamId {
        if kind.is_builtin() {
            if let Some(i) = self.program.streams.iter().position(|s| s.kind == kind) {
                return StreamId(i);
            }
            let label = match kind {
                StreamKind::LegacyNull => "null",
                _ => "per-thread",
            };
            return self.stream_labelled(kind, label);
        }
        let n = 1 + self
            .program
            .streams
            .iter()
            .filter(|s| !s.kind.is_builtin())
            .count();
        self.stream_labelled(kind, format!("s{n}"))
    }

    /// A stream with a label of your choosing.
    pub fn stream_labelled(&mut self, kind: StreamKind, label: impl Into<String>) -> StreamId {
        self.program.streams.push(Stream {
            kind,
            label: label.into(),
            priority: None,
            device: 0,
        });
        StreamId(self.program.streams.len() - 1)
    }

    /// A stream of `kind` on device `device` (a program on several GPUs; docs/model.md,
    /// "Several devices"). Labels name the device: `s1.gpu1`, `null.gpu1`.
    pub fn stream_on(&mut self, device: u32, kind: StreamKind) -> StreamId {
        if device == 0 {
            return self.stream(kind);
        }
        let streams = &self.program.streams;
        if kind.is_builtin() {
            if let Some(i) = streams
                .iter()
                .position(|s| s.kind == kind && s.device == device)
            {
                return StreamId(i);
            }
        }
        let label = match kind {
            StreamKind::LegacyNull => "null".to_string(),
            StreamKind::PerThread => "per-thread".to_string(),
            _ => format!(
                "s{}",
                1 + streams.iter().filter(|s| !s.kind.is_builtin()).count()
            ),
        };
        let id = self.stream_labelled(kind, format!("{label}.gpu{device}"));
        self.program.streams[id.0].device = device;
        id
    }

    /// Enables peer access between the program's devices for its trials
    /// (`cuCtxEnablePeerAccess` both ways before the first trial, disabled after the last), so
    /// peer copies go device to device; without it the driver stages them through the host.
    pub fn peer_access(&mut self, on: bool) {
        self.program.peer_access = on;
    }

    /// A device buffer of `bytes` bytes on `device`, every element `fill` when a trial starts.
    pub fn buffer_on(
        &mut self,
        device: u32,
        label: impl Into<String>,
        bytes: u64,
        fill: i32,
    ) -> BufferId {
        let id = self.buffer(label, Place::Device, bytes, fill);
        self.program.buffers[id.0].device = device;
        id
    }

    /// `cuCtxSynchronize` of one device of a program on several GPUs.
    pub fn device_sync(&mut self, device: u32) -> OpId {
        self.push(format!("sync gpu{device}"), OpKind::DeviceSync { device })
    }

    /// An NCCL all-reduce (sum, in place), one rank per `(stream, buffer)`, one per device,
    /// issued together in one NCCL group. Returns the ops in the ranks' order, labelled
    /// `label.gpuN`.
    pub fn all_reduce(&mut self, label: &str, ranks: &[(StreamId, BufferId)]) -> Vec<OpId> {
        ranks
            .iter()
            .map(|&(stream, buffer)| {
                let d = self.program.streams.get(stream.0).map_or(0, |s| s.device);
                self.push(
                    format!("{label}.gpu{d}"),
                    OpKind::AllReduce { stream, buffer },
                )
            })
            .collect()
    }

    /// A new stream of `kind` (blocking or non-blocking) created with `priority`.
    pub fn stream_with_priority(&mut self, kind: StreamKind, priority: Priority) -> StreamId {
        let id = self.stream(kind);
        self.program.streams[id.0].priority = Some(priority);
        id
    }

    /// An event (created without timing, as the executor only orders with it).
    pub fn event(&mut self, label: impl Into<String>) -> EventId {
        self.program.events.push(Event {
            label: label.into(),
        });
        EventId(self.program.events.len() - 1)
    }

    /// A spin kernel of one block of 32 threads (one warp).
    pub fn spin(&mut self, stream: StreamId, label: impl Into<String>, duration: Duration) -> OpId {
        self.spin_grid(stream, label, duration, 1, DEFAULT_BLOCK)
    }

    /// A spin kernel with an explicit grid and block size (blocks and threads in x).
    pub fn spin_grid(
        &mut self,
        stream: StreamId,
        label: impl Into<String>,
        duration: Duration,
        grid: u32,
        block: u32,
    ) -> OpId {
        let duration_ns = u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX);
        self.push(
            label,
            OpKind::Spin {
                stream,
                duration_ns,
                grid,
                block,
            },
        )
    }

    /// `cuEventRecord(event, stream)`, labelled `record <event>`.
    pub fn record(&mut self, stream: StreamId, event: EventId) -> OpId {
        let label = format!("record {}", self.event_label(event));
        self.push(label, OpKind::Record { stream, event })
    }

    /// `cuStreamWaitEvent(stream, event)`, labelled `wait <event>`.
    pub fn wait(&mut self, stream: StreamId, event: EventId) -> OpId {
        let label = format!("wait {}", self.event_label(event));
        self.push(label, OpKind::Wait { stream, event })
    }

    /// The host blocks until `target` completes.
    pub fn host_sync(&mut self, target: SyncTarget) -> OpId {
        self.push("host sync", OpKind::HostSync { target })
    }

    /// The host waits for `to`, then reads the elapsed time from `from` to `to`.
    pub fn elapsed(&mut self, from: EventId, to: EventId) -> OpId {
        let label = format!(
            "elapsed {}→{}",
            self.event_label(from),
            self.event_label(to)
        );
        self.push(label, OpKind::Elapsed { from, to })
    }

    /// A host function on `stream` that spins on the host for `duration`, enqueued with `api`.
    pub fn host_fn(
        &mut self,
        stream: StreamId,
        label: impl Into<String>,
        duration: Duration,
        api: HostFnApi,
    ) -> OpId {
        let duration_ns = u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX);
        self.push(
            label,
            OpKind::HostFn {
                stream,
                duration_ns,
                api,
            },
        )
    }

    /// `cuStreamQuery` / `cuEventQuery` of `target`; the answer lands in the readings.
    pub fn query(&mut self, label: impl Into<String>, target: SyncTarget) -> OpId {
        self.push(label, OpKind::Query { target })
    }

    /// A blocking driver call of `bytes` bytes, labelled with the call's name.
    pub fn api(&mut self, call: ApiCall, bytes: u64) -> OpId {
        self.push(call.name(), OpKind::Api { call, bytes })
    }

    /// `cuMemAllocAsync` of `bytes` on `stream`; the address lands in the readings.
    pub fn alloc_async(&mut self, stream: StreamId, label: impl Into<String>, bytes: u64) -> OpId {
        self.push(label, OpKind::AllocAsync { stream, bytes })
    }

    /// `cuMemFreeAsync` on `stream` of what `alloc` allocated.
    pub fn free_async(&mut self, stream: StreamId, alloc: OpId) -> OpId {
        let label = format!("free {}", self.program.label(alloc));
        self.push(label, OpKind::FreeAsync { stream, alloc })
    }

    /// Starts capturing `stream` into a graph.
    pub fn begin_capture(&mut self, stream: StreamId) -> OpId {
        self.push("begin capture", OpKind::BeginCapture { stream })
    }

    /// Ends the capture and instantiates the graph; launch it with [`Self::graph_launch`].
    pub fn end_capture(&mut self, stream: StreamId) -> OpId {
        self.push("end capture", OpKind::EndCapture { stream })
    }

    /// Launches the graph that `graph` (an end-capture op) made, on `stream`.
    pub fn graph_launch(&mut self, stream: StreamId, graph: OpId) -> OpId {
        self.push("graph launch", OpKind::GraphLaunch { stream, graph })
    }

    /// A buffer of `bytes` bytes in `place`, every element `fill` when a trial starts.
    pub fn buffer(
        &mut self,
        label: impl Into<String>,
        place: Place,
        bytes: u64,
        fill: i32,
    ) -> BufferId {
        self.program.buffers.push(Buffer {
            label: label.into(),
            bytes,
            place,
            fill,
            read_back: false,
            device: 0,
        });
        BufferId(self.program.buffers.len() - 1)
    }

    /// Marks `buffer` to be read back after every trial, for checks on its contents.
    pub fn read_back(&mut self, buffer: BufferId) -> BufferId {
        if let Some(b) = self.program.buffers.get_mut(buffer.0) {
            b.read_back = true;
        }
        buffer
    }

    /// `cuMemcpyAsync` of all of `src` (at most `dst`'s size) into `dst` on `stream`.
    pub fn copy(
        &mut self,
        stream: StreamId,
        label: impl Into<String>,
        src: BufferId,
        dst: BufferId,
    ) -> OpId {
        let size = |b: BufferId| self.program.buffers.get(b.0).map_or(0, |b| b.bytes);
        let bytes = size(src).min(size(dst));
        self.push(
            label,
            OpKind::Copy {
                stream,
                src,
                dst,
                bytes,
            },
        )
    }

    /// A copy of `bytes` bytes in direction `dir` between two buffers of its own, the host one in
    /// `host` memory (pinned or pageable; ignored for D2D). A program's buffers are on one device,
    /// so H2H and P2P make a device to device copy.
    pub fn copy_new(
        &mut self,
        stream: StreamId,
        label: impl Into<String>,
        dir: CopyDir,
        bytes: u64,
        host: Place,
    ) -> OpId {
        let label = label.into();
        let (src, dst) = match dir {
            CopyDir::H2D => (host, Place::Device),
            CopyDir::D2H => (Place::Device, host),
            CopyDir::D2D | CopyDir::H2H | CopyDir::P2P => (Place::Device, Place::Device),
        };
        let src = self.buffer(format!("{label}.src"), src, bytes, 1);
        let dst = self.buffer(format!("{label}.dst"), dst, bytes, 0);
        self.copy(stream, label, src, dst)
    }

    /// The stamped vector add `out = a + b` with `grid` blocks of `block` threads.
    #[allow(clippy::too_many_arguments)]
    pub fn add(
        &mut self,
        stream: StreamId,
        label: impl Into<String>,
        (a, b): (BufferId, BufferId),
        out: BufferId,
        grid: u32,
        block: u32,
    ) -> OpId {
        self.push(
            label,
            OpKind::Add {
                stream,
                a,
                b,
                out,
                grid,
                block,
            },
        )
    }

    /// Any op, with your label.
    pub fn push(&mut self, label: impl Into<String>, kind: OpKind) -> OpId {
        let id = OpId(self.program.ops.len());
        self.program.ops.push(Op {
            id,
            label: label.into(),
            kind,
        });
        id
    }

    /// The program so far, for checks that refer to it while it is built.
    pub fn program(&self) -> &Program {
        &self.program
    }

    /// The finished program. It is not validated here: the executor validates every program
    /// before touching the GPU, and [`Program::validate`] is there to call earlier.
    pub fn build(self) -> Program {
        self.program
    }

    fn event_label(&self, event: EventId) -> String {
        self.program
            .events
            .get(event.0)
            .map(|e| e.label.clone())
            .unwrap_or_else(|| format!("e{}", event.0))
    }
}
