//! What held an op back, as far as the trace shows: the op it started after, and why it waited.
//!
//! An order or a missing overlap on a trace is a finding only with its cause: the user wants to
//! know whether their program asked for the wait. The model of stream semantics, applied to the
//! program behind the trace (`behind.rs`), decides first; the facts the trace shows about the
//! op's issue come after:
//! 1. **issued late**: its launch call began only after the op it started after had ended, so
//!    the GPU never held it; where the thread's call before it returned only then (a sync, a
//!    pageable or synchronous copy), that call held the thread;
//! 2. **asked for**: a chain of the documented rules orders it after the other op (its stream's
//!    order: **queued**; event waits across any number of streams: **an event wait**, the chain
//!    named; a host sync, a graph launch, a collective: **ordered**), whatever else also held it;
//! 3. **implied**: only the legacy default stream's barrier orders it (the streams' kinds
//!    recorded), which the program did not ask for by name; the fix is a non-blocking stream;
//! 4. **shared hardware queues**: only the queues its streams share under the recorded
//!    `CUDA_DEVICE_MAX_CONNECTIONS` (or the default 8, where more streams than that were
//!    created) order it, by the driver's assignment of queues in order of creation;
//! 5. where the model cannot follow a wait: **an event wait** whose record the trace lacks (or,
//!    in a trace without its syncs, a `cudaStreamWaitEvent` its thread called since its
//!    previous launch) may have ordered it;
//! 6. not ordered: the **first launch** of its kernel in its process (lazy module loading,
//!    unless the recorded environment says `CUDA_MODULE_LOADING=EAGER`); room on the GPU: **a
//!    stream of higher priority**, **one copy engine** where both are copies of one direction,
//!    **a full GPU** where the op it waited for filled every SM as it started (the profiler's
//!    blocks per SM); else **nothing in the trace** says why, naming what it records and what
//!    it does not.
//!
//! Every figure is on the trial's axis, the one the evidence's other figures use.

use super::behind::{Order, Source};
use super::events::{DriverEnv, GpuKind};
use super::facts::Facts;
use super::trials::Trial;
use crate::measured::calibration::Tolerances;
use crate::model::{Link, Rule};
use crate::program::{CopyDir, OpId, StreamKind};

/// The kinds of cause, for summing and for pictures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CauseKind {
    /// A host call of its thread returned only after the op it started after ended.
    HostCall,
    /// Its launch call began only after the op it started after ended.
    IssuedLate,
    /// Behind the op before it in its stream.
    Queued,
    /// An event wait: a chain of event waits the trace records, or one it may have made.
    EventWait,
    /// Another chain the program asked for: a host sync, a graph launch, a collective.
    Ordered,
    /// A collective kernel issued before the op it started after: it waited for its peers.
    Peers,
    /// The first launch of its kernel in its process (lazy module loading).
    FirstLaunch,
    /// The kernel it waited for filled every SM as it started (the profiler's blocks per SM).
    FullGpu,
    /// A copy that waited for a copy of the same direction: they share the copy engine.
    CopyEngine,
    /// The process's streams share hardware queues (`CUDA_DEVICE_MAX_CONNECTIONS`).
    SharedQueues,
    /// Only the legacy default stream's barrier orders it: implied by the streams' kinds.
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
    /// it made, a chain of them), as against what its streams' kinds imply, the driver or the
    /// hardware (a module load, shared queues) or nothing the trace shows.
    pub fn asked(self) -> bool {
        matches!(
            self,
            CauseKind::HostCall
                | CauseKind::IssuedLate
                | CauseKind::Queued
                | CauseKind::EventWait
                | CauseKind::Ordered
                | CauseKind::Peers
        )
    }

    /// Whether the streams' kinds imply the wait (the legacy default stream): the program did
    /// not name it, and changing a stream's kind removes it.
    pub fn implied(self) -> bool {
        self == CauseKind::LegacyStream
    }

    /// Its name in JSON (`explain --json`).
    pub fn key(self) -> &'static str {
        match self {
            CauseKind::HostCall => "host_call",
            CauseKind::IssuedLate => "issued_late",
            CauseKind::Queued => "queued",
            CauseKind::EventWait => "event_wait",
            CauseKind::Ordered => "ordered",
            CauseKind::Peers => "peers",
            CauseKind::FirstLaunch => "first_launch",
            CauseKind::FullGpu => "full_gpu",
            CauseKind::CopyEngine => "copy_engine",
            CauseKind::SharedQueues => "shared_queues",
            CauseKind::LegacyStream => "legacy_stream",
            CauseKind::Priority => "priority",
            CauseKind::Unknown => "unknown",
        }
    }

    pub fn word(self) -> &'static str {
        match self {
            CauseKind::HostCall => "a host call held the thread",
            CauseKind::IssuedLate => "issued late",
            CauseKind::Queued => "queued in its stream",
            CauseKind::EventWait => "an event wait",
            CauseKind::Ordered => "ordered by the program",
            CauseKind::Peers => "a collective waited for its peers",
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
        None => by_model(trial, op, holder, &label),
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

/// The model's answer first (asked for, implied, shared queues), then what the trace shows
/// where the model does not order the two.
fn by_model(trial: &Trial, op: OpId, holder: OpId, label: &str) -> (CauseKind, String) {
    let same_lane = trial.place(holder) == trial.place(op);
    let process = trial.act(op).map(|(p, _)| p);
    let from = trial.act(holder).map_or(0, |(_, a)| a);
    let file = trial.ops.get(op.0).map_or(0, |r| r.0);
    let named = |links: &[Link]| {
        process.map_or(String::new(), |p| {
            let name = |act: usize| match p.sources.get(act)? {
                Source::Op(o) => trial.op_of(file, *o).map(|x| trial.label(x)),
                _ => None,
            };
            p.chain_words(from, links, label, &name)
        })
    };
    match trial.order(holder, op) {
        Order::Asked(links) => {
            let rules: Vec<Rule> = links.iter().map(|l| l.rule).collect();
            if rules
                .iter()
                .all(|r| matches!(r, Rule::Stream | Rule::Duration))
                && same_lane
            {
                return (CauseKind::Queued, "queued behind it in its stream".into());
            }
            let kind = match rules.contains(&Rule::Event) {
                true => CauseKind::EventWait,
                false => CauseKind::Ordered,
            };
            (kind, format!("the program ordered it: {}", named(&links)))
        }
        Order::Implied(links) => (
            CauseKind::LegacyStream,
            format!(
                "implied by the streams' kinds: {}; a stream created with \
                 cudaStreamNonBlocking (or --default-stream per-thread) does not wait for \
                 the legacy default stream, nor it for them",
                named(&links)
            ),
        ),
        Order::SharedQueue(links) => (
            CauseKind::SharedQueues,
            format!(
                "shared hardware queues: {}; work in one queue is dispatched in the order it \
                 was issued, so an op behind one that waits inherits its wait",
                named(&links)
            ),
        ),
        Order::Unknown(_) if same_lane => {
            (CauseKind::Queued, "queued behind it in its stream".into())
        }
        Order::Not
            if trial.issue_key(op).is_some() && trial.issue_key(op) == trial.issue_key(holder) =>
        {
            (
                CauseKind::Unknown,
                "both are kernels of one graph launch (one call): the graph's own edges, which a \
             trace does not record, may order them"
                    .into(),
            )
        }
        Order::Not if issued_before(trial, op, holder) => first_issued(trial, op, label),
        unknown @ (Order::Not | Order::Unknown(_)) => unordered(trial, op, holder, &unknown),
    }
}

/// Whether `op` was issued before `holder`, in the program behind the trace.
fn issued_before(trial: &Trial, op: OpId, holder: OpId) -> bool {
    match (trial.act(op), trial.act(holder)) {
        (Some((p, a)), Some((q, b))) => std::ptr::eq(p, q) && a < b,
        _ => false,
    }
}

/// Why an op waited for one issued after it: no order can make it wait for that op, so it
/// waited for something else, which started it just then. An NCCL collective waits for its
/// peers (the other ranks' launches of the same collective): the program asked for that.
fn first_issued(trial: &Trial, op: OpId, label: &str) -> (CauseKind, String) {
    let name = trial.label(op);
    let peers = ["ncclDevKernel", "ncclKernel"]
        .iter()
        .any(|p| name.starts_with(p));
    match peers {
        true => (
            CauseKind::Peers,
            format!(
                "a collective waits for its peers: it was issued before {label}, which no order \
                 can make it wait for, and started once every rank had joined (the other ranks' \
                 launches of the same collective; NCCL's kernels spin until their peers arrive)"
            ),
        ),
        false => (
            CauseKind::Unknown,
            format!(
                "it was issued before {label}, which no order can make it wait for: it waited for \
                 something the trace does not show, which let it go just then (room on the GPU, \
                 another process)"
            ),
        ),
    }
}

/// Why an op waited for one the model does not order it after (or cannot say of), as far as
/// the trace shows: the first cause that applies, from what the trace shows most directly.
fn unordered(trial: &Trial, op: OpId, holder: OpId, order: &Order) -> (CauseKind, String) {
    let facts = trial.facts.get(op.0).cloned().unwrap_or_default();
    let env = facts.env.as_ref();
    let other = |(kind, why): (CauseKind, String)| (kind, format!("on another stream; {why}"));
    if let Some(w) = blind_wait(&facts) {
        return other((CauseKind::EventWait, w));
    }
    if facts.first_launch && !env.is_some_and(|e| e.eager()) {
        let recorded = match env {
            Some(_) => " (CUDA_MODULE_LOADING not EAGER, recorded)",
            None => " (CUDA_MODULE_LOADING=LAZY, the default since CUDA 12.2)",
        };
        return other((
            CauseKind::FirstLaunch,
            format!(
                "it is the first launch of its kernel in its process: where modules load \
                 lazily{recorded}, that launch loads its module, which waits for the work \
                 already running; CUDA_MODULE_LOADING=EAGER or a warm-up launch removes the wait"
            ),
        ));
    }
    let found = [
        priority(trial, op, holder).map(|w| (CauseKind::Priority, w)),
        copy_engine(trial, op, holder).map(|w| (CauseKind::CopyEngine, w)),
        full_gpu(trial, env, holder).map(|w| (CauseKind::FullGpu, w)),
    ];
    let cause = found.into_iter().flatten().next();
    other(cause.unwrap_or_else(|| {
        (
            CauseKind::Unknown,
            unknown(trial, &facts, op, holder, order),
        )
    }))
}

/// An event wait the model cannot follow that may have ordered `op`: where the trace records
/// its syncs, a wait of its stream (since the op before it there) whose record the trace lacks;
/// where it does not, any `cudaStreamWaitEvent` its thread called since its previous launch.
fn blind_wait(facts: &Facts) -> Option<String> {
    let Some(waits) = &facts.recorded_waits else {
        return facts.event_wait.then(|| {
            "its thread called cudaStreamWaitEvent since its previous launch, and the trace \
             does not record which stream and event it named: an event wait may have ordered it"
                .into()
        });
    };
    waits.contains(&None).then(|| {
        "its stream waited (cudaStreamWaitEvent, recorded) for an event whose record the trace \
         lacks: that wait may have ordered it"
            .into()
    })
}

/// Two copies of one direction share the GPU's copy engine for it.
fn copy_engine(trial: &Trial, op: OpId, holder: OpId) -> Option<String> {
    let direction = |o: OpId| match trial.facts.get(o.0).and_then(|f| f.kind) {
        Some(GpuKind::Copy(Some(d @ (CopyDir::H2D | CopyDir::D2H)), _)) => Some(d),
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

/// "Nothing in the trace says why", naming what the trace records and what it does not.
fn unknown(trial: &Trial, facts: &Facts, op: OpId, holder: OpId, order: &Order) -> String {
    let first = match facts.first_launch {
        true => "a first launch, but modules load eagerly (CUDA_MODULE_LOADING=EAGER, recorded)",
        false => "not a first launch",
    };
    let waits = match facts.recorded_waits {
        Some(_) => "event waits (its syncs recorded)",
        None => "event waits",
    };
    let model = match order {
        Order::Unknown(why) => format!("the model cannot say ({why})"),
        _ => format!(
            "no chain of the model's rules orders it (its stream's order, {waits}, host syncs, \
             the legacy default stream)"
        ),
    };
    let queues = queues_said(trial, facts.env.as_ref(), op, holder);
    let kinds = match kinds_of(trial, op, holder) {
        (Some(a), Some(b)) if a == b => format!(
            "both streams are {} (recorded), which do not wait for each other",
            a.name()
        ),
        (Some(a), Some(b)) => format!(
            "the streams are {} and {} (recorded), which do not wait for each other",
            a.described(),
            b.described()
        ),
        _ => "the trace does not record the streams' kinds (the legacy default stream would \
              order more)"
            .to_string(),
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
    format!("nothing in the trace says why: {model}; {first}; {kinds}; {queues}{room}")
}

/// What the trace says of the hardware queues of the two ops' streams.
fn queues_said(trial: &Trial, env: Option<&DriverEnv>, op: OpId, holder: OpId) -> String {
    let (Some((p, _)), Some(a), Some(b), Some(env)) =
        (trial.act(op), trial.place(op), trial.place(holder), env)
    else {
        return "the trace does not record its process's environment \
                (CUDA_DEVICE_MAX_CONNECTIONS: fewer hardware queues would order more)"
            .into();
    };
    let set = match env.connections() {
        Some(n) => format!("CUDA_DEVICE_MAX_CONNECTIONS={n}"),
        None => "CUDA_DEVICE_MAX_CONNECTIONS unset (8 hardware queues)".into(),
    };
    match (p.queue_of(a.2, a.3), p.queue_of(b.2, b.3)) {
        (Some((qa, n, k)), Some((qb, _, _))) if qa != qb => format!(
            "its process ran with {set} (recorded) and created {k} streams: streams {} and {} \
             feed queues {qa} and {qb} of {n} (the driver's assignment in order of creation, as \
             `stream-litmus sweep` measured it)",
            a.3, b.3
        ),
        (Some((q, n, _)), Some(_)) => format!(
            "its process ran with {set} (recorded): streams {} and {} share hardware queue {q} \
             of {n}, but no op ahead of it in the queue waited",
            a.3, b.3
        ),
        _ => format!(
            "its process ran with {set} (recorded), but the trace does not say when streams {} \
             and {} were created (which queues they feed)",
            a.3, b.3
        ),
    }
}

/// The kinds of the streams of `op` and `holder`, where the trace records both and they ran in
/// one process on one device.
fn kinds_of(trial: &Trial, op: OpId, holder: OpId) -> (Option<StreamKind>, Option<StreamKind>) {
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
