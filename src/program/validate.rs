//! Validation: every program is checked before anything touches the GPU.
//!
//! Errors are things the driver would reject or that would make the experiment meaningless
//! (an unknown stream, a zero-length spin, a spin so long the run would look hung). Warnings are
//! legal CUDA that is probably not what the author meant, such as waiting on an event that was
//! never recorded (CUDA treats that wait as already satisfied).

use super::{
    BufferId, CopyDir, EventId, OpId, OpKind, Place, Program, StreamId, StreamKind, SyncTarget,
};
use std::collections::HashSet;
use std::fmt;

/// The longest spin a program may ask for. Claims need microseconds; a second already makes
/// a catalogue run feel hung, so anything longer is taken for a unit mistake.
pub const MAX_SPIN_NS: u64 = 1_000_000_000;
/// Most blocks in one spin op (x dimension); each block's stamp takes 32 bytes.
pub const MAX_GRID: u32 = 1 << 20;
/// Most threads in one block, the CUDA limit.
pub const MAX_BLOCK: u32 = 1024;
/// The largest buffer an allocation or copy op may ask for: experiments need kilobytes to
/// megabytes; a gigabyte is taken for a unit mistake.
pub const MAX_BYTES: u64 = 1 << 30;

pub use crate::border::error::ProgramError;

/// Legal but suspicious: reported with the verdict, never fatal.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case", tag = "warning")]
pub enum Warning {
    /// A wait on an event with no record issued before it: CUDA treats it as complete, so the
    /// wait orders nothing.
    WaitBeforeRecord { op: OpId, event: EventId },
    /// A host sync on an event with no record issued before it: it returns at once.
    SyncBeforeRecord { op: OpId, event: EventId },
    /// CUPTI could not be used, so the copies' spans come from events around them.
    NoCupti { reason: String },
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::WaitBeforeRecord { op, event } => write!(
                f,
                "op {} waits on event e{} before any record of it: CUDA treats the wait as \
                 satisfied, so it orders nothing",
                op.0, event.0
            ),
            Warning::SyncBeforeRecord { op, event } => write!(
                f,
                "op {} synchronizes on event e{} before any record of it: it returns at once",
                op.0, event.0
            ),
            Warning::NoCupti { reason } => write!(
                f,
                "no CUPTI ({reason}): copy spans come from events around each copy, weaker \
                 evidence (an outer bound that includes whatever the copy waited for)"
            ),
        }
    }
}

impl Program {
    /// Checks the program; `Ok` carries the warnings.
    pub fn validate(&self) -> Result<Vec<Warning>, ProgramError> {
        if let Some(problem) = self.size_problem() {
            return Err(ProgramError {
                program: self.name.clone(),
                problems: vec![problem],
            });
        }
        let mut problems = Vec::new();
        let mut warnings = Vec::new();
        if !self.is_multi_device() {
            for kind in [super::StreamKind::LegacyNull, super::StreamKind::PerThread] {
                let n = self.streams.iter().filter(|s| s.kind == kind).count();
                if n > 1 {
                    problems.push(format!(
                        "the {kind} stream is declared {n} times; it is one stream, declare it \
                         once"
                    ));
                }
            }
        }
        problems.extend(self.device_problems());
        for s in &self.streams {
            if s.priority.is_some() && s.kind.is_builtin() {
                problems.push(format!(
                    "stream {} is the {} stream, which has no priority to set; give the priority \
                     to a blocking or non-blocking stream",
                    s.label, s.kind
                ));
            }
        }
        let stream_ok = |s: StreamId, problems: &mut Vec<String>, op: &super::Op| {
            if s.0 >= self.streams.len() {
                problems.push(format!(
                    "op {} '{}' uses unknown stream s{} (the program has {} streams)",
                    op.id.0,
                    op.label,
                    s.0,
                    self.streams.len()
                ));
            }
        };
        let event_ok = |e: EventId, problems: &mut Vec<String>, op: &super::Op| {
            if e.0 >= self.events.len() {
                problems.push(format!(
                    "op {} '{}' uses unknown event e{} (the program has {} events)",
                    op.id.0,
                    op.label,
                    e.0,
                    self.events.len()
                ));
            }
        };
        let mut recorded: HashSet<EventId> = HashSet::new();
        let mut freed: HashSet<OpId> = HashSet::new();
        let mut launched: HashSet<OpId> = HashSet::new();
        let mut capturing: Option<StreamId> = None;
        let bytes_ok = |bytes: u64, problems: &mut Vec<String>, op: &super::Op| {
            if bytes == 0 || bytes > MAX_BYTES {
                problems.push(format!(
                    "op {} '{}' asks for {bytes} bytes; it must be 1..={MAX_BYTES}",
                    op.id.0, op.label
                ));
            }
        };
        for b in &self.buffers {
            if b.bytes == 0 || b.bytes > MAX_BYTES || b.bytes % 4 != 0 {
                problems.push(format!(
                    "buffer '{}' has {} bytes; it must be a multiple of 4 (elements are f32) in 4..={MAX_BYTES}",
                    b.label, b.bytes
                ));
            }
        }
        let buffer_ok = |b: BufferId, device: bool, problems: &mut Vec<String>, op: &super::Op| {
            match self.buffer(b) {
                None => problems.push(format!(
                    "op {} '{}' uses unknown buffer b{} (the program has {} buffers)",
                    op.id.0,
                    op.label,
                    b.0,
                    self.buffers.len()
                )),
                Some(buf) if device && buf.place != Place::Device => problems.push(format!(
                    "op {} '{}' computes on buffer '{}' in {} memory; kernels here read device buffers only",
                    op.id.0, op.label, buf.label, buf.place
                )),
                Some(_) => {}
            }
        };
        for (i, op) in self.ops.iter().enumerate() {
            if capturing.is_some() && !capturable(&op.kind, self) {
                problems.push(format!(
                    "op {} '{}' is issued during a stream capture, which records only kernels, \
                     host functions and event records and waits on created streams; move it \
                     out of the capture",
                    op.id.0, op.label
                ));
            }
            if op.id.0 != i {
                problems.push(format!(
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
                } => {
                    stream_ok(stream, &mut problems, op);
                    if duration_ns == 0 {
                        problems.push(format!(
                            "spin {} '{}' has a zero duration; give it at least a microsecond",
                            op.id.0, op.label
                        ));
                    } else if duration_ns > MAX_SPIN_NS {
                        problems.push(format!(
                            "spin {} '{}' lasts {:.3} s, over the {} s limit; durations are \
                             nanoseconds, was a unit mixed up?",
                            op.id.0,
                            op.label,
                            duration_ns as f64 / 1e9,
                            MAX_SPIN_NS / 1_000_000_000
                        ));
                    }
                    if grid == 0 || grid > MAX_GRID {
                        problems.push(format!(
                            "spin {} '{}' has grid {grid}; it must be 1..={MAX_GRID}",
                            op.id.0, op.label
                        ));
                    }
                    if block == 0 || block > MAX_BLOCK {
                        problems.push(format!(
                            "spin {} '{}' has block {block}; it must be 1..={MAX_BLOCK}",
                            op.id.0, op.label
                        ));
                    }
                }
                OpKind::Copy {
                    stream,
                    src,
                    dst,
                    bytes,
                } => {
                    stream_ok(stream, &mut problems, op);
                    buffer_ok(src, false, &mut problems, op);
                    buffer_ok(dst, false, &mut problems, op);
                    bytes_ok(bytes, &mut problems, op);
                    let small = [src, dst]
                        .iter()
                        .filter_map(|&b| self.buffer(b))
                        .find(|b| b.bytes < bytes);
                    if let Some(b) = small {
                        problems.push(format!(
                            "copy {} '{}' moves {bytes} bytes but buffer '{}' holds {}",
                            op.id.0, op.label, b.label, b.bytes
                        ));
                    }
                    if self.copy_dir(op.id) == Some(CopyDir::H2H) {
                        problems.push(format!(
                            "copy {} '{}' is host to host, which no copy engine does; copy to or from a device buffer",
                            op.id.0, op.label
                        ));
                    }
                }
                OpKind::Add {
                    stream,
                    a,
                    b,
                    out,
                    grid,
                    block,
                } => {
                    stream_ok(stream, &mut problems, op);
                    for x in [a, b, out] {
                        buffer_ok(x, true, &mut problems, op);
                    }
                    if grid == 0 || grid > MAX_GRID || block == 0 || block > MAX_BLOCK {
                        problems.push(format!(
                            "add {} '{}' has <<<{grid},{block}>>>; the grid must be 1..={MAX_GRID} and the block 1..={MAX_BLOCK}",
                            op.id.0, op.label
                        ));
                    }
                }
                OpKind::Record { stream, event } => {
                    stream_ok(stream, &mut problems, op);
                    event_ok(event, &mut problems, op);
                    recorded.insert(event);
                }
                OpKind::Wait { stream, event } => {
                    stream_ok(stream, &mut problems, op);
                    event_ok(event, &mut problems, op);
                    if !recorded.contains(&event) {
                        warnings.push(Warning::WaitBeforeRecord { op: op.id, event });
                    }
                }
                OpKind::HostSync { target } => match target {
                    SyncTarget::Stream(s) => stream_ok(s, &mut problems, op),
                    SyncTarget::Event(e) => {
                        event_ok(e, &mut problems, op);
                        if !recorded.contains(&e) {
                            warnings.push(Warning::SyncBeforeRecord {
                                op: op.id,
                                event: e,
                            });
                        }
                    }
                    SyncTarget::Device => {}
                },
                OpKind::HostFn {
                    stream,
                    duration_ns,
                    ..
                } => {
                    stream_ok(stream, &mut problems, op);
                    if duration_ns == 0 || duration_ns > MAX_SPIN_NS {
                        problems.push(format!(
                            "host fn {} '{}' lasts {duration_ns} ns; it must be 1..={MAX_SPIN_NS}",
                            op.id.0, op.label
                        ));
                    }
                }
                OpKind::Query { target } => match target {
                    SyncTarget::Stream(s) => stream_ok(s, &mut problems, op),
                    SyncTarget::Event(e) => event_ok(e, &mut problems, op),
                    SyncTarget::Device => problems.push(format!(
                        "op {} '{}' queries the device, which has no query call; query a stream \
                         or an event",
                        op.id.0, op.label
                    )),
                },
                OpKind::Api { bytes, .. } => bytes_ok(bytes, &mut problems, op),
                OpKind::AllocAsync { stream, bytes } => {
                    stream_ok(stream, &mut problems, op);
                    bytes_ok(bytes, &mut problems, op);
                }
                OpKind::FreeAsync { stream, alloc } => {
                    stream_ok(stream, &mut problems, op);
                    let is_alloc = alloc < op.id
                        && matches!(
                            self.op(alloc).map(|o| &o.kind),
                            Some(OpKind::AllocAsync { .. })
                        );
                    if !is_alloc {
                        problems.push(format!(
                            "op {} '{}' frees op {}, which is no stream-ordered allocation issued \
                             before it",
                            op.id.0, op.label, alloc.0
                        ));
                    } else if !freed.insert(alloc) {
                        problems.push(format!(
                            "op {} '{}' frees op {} a second time",
                            op.id.0, op.label, alloc.0
                        ));
                    }
                }
                OpKind::BeginCapture { stream } => {
                    stream_ok(stream, &mut problems, op);
                    if self.stream(stream).is_some_and(|s| s.kind.is_builtin()) {
                        problems.push(format!(
                            "op {} '{}' captures a built-in stream; capture a created stream",
                            op.id.0, op.label
                        ));
                    }
                    if capturing.replace(stream).is_some() {
                        problems.push(format!(
                            "op {} '{}' begins a capture inside another; end the first one",
                            op.id.0, op.label
                        ));
                    }
                }
                OpKind::EndCapture { stream } => {
                    if capturing.take() != Some(stream) {
                        problems.push(format!(
                            "op {} '{}' ends a capture of s{} that was not begun",
                            op.id.0, op.label, stream.0
                        ));
                    }
                }
                OpKind::GraphLaunch { stream, graph } => {
                    stream_ok(stream, &mut problems, op);
                    let is_graph = graph < op.id
                        && matches!(
                            self.op(graph).map(|o| &o.kind),
                            Some(OpKind::EndCapture { .. })
                        );
                    if !is_graph {
                        problems.push(format!(
                            "op {} '{}' launches op {}, which is no end of a capture issued before \
                             it",
                            op.id.0, op.label, graph.0
                        ));
                    } else if !launched.insert(graph) {
                        // A later launch stamps records of its own by updating its kernel
                        // nodes (gpu/graphs.rs); anything else in the graph has no such record.
                        let captures = self.captures();
                        let other = self.ops.iter().find(|o| {
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
                            problems.push(format!(
                                "op {} '{}' launches the graph of op {} again, and that graph \
                                 holds op {} '{}': only a graph of kernels, event records and \
                                 waits can be launched more than once (each launch's kernels \
                                 stamp records of their own; that op would not)",
                                op.id.0, op.label, graph.0, o.id.0, o.label
                            ));
                        }
                    }
                }
                OpKind::DeviceSync { .. } => {}
                OpKind::AllReduce { stream, .. } => stream_ok(stream, &mut problems, op),
                OpKind::Elapsed { from, to } => {
                    event_ok(from, &mut problems, op);
                    event_ok(to, &mut problems, op);
                    for e in [from, to] {
                        if e.0 < self.events.len() && !recorded.contains(&e) {
                            problems.push(format!(
                                "op {} '{}' reads the elapsed time of event e{} before any record \
                                 of it; record both events first",
                                op.id.0, op.label, e.0
                            ));
                        }
                    }
                }
            }
        }
        if let Some(s) = capturing {
            let name = self
                .stream(s)
                .map_or(format!("s{}", s.0), |st| st.label.clone());
            problems.push(format!(
                "the capture of stream {name} is never ended; end it with an end-capture op"
            ));
        }
        if problems.is_empty() {
            Ok(warnings)
        } else {
            Err(ProgramError {
                program: self.name.clone(),
                problems,
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
