//! The litmus-style listing of a program: one line per stream, event and op.

use super::{ApiCall, BufferId, EventId, HostFnApi, Op, OpKind, Program, StreamId, SyncTarget};
use std::fmt;

impl fmt::Display for Program {
    /// One line per stream and op, in the style of a litmus test listing.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "program {}", self.name)?;
        for s in &self.streams {
            match s.priority {
                Some(p) => writeln!(f, "  stream {} ({}, priority {p:?})", s.label, s.kind)?,
                None => writeln!(f, "  stream {} ({})", s.label, s.kind)?,
            }
        }
        for e in &self.events {
            writeln!(f, "  event {}", e.label)?;
        }
        for op in &self.ops {
            write!(f, "  {:>3} {:<10} ", op.id.0, op.label)?;
            self.op_line(f, op)?;
        }
        Ok(())
    }
}

impl Program {
    /// The listing of one op, after its id and label. A table: one arm per kind of op, kept
    /// whole on purpose.
    fn op_line(&self, f: &mut fmt::Formatter<'_>, op: &Op) -> fmt::Result {
        let stream = |s: StreamId| {
            self.stream(s)
                .map(|s| s.label.clone())
                .unwrap_or_else(|| format!("s{}", s.0))
        };
        let event = |e: EventId| {
            self.events
                .get(e.0)
                .map(|e| e.label.clone())
                .unwrap_or_else(|| format!("e{}", e.0))
        };
        match op.kind {
            OpKind::Spin {
                stream: s,
                duration_ns,
                grid,
                block,
            } => writeln!(
                f,
                "spin {:.1} µs <<<{grid},{block}>>> on {}",
                duration_ns as f64 / 1e3,
                stream(s)
            )?,
            OpKind::Record {
                stream: s,
                event: e,
            } => writeln!(f, "record {} on {}", event(e), stream(s))?,
            OpKind::Wait {
                stream: s,
                event: e,
            } => writeln!(f, "wait {} on {}", event(e), stream(s))?,
            OpKind::HostSync { target } => match target {
                SyncTarget::Stream(s) => writeln!(f, "host sync {}", stream(s))?,
                SyncTarget::Event(e) => writeln!(f, "host sync {}", event(e))?,
                SyncTarget::Device => writeln!(f, "host sync device")?,
            },
            OpKind::DeviceSync { device } => writeln!(f, "host syncs gpu{device}")?,
            OpKind::AllReduce { stream: s, buffer } => writeln!(
                f,
                "NCCL all-reduce (sum) of {} on {}",
                self.buffer(buffer).map_or("?".into(), |b| b.label.clone()),
                stream(s)
            )?,
            OpKind::Elapsed { from, to } => {
                writeln!(f, "host reads elapsed time {} → {}", event(from), event(to))?
            }
            OpKind::HostFn {
                stream: s,
                duration_ns,
                api,
            } => writeln!(
                f,
                "host fn {:.1} µs via {} on {}",
                duration_ns as f64 / 1e3,
                match api {
                    HostFnApi::LaunchHostFunc => "cuLaunchHostFunc",
                    HostFnApi::StreamAddCallback => "cuStreamAddCallback",
                },
                stream(s)
            )?,
            OpKind::Query { target } => match target {
                SyncTarget::Stream(s) => writeln!(f, "host queries {}", stream(s))?,
                SyncTarget::Event(e) => writeln!(f, "host queries {}", event(e))?,
                SyncTarget::Device => writeln!(f, "host queries device")?,
            },
            OpKind::Api { call, bytes } => writeln!(f, "{}", api_line(call, bytes))?,
            OpKind::AllocAsync { stream: s, bytes } => {
                writeln!(f, "alloc async {} on {}", size(bytes), stream(s))?
            }
            OpKind::FreeAsync { stream: s, alloc } => {
                writeln!(f, "free async {} on {}", self.label(alloc), stream(s))?
            }
            OpKind::BeginCapture { stream: s } => writeln!(f, "begin capture {}", stream(s))?,
            OpKind::EndCapture { stream: s } => {
                writeln!(f, "end capture {} and instantiate", stream(s))?
            }
            OpKind::GraphLaunch { stream: s, graph } => {
                writeln!(f, "launch graph of {} on {}", self.label(graph), stream(s))?
            }
            OpKind::Copy {
                stream: s,
                src,
                dst,
                bytes,
            } => writeln!(
                f,
                "copy {} {} {} → {} on {}",
                self.copy_dir(op.id).map(|d| d.name()).unwrap_or("?"),
                size(bytes),
                self.buffer_line(src),
                self.buffer_line(dst),
                stream(s)
            )?,
            OpKind::Add {
                stream: s,
                a,
                b,
                out,
                grid,
                block,
            } => writeln!(
                f,
                "add {} = {} + {} <<<{grid},{block}>>> on {}",
                self.buffer_line(out),
                self.buffer_line(a),
                self.buffer_line(b),
                stream(s)
            )?,
        }
        Ok(())
    }

    /// "w0 (device)".
    fn buffer_line(&self, id: BufferId) -> String {
        self.buffer(id)
            .map(|b| format!("{} ({})", b.label, b.place))
            .unwrap_or_else(|| format!("b{}", id.0))
    }
}

/// "1.0 MiB", "512 B".
pub fn size(bytes: u64) -> String {
    if bytes >= 1 << 20 {
        format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64)
    } else if bytes >= 1 << 10 {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    } else {
        format!("{bytes} B")
    }
}

fn api_line(call: ApiCall, bytes: u64) -> String {
    format!("host calls {} {}", call.name(), size(bytes))
}
