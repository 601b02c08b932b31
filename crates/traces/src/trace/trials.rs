//! A trace cut into trials, each a [`Timeline`] the relations judge as they judge the lab's own.
//!
//! A trial is every GPU op whose call began inside one instance of a host range
//! (`ProfilerStep#N`, a `record_function`), the n-th instance of every file (rank) together; or
//! the whole trace. Its ops become spans of one block in order of start (op ids are positions in
//! that order), their calls host calls, on a time axis that starts at the trial's first instant.
//! The host and GPU times share the profiler's clock: the clock sync is the identity, within the
//! clock error the trace shows (`tolerance.rs`).

use super::behind::{Behind, Order};
use super::error::TraceError;
use super::events::{GpuKind, GpuOp, TraceFile};
use super::facts::{free, Facts, HeldBy};
use super::glob::{NameMemo, Pattern};
use super::names::{clip, held, Name};
use super::tolerance::TraceTolerances;
use crate::measured::timeline::{ClockSync, HostCall, HostSpan, Span, Timeline};
use crate::program::OpId;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

/// The most ops the trials of one claim may hold in all, an op counted once per trial it is in:
/// 2.6 times the 202 MB trace of the docs (1,565 steps, 150,240 ops in trials). A claim's trials
/// are cut at once (16 bytes an op, [`Cut`]) and built one at a time (a built trial holds about
/// 550 bytes an op: its timeline, labels, places and facts), so the bound is one of work: each
/// trial op is measured against the others. A larger trace may hold [`TRIAL_OPS_PER_OP`] times
/// its ops ([`Trace::trial_op_bound`]).
pub const MAX_TRIAL_OPS: usize = 400_000;

/// How many trial ops a trace may hold per GPU op, where that is past [`MAX_TRIAL_OPS`]: steps
/// hold each op once; twice leaves room for a second range around each, and still refuses the
/// overlapping ranges the bound is for (10,000 steps over 1,000 ops, each op in every one). A
/// trace ten times the docs' benchmark (1.5 million ops, read under a raised read limit) may
/// then hold 3 million trial ops, about 1.6 GB.
pub const TRIAL_OPS_PER_OP: usize = 2;

/// A trial before it is built: its name and its ops (file, op) in order of start, the op ids
/// of its trial.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cut {
    pub name: String,
    pub ops: Vec<(usize, usize)>,
}

/// What one trial of a trace is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TrialSpec {
    /// The whole trace is one trial.
    Whole,
    /// Each host range whose name matches (`ProfilerStep#*`, a `record_function` name); the
    /// n-th range of every file (rank) together make trial n.
    Each(Pattern),
    /// Each launch of a kernel whose name matches starts a trial, which holds the ops launched
    /// from it up to the next such launch (a marker kernel a program launches once per
    /// repetition, in a program without annotated ranges).
    EachKernel(Pattern),
}

/// The traces of one run, read and checked to belong together.
#[derive(Debug, Clone)]
pub struct Trace {
    pub files: Vec<TraceFile>,
    pub tolerances: TraceTolerances,
    /// By file, the kernels that are the first launch of their name in their process: where
    /// modules load lazily (CUDA_MODULE_LOADING=LAZY, the default since CUDA 12.2), such a launch
    /// loads its module first, which waits for the work already running.
    firsts: Vec<HashSet<usize>>,
    /// By file and op, whether it depended on nothing in its stream ([`free`]): found once per
    /// file, its stream's op before it by one pass (a scan back per op was quadratic in a
    /// trace of many streams).
    free: Vec<Vec<bool>>,
    /// By file, the event waits recorded before each op on its stream (`facts.rs`).
    waits: Vec<HashMap<usize, Vec<Option<u64>>>>,
    /// By file, the program behind it, with the model's orders over it (`behind.rs`).
    pub behind: Arc<Vec<Behind>>,
    /// Each distinct op name's [`short_name`], by the name's address (`names.rs` holds each
    /// once): every trial of every claim labels its ops, 150,000 a claim on the docs' benchmark,
    /// and clipping the name was most of a label's cost. Each entry keeps its name, so no address
    /// it is keyed by is freed and reused.
    short_names: HashMap<(usize, usize), (Name, String)>,
}

impl Trace {
    /// Reads every file; they must be ranks of one run (distinct ranks of one world size, and
    /// overlapping in time).
    pub fn read(paths: &[PathBuf]) -> Result<Trace, TraceError> {
        Trace::read_runs(paths, &[])
    }

    /// Reads every file, `runs[i]` naming the recording of file `i` (`trace "FILE" as NAME`;
    /// none named: one recording). The files of each recording must be ranks of one run.
    pub fn read_runs(paths: &[PathBuf], runs: &[String]) -> Result<Trace, TraceError> {
        refuse_repeats(paths)?;
        let mut files = paths
            .iter()
            .map(|p| super::kineto::read(p))
            .collect::<Result<Vec<_>, _>>()?;
        for (f, run) in files.iter_mut().zip(runs) {
            f.run = Some(run.as_str().into());
        }
        Trace::of(files)
    }

    /// Checks that the files of each recording (`TraceFile::run`) are of one run, and that no
    /// file holds the ops of one given before it.
    pub fn of(files: Vec<TraceFile>) -> Result<Trace, TraceError> {
        // A rank at or past its world size names no rank of that run.
        if let Some(f) = files
            .iter()
            .find(|f| matches!((f.rank, f.world), (Some(r), Some(w)) if r >= w))
        {
            return Err(TraceError::NotOneRun(format!(
                "{} is rank {} of a run of {} ranks: ranks count from 0 to the world size less \
                 one, so the trace is damaged",
                super::names::clip(&f.path),
                f.rank.unwrap_or(0),
                f.world.unwrap_or(0)
            )));
        }
        for (i, a) in files.iter().enumerate() {
            for b in files[..i].iter().filter(|b| b.run == a.run) {
                if a.rank.is_some() && a.rank == b.rank {
                    return Err(TraceError::NotOneRun(format!(
                        "{} and {} are both rank {}: traces given together must be the ranks of \
                         one run",
                        b.path,
                        a.path,
                        a.rank.unwrap_or(0)
                    )));
                }
                if a.world != b.world {
                    return Err(TraceError::NotOneRun(format!(
                        "{} is of a run of {} ranks and {} of {}: traces of different runs",
                        b.path,
                        ranks(b.world),
                        a.path,
                        ranks(a.world)
                    )));
                }
                if let (Some((a0, a1)), Some((b0, b1))) = (a.extent(), b.extent()) {
                    if a0 > b1 || b0 > a1 {
                        return Err(TraceError::NotOneRun(format!(
                            "{} and {} do not overlap in time ({:.3} s apart): traces of \
                             different runs (or of different hosts, whose clocks differ)",
                            b.path,
                            a.path,
                            (a0.max(b0) - a1.min(b1)) as f64 / 1e9
                        )));
                    }
                }
            }
        }
        refuse_copies(&files)?;
        let tolerances = TraceTolerances::measure(&files);
        let firsts = files.iter().map(TraceFile::first_launches).collect();
        let waits = files.iter().map(super::facts::recorded_waits).collect();
        let free = files.iter().map(free).collect();
        let behind = Arc::new(files.iter().map(Behind::of).collect());
        let mut short_names = HashMap::new();
        for op in files.iter().flat_map(|f| &f.ops) {
            (short_names.entry(held(&op.name)))
                .or_insert_with(|| (op.name.clone(), short_name(&op.name)));
        }
        Ok(Trace {
            files,
            tolerances,
            firsts,
            waits,
            free,
            behind,
            short_names,
        })
    }

    /// The most ops the trials of one claim on this trace may hold in all: [`MAX_TRIAL_OPS`], or
    /// [`TRIAL_OPS_PER_OP`] per GPU op of a larger trace.
    pub fn trial_op_bound(&self) -> usize {
        MAX_TRIAL_OPS.max(self.op_count().saturating_mul(TRIAL_OPS_PER_OP))
    }

    /// The GPU ops of all its files.
    pub fn op_count(&self) -> usize {
        self.files.iter().map(|f| f.ops.len()).sum()
    }

    /// The trials `spec` cuts the trace into; refused where they would hold more than
    /// [`Trace::trial_op_bound`] ops in all (ranges that overlap put an op in each).
    pub fn trials(&self, spec: &TrialSpec) -> Result<Vec<Trial>, TraceError> {
        let all = self.some_trials(spec, &|_| true)?;
        Ok(all.into_iter().map(|(_, t)| t).collect())
    }

    /// The trials `spec` cuts the trace into whose index `keep` takes, with their index: only
    /// those are made (a report shows the first trials of thousands).
    pub fn some_trials(
        &self,
        spec: &TrialSpec,
        keep: &dyn Fn(usize) -> bool,
    ) -> Result<Vec<(usize, Trial)>, TraceError> {
        let cuts = self.cuts(spec, keep)?;
        Ok((cuts.into_iter())
            .map(|(i, c)| (i, self.trial(c.name, c.ops)))
            .collect())
    }

    /// The trials `spec` cuts the trace into whose index `keep` takes, as cuts: their ops, not
    /// yet their timelines. A claim's trials are cut all at once (to count and compare them)
    /// and built one at a time ([`Trace::build`]): a trial holds about 35 times what its cut
    /// holds.
    pub fn cuts(
        &self,
        spec: &TrialSpec,
        keep: &dyn Fn(usize) -> bool,
    ) -> Result<Vec<(usize, Cut)>, TraceError> {
        match spec {
            TrialSpec::Whole => {
                // One trial of every op is within the bound, twice the trace's ops: the
                // trace's own read bounds it.
                let ops = (self.files.iter().enumerate())
                    .flat_map(|(f, file)| (0..file.ops.len()).map(move |o| (f, o)))
                    .collect();
                let whole = keep(0).then(|| (0, self.cut_of("the whole trace".into(), ops)));
                Ok(whole.into_iter().collect())
            }
            TrialSpec::EachKernel(pattern) => self.each_kernel(pattern, keep),
            TrialSpec::Each(pattern) => {
                // The ranges of each process of each file: a `trace --` recording holds every
                // process of a run in one file, and step n of each makes trial n.
                let mut sources: Vec<(usize, Windows)> = Vec::new();
                for (f, file) in self.files.iter().enumerate() {
                    let mut by_pid: std::collections::BTreeMap<i64, Windows> = Default::default();
                    let mut memo = NameMemo::default();
                    let chosen = (file.ranges.iter())
                        .filter(|r| memo.get(&r.name, || pattern.matches(&r.name)));
                    for r in chosen {
                        let mine = by_pid.entry(r.pid).or_default();
                        // A range used once per step ("ProfilerStep#3") names itself; one name
                        // used for every step gets its number.
                        let name = match r.name.contains('#') {
                            true => r.name.to_string(),
                            false => format!("{} {}", r.name, mine.len() + 1),
                        };
                        mine.push((r.pid, r.begin_ns, r.end_ns, name));
                    }
                    sources.extend(by_pid.into_values().map(|w| (f, w)));
                }
                self.cut(&sources, keep)
            }
        }
    }

    /// Trial n is, for each source (a file and its windows `(process, begin, end, name)`), the
    /// ops of that file whose call began within the source's n-th window, in that process (any,
    /// for a process below 0); the first source's window names it.
    fn cut(
        &self,
        sources: &[(usize, Windows)],
        keep: &dyn Fn(usize) -> bool,
    ) -> Result<Vec<(usize, Cut)>, TraceError> {
        // Each file's ops by their call's begin, once: a window is then a binary search, not a
        // scan of every op (a trace of 1,500 steps and 150,000 ops).
        let by_call: Vec<Vec<(i64, usize)>> = (self.files.iter())
            .map(|file| {
                let mut v: Vec<(i64, usize)> = (file.ops.iter().enumerate())
                    .filter_map(|(o, op)| op.call.as_ref().map(|c| (c.begin_ns, o)))
                    .collect();
                v.sort_unstable();
                v
            })
            .collect();
        let n = sources.iter().map(|(_, w)| w.len()).min().unwrap_or(0);
        // Counted before any trial is built: 10,000 overlapping steps over 1,000 ops would be
        // ten million ops held in trials (3.2 GiB).
        let window = |f: usize, lo: i64, hi: i64| {
            let calls = &by_call[f];
            calls.partition_point(|&(b, _)| b < lo)..calls.partition_point(|&(b, _)| b <= hi)
        };
        let (mut load, bound) = (0usize, self.trial_op_bound());
        for i in 0..n {
            for (f, windows) in sources {
                let (_, lo, hi, _) = &windows[i];
                load = load.saturating_add(window(*f, *lo, *hi).len());
            }
            if load > bound {
                return Err(TraceError::Trials(format!(
                    "the trials would hold over {bound} ops in all ({} trials cut so far; \
                     {MAX_TRIAL_OPS}, or {TRIAL_OPS_PER_OP} per GPU op of the trace): ranges \
                     that overlap put an op in each; choose a range that occurs once per step, \
                     or profile fewer steps",
                    i + 1
                )));
            }
        }
        Ok((0..n)
            .filter(|&i| keep(i))
            .map(|i| {
                // At most the windows' calls: a list that doubles as it grows keeps up to half
                // again what it holds, for every trial of every claim at once.
                let most = (sources.iter())
                    .map(|(f, windows)| window(*f, windows[i].1, windows[i].2).len())
                    .sum();
                let mut ops = Vec::with_capacity(most);
                for (f, windows) in sources {
                    let (f, file) = (*f, &self.files[*f]);
                    let (pid, lo, hi, _) = &windows[i];
                    ops.extend(
                        (by_call[f][window(f, *lo, *hi)].iter())
                            .filter(|&&(_, o)| *pid < 0 || file.ops[o].pid == *pid)
                            .map(|&(_, o)| (f, o)),
                    );
                }
                ops.shrink_to_fit();
                (i, self.cut_of(sources[0].1[i].3.clone(), ops))
            })
            .collect())
    }

    /// Trials cut at the launches of the kernels `pattern` names, the n-th of every file together:
    /// from one launch's call up to (not including) the next one's.
    fn each_kernel(
        &self,
        pattern: &Pattern,
        keep: &dyn Fn(usize) -> bool,
    ) -> Result<Vec<(usize, Cut)>, TraceError> {
        let sources: Vec<(usize, Windows)> = (self.files.iter().enumerate())
            .map(|(i, f)| {
                let mut memo = NameMemo::default();
                let mut at: Vec<i64> = (f.ops.iter())
                    .filter(|o| {
                        o.kind == GpuKind::Kernel
                            && memo.get(&o.name, || f.forms(&o.name).any(|n| pattern.matches(n)))
                    })
                    .filter_map(|o| o.call.as_ref().map(|c| c.begin_ns))
                    .collect();
                at.sort_unstable();
                let ends = at.iter().skip(1).map(|&next| next - 1).chain([i64::MAX]);
                let windows = (at.iter().zip(ends).enumerate())
                    .map(|(i, (&lo, hi))| (-1, lo, hi, format!("repetition {}", i + 1)))
                    .collect();
                (i, windows)
            })
            .collect();
        self.cut(&sources, keep)
    }

    /// The names of the kernels, for a kernel trial pattern that matched none.
    pub fn kernel_names(&self) -> Vec<String> {
        let mut names: Vec<String> = (self.files.iter())
            .flat_map(|f| f.ops.iter())
            .filter(|o| o.kind == GpuKind::Kernel)
            .map(|o| o.name.to_string())
            .collect();
        names.sort();
        names.dedup();
        names
    }

    /// The names of the host ranges, for a trial pattern that matched none.
    pub fn range_names(&self) -> Vec<String> {
        let mut names: Vec<String> = (self.files.iter())
            .flat_map(|f| f.ranges.iter().map(|r| r.name.to_string()))
            .collect();
        names.sort();
        names.dedup();
        names
    }

    pub fn op(&self, (f, o): (usize, usize)) -> &GpuOp {
        &self.files[f].ops[o]
    }

    /// A cut of `ops`, put in order of start (the op ids of its trial).
    fn cut_of(&self, name: String, mut ops: Vec<(usize, usize)>) -> Cut {
        ops.sort_by_key(|&r| (self.op(r).start_ns, self.op(r).end_ns, r));
        Cut { name, ops }
    }

    /// The trial of a cut.
    pub fn build(&self, cut: &Cut) -> Trial {
        self.trial(cut.name.clone(), cut.ops.clone())
    }

    /// The trial of `ops`, in order of start (as [`Trace::cuts`] gives them).
    fn trial(&self, name: String, ops: Vec<(usize, usize)>) -> Trial {
        let origin = (ops.iter())
            .flat_map(|&r| {
                let op = self.op(r);
                [Some(op.start_ns), op.call.as_ref().map(|c| c.begin_ns)]
            })
            .flatten()
            .min()
            .unwrap_or(0);
        let at = |t: i64| (t - origin).max(0) as u64;
        // A host function's run is a host span, placed on the GPU's axis by the clock sync (the
        // identity here) and ready only a host function's latency after its stream let it go.
        let on_host = |r: (usize, usize)| self.op(r).kind == GpuKind::HostFn;
        let spans = (ops.iter().enumerate())
            .filter(|&(_, &r)| !on_host(r))
            .map(|(i, &r)| Span::single(OpId(i), at(self.op(r).start_ns), at(self.op(r).end_ns)))
            .collect();
        let host_spans = (ops.iter().enumerate())
            .filter(|&(_, &r)| on_host(r))
            .map(|(i, &r)| HostSpan {
                op: OpId(i),
                begin_ns: at(self.op(r).start_ns),
                end_ns: at(self.op(r).end_ns),
            })
            .collect();
        let calls = (ops.iter().enumerate())
            .filter_map(|(i, &r)| {
                let c = self.op(r).call.as_ref()?;
                Some(HostCall {
                    op: OpId(i),
                    begin_ns: at(c.begin_ns),
                    end_ns: at(c.end_ns),
                })
            })
            .collect();
        let clock = ClockSync {
            shared: true,
            offset_ns: 0,
            error_ns: self.tolerances.clock_error_ns,
        };
        let timeline = Timeline::new(spans, calls).with_host(host_spans, Some(clock));
        let many = self.files.len() > 1;
        let labels: Vec<(String, bool)> = (ops.iter().enumerate())
            .map(|(i, &r)| (self.label(r, i, many), self.free[r.0][r.1]))
            .collect();
        let places = (ops.iter())
            .map(|&r| (r.0, self.op(r).pid, self.op(r).device, self.op(r).stream))
            .collect();
        let facts = ops.iter().map(|&r| self.facts(r, origin)).collect();
        let calls = (ops.iter())
            .map(|&r| self.op(r).call.as_ref().map(|c| (r.0, c.id as usize)))
            .collect();
        Trial {
            name,
            origin_ns: origin,
            labels,
            places,
            ops,
            timeline,
            runs: self.files.iter().map(|f| f.run.clone()).collect(),
            facts,
            calls,
            behind: self.behind.clone(),
        }
    }

    /// What the trace shows about op `r`'s issue, on the axis of a trial from `origin`.
    fn facts(&self, r: (usize, usize), origin: i64) -> Facts {
        let op = self.op(r);
        let call = op.call.as_ref();
        Facts {
            first_launch: self.firsts[r.0].contains(&r.1),
            event_wait: call.is_some_and(|c| c.waited),
            before: (call.and_then(|c| c.before.as_ref())).map(|b| HeldBy {
                name: b.name.clone(),
                begin_ns: b.begin_ns - origin,
                end_ns: b.end_ns - origin,
            }),
            env: self.files[r.0].env.get(&op.pid).cloned(),
            blocks_per_sm: op.blocks_per_sm,
            kind: Some(op.kind),
            recorded_waits: self.recorded_waits(r),
            stream: self.files[r.0].streams.get(&(op.pid, op.stream)).copied(),
        }
    }

    /// The event waits recorded on op `r`'s stream since its op before, where they are recorded.
    fn recorded_waits(&self, r: (usize, usize)) -> Option<Vec<Option<u64>>> {
        let found = self.waits[r.0].get(&r.1).cloned();
        let all = self.files[r.0].sync_recorded.contains(&self.op(r).pid);
        found.or_else(|| all.then(Vec::new))
    }

    /// "nvjet_sm90_tst_320x128…@s7 #12", with "r1 " before it in a trace of several ranks.
    fn label(&self, r: (usize, usize), i: usize, many: bool) -> String {
        let op = self.op(r);
        let short;
        let name = match self.short_names.get(&held(&op.name)) {
            Some((_, name)) => name.as_str(),
            None => {
                short = short_name(&op.name);
                &short
            }
        };
        let rank = match (many, self.files[r.0].rank) {
            (true, Some(k)) => format!("r{k} "),
            (true, None) => format!("f{} ", r.0),
            _ => String::new(),
        };
        match op.kind {
            GpuKind::HostFn => format!("{rank}{name}@host #{i}"),
            _ => format!("{rank}{name}@s{} #{i}", op.stream),
        }
    }
}

/// "2", or "an unknown number of" where a trace does not say its world size.
fn ranks(world: Option<u32>) -> String {
    world.map_or("an unknown number of".into(), |n| n.to_string())
}

/// A kernel's name cut to 32 characters, for labels and pictures.
pub fn short_name(name: &str) -> String {
    let c = clip(name);
    match c.char_indices().nth(32) {
        Some((i, _)) => format!("{}…", &c[..i]),
        None => c,
    }
}

/// The windows `(process, begin, end, name)` that cut one source into trials, in order.
type Windows = Vec<(i64, i64, i64, String)>;

/// One trial of a trace.
#[derive(Debug, Clone)]
pub struct Trial {
    /// The range it is an instance of ("ProfilerStep#3").
    pub name: String,
    /// The trace's instant (ns) that is 0 on the trial's axis: its first op's start or call.
    pub origin_ns: i64,
    /// (file, op) of each op, by op id.
    pub ops: Vec<(usize, usize)>,
    pub timeline: Timeline,
    /// Each op's label, and whether it depended on nothing (its stream idle when it was
    /// issued, so its start minus its issue is launch delay), by op id.
    pub labels: Vec<(String, bool)>,
    /// Where each op ran: (file, process, device, stream), by op id.
    pub places: Vec<(usize, i64, u32, u64)>,
    /// The recording of each file (`trace "FILE" as NAME`), by file.
    pub runs: Vec<Option<crate::trace::names::Name>>,
    /// What the trace shows about each op's issue, by op id: the causes a wait may have.
    pub facts: Vec<Facts>,
    /// The call that issued each op, as (file, the call's place in it), by op id: ops of one
    /// call (the kernels of a graph launch) share it.
    calls: Vec<Option<(usize, usize)>>,
    /// By file, the program behind the trace (`behind.rs`).
    pub behind: Arc<Vec<Behind>>,
}

impl Trial {
    /// Every op with where it ran on the trial's axis, GPU spans and host functions' runs, by
    /// start: what the pictures draw.
    pub fn drawn(&self) -> Vec<(OpId, u64, u64)> {
        let t = &self.timeline;
        let mut v: Vec<(OpId, u64, u64)> = (t.spans.iter())
            .map(|s| (s.op, s.start(), s.end()))
            .chain(t.host_spans.iter().map(|h| (h.op, h.begin_ns, h.end_ns)))
            .collect();
        v.sort_by_key(|&(op, start, _)| (start, op));
        v
    }

    /// "r1 gpu0 stream 7", or "host functions" for their runs.
    pub fn lane_name(
        &self,
        trace: &Trace,
        (f, _, device, stream): (usize, i64, u32, u64),
    ) -> String {
        let who = trace.files[f]
            .rank
            .map_or(String::new(), |r| format!("r{r} "));
        match (device, stream) == super::events::HOST {
            true => format!("{who}host functions"),
            false => format!("{who}gpu{device} stream {stream}"),
        }
    }

    pub fn label(&self, op: OpId) -> String {
        (self.labels.get(op.0)).map_or_else(|| format!("op {}", op.0), |(l, _)| l.clone())
    }

    /// Whether two ops are of one recording, on one clock: only `faster` compares recordings.
    pub fn one_recording(&self, a: OpId, b: OpId) -> bool {
        let run = |o: OpId| self.place(o).and_then(|p| self.runs.get(p.0));
        run(a) == run(b)
    }

    /// The stream an op ran on, with its file, process and device.
    pub fn place(&self, op: OpId) -> Option<(usize, i64, u32, u64)> {
        self.places.get(op.0).copied()
    }

    /// When `op` was issued, as an order key: its call's begin, then the call (ops of one call,
    /// the kernels of a graph launch, have the same key: no issue order between them); `None`
    /// without a call.
    pub fn issue_key(&self, op: OpId) -> Option<(u64, usize)> {
        let begin = self.timeline.host_call(op)?.begin_ns;
        let (_, id) = self.calls.get(op.0).copied().flatten()?;
        Some((begin, id))
    }

    /// How the model of the program behind the trace orders `a` before `b` (`behind.rs`).
    pub fn order(&self, a: OpId, b: OpId) -> Order {
        let (Some(&(fa, oa)), Some(&(fb, ob))) = (self.ops.get(a.0), self.ops.get(b.0)) else {
            return Order::Unknown("an op outside the trial");
        };
        match fa == fb {
            true => self.behind[fa].order(oa, ob),
            false => Order::Unknown("ops of two trace files"),
        }
    }

    /// The trial's op that is GPU op `op` of file `file`, if the trial holds it.
    pub fn op_of(&self, file: usize, op: usize) -> Option<OpId> {
        self.ops.iter().position(|&r| r == (file, op)).map(OpId)
    }

    /// The process of the program behind the trace that issued `op`, with its act.
    pub fn act(&self, op: OpId) -> Option<(&super::behind::Process, usize)> {
        let &(f, o) = self.ops.get(op.0)?;
        let (p, a) = self.behind.get(f)?.act(o)?;
        Some((&self.behind[f].processes[p], a))
    }
}

/// A file of no rank whose GPU ops are those of a file given before it (a byte copy under another
/// name, which no rank tells apart) would count every op twice: refused, by a digest of each
/// file's ops (times, places, kinds and names).
fn refuse_copies(files: &[TraceFile]) -> Result<(), TraceError> {
    use std::hash::{Hash, Hasher};
    let mut seen: HashMap<(usize, u64), usize> = HashMap::new();
    let rankless = |f: &&TraceFile| f.rank.is_none() && !f.ops.is_empty();
    for (i, f) in files.iter().enumerate().filter(|(_, f)| rankless(f)) {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        for op in &f.ops {
            (op.start_ns, op.end_ns, op.device, op.stream, op.pid).hash(&mut h);
            (op.kind, &*op.name).hash(&mut h);
        }
        if let Some(&j) = seen.get(&(f.ops.len(), h.finish())) {
            if files[j].ops == f.ops {
                return Err(TraceError::NotOneRun(format!(
                    "{} holds the same ops as {}: a copy of a trace given beside it would count \
                     each of its ops twice; name each trace once",
                    super::names::clip(&f.path),
                    super::names::clip(&files[j].path)
                )));
            }
        }
        seen.insert((f.ops.len(), h.finish()), i);
    }
    Ok(())
}

/// A trace named twice (by the same path, another path or a link) would count every op twice:
/// refused before any is read, in one pass over the files' device and inode numbers.
fn refuse_repeats(paths: &[PathBuf]) -> Result<(), TraceError> {
    use std::os::unix::fs::MetadataExt;
    let mut seen: std::collections::HashMap<(u64, u64), &PathBuf> =
        std::collections::HashMap::new();
    for p in paths {
        let Ok(m) = std::fs::metadata(p) else {
            continue; // reading it names the problem
        };
        if let Some(first) = seen.insert((m.dev(), m.ino()), p) {
            return Err(TraceError::NotOneRun(format!(
                "{} and {} are the same file: a trace given twice would count each of its ops \
                 twice; name each trace once",
                crate::border::shown::path(first),
                crate::border::shown::path(p)
            )));
        }
    }
    Ok(())
}
