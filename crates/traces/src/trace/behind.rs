//! The program behind a trace: what the model of stream semantics reads of it, rebuilt per
//! process from what the trace records, with the model's orders over it.
//!
//! Per process of a file, in issue order (each act at its call's begin, calls of one thread in
//! their order):
//! - every GPU op with its call: a kernel, copy or memset on its stream (a kernel takes its
//!   place in its stream's hardware queue); the kernels of one call (a graph launch) as the
//!   parts of the launch, unordered among themselves, then the launch's end;
//! - every `cudaEventRecord` the trace holds, each an event of its own (a wait is joined to the
//!   record it waits for when the trace is read, `syncs.rs`);
//! - every `cudaStreamWaitEvent` on its stream, waiting for its record; a wait whose record the
//!   trace lacks waits for nothing the model can follow, and is kept apart
//!   ([`Process::blind_waits`]) so that a cause can still name it;
//! - every `cudaStreamSynchronize` and `cudaEventSynchronize` the trace records with its stream
//!   or event, and every `cudaDeviceSynchronize` of a process that used one device;
//! - each stream with its kind (legacy default, blocking, non-blocking) where the trace records
//!   it, its device, and its place among the process's streams of that device in order of
//!   creation (the hardware queue it feeds);
//! - the environment the driver read (`CUDA_DEVICE_MAX_CONNECTIONS`), where recorded: the model
//!   then adds the hardware queues (`Refinement::Queues`).
//!
//! - every host function on the stream its call named, where recorded (`stream-litmus trace`
//!   records it, `crates/inject/src/host_fn_streams.rs`; a profiler's trace does not);
//!
//! What the trace does not record stays unknown and is said in [`Process::notes`], never
//! guessed: a stream of unknown kind makes no implicit order, a wait of unknown record orders
//! nothing, host functions of unknown stream and ops without a call are left out, and so is a
//! device sync of a process on several devices (the trace does not say which device it named).
//! The model then predicts fewer orders, never a false one.

use super::events::{GpuKind, TraceFile};
use super::syncs::SyncKind;
use crate::model::{
    Act, Issued, Link, Orders, Refinement, Rule, Search, StreamFacts, What, DEFAULT_CONNECTIONS,
};
use crate::program::{StreamId, StreamKind, SyncTarget};
use std::collections::{BTreeMap, HashMap};

/// The most nodes one question to the model looks at (a search from the later op back towards
/// the earlier, never leaving the ops issued between them): a step of a DDP trace is a few
/// thousand; past this the answer is "undecided", said as such.
pub const MAX_SEARCH: usize = 200_000;

/// What an act of the rebuilt program is in the trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// A GPU op of the file, by index.
    Op(usize),
    /// An event record of the file ([`TraceFile::records`]).
    Record(usize),
    /// A sync of the file ([`TraceFile::syncs`]): a wait, a stream or an event sync.
    Sync(usize),
    /// A device sync of the file ([`TraceFile::device_syncs`]).
    DeviceSync(usize),
    /// The end of a graph launch: the call its kernels share.
    Join(usize),
    /// A host function the file's call of that index enqueued ([`TraceFile::host_fn_calls`]).
    HostFn(usize),
}

/// One process's program, as the model reads it.
#[derive(Debug, Clone)]
pub struct Process {
    pub pid: i64,
    pub issued: Issued,
    pub orders: Orders,
    /// What each act is in the trace, by act.
    pub sources: Vec<Source>,
    /// Each stream of `issued`: its device and its number in the trace.
    pub streams: Vec<(u32, u64)>,
    /// The index of each stream of `streams`.
    stream_at: HashMap<(u32, u64), usize>,
    /// The hardware queues per device, where the recorded environment gives them (its
    /// `CUDA_DEVICE_MAX_CONNECTIONS`, else the driver's default of 8).
    pub connections: Option<usize>,
    /// Whether the recorded environment set `CUDA_DEVICE_MAX_CONNECTIONS`.
    pub connections_set: bool,
    /// How many streams the trace records it created (each takes the next hardware queue).
    pub created: usize,
    /// The waits whose record the trace lacks, by act.
    pub blind_waits: Vec<usize>,
    /// Its host syncs (stream, event and device syncs) as (call begin, act), in issue order.
    pub syncs: Vec<(i64, usize)>,
    /// What the trace does not record of this process's program.
    pub notes: Vec<String>,
}

/// The programs behind one trace file.
#[derive(Debug, Clone, Default)]
pub struct Behind {
    pub processes: Vec<Process>,
    /// By GPU op of the file: its process and act.
    act_of: Vec<Option<(u32, u32)>>,
}

/// How the model orders one op before another.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Order {
    /// The program asked for it: a chain of the documented rules without the legacy default
    /// stream's barrier (its stream's order, event waits, host syncs, a graph).
    Asked(Vec<Link>),
    /// Only through the legacy default stream's barrier: the streams' kinds imply it.
    Implied(Vec<Link>),
    /// Only through the hardware queues the two streams share (the recorded connections).
    SharedQueue(Vec<Link>),
    /// No chain of any rule.
    Not,
    /// The model cannot say: ops of two processes, an op outside the program, or a search cut
    /// at [`MAX_SEARCH`].
    Unknown(&'static str),
}

impl Behind {
    /// The programs behind `file`, one per process.
    pub fn of(file: &TraceFile) -> Behind {
        let mut pids: Vec<i64> = (file.ops.iter().map(|o| o.pid))
            .chain(file.syncs.iter().map(|s| s.pid))
            .chain(file.records.iter().map(|r| r.pid))
            .chain(file.device_syncs.iter().map(|d| d.pid))
            .collect();
        pids.sort_unstable();
        pids.dedup();
        let mut act_of = vec![None; file.ops.len()];
        let processes = (pids.iter().enumerate())
            .map(|(k, &pid)| {
                let p = rebuild(file, pid);
                for (a, s) in p.sources.iter().enumerate() {
                    if let Source::Op(o) = *s {
                        act_of[o] = Some((k as u32, a as u32));
                    }
                }
                p
            })
            .collect();
        Behind { processes, act_of }
    }

    /// The process and act of GPU op `op` of the file, if the program holds it.
    pub fn act(&self, op: usize) -> Option<(usize, usize)> {
        let (p, a) = self.act_of.get(op).copied().flatten()?;
        Some((p as usize, a as usize))
    }

    /// How the model orders GPU op `a` of the file before GPU op `b`.
    pub fn order(&self, a: usize, b: usize) -> Order {
        let (Some((pa, xa)), Some((pb, xb))) = (self.act(a), self.act(b)) else {
            return Order::Unknown("an op outside the program behind the trace (no call)");
        };
        if pa != pb {
            return Order::Unknown("ops of two processes");
        }
        self.processes[pa].order(xa, xb)
    }
}

impl Process {
    /// How the model orders act `a` before act `b`: asked for, implied by the legacy default
    /// stream, made by shared hardware queues, or not.
    pub fn order(&self, a: usize, b: usize) -> Order {
        let o = &self.orders;
        let asked = |r: Rule| !matches!(r, Rule::Legacy | Rule::Queue);
        let documented = |r: Rule| r != Rule::Queue;
        type Try<'a> = (&'a dyn Fn(Rule) -> bool, fn(Vec<Link>) -> Order);
        let tries: [Try; 3] = [
            (&asked, Order::Asked),
            (&documented, Order::Implied),
            (&|_| true, Order::SharedQueue),
        ];
        for (allow, found) in tries {
            match o.chain(a, b, allow, MAX_SEARCH) {
                Search::Ordered(links) => return found(links),
                Search::Undecided => {
                    return Order::Unknown("the model's search was cut (a window too wide)")
                }
                Search::Not => {}
            }
        }
        Order::Not
    }

    /// Whether act `a` is a host sync (of a stream, an event or the device).
    pub fn is_host_sync(&self, a: usize) -> bool {
        (self.issued.ops.get(a))
            .is_some_and(|x| matches!(x.what, What::HostSync { .. } | What::DeviceSync { .. }))
    }

    /// The stream of act `a`, as (device, stream number in the trace).
    pub fn stream_of(&self, a: usize) -> Option<(u32, u64)> {
        let s = self.issued.ops.get(a)?.what.stream()?;
        self.streams.get(s.0).copied()
    }

    /// The kind of stream `s` of the trace on `device`, where recorded.
    pub fn kind_of(&self, device: u32, s: u64) -> Option<StreamKind> {
        let i = *self.stream_at.get(&(device, s))?;
        self.issued.streams[i].kind
    }

    /// The hardware queue stream `s` of `device` feeds, where the connections and its place are
    /// known: (queue, connections, streams the process created).
    pub fn queue_of(&self, device: u32, s: u64) -> Option<(usize, usize, usize)> {
        let n = self.connections?;
        let i = *self.stream_at.get(&(device, s))?;
        let placed = self.created;
        let queue = match self.issued.streams[i].slot {
            Some(slot) => slot % n,
            None if n == 1 => 0,
            None => return None,
        };
        Some((queue, n, placed))
    }
}

/// A process's acts as they are found, each with its sort key (call begin, thread, place
/// within the call) and its source, in three lists put in issue order together, in place.
/// While found, an act's `part_of` holds the call of the graph launch it is a part of; once in
/// order, the place of that launch's end. Kept as one list of entries, they and the lists made
/// from them were the peak of reading a 200 MB trace (issue 51).
#[derive(Default)]
struct Entries {
    keys: Vec<(i64, i64, usize)>,
    acts: Vec<Act>,
    sources: Vec<Source>,
}

impl Entries {
    fn push(&mut self, key: (i64, i64, usize), what: What, source: Source, call: Option<usize>) {
        self.keys.push(key);
        self.acts.push(Act {
            what,
            part_of: call.map(|c| c as u32),
        });
        self.sources.push(source);
    }

    /// At a call's begin on its thread, before the ops of calls that begin with it.
    fn push_at(&mut self, begin: i64, tid: i64, what: What, source: Source) {
        self.push((begin, tid, 0), what, source, None);
    }

    /// In issue order (stable: entries of one key keep the order they were found in), each
    /// part of a graph launch pointing at the launch's end.
    fn sort(&mut self) {
        let Entries {
            keys,
            acts,
            sources,
        } = self;
        let order = super::chunked::stable_order(keys.len(), |i| keys[i]);
        super::chunked::permute(order, |a, b| {
            keys.swap(a, b);
            acts.swap(a, b);
            sources.swap(a, b);
        });
        // Each part points at its launch's end, which sorts after every part of its call.
        let join_at: HashMap<u32, u32> = (sources.iter().enumerate())
            .filter_map(|(i, s)| match *s {
                Source::Join(call) => Some((call as u32, i as u32)),
                _ => None,
            })
            .collect();
        for act in acts.iter_mut() {
            act.part_of = act.part_of.and_then(|c| join_at.get(&c).copied());
        }
    }
}

/// Streams of one process, numbered as they are first named.
#[derive(Default)]
struct StreamTable {
    ids: HashMap<(u32, u64), StreamId>,
    list: Vec<(u32, u64)>,
}

impl StreamTable {
    fn id(&mut self, device: u32, stream: u64) -> StreamId {
        let next = StreamId(self.list.len());
        *self.ids.entry((device, stream)).or_insert_with(|| {
            self.list.push((device, stream));
            next
        })
    }
}

fn rebuild(file: &TraceFile, pid: i64) -> Process {
    let mut notes = Vec::new();
    let mut table = StreamTable::default();
    // The device of each stream number, from the ops on it; a stream that ran none (it only
    // recorded or waited) is on the process's only device, else on device 0 (said).
    let mut device_of: HashMap<u64, u32> = HashMap::new();
    let mut devices: Vec<u32> = Vec::new();
    let mine = || (file.ops.iter().enumerate()).filter(|(_, o)| o.pid == pid);
    for (_, op) in mine().filter(|(_, o)| o.kind != GpuKind::HostFn) {
        device_of.entry(op.stream).or_insert(op.device);
        if !devices.contains(&op.device) {
            devices.push(op.device);
        }
    }
    let lone_device = match devices.as_slice() {
        [d] => Some(*d),
        _ => None,
    };
    let mut guessed_device = false;
    let mut stream = |table: &mut StreamTable, s: u64| {
        let d = match (device_of.get(&s), lone_device) {
            (Some(&d), _) => d,
            (None, Some(d)) => d,
            (None, None) => {
                guessed_device = true;
                0
            }
        };
        table.id(d, s)
    };
    let mut entries = Entries::default();
    // GPU ops, the kernels of one call (a graph launch) as parts of its launch.
    // The calls of its ops, sorted: a call listed twice issued several (a third of a map's size).
    let mut per_call: Vec<u32> = (mine())
        .filter(|(_, op)| op.kind != GpuKind::HostFn)
        .filter_map(|(_, op)| op.call.as_ref().map(|c| c.id))
        .collect();
    per_call.sort_unstable();
    let several = |id: u32| {
        let at = per_call.partition_point(|&c| c < id);
        per_call.get(at + 1) == Some(&id)
    };
    let (mut callless, mut host_fns) = (0usize, 0usize);
    let mut joins: BTreeMap<usize, (i64, i64, StreamId)> = BTreeMap::new();
    for (o, op) in mine() {
        if op.kind == GpuKind::HostFn {
            continue; // its enqueue call, below, is its act
        }
        let Some(c) = &op.call else {
            callless += 1;
            continue;
        };
        let s = table.id(op.device, op.stream);
        // A device memset runs on the compute engine like a kernel, and takes its place in
        // its stream's hardware queue like one; a copy goes to a copy engine (not measured).
        let work = What::Work {
            stream: s,
            queued: matches!(op.kind, GpuKind::Kernel | GpuKind::Memset),
        };
        // A graph launch's kernels share its call; one of one kernel is told by its name.
        let graph = several(c.id) || c.name.contains("GraphLaunch");
        let id = c.id as usize;
        if graph {
            joins.entry(id).or_insert((c.begin_ns, c.tid, s));
        }
        let key = (c.begin_ns, c.tid, 1 + o);
        entries.push(key, work, Source::Op(o), graph.then_some(id));
    }
    for (call, (begin, tid, s)) in &joins {
        let join = What::Join { stream: *s };
        entries.push((*begin, *tid, usize::MAX), join, Source::Join(*call), None);
    }
    // Host functions on the stream their call named, where recorded; a stream op that takes its
    // time on the host, in no hardware queue.
    for (h, call) in file
        .host_fn_calls
        .iter()
        .enumerate()
        .filter(|(_, c)| c.pid == pid)
    {
        let Some(s) = call.stream else {
            host_fns += 1;
            continue;
        };
        let what = What::Work {
            stream: stream(&mut table, s),
            queued: false,
        };
        entries.push_at(call.begin_ns, call.tid, what, Source::HostFn(h));
    }
    let records = file.records.len();
    for (r, rec) in file
        .records
        .iter()
        .enumerate()
        .filter(|(_, r)| r.pid == pid)
    {
        let s = stream(&mut table, rec.stream);
        entries.push_at(
            rec.call.begin_ns,
            rec.call.tid,
            What::Record {
                stream: s,
                event: r,
            },
            Source::Record(r),
        );
    }
    // Waits and event syncs whose record the trace lacks, and the events made up for them (one
    // each, never recorded).
    let (mut blind, mut unknown_event_syncs, mut fresh) = (0usize, 0usize, 0usize);
    for (i, sync) in file.syncs.iter().enumerate().filter(|(_, s)| s.pid == pid) {
        let record = sync.source.and_then(|src| src.id);
        let what = match (sync.kind, sync.stream) {
            (SyncKind::StreamWaitEvent, Some(s)) => {
                let event = record.unwrap_or_else(|| {
                    blind += 1;
                    fresh += 1;
                    records + fresh - 1
                });
                What::Wait {
                    stream: stream(&mut table, s),
                    event,
                }
            }
            (SyncKind::StreamSync, Some(s)) => What::HostSync {
                target: SyncTarget::Stream(stream(&mut table, s)),
            },
            // An event sync whose record the trace lacks still returns only then: a host sync
            // that covers nothing the model can follow (a record before the trace, or none).
            (SyncKind::EventSync, _) => {
                let event = record.unwrap_or_else(|| {
                    unknown_event_syncs += 1;
                    fresh += 1;
                    records + fresh - 1
                });
                What::HostSync {
                    target: SyncTarget::Event(crate::program::EventId(event)),
                }
            }
            // Device syncs come from their calls, below.
            _ => continue,
        };
        entries.push_at(sync.call.begin_ns, sync.call.tid, what, Source::Sync(i));
    }
    let syncs = file.device_syncs.iter().enumerate();
    let mut unplaced_syncs = 0usize;
    for (i, d) in syncs.filter(|(_, d)| d.pid == pid) {
        match lone_device {
            Some(device) => entries.push_at(
                d.begin_ns,
                d.tid,
                What::DeviceSync { device },
                Source::DeviceSync(i),
            ),
            None => unplaced_syncs += usize::from(!devices.is_empty()),
        }
    }
    entries.sort();
    let Entries {
        keys,
        acts: ops,
        sources,
    } = entries;
    let syncs: Vec<(i64, usize)> = (ops.iter().enumerate())
        .filter(|(_, a)| matches!(a.what, What::HostSync { .. } | What::DeviceSync { .. }))
        .map(|(i, _)| (keys[i].0, i))
        .collect();
    drop(keys);
    let blind_waits: Vec<usize> = (ops.iter().enumerate())
        .filter(|(_, a)| matches!(a.what, What::Wait { event, .. } if event >= records))
        .map(|(i, _)| i)
        .collect();
    let streams = stream_facts(file, pid, &table.list);
    let env = file.env.get(&pid);
    let connections =
        env.map(|e| (e.connections().map_or(DEFAULT_CONNECTIONS, |n| n as usize)).clamp(1, 32));
    let (mut ops, mut sources) = (ops, sources);
    ops.shrink_to_fit();
    sources.shrink_to_fit();
    let issued = Issued {
        streams,
        events: records + fresh,
        ops,
    };
    let refinement = connections.map_or(Refinement::Documented, Refinement::Queues);
    if issued.streams.iter().any(|s| s.kind.is_none()) {
        notes.push(
            "stream kinds not recorded (no stream records): the legacy default stream's \
             barrier is not modelled"
                .to_string(),
        );
    }
    let counted = [
        (
            blind,
            "event waits name a record the trace lacks: they order nothing the model can follow",
        ),
        (
            unknown_event_syncs,
            "event syncs name a record the trace lacks: they cover nothing the model can follow",
        ),
        (
            host_fns,
            "host functions whose streams the trace does not record: their order is not \
             modelled",
        ),
        (callless, "GPU ops without a call: left out (no issue time)"),
        (
            unplaced_syncs,
            "device syncs of a process on several devices: left out (the trace does not say \
             which device each named)",
        ),
    ];
    for (n, what) in counted.into_iter().filter(|(n, _)| *n > 0) {
        notes.push(format!("{n} {what}"));
    }
    if guessed_device {
        notes.push(
            "streams that ran no op on a process of several devices are taken as device 0's"
                .to_string(),
        );
    }
    Process {
        pid,
        orders: Orders::of(&issued, refinement),
        issued,
        sources,
        stream_at: table.ids.iter().map(|(&k, v)| (k, v.0)).collect(),
        streams: table.list,
        connections,
        connections_set: env.is_some_and(|e| e.connections().is_some()),
        created: (file.streams.iter())
            .filter(|((p, _), i)| *p == pid && i.created.is_some())
            .count(),
        blind_waits,
        syncs,
        notes,
    }
}

/// Each stream's facts: its kind where recorded, its device, and its place among every stream
/// the process created, in order of creation (where the creation is recorded). The driver hands
/// out hardware queues in turn as streams are created, used or not; a stream record names no
/// device, so a process of several devices counts its streams of all devices together.
fn stream_facts(file: &TraceFile, pid: i64, list: &[(u32, u64)]) -> Vec<StreamFacts> {
    let info = |s: u64| file.streams.get(&(pid, s));
    let mut created: Vec<(i64, u64)> = (file.streams.iter())
        .filter(|((p, _), _)| *p == pid)
        .filter_map(|(&(_, s), i)| Some((i.created?, s)))
        .collect();
    created.sort_unstable();
    let rank: HashMap<u64, usize> = (created.iter().enumerate())
        .map(|(k, &(_, s))| (s, k))
        .collect();
    (list.iter())
        .map(|&(device, s)| StreamFacts {
            kind: info(s).and_then(|x| x.kind),
            device,
            slot: rank.get(&s).copied(),
        })
        .collect()
}
