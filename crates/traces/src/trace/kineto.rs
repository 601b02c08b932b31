//! Reading the PyTorch profiler's trace (Kineto's Chrome-trace JSON, `.json` or `.json.gz`).
//!
//! The file is streamed: `split.rs` takes `traceEvents` out one event at a time, each parsed
//! from memory, and the collector keeps only what a verdict needs (GPU ops, the CUDA calls that issued them, annotated ranges), with names
//! interned, so a trace of hundreds of MB needs memory for its GPU ops, not for its text. The
//! bytes pass through the same counting reader as results files ([`Guarded`]: a read limit, a
//! longest string, a longest array), so a gzip bomb or a damaged file ends with a message.
//!
//! Timestamps are microseconds with three decimals in recent profilers (`4731592969071.428`);
//! read as f64 and rounded to ns they are exact to within 2 ns at today's magnitudes, far below
//! the timer step the judging allows (`tolerance.rs`).

use super::chunked::{sort_stable_by_key, Chunked};
use super::collector::{Collector, RawOp, MAX_DURATION_US};
use super::error::{EventError, TraceError};
use super::events::{Before, Call, GpuOp, RawCall, TraceFile};
use super::number::Num;
use super::shapes::Event;
use super::split::Split;
use crate::border::bounded_json::Guarded;
use crate::border::error::shortened;
use crate::border::limits::read_limit;
use crate::border::read_ahead::ReadAhead;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::cell::RefCell;
use std::fmt;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

/// Reads one trace file. Errors name the file and say what to do.
pub fn read(path: &Path) -> Result<TraceFile, TraceError> {
    let shown = crate::border::shown::path(path);
    let fail = |why: String| TraceError::File {
        path: shown.clone(),
        why,
    };
    let file = crate::border::input_file::open_regular(path).map_err(|e| fail(e.to_string()))?;
    let mut buffered = BufReader::with_capacity(1 << 16, file);
    let gz = buffered
        .fill_buf()
        .map_err(|e| fail(e.to_string()))?
        .starts_with(&[0x1f, 0x8b]);
    let reader: Box<dyn Read + Send> = match gz {
        true => Box::new(flate2::read::MultiGzDecoder::new(buffered)),
        false => Box::new(buffered),
    };
    let mut plain = BufReader::with_capacity(1 << 16, reader);
    let unzip = |e: std::io::Error| match gz {
        true => fail(format!(
            "{e} (reading it as gzip: the file is cut short or not gzip data)"
        )),
        false => fail(e.to_string()),
    };
    match first_byte(&mut plain).map_err(unzip)? {
        None => return Err(fail("it is empty".into())),
        Some(b'[') => return Err(fail(OTHER_TOOL.into())),
        Some(b'{') => {}
        Some(_) => {
            return Err(fail(
                "not JSON: a PyTorch profiler trace is a JSON object".into(),
            ))
        }
    }
    // Inflated and counted on a thread of its own, while this one cuts and parses the events.
    let ahead =
        ReadAhead::new(Guarded::new(plain, read_limit())).map_err(|e| fail(e.to_string()))?;
    let text = BufReader::with_capacity(1 << 16, ahead);
    let collector = RefCell::new(Collector::default());
    let split = BufReader::with_capacity(1 << 16, Split::new(text, &collector));
    let mut de = serde_json::Deserializer::from_reader(split);
    let outcome = de
        .deserialize_map(TopVisitor(&collector))
        .and_then(|()| de.end());
    if let Err(e) = outcome {
        let stopped = collector.borrow_mut().stopped.take();
        let why = stopped.map_or_else(|| describe(&e, gz), |s| stopped_at(&s, &e, gz));
        return Err(fail(why));
    }
    collector.into_inner().finish(shown)
}

const OTHER_TOOL: &str = "a JSON array of events: a Chrome trace from another tool; stream-litmus \
    reads the PyTorch profiler's traces (`prof.export_chrome_trace(...)`), an object with \
    `traceEvents`";

fn first_byte(r: &mut impl BufRead) -> std::io::Result<Option<u8>> {
    loop {
        let buf = r.fill_buf()?;
        if buf.is_empty() {
            return Ok(None);
        }
        match buf.iter().position(|b| !b.is_ascii_whitespace()) {
            Some(i) => return Ok(Some(buf[i])),
            None => {
                let n = buf.len();
                r.consume(n);
            }
        }
    }
}

/// Why `split.rs` stopped the reading, in an event: a gzip error said as such. `why` is already
/// bounded where it was made (serde's message shortened, names clipped): shortening it again
/// would cut the count of what was left out (a 5 MB value shown as "91 more bytes left out").
fn stopped_at(why: &EventError, e: &serde_json::Error, gz: bool) -> String {
    match gz && e.io_error_kind() != Some(std::io::ErrorKind::Other) {
        true => format!("{why} (reading it as gzip: the file is cut short or not gzip data)"),
        false => why.to_string(),
    }
}

/// serde_json's error with its place, and a word on what it likely means.
fn describe(e: &serde_json::Error, gz: bool) -> String {
    let at = format!("line {} column {}", e.line(), e.column());
    match e.classify() {
        serde_json::error::Category::Eof => format!(
            "the trace ends in the middle ({at}): it was cut short (a profiler killed while \
             writing, an interrupted copy); record it again"
        ),
        // Our own refusals (the read limit, a string or array too long) are `Other`; gzip's
        // are the data's.
        serde_json::error::Category::Io
            if gz && e.io_error_kind() != Some(std::io::ErrorKind::Other) =>
        {
            format!("{e} (reading it as gzip: the file is cut short or not gzip data)")
        }
        // A value of the wrong type is quoted whole by serde: a short prefix of it is enough.
        _ => shortened(&e.to_string()),
    }
}

impl Collector {
    /// Links each GPU op to the call that issued it and checks that the file is a GPU trace.
    fn finish(mut self, path: String) -> Result<TraceFile, TraceError> {
        self.check(&path)?;
        // A thread's calls in order: the one right after `cudaStreamWaitEvent` may have waited.
        let mut calls = std::mem::take(&mut self.calls).into_vec();
        sort_stable_by_key(&mut calls, |c| (c.pid, c.tid, c.begin_ns));
        let device_syncs = super::events::device_syncs(&calls);
        let joins = Correlations::of(&calls);
        let mut sync_recorded = std::mem::take(&mut self.sync_pids);
        let mut raw_syncs = std::mem::take(&mut self.syncs);
        let host_fn_calls =
            super::host_fns::enqueued(&calls, &std::mem::take(&mut raw_syncs.host_fn_streams));
        let profiler_syncs = sync_recorded.is_empty() && !raw_syncs.syncs.is_empty();
        let calls = &calls;
        let call = |pid, k| {
            joins.call(pid, k).map(|i| {
                let span = super::syncs::CallSpan {
                    tid: calls[i].tid,
                    begin_ns: calls[i].begin_ns,
                    end_ns: calls[i].end_ns,
                };
                (span, calls[i].name.clone())
            })
        };
        let super::syncs::Joined {
            syncs,
            records,
            streams,
        } = super::syncs::join(raw_syncs, call, |k| joins.only(k));
        if profiler_syncs {
            sync_recorded.extend(syncs.iter().map(|s| s.pid));
        }
        let (mut ops, unjoined) = join_ops(std::mem::take(&mut self.ops), calls, &joins);
        drop(joins);
        // An outer range before the ranges it holds, also where they begin at one instant (µs
        // stamps) and the inner one was written first: pairing host functions counts outermost
        // ranges.
        let mut ranges = std::mem::take(&mut self.ranges).into_vec();
        sort_stable_by_key(&mut ranges, |r| (r.begin_ns, std::cmp::Reverse(r.end_ns)));
        let (runs, host_fn_note) = super::host_fns::runs(calls, &ranges);
        ops.extend(runs);
        ops.shrink_to_fit();
        sort_stable_by_key(&mut ops, |o| (o.start_ns, o.end_ns));
        let host_fn_pending = super::host_fns::pending(&ops);
        let small = |n: Num| n.0.and_then(|v| u32::try_from(v).ok());
        Ok(TraceFile {
            path,
            run: None,
            rank: small(self.info.rank),
            world: small(self.info.world_size),
            ops,
            ranges,
            sub_micro: self.sub_micro,
            host_fn_note,
            host_fn_pending,
            mangled: self.names.into_mangled(),
            env: self.env,
            device_syncs,
            syncs,
            records,
            host_fn_calls,
            sync_recorded,
            streams,
            join_note: (unjoined > 0).then(|| {
                format!(
                    "{unjoined} GPU ops have no call: their correlation ids occur in the calls of \
                     several processes and the trace does not say which process issued them \
                     (record it again with this version of `stream-litmus trace`, which writes \
                     each op's process)"
                )
            }),
        })
    }

    /// That the file is a GPU trace of one day at most.
    fn check(&self, path: &str) -> Result<(), TraceError> {
        let fail = |why: String| TraceError::File {
            path: path.into(),
            why,
        };
        if !self.saw_events {
            return Err(fail(
                "no `traceEvents`: not a Chrome trace (the PyTorch profiler writes one with \
                 `prof.export_chrome_trace(...)`)"
                    .into(),
            ));
        }
        let begins = (self.ops.iter().map(|o| o.start_ns))
            .chain(self.calls.iter().map(|c| c.begin_ns))
            .chain(self.ranges.iter().map(|r| r.begin_ns));
        if let (Some(lo), Some(hi)) = (begins.clone().min(), begins.max()) {
            if hi - lo > (MAX_DURATION_US * 1e3) as i64 {
                return Err(fail(format!(
                    "its events lie {:.1} days apart (from {} to {} µs), more than the \
                     day a trace may span: the trace is damaged, or two traces were joined",
                    (hi - lo) as f64 / 86_400e9,
                    lo / 1000,
                    hi / 1000
                )));
            }
        }
        if self.ops.is_empty() {
            let tool = match self.kineto {
                true => "",
                false => " (it has no `schemaVersion` either: a Chrome trace from another tool?)",
            };
            return Err(fail(format!(
                "no GPU events (kernels, memcpys, memsets){tool}: was the profiler run with \
                 ProfilerActivity.CUDA?"
            )));
        }
        Ok(())
    }
}

/// Each GPU op joined to the call that issued it (calls sorted by process, thread, begin), and
/// how many could not be, their correlation held by several processes.
fn join_ops(raw: Chunked<RawOp>, calls: &[RawCall], joins: &Correlations) -> (Vec<GpuOp>, usize) {
    let (after_wait, waited) = super::events::event_waits(calls);
    let before = super::events::previous_calls(calls);
    let file_pid = calls.first().map(|c| c.pid).unwrap_or(0);
    let mut unjoined = 0usize;
    let call_of = |i: usize| {
        let c = &calls[i];
        Call {
            // At most 2^31 records are kept (`trace::max_kept`): every call's place fits.
            id: i as u32,
            name: c.name.clone(),
            begin_ns: c.begin_ns,
            end_ns: c.end_ns,
            tid: c.tid,
            after_wait: after_wait[i],
            waited: waited[i],
            before: before[i].map(|b| &calls[b as usize]).map(|b| Before {
                name: b.name.clone(),
                begin_ns: b.begin_ns,
                end_ns: b.end_ns,
            }),
        }
    };
    let mut ops = Vec::with_capacity(raw.len());
    ops.extend(raw.into_items().map(|o| {
        let process = o.process.or_else(|| {
            let k = o.correlation?;
            let only = joins.only(k);
            unjoined += usize::from(only.is_none() && joins.held(k));
            only
        });
        let call = (o.correlation.zip(process))
            .and_then(|(k, p)| joins.call(p, k))
            .map(call_of);
        GpuOp {
            kind: o.kind,
            name: o.name,
            device: o.device as u32,
            stream: o.stream as u64,
            start_ns: o.start_ns,
            end_ns: o.end_ns,
            pid: process.unwrap_or(file_pid),
            call,
            bytes: o.bytes.and_then(|b| u64::try_from(b).ok()),
            blocks_per_sm: (o.blocks_per_sm)
                .filter(|b| (0.0..=1e7).contains(b))
                .map(|b| (b * 100.0).round() as u32),
        }
    }));
    (ops, unjoined)
}

/// The outermost call of each correlation of each process (a runtime call around its driver
/// call). Correlation ids count from 1 in every process: an op is joined to a call of its own
/// process, where the trace names it (`trace --` recordings); where it does not (a profiler's
/// trace of one process), to the only process whose calls hold its correlation, and to none
/// where several do.
///
/// Kept as one sorted list (correlation, process, call): a third of the two hash maps it
/// replaced (13 MB for a 200 MB trace's 150,000 calls).
struct Correlations {
    by_call: Vec<(i64, i64, usize)>,
}

impl Correlations {
    fn of(calls: &[RawCall]) -> Correlations {
        let mut by_call: Vec<(i64, i64, usize)> = (calls.iter().enumerate())
            .filter_map(|(i, c)| Some((c.correlation?, c.pid, i)))
            .collect();
        // Of one process's calls of one correlation, the first to begin (the first listed of
        // those that begin together): the outermost.
        by_call.sort_unstable_by_key(|&(k, pid, i)| (k, pid, calls[i].begin_ns, i));
        by_call.dedup_by_key(|&mut (k, pid, _)| (k, pid));
        by_call.shrink_to_fit();
        Correlations { by_call }
    }

    /// The calls of `correlation`, one per process that holds it, by process.
    fn of_correlation(&self, correlation: i64) -> &[(i64, i64, usize)] {
        let lo = self.by_call.partition_point(|&(k, _, _)| k < correlation);
        let hi = self.by_call.partition_point(|&(k, _, _)| k <= correlation);
        &self.by_call[lo..hi]
    }

    /// Process `pid`'s outermost call of `correlation`.
    fn call(&self, pid: i64, correlation: i64) -> Option<usize> {
        let all = self.of_correlation(correlation);
        (all.binary_search_by_key(&pid, |&(_, p, _)| p).ok()).map(|j| all[j].2)
    }

    /// The only process whose calls hold `correlation` (None: none or several do).
    fn only(&self, correlation: i64) -> Option<i64> {
        match self.of_correlation(correlation) {
            [(_, pid, _)] => Some(*pid),
            _ => None,
        }
    }

    /// Whether some process's calls hold `correlation`.
    fn held(&self, correlation: i64) -> bool {
        !self.of_correlation(correlation).is_empty()
    }
}

struct TopVisitor<'a>(&'a RefCell<Collector>);

impl<'de> Visitor<'de> for TopVisitor<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a trace object with `traceEvents`")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "traceEvents" => {
                    self.0.borrow_mut().saw_events = true;
                    map.next_value_seed(EventsSeed(self.0))?;
                }
                "distributedInfo" => {
                    let info = map.next_value()?;
                    self.0.borrow_mut().info = info;
                }
                "schemaVersion" => {
                    self.0.borrow_mut().kineto = true;
                    map.next_value::<IgnoredAny>()?;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// `traceEvents` as serde reads it: empty where `split.rs` took its events out; a byte at a time
/// where the key was written with escapes.
struct EventsSeed<'a>(&'a RefCell<Collector>);

impl<'de> DeserializeSeed<'de> for EventsSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for EventsSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of trace events")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(e) = seq.next_element::<Event>()? {
            self.0.borrow_mut().take(e).map_err(de::Error::custom)?;
        }
        Ok(())
    }
}
