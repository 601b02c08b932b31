//! Host functions in a trace: when each ran, from the range it opened.
//!
//! A host function (`cudaLaunchHostFunc`, `cudaStreamAddCallback`) runs on a thread of the CUDA
//! driver once everything before it in its stream has ended, and the stream waits for it. CUPTI
//! 13.0 (the one beside our GPUs' driver) records the call that enqueued it but not its run;
//! 13.1's `HOST_LAUNCH` records do, and need a newer driver. So a trace sees a host function run
//! only where the function opens a range (`nvtxRangePushA("callback")` ... `nvtxRangePop()`),
//! and the range is on a thread that issued no CUDA call (host functions may not make any).
//!
//! Those ranges are the runs of the host functions of their process: as many ranges as calls,
//! the n-th range beginning after the n-th call. Each run is taken as issued by the latest call
//! that began before it: its own where one host function was pending at a time, a later one where
//! several were (on several streams they may run out of issue order), which is never earlier
//! than its own, so a run is never taken as ready too soon. Where the counts differ or a range
//! began before its call, nothing is paired and the file says why ([`TraceFile::host_fn_note`]).
//!
//! [`TraceFile::host_fn_note`]: super::events::TraceFile::host_fn_note

use super::events::{Call, GpuKind, GpuOp, HostFnCall, HostRange, RawCall, HOST};
use std::collections::{BTreeMap, HashMap, HashSet};

/// The calls that enqueue a host function, runtime and driver, with any `_ptsz` ending.
const ENQUEUE: [&str; 4] = [
    "cudaLaunchHostFunc",
    "cudaStreamAddCallback",
    "cuLaunchHostFunc",
    "cuStreamAddCallback",
];

fn enqueues(name: &str) -> bool {
    ENQUEUE.iter().any(|e| {
        name.strip_prefix(e)
            .is_some_and(|rest| rest.is_empty() || rest == "_ptsz")
    })
}

/// The runs of the host functions `calls` enqueued, as ops of kind [`GpuKind::HostFn`], and why
/// there are none where some were enqueued and could not be paired.
pub(super) fn runs(calls: &[RawCall], ranges: &[HostRange]) -> (Vec<GpuOp>, Option<String>) {
    let enqueued = enqueue_calls(calls);
    if enqueued.is_empty() {
        return (Vec::new(), None);
    }
    let mut opened_by = opened(calls, ranges, &enqueued);
    let mut ops = Vec::new();
    let mut notes = Vec::new();
    for (pid, mut mine) in enqueued {
        mine.sort_by_key(|c| c.begin_ns);
        let opened = opened_by.remove(&pid).unwrap_or_default();
        match paired(pid, &mine, &opened) {
            Ok(runs) => ops.extend(runs),
            Err(note) => notes.push(note.to_string()),
        }
    }
    // A trace of many processes says so briefly.
    let more = notes.len().saturating_sub(3);
    notes.truncate(3);
    if more > 0 {
        notes.push(format!("and {more} more processes"));
    }
    let note = (!notes.is_empty()).then(|| notes.join("; "));
    (ops, note)
}

/// Every call that enqueued a host function (the outermost of a runtime call and its driver
/// call), with the stream it named where the trace records it (`stream-litmus trace` does,
/// `crates/inject/src/host_fn_streams.rs`: by the call's correlation), in order of begin: the host functions
/// of the program behind the trace (`behind.rs`).
pub(super) fn enqueued(
    calls: &[RawCall],
    streams: &std::collections::HashMap<(i64, i64), u64>,
) -> Vec<HostFnCall> {
    let by_correlation = |c: &RawCall| c.correlation.and_then(|k| streams.get(&(c.pid, k)));
    let mut all: Vec<HostFnCall> = (enqueue_calls(calls).into_values())
        .flatten()
        .map(|c| HostFnCall {
            pid: c.pid,
            tid: c.tid,
            begin_ns: c.begin_ns,
            end_ns: c.end_ns,
            stream: by_correlation(c).copied(),
        })
        .collect();
    all.sort_by_key(|c| (c.begin_ns, c.pid, c.tid));
    all
}

/// The calls that enqueued a host function, by process: one per host function (a runtime call
/// and the driver call inside it share a correlation; the outermost stands for both).
fn enqueue_calls(calls: &[RawCall]) -> BTreeMap<i64, Vec<&RawCall>> {
    let mut outermost: BTreeMap<(i64, i64), &RawCall> = BTreeMap::new();
    let mut enqueued: BTreeMap<i64, Vec<&RawCall>> = BTreeMap::new();
    for c in calls.iter().filter(|c| enqueues(&c.name)) {
        match c.correlation {
            Some(k) => {
                let e = outermost.entry((c.pid, k)).or_insert(c);
                if c.begin_ns < e.begin_ns {
                    *e = c;
                }
            }
            None => enqueued.entry(c.pid).or_default().push(c),
        }
    }
    for (&(pid, _), &c) in &outermost {
        enqueued.entry(pid).or_default().push(c);
    }
    enqueued
}

/// Ranges on threads that made no CUDA call, outermost only, by process (of the processes that
/// enqueued host functions): one pass over the ranges (sorted by begin), so that a trace of many
/// processes or ranges stays linear.
fn opened<'a>(
    calls: &[RawCall],
    ranges: &'a [HostRange],
    enqueued: &BTreeMap<i64, Vec<&RawCall>>,
) -> BTreeMap<i64, Vec<&'a HostRange>> {
    let calling: HashSet<(i64, i64)> = calls.iter().map(|c| (c.pid, c.tid)).collect();
    let mut opened_by: BTreeMap<i64, Vec<&HostRange>> = BTreeMap::new();
    let mut open_until: HashMap<(i64, i64), i64> = HashMap::new();
    for r in ranges.iter().filter(|r| enqueued.contains_key(&r.pid)) {
        if calling.contains(&(r.pid, r.tid)) {
            continue;
        }
        let until = open_until.entry((r.pid, r.tid)).or_insert(i64::MIN);
        if r.end_ns <= *until {
            continue; // inside the thread's current outermost range
        }
        *until = r.end_ns;
        opened_by.entry(r.pid).or_default().push(r);
    }
    opened_by
}

/// Why a process's host functions cannot be paired with the ranges their runs opened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum Unpaired {
    #[error(
        "process {pid}: {enqueued} host functions enqueued but {opened} ranges opened on threads \
         that issued no CUDA call; a host function's run is seen only as one range it opens \
         (nvtxRangePushA … nvtxRangePop)"
    )]
    Counts {
        pid: i64,
        enqueued: usize,
        opened: usize,
    },
    /// Range `n` (counted from 1) began before host function `n` was enqueued.
    #[error(
        "process {pid}: range {n} (`{range}`) began before host function {n} was enqueued: the \
         ranges cannot be the host functions' runs in order"
    )]
    Early { pid: i64, n: usize, range: String },
}

/// Process `pid`'s host functions (`mine`, by begin) paired with the ranges opened (`opened`):
/// their runs, or why they cannot be paired.
fn paired(pid: i64, mine: &[&RawCall], opened: &[&HostRange]) -> Result<Vec<GpuOp>, Unpaired> {
    if opened.len() != mine.len() {
        return Err(Unpaired::Counts {
            pid,
            enqueued: mine.len(),
            opened: opened.len(),
        });
    }
    if let Some(n) = (0..mine.len()).find(|&n| opened[n].begin_ns < mine[n].begin_ns) {
        return Err(Unpaired::Early {
            pid,
            n: n + 1,
            range: opened[n].name.to_string(),
        });
    }
    let mut ops = Vec::new();
    for r in opened {
        // The n-th call issued the n-th run where host functions run in order; where several
        // were pending at once (on several streams they may run out of order) the run is
        // taken as issued by the latest call that began before it: never earlier than its
        // own, so it is never taken as ready before it was, which could make a late start
        // look like a wait (a pair is then left out, or undecided, instead).
        let latest = mine.partition_point(|c| c.begin_ns < r.begin_ns);
        let Some(c) = latest.checked_sub(1).map(|j| mine[j]) else {
            continue;
        };
        ops.push(GpuOp {
            kind: GpuKind::HostFn,
            name: r.name.clone(),
            device: HOST.0,
            stream: HOST.1,
            start_ns: r.begin_ns,
            end_ns: r.end_ns,
            pid,
            call: Some(Call {
                id: u32::MAX,
                name: c.name.clone(),
                begin_ns: c.begin_ns,
                end_ns: c.end_ns,
                tid: c.tid,
                after_wait: false,
                waited: false,
                before: None,
            }),
            bytes: None,
            blocks_per_sm: None,
        });
    }
    Ok(ops)
}

/// When each process had a host function pending, merged: from the call that enqueued it to the
/// end of its run, as (process, from, to), sorted. An op issued then may be queued behind it (a
/// trace does not say on which stream), so it is not taken as issued to an idle GPU.
pub(super) fn pending(ops: &[GpuOp]) -> Vec<(i64, i64, i64)> {
    let mut w: Vec<(i64, i64, i64)> = (ops.iter())
        .filter(|o| o.kind == GpuKind::HostFn)
        .filter_map(|o| Some((o.pid, o.call.as_ref()?.begin_ns, o.end_ns)))
        .collect();
    w.sort_unstable();
    let mut merged: Vec<(i64, i64, i64)> = Vec::with_capacity(w.len());
    for (pid, from, to) in w {
        match merged.last_mut() {
            Some(last) if last.0 == pid && from <= last.2 => last.2 = last.2.max(to),
            _ => merged.push((pid, from, to)),
        }
    }
    merged
}

/// Whether process `pid` had a host function pending at `at` ([`pending`]'s windows).
pub(super) fn behind(windows: &[(i64, i64, i64)], pid: i64, at: i64) -> bool {
    let i = windows.partition_point(|&(p, from, _)| (p, from) <= (pid, at));
    i > 0 && {
        let (p, _, to) = windows[i - 1];
        p == pid && at <= to
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::names::Name;

    fn call(name: &str, tid: i64, begin: i64, corr: i64) -> RawCall {
        RawCall {
            name: Name::from(name),
            pid: 1,
            tid,
            begin_ns: begin,
            end_ns: begin + 5,
            correlation: Some(corr),
        }
    }

    fn range(name: &str, tid: i64, begin: i64, end: i64) -> HostRange {
        HostRange {
            name: Name::from(name),
            pid: 1,
            tid,
            begin_ns: begin,
            end_ns: end,
        }
    }

    #[test]
    fn each_range_on_a_thread_without_calls_is_the_run_of_the_host_function_in_order() {
        let calls = [
            call("cudaLaunchHostFunc", 10, 100, 1),
            call("cuLaunchHostFunc", 10, 101, 1),
            call("cudaLaunchKernel", 10, 110, 2),
            call("cudaStreamAddCallback", 10, 120, 3),
        ];
        let ranges = [
            range("repetition", 10, 90, 1000),
            range("callback", 20, 105, 115),
            range("inner", 20, 106, 110),
            range("callback", 20, 700, 800),
        ];
        let (ops, note) = runs(&calls, &ranges);
        assert_eq!(note, None);
        let got: Vec<_> = ops
            .iter()
            .map(|o| (o.call.as_ref().unwrap().name.to_string(), o.start_ns))
            .collect();
        assert_eq!(
            got,
            [
                ("cudaLaunchHostFunc".to_string(), 105),
                ("cudaStreamAddCallback".to_string(), 700)
            ]
        );
        assert!(ops.iter().all(|o| (o.device, o.stream) == HOST));
        // Pending from each call to its run's end: 100..115 and 120..800.
        let w = pending(&ops);
        assert_eq!(w, [(1, 100, 115), (1, 120, 800)]);
        assert!(behind(&w, 1, 100) && behind(&w, 1, 800) && !behind(&w, 1, 801));
        assert!(!behind(&w, 1, 99) && !behind(&w, 1, 117) && !behind(&w, 2, 300));
        let merged = pending(&[
            ops[0].clone(),
            GpuOp {
                end_ns: 130,
                ..ops[0].clone()
            },
            ops[1].clone(),
        ]);
        assert_eq!(merged, [(1, 100, 800)]);
    }

    #[test]
    fn a_run_while_several_host_functions_were_pending_counts_from_the_latest_call_before_it() {
        let calls = [
            call("cudaLaunchHostFunc", 10, 100, 1),
            call("cudaLaunchHostFunc", 10, 200, 2),
        ];
        let ranges = [range("cb", 20, 300, 400), range("cb", 20, 500, 600)];
        let (ops, note) = runs(&calls, &ranges);
        assert_eq!(note, None);
        let issued: Vec<i64> = ops
            .iter()
            .map(|o| o.call.as_ref().unwrap().begin_ns)
            .collect();
        assert_eq!(issued, [200, 200]);
    }

    #[test]
    fn host_functions_without_their_ranges_are_not_paired_and_say_why() {
        let calls = [call("cudaLaunchHostFunc", 10, 100, 1)];
        let (ops, note) = runs(&calls, &[]);
        assert!(ops.is_empty());
        assert!(note
            .unwrap()
            .contains("1 host functions enqueued but 0 ranges"));
        // A range that began before its host function was enqueued cannot be its run.
        let (ops, note) = runs(&calls, &[range("callback", 20, 50, 60)]);
        assert!(ops.is_empty());
        assert!(note.unwrap().contains("began before host function 1"));
        // Many processes, each with a host function and no range: three are named.
        let many: Vec<RawCall> = (0..50)
            .map(|p| RawCall {
                pid: p,
                ..call("cudaLaunchHostFunc", 10, 100, p)
            })
            .collect();
        let (_, note) = runs(&many, &[]);
        assert!(note.unwrap().ends_with("and 47 more processes"));
        // No host function, nothing to say.
        assert_eq!(runs(&[], &[range("x", 20, 1, 2)]), (Vec::new(), None));
    }
}
