//! Every wait in a step: an op that was ready before the op it started after had ended.
//!
//! An op is **ready** once it was issued (its launch call's return, or its begin where the call
//! returned only after its op had started: `Timeline::issued_ns`, as for claims on traces),
//! plus the launch latency, jitter and clock error the trace shows (`trace/tolerance.rs`): the
//! latest it could have been ready, so a wait is counted only where it surely happened. The op it started after is the one on its GPU
//! that ended last before it started (found by a binary search over the GPU's ends); the cause
//! comes from `trace/causes.rs`. The time lost is its start minus that ready time: a lower
//! bound.

use crate::program::CopyDir;
use crate::program::OpId;
use crate::trace::CauseKind;
use crate::trace::{held_by, GpuKind, Held, HostMemory, Trace, TraceTolerances, Trial};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// A GPU lane: (file, process, device, stream).
pub type Lane = (usize, i64, u32, u64);

/// An op that waited though it was ready.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wait {
    pub lane: Lane,
    /// The lane of the op it started after.
    pub by_lane: Lane,
    pub held: Held,
    /// Its start minus the latest instant it was ready.
    pub lost_ns: i64,
    /// The waiting op's label and that of the op it started after.
    pub label: String,
    pub by_label: String,
}

/// The waits of one step, kept compact: a trace's steps hold every wait until the explanation is
/// written (146,000 of them in the docs' 200 MB benchmark trace), so each is kept in 88 bytes
/// (its lanes as places in the step's short list, its texts shared with every step that has
/// the same: a training loop's steps repeat their kernels) and given out as a [`Wait`] when
/// read. They took 42 MB as `Wait`s, each text its own (issue 51).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Waits {
    lanes: Vec<Lane>,
    kept: Vec<Kept>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Kept {
    lane: u32,
    by_lane: u32,
    op: u32,
    by: u32,
    kind: CauseKind,
    gap_ns: i64,
    lost_ns: i64,
    label: Arc<str>,
    by_label: Arc<str>,
    cause: Arc<str>,
}

impl Waits {
    pub fn len(&self) -> usize {
        self.kept.len()
    }

    pub fn is_empty(&self) -> bool {
        self.kept.is_empty()
    }

    /// The waits, by the waiting op's start.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = Wait> + Clone + '_ {
        self.kept.iter().map(|k| self.wait(k))
    }

    pub fn get(&self, i: usize) -> Option<Wait> {
        self.kept.get(i).map(|k| self.wait(k))
    }

    fn wait(&self, k: &Kept) -> Wait {
        Wait {
            lane: self.lanes[k.lane as usize],
            by_lane: self.lanes[k.by_lane as usize],
            held: Held {
                op: OpId(k.op as usize),
                by: OpId(k.by as usize),
                gap_ns: k.gap_ns,
                kind: k.kind,
                cause: k.cause.to_string(),
            },
            lost_ns: k.lost_ns,
            label: k.label.to_string(),
            by_label: k.by_label.to_string(),
        }
    }

    /// Keeps `w` (`placed`: the place of each lane in `lanes`); `None` where an op's place in
    /// its step is past what 32 bits count: a step of four billion ops, which the records a
    /// file may keep (`trace::max_kept`, at most 2^31) rule out.
    fn push(&mut self, w: Wait, placed: &mut HashMap<Lane, u32>, texts: &mut Texts) -> Option<()> {
        let mut lane = |l: Lane| match placed.get(&l) {
            Some(&at) => Some(at),
            None => {
                let at = u32::try_from(self.lanes.len()).ok()?;
                self.lanes.push(l);
                placed.insert(l, at);
                Some(at)
            }
        };
        let kept = Kept {
            lane: lane(w.lane)?,
            by_lane: lane(w.by_lane)?,
            op: u32::try_from(w.held.op.0).ok()?,
            by: u32::try_from(w.held.by.0).ok()?,
            kind: w.held.kind,
            gap_ns: w.held.gap_ns,
            lost_ns: w.lost_ns,
            label: texts.shared(w.label),
            by_label: texts.shared(w.by_label),
            cause: texts.shared(w.held.cause),
        };
        self.kept.push(kept);
        Some(())
    }
}

impl<'a> IntoIterator for &'a Waits {
    type Item = Wait;
    type IntoIter = Box<dyn Iterator<Item = Wait> + 'a>;

    fn into_iter(self) -> Self::IntoIter {
        Box::new(self.iter())
    }
}

/// The texts of an explanation's waits, each kept once however many waits share it.
#[derive(Debug, Default)]
pub(super) struct Texts(HashSet<Arc<str>>);

impl Texts {
    fn shared(&mut self, text: String) -> Arc<str> {
        if let Some(t) = self.0.get(text.as_str()) {
            return Arc::clone(t);
        }
        let t: Arc<str> = Arc::from(text);
        self.0.insert(Arc::clone(&t));
        t
    }
}

/// Something the user probably did not expect: a pageable copy that ran beside compute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Surprise {
    pub copy: OpId,
    pub kernel: OpId,
    pub overlap_ns: i64,
    /// Their labels.
    pub copy_label: String,
    pub kernel_label: String,
}

/// The most lanes of one GPU whose meetings are traced: beyond, pairs of lanes are not listed
/// (a trace of thousands of streams; waits are still found).
const MAX_LANES: usize = 64;

/// A GPU: (file, device).
type Gpu = (usize, u32);

/// Spans of one GPU as (start, end, what).
type Spans<T> = HashMap<Gpu, Vec<(u64, u64, T)>>;

fn gpu(l: Lane) -> Gpu {
    (l.0, l.2)
}

/// Every wait of the step, by the waiting op's start.
/// Every wait of the step is told to `each` (its cause, lane, the lane it waited for, the time
/// lost), which says whether to keep it: only those are given their labels and kept.
pub(super) fn find(
    trial: &Trial,
    tol: &TraceTolerances,
    texts: &mut Texts,
    each: &mut dyn FnMut(CauseKind, Lane, Lane, i64) -> bool,
) -> Waits {
    let t = &trial.timeline;
    let step = tol.tolerances.timer_step_ns;
    let slack = tol.tolerances.launch_latency_ns.unwrap_or(0)
        + tol.tolerances.launch_jitter_ns
        + tol.clock_error_ns;
    let mut ends: HashMap<(usize, u32), Vec<(u64, OpId)>> = HashMap::new();
    for s in &t.spans {
        if let Some(l) = trial.place(s.op) {
            ends.entry(gpu(l)).or_default().push((s.end(), s.op));
        }
    }
    for v in ends.values_mut() {
        v.sort_unstable();
    }
    let mut waits = Waits::default();
    let mut placed = HashMap::new();
    for s in &t.spans {
        let (Some(lane), Some(issued)) = (trial.place(s.op), t.issued_ns(s.op)) else {
            continue;
        };
        let ready = issued.saturating_add(slack);
        if ready >= s.start() {
            continue;
        }
        let Some(list) = ends.get(&gpu(lane)) else {
            continue;
        };
        let upto = list.partition_point(|&(end, _)| end <= s.start() + step);
        let Some(&(end, by)) = list[..upto].iter().rev().find(|&&(_, o)| o != s.op) else {
            continue;
        };
        if ready + step >= end {
            continue;
        }
        let (Some(held), Some(by_lane)) = (held_by(trial, s.op, by), trial.place(by)) else {
            continue;
        };
        let lost_ns = (s.start() - ready) as i64;
        if !each(held.kind, lane, by_lane, lost_ns) {
            continue;
        }
        let wait = Wait {
            lane,
            by_lane,
            held,
            lost_ns,
            label: trial.label(s.op),
            by_label: trial.label(by),
        };
        if waits.push(wait, &mut placed, texts).is_none() {
            break;
        }
    }
    // Kept for the whole explanation: without the slack of growing.
    waits.kept.shrink_to_fit();
    waits
}

/// Pageable copies that ran beside a kernel of their GPU for more than a timer step.
pub(super) fn surprises(trace: &Trace, trial: &Trial, tol: &TraceTolerances) -> Vec<Surprise> {
    let t = &trial.timeline;
    let step = tol.tolerances.timer_step_ns;
    let kind = |o: OpId| trace.op(trial.ops[o.0]).kind;
    // Kernels of each GPU by start, with the running latest end and whose it is.
    let mut kernels: Spans<OpId> = HashMap::new();
    for s in t.spans.iter().filter(|s| kind(s.op) == GpuKind::Kernel) {
        if let Some(l) = trial.place(s.op) {
            kernels
                .entry(gpu(l))
                .or_default()
                .push((s.start(), s.end(), s.op));
        }
    }
    let mut latest: HashMap<(usize, u32), Vec<(u64, OpId)>> = HashMap::new();
    for (g, v) in kernels.iter_mut() {
        v.sort_unstable();
        let mut run: Option<(u64, OpId)> = None;
        let prefix = (v.iter())
            .map(|&(_, end, op)| {
                if run.map_or(true, |(e, _)| end > e) {
                    run = Some((end, op));
                }
                run.unwrap_or((end, op))
            })
            .collect();
        latest.insert(*g, prefix);
    }
    let pageable = |k: GpuKind| {
        matches!(
            k,
            GpuKind::Copy(Some(CopyDir::H2D | CopyDir::D2H), HostMemory::Pageable)
        )
    };
    let mut found = Vec::new();
    for s in t.spans.iter().filter(|s| pageable(kind(s.op))) {
        let Some(g) = trial.place(s.op).map(gpu) else {
            continue;
        };
        let (Some(v), Some(pre)) = (kernels.get(&g), latest.get(&g)) else {
            continue;
        };
        let upto = v.partition_point(|&(start, _, _)| start + step < s.end());
        let Some(&(end, kernel)) = upto.checked_sub(1).and_then(|i| pre.get(i)) else {
            continue;
        };
        let kstart = t.span(kernel).map_or(0, |k| k.start());
        let overlap = end.min(s.end()) as i64 - kstart.max(s.start()) as i64;
        if overlap > step as i64 {
            found.push(Surprise {
                copy: s.op,
                kernel,
                overlap_ns: overlap,
                copy_label: trial.label(s.op),
                kernel_label: trial.label(kernel),
            });
        }
    }
    found
}

/// Each pair of lanes of one GPU with ops in the step, and whether they ran together for more
/// than a timer step.
pub(super) fn lanes_met(trial: &Trial, tol: &TraceTolerances) -> Vec<(Lane, Lane, bool)> {
    let t = &trial.timeline;
    let step = tol.tolerances.timer_step_ns;
    let mut by_gpu: Spans<Lane> = HashMap::new();
    for s in &t.spans {
        if let Some(l) = trial.place(s.op) {
            by_gpu
                .entry(gpu(l))
                .or_default()
                .push((s.start(), s.end(), l));
        }
    }
    let mut out = Vec::new();
    for spans in by_gpu.values_mut() {
        spans.sort_unstable();
        let mut lanes: Vec<Lane> = spans.iter().map(|s| s.2).collect();
        lanes.sort_unstable();
        lanes.dedup();
        if lanes.len() > MAX_LANES {
            continue;
        }
        let index = |l: Lane| lanes.binary_search(&l).unwrap_or(0);
        let n = lanes.len();
        let mut met = vec![false; n * n];
        // The latest end of each lane's spans begun so far.
        let mut reach = vec![0u64; n];
        for &(start, end, l) in spans.iter() {
            let i = index(l);
            if end > start + step {
                for (j, &r) in reach.iter().enumerate() {
                    if j != i && r > start + step {
                        met[i * n + j] = true;
                        met[j * n + i] = true;
                    }
                }
            }
            reach[i] = reach[i].max(end);
        }
        for i in 0..n {
            for j in i + 1..n {
                out.push((lanes[i], lanes[j], met[i * n + j]));
            }
        }
    }
    out.sort_unstable();
    out
}
