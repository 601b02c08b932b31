//! Validation: every program is checked before anything touches the GPU.
//!
//! Errors are things the driver would reject or that would make the experiment meaningless
//! (an unknown stream, a zero-length spin, a spin so long the run would look hung). Warnings are
//! legal CUDA that is probably not what the author meant, such as waiting on an event that was
//! never recorded (CUDA treats that wait as already satisfied).

use super::{
    BufferId, CopyDir, EventId, Op, OpId, OpKind, Place, Program, StreamId, StreamKind, SyncTarget,
};
use std::collections::HashSet;

/// The longest spin a program may ask for. Claims need microseconds; a second already makes
/// a catalogue run feel hung, so anything longer is taken for a unit mistake.
pub const MAX_SPIN_NS: u64 = 1_000_000_000;

/// The spin length (`--spin-us`) unless told otherwise: what a duration of `1spin` in a claim
/// file stands for, and the unit of the catalogue's kernels. A kernel must still be running
/// when the ops issued after it reach the GPU (a few µs per launch, plus the launch jitter), or
/// its relations are undecided; see docs/claims.md for how short it could go.
pub const DEFAULT_SPIN: std::time::Duration = std::time::Duration::from_micros(50);
/// Most blocks in one spin op (x dimension); each block's stamp takes 32 bytes.
pub const MAX_GRID: u32 = 1 << 20;
/// Most threads in one block, the CUDA limit.
pub const MAX_BLOCK: u32 = 1024;
/// The largest buffer an allocation or copy op may ask for: experiments need kilobytes to
/// megabytes; a gigabyte is taken for a unit mistake.
pub const MAX_BYTES: u64 = 1 << 30;

pub use super::warning::Warning;
pub use crate::border::error::ProgramError;

impl Program {
    /// Checks the program; `Ok` carries the warnings.
    pub fn validate(&self) -> Result<Vec<Warning>, ProgramError> {
        if let Some(problem) = self.size_problem() {
            return Err(ProgramError {
                program: self.name.clone(),
                problems: vec![problem],
            });
        }
        let mut v = Validator {
            program: self,
            problems: Vec::new(),
            warnings: Vec::new(),
            recorded: HashSet::new(),
            freed: HashSet::new(),
            launched: HashSet::new(),
            capturing: None,
        };
        v.declarations();
        for (i, op) in self.ops.iter().enumerate() {
            v.op(i, op);
        }
        v.finish()
    }
}

/// A program being checked: the problems and warnings found so far, and what the ops read in
/// issue order have done (recorded events, freed allocations, launched graphs, a capture).
struct Validator<'a> {
    program: &'a Program,
    problems: Vec<String>,
    warnings: Vec<Warning>,
    recorded: HashSet<EventId>,
    freed: HashSet<OpId>,
    launched: HashSet<OpId>,
    capturing: Option<StreamId>,
}

impl Validator<'_> {
    /// The streams and buffers as declared, before any op.
    fn declarations(&mut self) {
        let p = self.program;
        if !p.is_multi_device() {
            for kind in [super::StreamKind::LegacyNull, super::StreamKind::PerThread] {
                let n = p.streams.iter().filter(|s| s.kind == kind).count();
                if n > 1 {
                    self.problems.push(format!(
                        "the {kind} stream is declared {n} times; it is one stream, declare it \
                         once"
                    ));
                }
            }
        }
        self.problems.extend(p.device_problems());
        for s in &p.streams {
            if s.priority.is_some() && s.kind.is_builtin() {
                self.problems.push(format!(
                    "stream {} is the {} stream, which has no priority to set; give the priority \
                     to a blocking or non-blocking stream",
                    s.label, s.kind
                ));
            }
        }
        for b in &p.buffers {
            if b.bytes == 0 || b.bytes > MAX_BYTES || b.bytes % 4 != 0 {
                self.problems.push(format!(
                    "buffer '{}' has {} bytes; it must be a multiple of 4 (elements are f32) in 4..={MAX_BYTES}",
                    b.label, b.bytes
                ));
            }
        }
    }

    fn stream_ok(&mut self, s: StreamId, op: &Op) {
        let n = self.program.streams.len();
        if s.0 >= n {
            self.problems.push(format!(
                "op {} '{}' uses unknown stream s{} (the program has {n} streams)",
                op.id.0, op.label, s.0,
            ));
        }
    }

    fn event_ok(&mut self, e: EventId, op: &Op) {
        let n = self.program.events.len();
        if e.0 >= n {
            self.problems.push(format!(
                "op {} '{}' uses unknown event e{} (the program has {n} events)",
                op.id.0, op.label, e.0,
            ));
        }
    }

    fn bytes_ok(&mut self, bytes: u64, op: &Op) {
        if bytes == 0 || bytes > MAX_BYTES {
            self.problems.push(format!(
                "op {} '{}' asks for {bytes} bytes; it must be 1..={MAX_BYTES}",
                op.id.0, op.label
            ));
        }
    }

    /// `device`: the op computes on the buffer, which must then be in device memory.
    fn buffer_ok(&mut self, b: BufferId, device: bool, op: &Op) {
        match self.program.buffer(b) {
            None => self.problems.push(format!(
                "op {} '{}' uses unknown buffer b{} (the program has {} buffers)",
                op.id.0,
                op.label,
                b.0,
                self.program.buffers.len()
            )),
            Some(buf) if device && buf.place != Place::Device => self.problems.push(format!(
                "op {} '{}' computes on buffer '{}' in {} memory; kernels here read device buffers only",
                op.id.0, op.label, buf.label, buf.place
            )),
            Some(_) => {}
        }
    }

    /// Op `i`, in issue order: one check per kind of op.
    fn op(&mut self, i: usize, op: &Op) {
        if self.capturing.is_some() && !capturable(&op.kind, self.program) {
            self.problems.push(format!(
                "op {} '{}' is issued during a stream capture, which records only kernels, \
                 host functions and event records and waits on created streams; move it \
                 out of the capture",
                op.id.0, op.label
            ));
        }
        if op.id.0 != i {
            self.problems.push(format!(
                "op at position {i} '{}' has id {}; ids must equal positions",
                op.label, op.id.0
            ));
        }
        match op.kind {
            OpKind::Spin {
                stream,
                duration_ns,
                grid,
                block,
            } => self.spin(op, stream, duration_ns, grid, block),
            OpKind::Copy {
                stream,
                src,
                dst,
                bytes,
            } => self.copy(op, stream, [src, dst], bytes),
            OpKind::Add {
                stream,
                a,
                b,
                out,
                grid,
                block,
            } => self.add(op, stream, [a, b, out], grid, block),
            OpKind::Record { stream, event } => {
                self.stream_ok(stream, op);
                self.event_ok(event, op);
                self.recorded.insert(event);
            }
            OpKind::Wait { stream, event } => {
                self.stream_ok(stream, op);
                self.event_ok(event, op);
                if !self.recorded.contains(&event) {
                    self.warnings
                        .push(Warning::WaitBeforeRecord { op: op.id, event });
                }
            }
            OpKind::HostSync { target } => self.host_sync(op, target),
            OpKind::HostFn {
                stream,
                duration_ns,
                ..
            } => self.host_fn(op, stream, duration_ns),
            OpKind::Query { target } => self.query(op, target),
            OpKind::Api { bytes, .. } => self.bytes_ok(bytes, op),
            OpKind::AllocAsync { stream, bytes } => {
                self.stream_ok(stream, op);
                self.bytes_ok(bytes, op);
            }
            OpKind::FreeAsync { stream, alloc } => self.free_async(op, stream, alloc),
            OpKind::BeginCapture { stream } => self.begin_capture(op, stream),
            OpKind::EndCapture { stream } => {
                if self.capturing.take() != Some(stream) {
                    self.problems.push(format!(
                        "op {} '{}' ends a capture of s{} that was not begun",
                        op.id.0, op.label, stream.0
                    ));
                }
            }
            OpKind::GraphLaunch { stream, graph } => self.graph_launch(op, stream, graph),
            OpKind::DeviceSync { .. } => {}
            OpKind::AllReduce { stream, .. } => self.stream_ok(stream, op),
            OpKind::Elapsed { from, to } => self.elapsed(op, from, to),
        }
    }

    fn spin(&mut self, op: &Op, stream: StreamId, duration_ns: u64, grid: u32, block: u32) {
        self.stream_ok(stream, op);
        if duration_ns == 0 {
            self.problems.push(format!(
                "spin {} '{}' has a zero duration; give it at least a microsecond",
                op.id.0, op.label
            ));
        } else if duration_ns > MAX_SPIN_NS {
            self.problems.push(format!(
                "spin {} '{}' lasts {:.3} s, over the {} s limit; durations are \
                 nanoseconds, was a unit mixed up?",
                op.id.0,
                op.label,
                duration_ns as f64 / 1e9,
                MAX_SPIN_NS / 1_000_000_000
            ));
        }
        if grid == 0 || grid > MAX_GRID {
            self.problems.push(format!(
                "spin {} '{}' has grid {grid}; it must be 1..={MAX_GRID}",
                op.id.0, op.label
            ));
        }
        if block == 0 || block > MAX_BLOCK {
            self.problems.push(format!(
                "spin {} '{}' has block {block}; it must be 1..={MAX_BLOCK}",
                op.id.0, op.label
            ));
        }
    }

    /// `ends`: the copy's source and destination.
    fn copy(&mut self, op: &Op, stream: StreamId, ends: [BufferId; 2], bytes: u64) {
        self.stream_ok(stream, op);
        for b in ends {
            self.buffer_ok(b, false, op);
        }
        self.bytes_ok(bytes, op);
        let p = self.program;
        let small = ends
            .iter()
            .filter_map(|&b| p.buffer(b))
            .find(|b| b.bytes < bytes);
        if let Some(b) = small {
            self.problems.push(format!(
                "copy {} '{}' moves {bytes} bytes but buffer '{}' holds {}",
                op.id.0, op.label, b.label, b.bytes
            ));
        }
        if p.copy_dir(op.id) == Some(CopyDir::H2H) {
            self.problems.push(format!(
                "copy {} '{}' is host to host, which no copy engine does; copy to or from a device buffer",
                op.id.0, op.label
            ));
        }
    }

    /// `buffers`: the two operands and the output.
    fn add(&mut self, op: &Op, stream: StreamId, buffers: [BufferId; 3], grid: u32, block: u32) {
        self.stream_ok(stream, op);
        for x in buffers {
            self.buffer_ok(x, true, op);
        }
        if grid == 0 || grid > MAX_GRID || block == 0 || block > MAX_BLOCK {
            self.problems.push(format!(
                "add {} '{}' has <<<{grid},{block}>>>; the grid must be 1..={MAX_GRID} and the block 1..={MAX_BLOCK}",
                op.id.0, op.label
            ));
        }
    }

    fn host_sync(&mut self, op: &Op, target: SyncTarget) {
        match target {
            SyncTarget::Stream(s) => self.stream_ok(s, op),
            SyncTarget::Event(e) => {
                self.event_ok(e, op);
                if !self.recorded.contains(&e) {
                    self.warnings.push(Warning::SyncBeforeRecord {
                        op: op.id,
                        event: e,
                    });
                }
            }
            SyncTarget::Device => {}
        }
    }

    fn host_fn(&mut self, op: &Op, stream: StreamId, duration_ns: u64) {
        self.stream_ok(stream, op);
        if duration_ns == 0 || duration_ns > MAX_SPIN_NS {
            self.problems.push(format!(
                "host fn {} '{}' lasts {duration_ns} ns; it must be 1..={MAX_SPIN_NS}",
                op.id.0, op.label
            ));
        }
    }

    fn query(&mut self, op: &Op, target: SyncTarget) {
        match target {
            SyncTarget::Stream(s) => self.stream_ok(s, op),
            SyncTarget::Event(e) => self.event_ok(e, op),
            SyncTarget::Device => self.problems.push(format!(
                "op {} '{}' queries the device, which has no query call; query a stream \
                 or an event",
                op.id.0, op.label
            )),
        }
    }

    fn free_async(&mut self, op: &Op, stream: StreamId, alloc: OpId) {
        self.stream_ok(stream, op);
        let is_alloc = alloc < op.id
            && matches!(
                self.program.op(alloc).map(|o| &o.kind),
                Some(OpKind::AllocAsync { .. })
            );
        if !is_alloc {
            self.problems.push(format!(
                "op {} '{}' frees op {}, which is no stream-ordered allocation issued \
                 before it",
                op.id.0, op.label, alloc.0
            ));
        } else if !self.freed.insert(alloc) {
            self.problems.push(format!(
                "op {} '{}' frees op {} a second time",
                op.id.0, op.label, alloc.0
            ));
        }
    }

    fn begin_capture(&mut self, op: &Op, stream: StreamId) {
        self.stream_ok(stream, op);
        if self
            .program
            .stream(stream)
            .is_some_and(|s| s.kind.is_builtin())
        {
            self.problems.push(format!(
                "op {} '{}' captures a built-in stream; capture a created stream",
                op.id.0, op.label
            ));
        }
        if self.capturing.replace(stream).is_some() {
            self.problems.push(format!(
                "op {} '{}' begins a capture inside another; end the first one",
                op.id.0, op.label
            ));
        }
    }

    fn graph_launch(&mut self, op: &Op, stream: StreamId, graph: OpId) {
        self.stream_ok(stream, op);
        let p = self.program;
        let is_graph = graph < op.id
            && matches!(
                p.op(graph).map(|o| &o.kind),
                Some(OpKind::EndCapture { .. })
            );
        if !is_graph {
            self.problems.push(format!(
                "op {} '{}' launches op {}, which is no end of a capture issued before \
                 it",
                op.id.0, op.label, graph.0
            ));
            return;
        }
        if self.launched.insert(graph) {
            return;
        }
        // A later launch stamps records of its own by updating its kernel nodes
        // (gpu/capture.rs); anything else in the graph has no such record.
        let captures = p.captures();
        let other = p.ops.iter().find(|o| {
            captures[o.id.0] == Some(graph)
                && !matches!(
                    o.kind,
                    OpKind::Spin { .. }
                        | OpKind::Add { .. }
                        | OpKind::Record { .. }
                        | OpKind::Wait { .. }
                )
        });
        if let Some(o) = other {
            self.problems.push(format!(
                "op {} '{}' launches the graph of op {} again, and that graph \
                 holds op {} '{}': only a graph of kernels, event records and \
                 waits can be launched more than once (each launch's kernels \
                 stamp records of their own; that op would not)",
                op.id.0, op.label, graph.0, o.id.0, o.label
            ));
        }
    }

    fn elapsed(&mut self, op: &Op, from: EventId, to: EventId) {
        self.event_ok(from, op);
        self.event_ok(to, op);
        for e in [from, to] {
            if e.0 < self.program.events.len() && !self.recorded.contains(&e) {
                self.problems.push(format!(
                    "op {} '{}' reads the elapsed time of event e{} before any record \
                     of it; record both events first",
                    op.id.0, op.label, e.0
                ));
            }
        }
    }

    /// A capture never ended, then the verdict: the warnings, or every problem.
    fn finish(mut self) -> Result<Vec<Warning>, ProgramError> {
        if let Some(s) = self.capturing {
            let name = self
                .program
                .stream(s)
                .map_or(format!("s{}", s.0), |st| st.label.clone());
            self.problems.push(format!(
                "the capture of stream {name} is never ended; end it with an end-capture op"
            ));
        }
        if self.problems.is_empty() {
            Ok(self.warnings)
        } else {
            Err(ProgramError {
                program: self.program.name.clone(),
                problems: self.problems,
            })
        }
    }
}

/// Whether `kind` may be issued while a stream is being captured: stream work on created streams.
fn capturable(kind: &OpKind, program: &Program) -> bool {
    let created = |s: StreamId| {
        program
            .stream(s)
            .is_some_and(|s| matches!(s.kind, StreamKind::Blocking | StreamKind::NonBlocking))
    };
    match *kind {
        OpKind::Spin { stream, .. }
        | OpKind::Record { stream, .. }
        | OpKind::Wait { stream, .. }
        | OpKind::HostFn { stream, .. }
        | OpKind::EndCapture { stream } => created(stream),
        _ => false,
    }
}
