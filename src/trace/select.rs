//! Which ops of a trace a claim speaks of: a selection names a kind, a name pattern, a stream,
//! a device, a rank and an annotated range the op was issued in. A claim's checks then relate
//! its selections (`exists overlaps(AR, GEMM)`).

use super::events::{CopyDir, GpuKind, GpuOp, HostMemory, HostRange, TraceFile};
use super::glob::Glob;
use serde::{Deserialize, Serialize};

/// A glob over names: `*` matches any run of characters, `?` one character; everything else
/// itself. Matching is case-sensitive, as kernel names are.
///
/// Matched in time linear in the name (`trace/glob.rs`): a backtracking glob costs pattern
/// length × name length, and a claim of a 500 KB pattern on a trace of 1 MB names hung for
/// minutes. A pattern is at most [`Pattern::MAX_BYTES`] long, and names are clipped when a
/// trace is read (`trace/names.rs`).
#[derive(Debug, Clone)]
pub struct Pattern {
    text: String,
    glob: Glob,
}

impl Pattern {
    /// Longer patterns are refused: a name pattern is a fragment of a kernel's or a range's
    /// name, and the longest names in our traces (CUTLASS templates) are under 1 KB.
    pub const MAX_BYTES: usize = 4096;

    pub fn new(text: impl Into<String>) -> Result<Pattern, String> {
        let text = text.into();
        if text.len() > Self::MAX_BYTES {
            return Err(format!(
                "a name pattern of {} bytes: at most {} are taken",
                text.len(),
                Self::MAX_BYTES
            ));
        }
        let glob = Glob::new(&text);
        Ok(Pattern { text, glob })
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn matches(&self, name: &str) -> bool {
        self.glob.matches(name)
    }
}

impl PartialEq for Pattern {
    fn eq(&self, other: &Pattern) -> bool {
        self.text == other.text
    }
}

impl Eq for Pattern {}

impl Serialize for Pattern {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.text.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Pattern {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Pattern, D::Error> {
        Pattern::new(String::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

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
        dir: Option<Dir>,
        host: Option<Host>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dir {
    H2d,
    D2h,
    D2d,
    P2p,
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
                let dir_ok = dir.map_or(true, |want| {
                    matches!(
                        (want, d),
                        (Dir::H2d, CopyDir::HtoD)
                            | (Dir::D2h, CopyDir::DtoH)
                            | (Dir::D2d, CopyDir::DtoD)
                            | (Dir::P2p, CopyDir::PtoP)
                    )
                });
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
    /// Whether `op` of `file` belongs to the selection.
    pub fn admits(&self, file: &TraceFile, op: &GpuOp) -> bool {
        self.kind.admits(op.kind)
            && (self.pattern.as_ref()).map_or(true, |p| file.forms(&op.name).any(|n| p.matches(n)))
            && self.stream.map_or(true, |s| s == op.stream)
            && self.device.map_or(true, |d| d == op.device)
            && self.rank.map_or(true, |r| file.rank == Some(r))
            && (self.run.as_deref()).map_or(true, |r| file.run.as_deref() == Some(r))
            && self
                .within
                .as_ref()
                .map_or(true, |w| issued_within(&file.ranges, op, w, Thread::Same))
            && (self.during.as_ref())
                .map_or(true, |w| issued_within(&file.ranges, op, w, Thread::Any))
            && self.call.as_ref().map_or(true, |c| {
                op.call.as_ref().is_some_and(|k| c.matches(&k.name))
            })
    }
}

/// Which threads' ranges count for `in` and `during`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Thread {
    /// The thread that made the op's call.
    Same,
    /// Any thread of the op's process.
    Any,
}

/// Whether `op`'s call began inside a host range named by `w`, in the op's process, on the
/// call's own thread or on any.
fn issued_within(ranges: &[HostRange], op: &GpuOp, w: &Pattern, thread: Thread) -> bool {
    let Some(call) = &op.call else {
        return false;
    };
    // Ranges are sorted by begin: those that begin after the call cannot hold it.
    let end = ranges.partition_point(|r| r.begin_ns <= call.begin_ns);
    ranges[..end].iter().any(|r| {
        r.pid == op.pid
            && (thread == Thread::Any || r.tid == call.tid)
            && r.end_ns >= call.begin_ns
            && w.matches(&r.name)
    })
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
        assert!(err.contains("at most 4096"), "{err}");
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
