//! What a trace holds once read: the GPU's work as spans, the host calls that issued it, and the
//! ranges the program annotated, all on one clock in nanoseconds.
//!
//! A profiler trace stamps host calls with the host clock and GPU activity with the GPU's,
//! normalized by CUPTI onto the host clock; both arrive here on that one axis, so a span and the
//! call that issued it compare directly (the judging allows for the alignment, see `tolerance.rs`).

pub use super::names::Name;
use crate::program::CopyDir;
use std::collections::{HashMap, HashSet};

/// What a GPU op did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GpuKind {
    Kernel,
    /// A copy, of its direction where the profiler named one.
    Copy(Option<CopyDir>, HostMemory),
    Memset,
    /// A host function (`cudaLaunchHostFunc`, `cudaStreamAddCallback`): it runs on the host, in
    /// its stream's order. A trace sees its run only as the range the function opened
    /// (`host_fns.rs`); such an op has no device or stream of its own ([`HOST`]).
    HostFn,
}

/// The device and stream of an op that ran on the host: a host function's run.
pub const HOST: (u32, u64) = (u32::MAX, u64::MAX);

/// The profiler's names for a copy's direction ("Memcpy HtoD (Pinned -> Device)"): an array
/// ("A") is device memory, so host to array is H2D and array to array D2D.
const COPY_NAMES: [(&str, CopyDir); 10] = [
    ("HtoD", CopyDir::H2D),
    ("HtoA", CopyDir::H2D),
    ("DtoH", CopyDir::D2H),
    ("AtoH", CopyDir::D2H),
    ("DtoD", CopyDir::D2D),
    ("AtoA", CopyDir::D2D),
    ("AtoD", CopyDir::D2D),
    ("DtoA", CopyDir::D2D),
    ("PtoP", CopyDir::P2P),
    ("HtoH", CopyDir::H2H),
];

/// The host memory of a copy, where the profiler names it ("Pinned -> Device", "Pageable").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HostMemory {
    Pinned,
    Pageable,
    /// No host memory (device to device), or not named.
    None,
}

impl GpuKind {
    /// From the profiler's category and name.
    pub fn of(category: &str, name: &str) -> Option<GpuKind> {
        Some(match category {
            "kernel" => GpuKind::Kernel,
            "gpu_memset" => GpuKind::Memset,
            "gpu_memcpy" => {
                let dir = (COPY_NAMES.iter())
                    .find(|(word, _)| name.contains(word))
                    .map(|&(_, dir)| dir);
                let host = if name.contains("Pinned") {
                    HostMemory::Pinned
                } else if name.contains("Pageable") {
                    HostMemory::Pageable
                } else {
                    HostMemory::None
                };
                GpuKind::Copy(dir, host)
            }
            _ => return None,
        })
    }

    /// "kernel", "copy", "memset".
    pub fn word(self) -> &'static str {
        match self {
            GpuKind::Kernel => "kernel",
            GpuKind::Copy(..) => "copy",
            GpuKind::Memset => "memset",
            GpuKind::HostFn => "host function",
        }
    }
}

/// The host call that issued a GPU op (`cudaLaunchKernel`, `cuLaunchKernelEx`, `cudaMemcpyAsync`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    /// Its place among its file's calls: the GPU ops of one call (the kernels of a graph launch)
    /// share it. A host function's run, issued by its enqueue call, has `u32::MAX`. Four
    /// bytes: a trace keeps at most 2^31 records (`trace::max_kept`).
    pub id: u32,
    pub name: Name,
    pub begin_ns: i64,
    pub end_ns: i64,
    pub tid: i64,
    /// The thread's previous CUDA call was `cudaStreamWaitEvent`: the op may have waited for
    /// another stream, so its delay is not taken for launch latency.
    pub after_wait: bool,
    /// The thread called `cudaStreamWaitEvent` since its previous launch, copy or memset: an
    /// event wait may have ordered this op (a cause, `trace_claims/checks.rs`).
    pub waited: bool,
    /// The thread's CUDA call before this one (the outermost: a runtime call, not the driver
    /// call inside it): a call that returned late (a sync, a pageable copy) held the thread and
    /// issued this op late.
    pub before: Option<Before>,
}

/// A thread's previous CUDA call: its name and span.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Before {
    pub name: Name,
    pub begin_ns: i64,
    pub end_ns: i64,
}

/// What the driver read from a process's environment when it started, as `stream-litmus trace`
/// records it (a profiler's trace records none): each variable's value, `None` where it was
/// unset. The variables are [`DRIVER_ENV`](crate::border::allowed_env::DRIVER_ENV).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DriverEnv {
    /// `CUDA_DEVICE_MAX_CONNECTIONS`: the hardware queues the streams share (8 when unset).
    pub max_connections: Option<String>,
    /// `CUDA_MODULE_LOADING`: `LAZY` (the default since CUDA 12.2) or `EAGER`.
    pub module_loading: Option<String>,
    /// `CUDA_LAUNCH_BLOCKING`: `1` makes every launch return only once its work has ended.
    pub launch_blocking: Option<String>,
}

impl DriverEnv {
    /// The hardware queues its streams share, where the variable was set to a number.
    pub fn connections(&self) -> Option<u32> {
        self.max_connections.as_deref()?.trim().parse().ok()
    }

    /// Whether modules were loaded eagerly (`CUDA_MODULE_LOADING=EAGER`): no first launch
    /// loads a module then.
    pub fn eager(&self) -> bool {
        (self.module_loading.as_deref()).is_some_and(|v| v.trim().eq_ignore_ascii_case("EAGER"))
    }

    /// Whether every launch blocked the host (`CUDA_LAUNCH_BLOCKING=1`).
    pub fn launch_blocking(&self) -> bool {
        self.launch_blocking.as_deref().map(str::trim) == Some("1")
    }
}

/// A CUDA call as the reader takes it, before calls are linked to their ops
/// (`kineto.rs`) and host functions to their runs (`host_fns.rs`).
pub(super) struct RawCall {
    pub(super) name: Name,
    pub(super) pid: i64,
    pub(super) tid: i64,
    pub(super) begin_ns: i64,
    pub(super) end_ns: i64,
    pub(super) correlation: Option<i64>,
}

/// One GPU op of the trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuOp {
    pub kind: GpuKind,
    pub name: Name,
    pub device: u32,
    pub stream: u64,
    pub start_ns: i64,
    pub end_ns: i64,
    /// The process that issued it (the trace's pid of the call, else of the file).
    pub pid: i64,
    pub call: Option<Call>,
    pub bytes: Option<u64>,
    /// A kernel's blocks per SM at launch, in hundredths, where the profiler wrote it: 100 or
    /// more, and the kernel filled every SM as it started.
    pub blocks_per_sm: Option<u32>,
}

/// A range the program annotated on the host (`record_function`, `ProfilerStep#N`, NVTX).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostRange {
    pub name: Name,
    pub pid: i64,
    /// The thread that opened it.
    pub tid: i64,
    pub begin_ns: i64,
    pub end_ns: i64,
}

/// A call that waits for all work of its process's current device (`cudaDeviceSynchronize`,
/// `cuCtxSynchronize`): every op the process issued before it has ended when it returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceSync {
    pub pid: i64,
    pub tid: i64,
    pub begin_ns: i64,
    pub end_ns: i64,
}

/// A call that enqueued a host function (`trace/host_fns.rs`), and the stream it named where
/// recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostFnCall {
    pub pid: i64,
    pub tid: i64,
    pub begin_ns: i64,
    pub end_ns: i64,
    pub stream: Option<u64>,
}

/// One trace file: one process (one rank) of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceFile {
    pub path: String,
    /// The recording it belongs to, where a claim names its traces (`trace "FILE" as NAME`):
    /// files of one recording are the ranks of one run, on one clock.
    pub run: Option<Name>,
    /// `distributedInfo.rank` and `world_size`, where the profiler wrote them.
    pub rank: Option<u32>,
    pub world: Option<u32>,
    /// Sorted by start.
    pub ops: Vec<GpuOp>,
    /// Sorted by begin.
    pub ranges: Vec<HostRange>,
    /// Whether timestamps carry fractions of a microsecond (newer profilers write ns).
    pub sub_micro: bool,
    /// Why the file's host functions have no runs ([`GpuKind::HostFn`] ops), where it has some.
    pub host_fn_note: Option<String>,
    /// When each process had a host function pending: (process, from, to), merged and sorted.
    pub host_fn_pending: Vec<(i64, i64, i64)>,
    /// Why some GPU ops have no call, where the trace could not tell which process issued them.
    pub join_note: Option<String>,
    /// The device syncs of every process, by begin (outermost calls: a runtime sync, not the
    /// driver call inside it).
    pub device_syncs: Vec<DeviceSync>,
    /// What the driver read from each process's environment, by process, where the trace
    /// records it (`stream-litmus trace` does; a profiler's trace does not).
    pub env: HashMap<i64, DriverEnv>,
    /// The syncs the trace records with their stream and event (`trace/syncs.rs`), by begin.
    pub syncs: Vec<super::syncs::SyncCall>,
    /// The event records whose calls the trace holds (`trace/syncs.rs`).
    pub records: Vec<super::syncs::RecordCall>,
    /// Every call that enqueued a host function, with its stream where recorded, by begin.
    pub host_fn_calls: Vec<HostFnCall>,
    /// The processes whose syncs are all recorded: a `stream-litmus trace` recording says so
    /// per process; a profiler's trace with `cuda_sync` events is taken to hold them all.
    pub sync_recorded: HashSet<i64>,
    /// Each stream's kind and priority by (process, stream), where the trace records them.
    pub streams: HashMap<(i64, u64), super::syncs::StreamInfo>,
    /// The compiler's form of each name shown demangled (`trace/names.rs`): a name pattern
    /// matches either.
    pub mangled: HashMap<Name, Name>,
}

impl TraceFile {
    /// The ops that are kernels launched first of their name in their process (by launch call).
    pub(super) fn first_launches(&self) -> HashSet<usize> {
        let mut first: HashMap<(i64, &str), (i64, usize)> = HashMap::new();
        for (o, op) in self.ops.iter().enumerate() {
            let Some(call) = op.call.as_ref().filter(|_| op.kind == GpuKind::Kernel) else {
                continue;
            };
            let e = first
                .entry((op.pid, &*op.name))
                .or_insert((call.begin_ns, o));
            if call.begin_ns < e.0 {
                *e = (call.begin_ns, o);
            }
        }
        first.into_values().map(|(_, o)| o).collect()
    }

    /// By op, the op before it in the file's order on its stream (process, device, stream).
    pub(super) fn stream_before(&self) -> Vec<Option<usize>> {
        let mut last: HashMap<(i64, u32, u64), usize> = HashMap::new();
        (self.ops.iter().enumerate())
            .map(|(o, op)| last.insert((op.pid, op.device, op.stream), o))
            .collect()
    }

    /// The forms of a name a pattern is matched against: as shown, and the compiler's form where
    /// the name was demangled.
    pub fn forms<'a>(&'a self, name: &'a Name) -> impl Iterator<Item = &'a str> {
        std::iter::once(&**name).chain(self.mangled.get(name).map(|m| &**m))
    }

    /// The first and last instant of its GPU ops and ranges.
    pub fn extent(&self) -> Option<(i64, i64)> {
        let starts = self.ops.iter().map(|o| o.start_ns);
        let begins = self.ranges.iter().map(|r| r.begin_ns);
        let lo = starts.chain(begins).min()?;
        let ends = self.ops.iter().map(|o| o.end_ns);
        let hi = ends.chain(self.ranges.iter().map(|r| r.end_ns)).max()?;
        Some((lo, hi))
    }

    /// "rank 1" or the file's name, for labels.
    pub fn who(&self) -> String {
        match self.rank {
            Some(r) => format!("rank {r}"),
            None => self.path.clone(),
        }
    }
}

/// For calls sorted by (process, thread, begin): the device syncs among them, outermost only.
pub(super) fn device_syncs(calls: &[RawCall]) -> Vec<DeviceSync> {
    let is_sync = |c: &RawCall| matches!(&*c.name, "cudaDeviceSynchronize" | "cuCtxSynchronize");
    let mut syncs: Vec<DeviceSync> = Vec::new();
    for c in calls.iter().filter(|c| is_sync(c)) {
        let inside = syncs.last().is_some_and(|s| {
            (s.pid, s.tid) == (c.pid, c.tid) && s.begin_ns <= c.begin_ns && c.end_ns <= s.end_ns
        });
        if !inside {
            syncs.push(DeviceSync {
                pid: c.pid,
                tid: c.tid,
                begin_ns: c.begin_ns,
                end_ns: c.end_ns,
            });
        }
    }
    syncs.sort_by_key(|s| s.begin_ns);
    syncs
}

/// For calls sorted by (process, thread, begin): the outermost call of its thread before each
/// (a runtime call holds the driver call it makes; the call before a launch is the runtime call
/// that returned before it, not the driver call inside that one).
pub(super) fn previous_calls(calls: &[RawCall]) -> Vec<Option<u32>> {
    let thread = |c: &RawCall| (c.pid, c.tid);
    let mut before = vec![None; calls.len()];
    // At most 2^31 records are kept (`trace::max_kept`): a call's place fits in 4 bytes, half
    // of a list as long as the calls held beside them while the ops are joined (issue 51).
    // The outermost call last begun on this thread, and the one before it.
    let mut outer: Option<usize> = None;
    let mut previous: Option<usize> = None;
    for (i, c) in calls.iter().enumerate() {
        if i > 0 && thread(c) != thread(&calls[i - 1]) {
            (outer, previous) = (None, None);
        }
        match outer {
            // Inside the outer call: a driver call of a runtime call.
            Some(o) if c.begin_ns < calls[o].end_ns => {}
            _ => {
                previous = outer;
                outer = Some(i);
            }
        }
        before[i] = previous.map(|p| p as u32);
    }
    before
}

/// For calls sorted by (process, thread, begin): whether each came right after a
/// `cudaStreamWaitEvent` of its thread (its op may have waited, so its delay is no launch
/// latency), and whether its thread called `cudaStreamWaitEvent` since its previous launch, copy
/// or memset (NCCL records, waits, sets the device and looks the kernel up before launching):
/// what may explain a wait, not counted out of the launch delays.
pub(super) fn event_waits(calls: &[RawCall]) -> (Vec<bool>, Vec<bool>) {
    let thread = |c: &RawCall| (c.pid, c.tid);
    let is_wait = |c: &RawCall| c.name.contains("StreamWaitEvent");
    let after_wait = std::iter::once(false)
        .chain(
            calls
                .windows(2)
                .map(|w| thread(&w[0]) == thread(&w[1]) && is_wait(&w[0])),
        )
        .collect();
    let mut waited = vec![false; calls.len()];
    let mut pending = false;
    for (i, c) in calls.iter().enumerate() {
        if i > 0 && thread(c) != thread(&calls[i - 1]) {
            pending = false;
        }
        waited[i] = pending;
        if is_wait(c) {
            pending = true;
        } else if ["Launch", "Memcpy", "Memset"]
            .iter()
            .any(|k| c.name.contains(k))
        {
            pending = false;
        }
    }
    (after_wait, waited)
}
