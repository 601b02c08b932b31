//! The program's own orders a trace records beside its ops: event waits and host syncs with the
//! stream and event they name, and each stream's kind and priority.
//!
//! CUPTI's activity API records them (`crates/inject/src/inject.rs` writes them for `stream-litmus trace`):
//! a **synchronization** record per `cudaStreamWaitEvent`, `cudaEventSynchronize`,
//! `cudaStreamSynchronize` and context sync, with its stream and event; a **CUDA event** record
//! per `cudaEventRecord`, with its stream and event; a **stream** record per stream created, with
//! its flags and priority. The PyTorch profiler writes the first kind as `cuda_sync` events where
//! it was asked to (`experimental_config=_ExperimentalConfig(enable_cuda_sync_events=True)`),
//! with the recording stream and the record's correlation already joined (`wait_on_stream`,
//! `wait_on_cuda_event_record_corr_id`); some builds leave those out (`-1`).
//!
//! A wait is joined here to the record it waits for: the last record of its event, in its
//! process, whose call came before the wait's (correlation ids count up within a process, and a
//! wait waits for the most recent record), and to the host calls of both, so that the model can
//! say which ops the wait orders (`behind.rs`). What is missing stays unknown: a wait whose
//! record the trace lacks has no source, a stream without a record has no kind.

use crate::program::StreamKind;
use std::collections::HashMap;

/// A stream's kind from the flag word the trace writes (CUPTI's stream record: `legacy_default`
/// for the NULL stream, `blocking` for `cudaStreamDefault`, `non_blocking`).
pub(super) fn stream_kind(word: &str) -> Option<StreamKind> {
    match word {
        "legacy_default" => Some(StreamKind::LegacyNull),
        "blocking" => Some(StreamKind::Blocking),
        "non_blocking" => Some(StreamKind::NonBlocking),
        _ => None,
    }
}

/// A stream as the trace describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamInfo {
    /// None where the record's flag is unknown.
    pub kind: Option<StreamKind>,
    /// The priority it was created with (lower numbers run first); the default is 0.
    pub priority: Option<i32>,
    /// The correlation of the call that created it, where recorded: streams of one process in
    /// order of creation pick their hardware queues in turn.
    pub created: Option<i64>,
}

/// What a recorded sync waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SyncKind {
    /// `cudaStreamWaitEvent`: the stream's later work waits for the event's record.
    StreamWaitEvent,
    /// `cudaEventSynchronize`: the host waits for the event's record.
    EventSync,
    /// `cudaStreamSynchronize`: the host waits for the stream's work.
    StreamSync,
    /// `cudaDeviceSynchronize`, `cuCtxSynchronize`: the host waits for all work of the context.
    ContextSync,
}

impl SyncKind {
    /// From the name CUPTI's record and the profiler give it.
    pub(super) fn of(name: &str) -> Option<SyncKind> {
        match name {
            "Stream Wait Event" => Some(SyncKind::StreamWaitEvent),
            "Event Sync" => Some(SyncKind::EventSync),
            "Stream Sync" => Some(SyncKind::StreamSync),
            "Context Sync" => Some(SyncKind::ContextSync),
            _ => None,
        }
    }

    /// Whether a call of this name is this kind of sync. CUPTI records polls as syncs too
    /// (`cudaEventQuery` as an "Event Sync", found on a DDP recording where 9 such records
    /// "returned" before the work they named had ended): only a call that waits is taken.
    pub(super) fn waits_in(self, call: &str) -> bool {
        match self {
            SyncKind::StreamWaitEvent => call.contains("StreamWaitEvent"),
            SyncKind::EventSync => call.contains("EventSynchronize"),
            SyncKind::StreamSync => call.contains("StreamSynchronize"),
            SyncKind::ContextSync => call.contains("Synchronize"),
        }
    }
}

/// A host call's place on its thread: what "issued before" compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallSpan {
    pub tid: i64,
    pub begin_ns: i64,
    pub end_ns: i64,
}

impl CallSpan {
    /// Whether this call was surely made before `other`: earlier on the same thread, or returned
    /// before the other began (calls of two threads that overlap are not ordered).
    pub fn before(&self, other: &CallSpan) -> bool {
        match self.tid == other.tid {
            true => self.begin_ns < other.begin_ns,
            false => self.end_ns <= other.begin_ns,
        }
    }
}

/// The event record a wait or an event sync waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventSource {
    /// The stream the event was recorded on.
    pub stream: u64,
    /// The `cudaEventRecord` call, where the trace holds it: the work of `stream` issued before
    /// it is what the wait waits for.
    pub record: Option<CallSpan>,
    /// The record among the file's ([`TraceFile::records`]), where its call is in the trace.
    ///
    /// [`TraceFile::records`]: super::events::TraceFile::records
    pub id: Option<usize>,
}

/// A `cudaEventRecord` joined to its call: the program behind the trace records an event there
/// (`trace/behind.rs`). Each record is an event of its own to the model: a wait is joined to the
/// record it waits for here, so what re-recording one event would change is already decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordCall {
    pub pid: i64,
    pub stream: u64,
    pub call: CallSpan,
}

/// One recorded sync, joined to its calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncCall {
    pub kind: SyncKind,
    pub pid: i64,
    /// The stream that waits (`cudaStreamWaitEvent`) or is waited for (`cudaStreamSynchronize`).
    pub stream: Option<u64>,
    /// The call, on the host clock (its thread where the trace joins it to its call; else the
    /// record's span with no thread).
    pub call: CallSpan,
    /// For an event wait or event sync: the record it waits for, where the trace tells.
    pub source: Option<EventSource>,
}

/// A sync as read, before it is joined.
pub(super) struct RawSync {
    pub(super) kind: SyncKind,
    pub(super) pid: Option<i64>,
    pub(super) stream: Option<i64>,
    pub(super) correlation: Option<i64>,
    pub(super) event: Option<i64>,
    /// The profiler's join, where it made one.
    pub(super) wait_on_stream: Option<i64>,
    pub(super) record_correlation: Option<i64>,
}

/// A `cudaEventRecord` as read: its process, stream, event and call's correlation.
pub(super) struct RawRecord {
    pub(super) pid: i64,
    pub(super) stream: i64,
    pub(super) event: i64,
    pub(super) correlation: i64,
}

/// What the reader gathers of syncs, records and streams.
#[derive(Default)]
pub(super) struct SyncRecords {
    pub(super) syncs: Vec<RawSync>,
    pub(super) records: Vec<RawRecord>,
    pub(super) streams: HashMap<(i64, u64), StreamInfo>,
    /// The stream each host-function call named, by (process, correlation).
    pub(super) host_fn_streams: HashMap<(i64, i64), u64>,
}

/// Joins each sync to its call and each wait to the record it waits for. `call` gives the
/// outermost call of a (process, correlation) and its name; `process_of` the only process whose
/// calls hold a correlation (a profiler's trace names no process on its syncs). A sync whose call
/// the trace lacks, or whose call does not wait (a query), is left out.
pub(super) fn join(
    raw: SyncRecords,
    call: impl Fn(i64, i64) -> Option<(CallSpan, crate::trace::names::Name)>,
    process_of: impl Fn(i64) -> Option<i64>,
) -> Joined {
    let span = |pid, correlation| call(pid, correlation).map(|c| c.0);
    // Each event's records by process, in correlation order.
    let mut by_event: HashMap<(i64, i64), Vec<(i64, i64)>> = HashMap::new();
    for r in &raw.records {
        (by_event.entry((r.pid, r.event)).or_default()).push((r.correlation, r.stream));
    }
    for list in by_event.values_mut() {
        list.sort_unstable();
    }
    let mut records = Records::default();
    for r in &raw.records {
        records.at(r.pid, r.stream, r.correlation, &span);
    }
    let mut syncs: Vec<SyncCall> = Vec::with_capacity(raw.syncs.len());
    for s in raw.syncs {
        let Some(pid) = s.pid.or_else(|| s.correlation.and_then(&process_of)) else {
            continue;
        };
        let stream = s.stream.and_then(|v| u64::try_from(v).ok());
        let Some((call, name)) = s.correlation.and_then(|c| call(pid, c)) else {
            continue;
        };
        if !s.kind.waits_in(&name) {
            continue;
        }
        let waits = matches!(s.kind, SyncKind::StreamWaitEvent | SyncKind::EventSync);
        let source = match (s.wait_on_stream, s.record_correlation) {
            _ if !waits => None,
            // The profiler's own join.
            (Some(w), Some(r)) if w >= 0 && r >= 0 => Some(EventSource {
                stream: w as u64,
                record: span(pid, r),
                id: records.at(pid, w, r, &span),
            }),
            // The last record of its event before the wait.
            _ => s.event.zip(s.correlation).and_then(|(e, c)| {
                let list = by_event.get(&(pid, e))?;
                let at = list.partition_point(|&(rc, _)| rc < c);
                let (rc, stream) = *list.get(at.checked_sub(1)?)?;
                Some(EventSource {
                    stream: u64::try_from(stream).ok()?,
                    record: span(pid, rc),
                    id: records.by_call.get(&(pid, rc)).copied(),
                })
            }),
        };
        syncs.push(SyncCall {
            kind: s.kind,
            pid,
            stream,
            call,
            source,
        });
    }
    syncs.sort_by_key(|s| (s.call.begin_ns, s.pid));
    Joined {
        syncs,
        records: records.found,
        streams: raw.streams,
    }
}

/// Every record whose call the trace holds, by (process, correlation): the acts of the program
/// behind the trace, and what a wait's source points at.
#[derive(Default)]
struct Records {
    found: Vec<RecordCall>,
    by_call: HashMap<(i64, i64), usize>,
}

impl Records {
    /// The record of `correlation` in `pid` on `stream`, added where its call is in the trace.
    fn at(
        &mut self,
        pid: i64,
        stream: i64,
        correlation: i64,
        span: &dyn Fn(i64, i64) -> Option<CallSpan>,
    ) -> Option<usize> {
        if let Some(&i) = self.by_call.get(&(pid, correlation)) {
            return Some(i);
        }
        let (stream, call) = (u64::try_from(stream).ok()?, span(pid, correlation)?);
        self.found.push(RecordCall { pid, stream, call });
        self.by_call
            .insert((pid, correlation), self.found.len() - 1);
        Some(self.found.len() - 1)
    }
}

/// What [`join`] makes of a file's syncs, records and streams.
pub(super) struct Joined {
    pub(super) syncs: Vec<SyncCall>,
    pub(super) records: Vec<RecordCall>,
    pub(super) streams: HashMap<(i64, u64), StreamInfo>,
}
