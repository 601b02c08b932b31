//! What held an op back, as far as the trace shows: the op it started after, and why it waited.
//!
//! An order or a missing overlap on a trace is a finding only with its cause: the user wants to
//! know whether their program asked for the wait. The causes are tried from what the trace
//! shows most directly to what it shows least:
//! 1. **issued late**: its launch call began only after the op it started after had ended, so
//!    the GPU never held it; where the thread's call before it returned only then (a sync, a
//!    pageable or synchronous copy), that call held the thread;
//! 2. **queued** behind the op before it in its own stream;
//! 3. on another stream: an **event wait** its thread called since its previous launch; the
//!    **first launch** of its kernel in its process (lazy module loading, unless the recorded
//!    environment says `CUDA_MODULE_LOADING=EAGER`); **a full GPU** where the op it waited for
//!    filled every SM as it started (the profiler's blocks per SM), or **one copy engine** where
//!    both are copies of one direction; **shared hardware queues** where the
//!    recorded environment sets `CUDA_DEVICE_MAX_CONNECTIONS`; **the legacy default stream**
//!    where the trace records one stream as it and the other as blocking; **a stream of higher
//!    priority** where it records the other's priority as higher; else **nothing in the trace**
//!    says why, naming what it does not record.
//!
//! Where the trace records its syncs with their streams (`trace/syncs.rs`), an event wait is a
//! cause only if its stream waited for the other op's stream; without them, any
//! `cudaStreamWaitEvent` its thread called since its previous launch may have ordered it.
//!
//! Every figure is on the trial's axis, the one the evidence's other figures use.

use super::events::{CopyDir, DriverEnv, GpuKind};
use super::facts::Facts;
use super::syncs::StreamKind;
use super::trials::Trial;
use crate::measured::calibration::Tolerances;
use crate::program::OpId;

/// The kinds of cause, for summing and for pictures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CauseKind {
    /// A host call of its thread returned only after the op it started after ended.
    HostCall,
    /// Its launch call began only after the op it started after ended.
    IssuedLate,
    /// Behind the op before it in its stream.
    Queued,
    /// An event wait its thread called since its previous launch.
    EventWait,
    /// The first launch of its kernel in its process (lazy module loading).
    FirstLaunch,
    /// The kernel it waited for filled every SM as it started (the profiler's blocks per SM).
    FullGpu,
    /// A copy that waited for a copy of the same direction: they share the copy engine.
    CopyEngine,
    /// The process's streams share few hardware queues (`CUDA_DEVICE_MAX_CONNECTIONS`).
    SharedQueues,
    /// One of the two streams is the legacy default stream, the other a blocking stream (the
    /// trace records their kinds): they wait for each other's work.
    LegacyStream,
    /// The other op's stream has the higher priority (the trace records both): its blocks take
    /// free SMs first.
    Priority,
    /// Nothing the trace records.
    Unknown,
}

impl CauseKind {
    /// Whether the wait was for room on the GPU: not an order, asked for or not.
    pub fn room(self) -> bool {
        matches!(
            self,
            CauseKind::FullGpu | CauseKind::CopyEngine | CauseKind::Priority
        )
    }

    /// Whether the program asked for the wait (its stream's order, an event wait, a host call
    /// it made), as against the driver or the hardware (a module load, shared queues) or
    /// nothing the trace shows.
    pub fn asked(self) -> bool {
        matches!(
            self,
            CauseKind::HostCall | CauseKind::IssuedLate | CauseKind::Queued | CauseKind::EventWait
        )
    }

    pub fn word(self) -> &'static str {
        match self {
            CauseKind::HostCall => "a host call held the thread",
            CauseKind::IssuedLate => "issued late",
            CauseKind::Queued => "queued in its stream",
            CauseKind::EventWait => "an event wait",
            CauseKind::FirstLaunch => "a first launch (lazy module loading)",
            CauseKind::FullGpu => "the GPU was full",
            CauseKind::CopyEngine => "one copy engine per direction",
            CauseKind::SharedQueues => "shared hardware queues",
            CauseKind::LegacyStream => "the legacy default stream",
            CauseKind::Priority => "a stream of higher priority",
            CauseKind::Unknown => "not in the trace",
        }
    }
}

/// An op that started after another ended, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    /// The op that waited.
    pub op: OpId,
    /// The op on its GPU whose end it started after.
    pub by: OpId,
    /// Its start minus `by`'s end.
    pub gap_ns: i64,
    pub kind: CauseKind,
    /// The cause in words, with the figures it rests on.
    pub cause: String,
}

impl Held {
    /// "it started +1.90 µs after X ended (queued behind it in its stream)".
    pub fn words(&self, by: &str) -> String {
        format!(
            "it started {:+.2} µs after {by} ended ({})",
            self.gap_ns as f64 / 1e3,
            self.cause
        )
    }
}

fn us(ns: i64) -> String {
    format!("{:.2} µs", ns as f64 / 1e3)
}

/// What held `op` back: the op on its GPU that ended last before it started, and why. That op
/// ran on the same GPU: the same device of the same trace file (an op of another rank cannot
/// hold it back, and a device number names the same GPU only within one file: a launcher may
/// give every rank its own device 0).
pub fn held_back(trial: &Trial, op: OpId, tol: &Tolerances) -> Option<Held> {
    let t = &trial.timeline;
    let start = t.span(op)?.start();
    let step = tol.timer_step_ns.max(1);
    let gpu = |o: OpId| trial.place(o).map(|(file, _, device, _)| (file, device));
    let holder = (t.spans.iter())
        .filter(|s| s.op != op && s.end() <= start + step && gpu(s.op) == gpu(op))
        .max_by_key(|s| s.end())?;
    held_by(trial, op, holder.op)
}

/// Why `op` started only after `holder` ended (`holder` found by the caller: the op on its GPU
/// that ended last before it started).
pub fn held_by(trial: &Trial, op: OpId, holder: OpId) -> Option<Held> {
    let t = &trial.timeline;
    let (start, end) = (t.span(op)?.start(), t.span(holder)?.end());
    let label = trial.label(holder);
    let (kind, cause) = match issued_late(trial, op, end as i64, &label) {
        Some(late) => late,
        None if trial.place(holder) == trial.place(op) => {
            (CauseKind::Queued, "queued behind it in its stream".into())
        }
        None => {
            let (kind, why) = other_stream(trial, op, holder);
            (kind, format!("on another stream; {why}"))
        }
    };
    Some(Held {
        op,
        by: holder,
        gap_ns: start as i64 - end as i64,
        kind,
        cause,
    })
}

/// Where `op`'s launch call began only after `holder_end` (beyond the clock error): the host
/// issued it late, and the call before it on its thread says whether a call held the thread.
fn issued_late(
    trial: &Trial,
    op: OpId,
    holder_end: i64,
    label: &str,
) -> Option<(CauseKind, String)> {
    let call = trial.timeline.host_call(op)?;
    let error = trial.timeline.clock.map_or(0, |c| c.error_ns) as i64;
    let begin = call.begin_ns as i64;
    if begin <= holder_end + error {
        return None;
    }
    let facts = trial.facts.get(op.0).cloned().unwrap_or_default();
    let blocking_launches = facts.env.as_ref().is_some_and(|e| e.launch_blocking());
    let issued = format!(
        "its call began at {}, {:+.2} µs after {label} ended",
        us(begin),
        (begin - holder_end) as f64 / 1e3
    );
    match facts.before {
        // The call before returned after the holder ended: it held the thread until then.
        Some(b) if b.end_ns > holder_end => {
            let what = match &*b.name {
                n if n.contains("Synchronize") => {
                    " (a sync returns once the work it names has ended)".to_string()
                }
                n if n.contains("Memcpy") && !n.contains("Async") => {
                    " (a synchronous copy returns once it is done)".to_string()
                }
                n if n.contains("Memcpy") => {
                    " (an async copy of pageable memory returns once it is staged or done)"
                        .to_string()
                }
                n if n.contains("Launch") && blocking_launches => {
                    " (CUDA_LAUNCH_BLOCKING=1, recorded: every launch returns once its work \
                     has ended)"
                        .to_string()
                }
                _ => String::new(),
            };
            Some((
                CauseKind::HostCall,
                format!(
                    "issued late: {issued}; its thread was in {} from {} to {}{what}",
                    b.name,
                    us(b.begin_ns),
                    us(b.end_ns)
                ),
            ))
        }
        _ => Some((
            CauseKind::IssuedLate,
            format!(
                "issued late: {issued}, and no CUDA call of its thread held it (the host's own \
                 work between calls)"
            ),
        )),
    }
}

/// Why an op waited for one of another stream, as far as the trace shows: the first cause
/// that applies, from what the trace shows most directly.
fn other_stream(trial: &Trial, op: OpId, holder: OpId) -> (CauseKind, String) {
    let facts = trial.facts.get(op.0).cloned().unwrap_or_default();
    let env = facts.env.as_ref();
    if facts.first_launch && !env.is_some_and(|e| e.eager()) {
        let recorded = match env {
            Some(_) => " (CUDA_MODULE_LOADING not EAGER, recorded)",
            None => " (CUDA_MODULE_LOADING=LAZY, the default since CUDA 12.2)",
        };
        return (
            CauseKind::FirstLaunch,
            format!(
                "it is the first launch of its kernel in its process: where modules load \
                 lazily{recorded}, that launch loads its module, which waits for the work \
                 already running; CUDA_MODULE_LOADING=EAGER or a warm-up launch removes the wait"
            ),
        );
    }
    let found = [
        event_wait(trial, &facts, op, holder).map(|w| (CauseKind::EventWait, w)),
        legacy_stream(trial, op, holder).map(|w| (CauseKind::LegacyStream, w)),
        priority(trial, op, holder).map(|w| (CauseKind::Priority, w)),
        copy_engine(trial, op, holder).map(|w| (CauseKind::CopyEngine, w)),
        full_gpu(trial, env, holder).map(|w| (CauseKind::FullGpu, w)),
        shared_queues(env).map(|w| (CauseKind::SharedQueues, w)),
    ];
    (found.into_iter().flatten().next())
        .unwrap_or_else(|| (CauseKind::Unknown, unknown(trial, &facts, op, holder)))
}

/// Two copies of one direction share the GPU's copy engine for it.
fn copy_engine(trial: &Trial, op: OpId, holder: OpId) -> Option<String> {
    let direction = |o: OpId| match trial.facts.get(o.0).and_then(|f| f.kind) {
        Some(GpuKind::Copy(d @ (CopyDir::HtoD | CopyDir::DtoH), _)) => Some(d),
        _ => None,
    };
    let (a, b) = (direction(op)?, direction(holder)?);
    (a == b).then(|| {
        "both are copies of one direction: they share the GPU's copy engine for it and run one \
         after another (the lab's copy.engines.two_h2d_serialize)"
            .into()
    })
}

/// The kernel `holder` filled every SM as it started (the profiler's blocks per SM).
fn full_gpu(trial: &Trial, env: Option<&DriverEnv>, holder: OpId) -> Option<String> {
    let b = (trial.facts.get(holder.0))
        .and_then(|f| f.blocks_per_sm)
        .filter(|&b| b >= 100)?;
    let queues = match env.and_then(|e| e.connections()) {
        Some(n) => {
            format!("; its process also ran with CUDA_DEVICE_MAX_CONNECTIONS={n} (recorded)")
        }
        None => String::new(),
    };
    Some(format!(
        "the kernel it waited for filled the GPU as it started ({:.2} blocks per SM, the \
         profiler's figure): a kernel runs beside another only on SMs left free{queues}",
        f64::from(b) / 100.0
    ))
}

/// The process's streams share the hardware queues its recorded environment sets.
fn shared_queues(env: Option<&DriverEnv>) -> Option<String> {
    let n = env.and_then(|e| e.connections())?;
    let queues = match n {
        1 => "one hardware queue".to_string(),
        n => format!("{n} hardware queues"),
    };
    Some(format!(
        "its process ran with CUDA_DEVICE_MAX_CONNECTIONS={n} (recorded): its streams share \
         {queues}, and work in one queue runs in the order it was issued"
    ))
}

/// "Nothing in the trace says why", naming what the trace does and does not record.
fn unknown(trial: &Trial, facts: &Facts, op: OpId, holder: OpId) -> String {
    let env = facts.env.as_ref();
    let first = match facts.first_launch {
        true => "a first launch, but modules load eagerly (CUDA_MODULE_LOADING=EAGER, recorded)",
        false => "not a first launch",
    };
    let queues = match env {
        Some(_) => {
            "CUDA_DEVICE_MAX_CONNECTIONS was unset (8 hardware queues, recorded); more \
                    streams than queues"
        }
        None => "one hardware queue, as under CUDA_DEVICE_MAX_CONNECTIONS=1,",
    };
    let unrecorded = match streams_of(trial, op, holder) {
        (Some(a), Some(b)) => {
            let kinds = match a == b {
                true => format!("both streams are {} (recorded)", a.word()),
                false => format!("the streams are {} and {} (recorded)", a.word(), b.word()),
            };
            format!(
                "{queues} would do this, which the trace does not record; {kinds}, which do not \
                 wait for each other"
            )
        }
        _ => format!(
            "{queues} or the legacy default stream would do this, and the trace records neither"
        ),
    };
    let waits = match facts.recorded_waits {
        Some(_) => " on the other's stream (its syncs recorded)",
        None => "",
    };
    // SMs the other kernel held (its registers, shared memory), where it did not fill the
    // GPU by its blocks or the trace gives no figure.
    let room = match (trial.facts.get(holder.0)).and_then(|f| f.blocks_per_sm) {
        Some(b) => format!(
            "; the kernel it waited for started with {:.2} blocks per SM, but its registers or \
             shared memory may still have left no room",
            f64::from(b) / 100.0
        ),
        None => "; or the kernel it waited for held the SMs it needed".into(),
    };
    format!(
        "nothing in the trace says why: not its stream's order, no event wait before its \
         launch{waits}, {first} ({unrecorded}{room})"
    )
}

/// An event wait that may have ordered `op` after `holder`: where the trace records its syncs,
/// a wait of its stream for `holder`'s stream (or for a record the trace lacks); where it does
/// not, any `cudaStreamWaitEvent` its thread called since its previous launch.
fn event_wait(trial: &Trial, facts: &Facts, op: OpId, holder: OpId) -> Option<String> {
    let Some(waits) = &facts.recorded_waits else {
        return facts.event_wait.then(|| {
            "its thread called cudaStreamWaitEvent since its previous launch: an event wait may \
             have ordered it"
                .into()
        });
    };
    let (Some(a), Some(b)) = (trial.place(op), trial.place(holder)) else {
        return None;
    };
    if (a.0, a.1) == (b.0, b.1) && waits.contains(&Some(b.3)) {
        return Some(format!(
            "its stream waited (cudaStreamWaitEvent, recorded) for an event recorded on stream \
             {}, the other's, since its previous op: the program ordered it",
            b.3
        ));
    }
    waits.contains(&None).then(|| {
        "its stream waited (cudaStreamWaitEvent, recorded) for an event whose record the trace \
         lacks: that wait may have ordered it"
            .into()
    })
}

/// The kinds of the streams of `op` and `holder`, where the trace records both and they ran in
/// one process on one device.
fn streams_of(trial: &Trial, op: OpId, holder: OpId) -> (Option<StreamKind>, Option<StreamKind>) {
    let kind = |o: OpId| (trial.facts.get(o.0)).and_then(|f| f.stream.and_then(|s| s.kind));
    let same = match (trial.place(op), trial.place(holder)) {
        (Some(a), Some(b)) => (a.0, a.1, a.2) == (b.0, b.1, b.2),
        _ => false,
    };
    match same {
        true => (kind(op), kind(holder)),
        false => (None, None),
    }
}

/// Where one of the two streams is the legacy default stream and the other blocking: they wait
/// for each other's work, whichever was issued first.
fn legacy_stream(trial: &Trial, op: OpId, holder: OpId) -> Option<String> {
    use StreamKind::{Blocking, LegacyDefault};
    let which = match streams_of(trial, op, holder) {
        (Some(LegacyDefault), Some(Blocking)) => "its stream is the legacy default stream",
        (Some(Blocking), Some(LegacyDefault)) => "the other's stream is the legacy default stream",
        _ => return None,
    };
    Some(format!(
        "{which} and the other a blocking stream (recorded): the legacy default stream waits for \
         the work issued before on every blocking stream of its device, and they wait for its \
         work; a stream created with cudaStreamNonBlocking (or --default-stream per-thread) \
         does not"
    ))
}

/// Where `holder`'s stream has the higher priority (a lower number), both recorded, in one
/// process on one device: the block scheduler gives free SMs to its blocks first.
fn priority(trial: &Trial, op: OpId, holder: OpId) -> Option<String> {
    let (a, b) = (trial.place(op)?, trial.place(holder)?);
    if (a.0, a.1, a.2) != (b.0, b.1, b.2) {
        return None;
    }
    let of = |o: OpId| (trial.facts.get(o.0)).and_then(|f| f.stream.and_then(|s| s.priority));
    let (mine, theirs) = (of(op)?, of(holder)?);
    (theirs < mine).then(|| {
        format!(
            "the other's stream has the higher priority (recorded: {theirs} against its {mine}; \
             lower runs first): the block scheduler gives free SMs to its blocks first"
        )
    })
}
