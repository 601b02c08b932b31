//! Which ops of a trace a claim speaks of: a selection names a kind, a name pattern, a stream,
//! a device, a rank and an annotated range the op was issued in. A claim's checks then relate
//! its selections (`exists overlaps(AR, GEMM)`).

use crate::program::CopyDir;
use crate::trace::{GpuKind, GpuOp, HostMemory, HostRange, NameMemo, Pattern, TraceFile};
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::collections::HashMap;

/// The kind of op a selection takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KindFilter {
    /// Every op on a GPU (not host functions, which run on the host).
    Any,
    Kernel,
    Memset,
    /// A host function's run: the range it opened (`host_fns.rs`).
    Host,
    /// A copy, of one direction and host memory where given.
    Copy {
        dir: Option<CopyDir>,
        host: Option<Host>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Host {
    Pinned,
    Pageable,
}

impl KindFilter {
    fn admits(self, kind: GpuKind) -> bool {
        match (self, kind) {
            (KindFilter::Any, GpuKind::HostFn) => false,
            (KindFilter::Any, _) => true,
            (KindFilter::Kernel, GpuKind::Kernel)
            | (KindFilter::Memset, GpuKind::Memset)
            | (KindFilter::Host, GpuKind::HostFn) => true,
            (KindFilter::Copy { dir, host }, GpuKind::Copy(d, h)) => {
                let dir_ok = dir.map_or(true, |want| d == Some(want));
                let host_ok = host.map_or(true, |want| {
                    matches!(
                        (want, h),
                        (Host::Pinned, HostMemory::Pinned) | (Host::Pageable, HostMemory::Pageable)
                    )
                });
                dir_ok && host_ok
            }
            _ => false,
        }
    }
}

/// `select NAME = KIND ["PATTERN"] [stream N] [device N] [rank N] [in "RANGE"] [during "RANGE"]
/// [call "CALL"] [from RECORDING]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Selection {
    pub name: String,
    pub kind: KindFilter,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<Pattern>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
    /// The op was issued inside a host range of this name (`record_function`, a PyTorch op such
    /// as `aten::mm`), by the thread that opened it: the range's own work, as its nesting says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub within: Option<Pattern>,
    /// The op was issued while a host range of this name was open, by any thread of the range's
    /// process: `during "backward"` takes the kernels PyTorch's autograd thread launched while
    /// the main thread's `backward` range was open, which `in` leaves out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub during: Option<Pattern>,
    /// The op is of this recording (`trace "FILE" as NAME`, `from NAME`).
    #[serde(default, rename = "from", skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    /// The op was issued by a call of this name (`cudaMemcpyAsync`, `cudaMemcpy`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<Pattern>,
}

impl Selection {
    /// The selection readied for one file: its `in` and `during` ranges merged into sorted,
    /// disjoint spans per thread and per process, so that each op is a binary search (a trace
    /// of 150,000 PyTorch ops and as many launches would otherwise scan every range per op).
    pub fn on<'a>(&'a self, file: &'a TraceFile) -> Chosen<'a> {
        Chosen {
            s: self,
            file,
            within: (self.within.as_ref()).map(|w| spans(&file.ranges, w, |r| (r.pid, r.tid))),
            during: (self.during.as_ref()).map(|w| spans(&file.ranges, w, |r| (r.pid, 0))),
            names: RefCell::default(),
            calls: RefCell::default(),
        }
    }
}

/// Merged spans `(begin, end)` of the ranges a pattern names, by (process, thread) key.
type Spans = HashMap<(i64, i64), Vec<(i64, i64)>>;

fn spans(ranges: &[HostRange], w: &Pattern, key: impl Fn(&HostRange) -> (i64, i64)) -> Spans {
    let mut by: Spans = HashMap::new();
    // Ranges come sorted by begin: each key's spans merge in one pass.
    let mut memo = NameMemo::default();
    for r in ranges
        .iter()
        .filter(|r| memo.get(&r.name, || w.matches(&r.name)))
    {
        let v = by.entry(key(r)).or_default();
        match v.last_mut() {
            Some(last) if r.begin_ns <= last.1 => last.1 = last.1.max(r.end_ns),
            _ => v.push((r.begin_ns, r.end_ns)),
        }
    }
    by
}

/// Whether `t` lies in one of the merged spans of `key`.
fn inside(spans: &Spans, key: (i64, i64), t: i64) -> bool {
    spans.get(&key).is_some_and(|v| {
        let i = v.partition_point(|&(b, _)| b <= t);
        i > 0 && v[i - 1].1 >= t
    })
}

/// A selection readied for one file ([`Selection::on`]).
pub struct Chosen<'a> {
    s: &'a Selection,
    file: &'a TraceFile,
    within: Option<Spans>,
    during: Option<Spans>,
    /// The pattern's answers for op names, and the call pattern's for call names.
    names: RefCell<NameMemo>,
    calls: RefCell<NameMemo>,
}

impl Chosen<'_> {
    /// Whether `op` of the file belongs to the selection.
    pub fn admits(&self, op: &GpuOp) -> bool {
        let (s, file) = (self.s, self.file);
        // `in`: the op's call began inside a matching range on the call's own thread; `during`:
        // on any thread of the op's process.
        let ranged = |spans: &Option<Spans>, thread: bool| {
            spans.as_ref().map_or(true, |spans| {
                op.call.as_ref().is_some_and(|c| {
                    let key = (op.pid, if thread { c.tid } else { 0 });
                    inside(spans, key, c.begin_ns)
                })
            })
        };
        s.kind.admits(op.kind)
            && (s.pattern.as_ref()).map_or(true, |p| {
                let mut names = self.names.borrow_mut();
                names.get(&op.name, || file.forms(&op.name).any(|n| p.matches(n)))
            })
            && s.stream.map_or(true, |st| st == op.stream)
            && s.device.map_or(true, |d| d == op.device)
            && s.rank.map_or(true, |r| file.rank == Some(r))
            && (s.run.as_deref()).map_or(true, |r| file.run.as_deref() == Some(r))
            && ranged(&self.within, true)
            && ranged(&self.during, false)
            && s.call.as_ref().map_or(true, |c| {
                op.call.as_ref().is_some_and(|k| {
                    let mut calls = self.calls.borrow_mut();
                    calls.get(&k.name, || c.matches(&k.name))
                })
            })
    }
}

#[cfg(test)]
mod tests {
    use super::Pattern;

    #[test]
    fn globs_match_at_their_edges() {
        let p = |s: &str| Pattern::new(s).unwrap();
        assert!(p("*gemm*").matches("sm90_xmma_gemm_bf16"));
        assert!(p("nccl*AllReduce*").matches("ncclDevKernel_AllReduce_Sum_bf16_RING_LL"));
        assert!(!p("nccl*AllGather*").matches("ncclDevKernel_AllReduce_Sum"));
        assert!(p("ProfilerStep#?").matches("ProfilerStep#3"));
        assert!(!p("ProfilerStep#?").matches("ProfilerStep#13"));
        assert!(p("*").matches(""));
        assert!(!p("a").matches(""));
        assert!(p("a*b*c").matches("aXbYbZc"));
        assert!(!p("a*b*c").matches("aXbYbZ"));
        // Everything but `*` and `?` is itself, a line feed included.
        assert!(p("a.b(c)[d]+\\$").matches("a.b(c)[d]+\\$"));
        assert!(!p("a.b").matches("aXb"));
        assert!(p("ä?*").matches("äö\nx"));
    }

    #[test]
    fn long_patterns_are_refused_and_long_names_cost_linear_time() {
        let err = Pattern::new("a".repeat(Pattern::MAX_BYTES + 1)).unwrap_err();
        assert_eq!(err.bytes, Pattern::MAX_BYTES + 1);
        assert!(err.to_string().contains("at most 4096"), "{err}");
        let p = Pattern::new(format!("*{}b", "a".repeat(Pattern::MAX_BYTES - 2))).unwrap();
        let name = "a".repeat(1 << 20);
        let t = std::time::Instant::now();
        assert!(!p.matches(&name));
        assert!(
            t.elapsed() < std::time::Duration::from_secs(2),
            "{:?}",
            t.elapsed()
        );
    }
}
