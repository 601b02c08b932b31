//! Which ops of a trace a claim speaks of: a selection names a kind, a name pattern, a stream,
//! a device, a rank and an annotated range the op was issued in. A claim's checks then relate
//! its selections (`exists overlaps(AR, GEMM)`).

use super::events::{CopyDir, GpuKind, GpuOp, HostMemory, HostRange, TraceFile};
use serde::{Deserialize, Serialize};

/// A glob over names: `*` matches any run of characters, `?` one; everything else itself.
/// Matching is case-sensitive, as kernel names are.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pattern(pub String);

impl Pattern {
    pub fn matches(&self, text: &str) -> bool {
        glob(self.0.as_bytes(), text.as_bytes())
    }
}

/// Iterative glob with one backtrack point: linear in practice, never exponential.
fn glob(p: &[u8], t: &[u8]) -> bool {
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == b'?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == b'*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
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

/// `select NAME = KIND ["PATTERN"] [stream N] [device N] [rank N] [in "RANGE"] [call "CALL"]`.
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
    /// The op was issued inside a host range of this name (`record_function`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub within: Option<Pattern>,
    /// The op was issued by a call of this name (`cudaMemcpyAsync`, `cudaMemcpy`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<Pattern>,
}

impl Selection {
    /// Whether `op` of `file` belongs to the selection.
    pub fn admits(&self, file: &TraceFile, op: &GpuOp) -> bool {
        self.kind.admits(op.kind)
            && self.pattern.as_ref().map_or(true, |p| p.matches(&op.name))
            && self.stream.map_or(true, |s| s == op.stream)
            && self.device.map_or(true, |d| d == op.device)
            && self.rank.map_or(true, |r| file.rank == Some(r))
            && self
                .within
                .as_ref()
                .map_or(true, |w| issued_within(&file.ranges, op, w))
            && self.call.as_ref().map_or(true, |c| {
                op.call.as_ref().is_some_and(|k| c.matches(&k.name))
            })
    }
}

/// Whether `op`'s call began inside a host range named by `w`, in the op's process.
fn issued_within(ranges: &[HostRange], op: &GpuOp, w: &Pattern) -> bool {
    let Some(call) = &op.call else {
        return false;
    };
    // Ranges are sorted by begin: those that begin after the call cannot hold it.
    let end = ranges.partition_point(|r| r.begin_ns <= call.begin_ns);
    ranges[..end]
        .iter()
        .any(|r| r.pid == op.pid && r.end_ns >= call.begin_ns && w.matches(&r.name))
}

#[cfg(test)]
mod tests {
    use super::Pattern;

    #[test]
    fn globs_match_at_their_edges() {
        let p = |s: &str| Pattern(s.to_string());
        assert!(p("*gemm*").matches("sm90_xmma_gemm_bf16"));
        assert!(p("nccl*AllReduce*").matches("ncclDevKernel_AllReduce_Sum_bf16_RING_LL"));
        assert!(!p("nccl*AllGather*").matches("ncclDevKernel_AllReduce_Sum"));
        assert!(p("ProfilerStep#?").matches("ProfilerStep#3"));
        assert!(!p("ProfilerStep#?").matches("ProfilerStep#13"));
        assert!(p("*").matches(""));
        assert!(!p("a").matches(""));
        assert!(p("a*b*c").matches("aXbYbZc"));
        assert!(!p("a*b*c").matches("aXbYbZ"));
    }
}
