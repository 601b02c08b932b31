//! Taking a profiler trace's events one at a time as serde hands them over: what each kind of
//! event keeps (GPU ops, CUDA calls, annotated ranges, syncs, a process's recorded environment,
//! its event records and streams), every record counted against what a file may keep
//! (`kept.rs`), every timestamp and duration checked. `kineto.rs` joins what was kept into a
//! [`TraceFile`](super::events::TraceFile).

use super::chunked::Chunked;
use super::error::EventError;
use super::events::{DriverEnv, GpuKind, HostRange, RawCall};
use super::kept::{Kept, Record};
use super::names::{clip, clip_at, Names};
use super::number::shown_us;
use super::shapes::{Args, DistributedInfo, Event, ENV_VALUE_CHARS};
use super::syncs::{stream_kind, RawRecord, RawSync, StreamInfo, SyncKind, SyncRecords};
use crate::border::limits::MAX_STAMP_NS;
use std::collections::{HashMap, HashSet};

/// The longest duration an event may have, and the most a trace's events may lie apart: a day. A
/// profiled run is minutes; anything longer is a damaged number.
pub const MAX_DURATION_US: f64 = 86_400e6;

/// A GPU op as read, before it is joined to its call.
pub(super) struct RawOp {
    pub(super) kind: GpuKind,
    pub(super) name: crate::trace::names::Name,
    pub(super) device: i64,
    pub(super) stream: i64,
    pub(super) start_ns: i64,
    pub(super) end_ns: i64,
    pub(super) correlation: Option<i64>,
    pub(super) process: Option<i64>,
    pub(super) bytes: Option<i64>,
    pub(super) blocks_per_sm: Option<f64>,
}

/// Where and when a host event ran: its process, thread and span in ns.
#[derive(Clone, Copy)]
struct HostSpan {
    pid: i64,
    tid: i64,
    begin_ns: i64,
    end_ns: i64,
}

/// What has been kept of a file so far.
#[derive(Default)]
pub(super) struct Collector {
    pub(super) names: Names,
    pub(super) kept: Kept,
    pub(super) ops: Chunked<RawOp>,
    pub(super) calls: Chunked<RawCall>,
    pub(super) ranges: Chunked<HostRange>,
    pub(super) events: u64,
    pub(super) sub_micro: bool,
    pub(super) saw_events: bool,
    pub(super) kineto: bool,
    pub(super) info: DistributedInfo,
    pub(super) env: HashMap<i64, DriverEnv>,
    pub(super) syncs: SyncRecords,
    /// The processes whose syncs were recorded (`stream-litmus trace` says so per process).
    pub(super) sync_pids: HashSet<i64>,
    /// Why `split.rs` stopped the reading, with the event it stopped at.
    pub(super) stopped: Option<EventError>,
}

impl Collector {
    fn intern(&mut self, name: &str) -> Result<crate::trace::names::Name, EventError> {
        let events = self.events;
        (self.names.intern(name)).map_err(|full| EventError::Names { events, full })
    }

    /// Whether [`Collector::take`] does more with `e` than count it: a metadata event, or a
    /// complete one (`"ph": "X"`) of a category read. Decided on the event alone, so that the
    /// threads that parse events (`split.rs`) drop the others before they reach the collector.
    pub(super) fn wanted(e: &Event) -> bool {
        match e.ph.as_deref() {
            Some("M") => true,
            Some("X") => matches!(
                e.cat.as_deref(),
                Some(
                    "kernel"
                        | "gpu_memcpy"
                        | "gpu_memset"
                        | "cuda_runtime"
                        | "cuda_driver"
                        | "user_annotation"
                        | "cpu_op"
                        | "cuda_sync"
                )
            ),
            _ => false,
        }
    }

    /// Takes one event, counted; an error message for a damaged one.
    pub(super) fn take(&mut self, e: Event) -> Result<(), EventError> {
        self.events += 1;
        if !Collector::wanted(&e) {
            return Ok(());
        }
        if e.ph.as_deref() == Some("M") {
            return self.take_metadata(e);
        }
        let cat = e.cat.as_deref().unwrap_or_default();
        let name = e.name.as_deref().unwrap_or_default();
        let events = self.events;
        let which = || format!("event {events} ({cat} `{}`)", clip(name));
        let (begin_ns, end_ns) = self.span(e.ts, e.dur, &which)?;
        let args = e.args.unwrap_or_default();
        if cat == "cuda_sync" {
            return self.take_sync(name, args);
        }
        let host = HostSpan {
            pid: e.pid.0.unwrap_or(0),
            tid: e.tid.0.unwrap_or(0),
            begin_ns,
            end_ns,
        };
        match GpuKind::of(cat, name) {
            Some(kind) => self.take_op(kind, name, &args, host, &which),
            None => self.take_host(cat, name, &args, host),
        }
    }

    /// A GPU op (a kernel, a memcpy, a memset) on its device and stream.
    fn take_op(
        &mut self,
        kind: GpuKind,
        name: &str,
        args: &Args,
        at: HostSpan,
        which: &dyn Fn() -> String,
    ) -> Result<(), EventError> {
        let (Some(device), Some(stream)) = (args.device.0, args.stream.0) else {
            return Err(EventError::NoStream { which: which() });
        };
        if !(0..=i64::from(u32::MAX)).contains(&device) || stream < 0 {
            return Err(EventError::BadStream {
                which: which(),
                device,
                stream,
            });
        }
        let raw = std::mem::size_of::<RawOp>();
        self.kept.keep(Record::Op { raw }, self.events)?;
        let name = self.intern(name)?;
        self.ops.push(RawOp {
            kind,
            name,
            device,
            stream,
            start_ns: at.begin_ns,
            end_ns: at.end_ns,
            correlation: args.correlation.0,
            process: args.process.0,
            bytes: args.bytes.0,
            blocks_per_sm: args.blocks_per_sm.0,
        });
        Ok(())
    }

    /// A host range (`user_annotation`, `cpu_op`) or a CUDA call (`cuda_runtime`,
    /// `cuda_driver`).
    fn take_host(
        &mut self,
        cat: &str,
        name: &str,
        args: &Args,
        at: HostSpan,
    ) -> Result<(), EventError> {
        if matches!(cat, "user_annotation" | "cpu_op") {
            // A PyTorch op (`aten::div_`) is a host range like a `record_function`: the
            // kernels it launched are those whose call it holds, on its thread (`in`).
            self.kept.keep(Record::Range, self.events)?;
            let name = self.intern(name)?;
            self.ranges.push(HostRange {
                name,
                pid: at.pid,
                tid: at.tid,
                begin_ns: at.begin_ns,
                end_ns: at.end_ns,
            });
        } else {
            self.kept.keep(Record::Call, self.events)?;
            let name = self.intern(name)?;
            self.calls.push(RawCall {
                name,
                pid: at.pid,
                tid: at.tid,
                begin_ns: at.begin_ns,
                end_ns: at.end_ns,
                correlation: args.correlation.0,
            });
        }
        Ok(())
    }

    /// An event's span in ns from its `ts` and `dur` in µs, checked.
    fn span(
        &mut self,
        ts: Option<f64>,
        dur: Option<f64>,
        which: &dyn Fn() -> String,
    ) -> Result<(i64, i64), EventError> {
        let ts = ts.ok_or_else(|| EventError::NoTs { which: which() })?;
        let dur = dur.ok_or_else(|| EventError::NoDur { which: which() })?;
        if !(dur.is_finite() && dur >= 0.0) {
            return Err(EventError::BadDuration {
                which: which(),
                us: shown_us(dur),
            });
        }
        if dur > MAX_DURATION_US {
            return Err(EventError::OverADay {
                which: which(),
                us: shown_us(dur.round()),
            });
        }
        let limit = MAX_STAMP_NS as f64;
        let begin = ts * 1e3;
        if !(begin.is_finite() && (0.0..limit).contains(&begin)) {
            return Err(EventError::AbsurdTime {
                which: which(),
                us: shown_us(ts),
            });
        }
        if ts.fract() != 0.0 {
            self.sub_micro = true;
        }
        let begin_ns = begin.round() as i64;
        Ok((begin_ns, begin_ns + (dur * 1e3).round() as i64))
    }

    /// A metadata event: a process's recorded environment (`process_env`), an event record
    /// (`cuda_event_record`), a stream (`cuda_stream`) or a host function's stream
    /// (`host_fn_stream`), as `stream-litmus trace` writes them.
    fn take_metadata(&mut self, e: Event) -> Result<(), EventError> {
        let pid = e.pid.0.unwrap_or(0);
        let args = e.args.unwrap_or_default();
        let process = args.process.0.unwrap_or(pid);
        match e.name.as_deref() {
            Some("process_env") => {}
            Some("process_records") => {
                if args.recorded_syncs == Some(true) {
                    self.sync_pids.insert(process);
                }
                return Ok(());
            }
            Some("cuda_event_record") => {
                let (Some(stream), Some(event), Some(correlation)) =
                    (args.stream.0, args.event.0, args.correlation.0)
                else {
                    return Ok(());
                };
                self.kept.keep(Record::Sync, self.events)?;
                self.syncs.records.push(RawRecord {
                    pid: process,
                    stream,
                    event,
                    correlation,
                });
                return Ok(());
            }
            Some("host_fn_stream") => {
                let (Some(correlation), Some(stream)) = (
                    args.correlation.0,
                    args.stream.0.and_then(|s| u64::try_from(s).ok()),
                ) else {
                    return Ok(());
                };
                self.kept.keep(Record::Sync, self.events)?;
                self.syncs
                    .host_fn_streams
                    .insert((process, correlation), stream);
                return Ok(());
            }
            Some("cuda_stream") => {
                let Some(stream) = args.stream.0.and_then(|s| u64::try_from(s).ok()) else {
                    return Ok(());
                };
                self.kept.keep(Record::Sync, self.events)?;
                let info = StreamInfo {
                    kind: args.flag.as_deref().and_then(stream_kind),
                    priority: args.priority.0.and_then(|p| i32::try_from(p).ok()),
                    created: args.correlation.0,
                };
                self.syncs.streams.insert((process, stream), info);
                return Ok(());
            }
            _ => return Ok(()),
        }
        let env = args.env.unwrap_or_default();
        let keep = |v: Option<String>| v.map(|v| clip_at(&v, ENV_VALUE_CHARS));
        self.env.insert(
            pid,
            DriverEnv {
                max_connections: keep(env.max_connections),
                module_loading: keep(env.module_loading),
                launch_blocking: keep(env.launch_blocking),
            },
        );
        Ok(())
    }

    /// A sync (`cuda_sync`): its kind by name, its stream, event and the profiler's join.
    fn take_sync(&mut self, name: &str, args: Args) -> Result<(), EventError> {
        let Some(kind) = SyncKind::of(name) else {
            return Ok(());
        };
        self.kept.keep(Record::Sync, self.events)?;
        self.syncs.syncs.push(RawSync {
            kind,
            pid: args.process.0,
            stream: args.stream.0,
            correlation: args.correlation.0,
            event: args.event.0,
            wait_on_stream: args.wait_on_stream.0,
            record_correlation: args.wait_on_cuda_event_record_corr_id.0,
        });
        Ok(())
    }
}
