//! A recording of `stream-litmus fuzz` (made by `stream-litmus trace -- stream-litmus fuzz …`)
//! held against the programs the run generated (issue 50, point 5): the program behind the
//! trace, rebuilt from what CUPTI recorded, must read to the model as the generated program does.
//!
//! The run opens the GPU (calibration programs), then runs each program once: its streams and
//! events made, a warm-up trial, and one recorded trial that begins with the clock alignment's
//! `clock_ping` kernel. So the last `programs.len()` `clock_ping` launches of the recording each
//! begin a program's recorded trial, and the acts after the alignment's own device sync are that
//! trial's ops, in order:
//! - a spin is a kernel, a record a record, a wait a wait, a host function a host function
//!   (on the stream the callback API recorded), a stream or event sync a sync, a device sync a
//!   device sync;
//! - a capture leaves no act (its kernels run at the launch); a graph launch is its kernels (the
//!   launch's parts) and then the launch's end.
//!
//! For each program, its ops are matched to the acts in order, kind by kind, and its streams to
//! the trace's (each stream one way, with its kind); then every must-precede pair of two matched
//! ops is asked of both models. Equal, or fewer in the rebuilt one only where a graph's edges
//! are concerned (a trace does not record them), is agreement; anything else is a mismatch,
//! said with the program. `explain` then judges the recording: every must-precede pair of the
//! rebuilt program against the spans, and every wait between two ops the generated program
//! orders must be one the program asked for (or that the streams' kinds imply).

use std::collections::HashMap;
use std::path::Path;
use stream_litmus::explain::{explain, Class};
use stream_litmus::model::{Act, HappensBefore, Issued, Refinement, What};
use stream_litmus::trace::{Pattern, Process, Source, Trace, TrialSpec};
use stream_litmus::{OpId, OpKind, Program, StreamId, StreamKind, SyncTarget};

/// The lab's own kernels, launched around a trial's ops: not the program's.
const LAB_KERNELS: [&str; 4] = ["clock_ping", "witness_marker", "fill_words", "timer_step"];

/// What the comparison found.
#[derive(Debug, Default)]
pub struct Compared {
    pub programs: usize,
    /// Programs whose rebuilt model orders exactly the pairs the generated one does.
    pub equal: usize,
    /// Programs with graphs where the two differ only in pairs of a graph's kernels (their
    /// edges are not in a trace) or in the launch-time orders the generated model leaves out.
    pub graph_only: usize,
    /// Must-precede pairs of matched ops compared.
    pub pairs: usize,
    /// What differed otherwise, one line per program.
    pub mismatches: Vec<String>,
    /// Waits between two ops the generated program orders, and of those the ones classified
    /// asked for, and implied by the legacy stream.
    pub waits_ordered: usize,
    pub waits_asked: usize,
    pub waits_implied: usize,
    /// Waits between two kernels of one graph launch: left out (a trace has no graph edges).
    pub waits_in_graph: usize,
    /// The model's pairs of the rebuilt program checked against the spans, and those broken.
    pub checked: usize,
    pub broken: usize,
    pub broken_texts: Vec<String>,
}

/// The ops of `p` that leave an act in a trace, each with the act it leaves (in order): a graph
/// launch the kernels captured into its graph (parts) and then itself (the end).
fn expected(p: &Program) -> Vec<OpId> {
    let captures = p.captures();
    let mut out = Vec::new();
    for (i, op) in p.ops.iter().enumerate() {
        match op.kind {
            OpKind::BeginCapture { .. } | OpKind::EndCapture { .. } => {}
            _ if captures[i].is_some() => {}
            OpKind::GraphLaunch { graph, .. } => {
                let parts = (0..i).filter(|&j| captures[j] == Some(graph));
                out.extend(parts.filter(|&j| p.ops[j].kind.is_stamped()).map(OpId));
                out.push(OpId(i));
            }
            _ => out.push(OpId(i)),
        }
    }
    out
}

/// Whether act `a` (of `process`) is what op `op` of `p` leaves, its streams matched by `streams`.
fn matches(
    p: &Program,
    op: OpId,
    process: &Process,
    a: usize,
    streams: &mut HashMap<StreamId, StreamId>,
    captured: bool,
) -> Result<(), String> {
    let act = process.issued.ops[a];
    let mut same = |g: StreamId, t: StreamId| -> Result<(), String> {
        let known = *streams.entry(g).or_insert(t);
        let kind = process.issued.streams[t.0].kind;
        // CUPTI records the per-thread default stream as blocking, which the model reads the
        // same (both wait for the legacy stream and it for them).
        let model_kind = |k: StreamKind| match k {
            StreamKind::PerThread => StreamKind::Blocking,
            k => k,
        };
        match (
            known == t,
            kind.map(model_kind) == Some(model_kind(p.streams[g.0].kind)),
        ) {
            (true, true) => Ok(()),
            (false, _) => Err(format!("stream {} met as two streams", g.0)),
            (_, false) => Err(format!(
                "stream {} is {:?}, recorded as {kind:?}",
                g.0, p.streams[g.0].kind
            )),
        }
    };
    let wrong = || {
        Err(format!(
            "op {} ({:?}) met act {act:?}",
            op.0, p.ops[op.0].kind
        ))
    };
    match (&p.ops[op.0].kind, act.what) {
        (
            OpKind::Spin { stream, .. },
            What::Work {
                stream: t,
                queued: true,
            },
        ) => {
            if captured {
                // A graph's kernel runs on its launch's stream.
                return Ok(());
            }
            same(*stream, t)
        }
        (
            OpKind::HostFn { stream, .. },
            What::Work {
                stream: t,
                queued: false,
            },
        )
        | (OpKind::Record { stream, .. }, What::Record { stream: t, .. })
        | (OpKind::Wait { stream, .. }, What::Wait { stream: t, .. })
        | (OpKind::GraphLaunch { stream, .. }, What::Join { stream: t }) => same(*stream, t),
        (
            OpKind::HostSync {
                target: SyncTarget::Stream(s),
            },
            What::HostSync {
                target: SyncTarget::Stream(t),
            },
        ) => same(*s, t),
        (
            OpKind::HostSync {
                target: SyncTarget::Event(_),
            },
            What::HostSync {
                target: SyncTarget::Event(_),
            },
        )
        | (
            OpKind::HostSync {
                target: SyncTarget::Device,
            },
            What::DeviceSync { device: 0 },
        ) => Ok(()),
        _ => wrong(),
    }
}

/// The acts `acts` of `process` as a program of their own: streams kept, each record an event,
/// a wait whose record is not among them waiting for none (a record of an earlier trial, whose
/// work had ended); a device sync of the one device as a sync of the device.
fn sub_program(process: &Process, acts: &[usize]) -> Issued {
    let mut events: HashMap<usize, usize> = HashMap::new();
    let mut ops: Vec<Act> = Vec::new();
    let mut next_event = 0usize;
    let mut event = |e: usize, record: bool, events: &mut HashMap<usize, usize>| {
        if record {
            events.insert(e, next_event);
            next_event += 1;
            return next_event - 1;
        }
        *events.get(&e).unwrap_or(&usize::MAX)
    };
    for &a in acts {
        let what = match process.issued.ops[a].what {
            What::Record { stream, event: e } => What::Record {
                stream,
                event: event(e, true, &mut events),
            },
            What::Wait { stream, event: e } => What::Wait {
                stream,
                event: event(e, false, &mut events),
            },
            What::HostSync {
                target: SyncTarget::Event(e),
            } => What::HostSync {
                target: SyncTarget::Event(stream_litmus::EventId(event(e.0, false, &mut events))),
            },
            What::DeviceSync { .. } => What::HostSync {
                target: SyncTarget::Device,
            },
            w => w,
        };
        ops.push(Act {
            what,
            part_of: None,
        });
    }
    // Events past the records (waits of earlier records) are never recorded: no-ops.
    let events = next_event + 1;
    for a in ops.iter_mut() {
        match &mut a.what {
            What::Wait { event, .. } if *event == usize::MAX => *event = events - 1,
            What::HostSync {
                target: SyncTarget::Event(e),
            } if e.0 == usize::MAX => e.0 = events - 1,
            _ => {}
        }
    }
    Issued {
        streams: process.issued.streams.clone(),
        events,
        ops,
    }
}

/// Each part of a graph launch among `acts` pointed at its end, as in the whole program.
fn parts_of(process: &Process, acts: &[usize], sub: &mut Issued) {
    let at: HashMap<u32, u32> = (acts.iter().enumerate())
        .map(|(i, &a)| (a as u32, i as u32))
        .collect();
    for (i, &a) in acts.iter().enumerate() {
        if let Some(join) = process.issued.ops[a].part_of {
            sub.ops[i].part_of = at.get(&join).copied();
        }
    }
}

/// Compares the recording at `path` with `programs`, the programs its fuzz run generated.
pub fn compare(path: &Path, programs: &[Program]) -> Result<Compared, String> {
    let trace = Trace::read(&[path.to_path_buf()]).map_err(|e| e.to_string())?;
    let file = &trace.files[0];
    let behind = &trace.behind[0];
    let name = |o: usize| &*file.ops[o].name;
    let is_ping =
        |p: &Process, a: usize| matches!(p.sources[a], Source::Op(o) if name(o) == "clock_ping");
    let process = (behind.processes.iter())
        .max_by_key(|p| (0..p.sources.len()).filter(|&a| is_ping(p, a)).count())
        .ok_or("no process in the recording")?;
    let pings: Vec<usize> = (0..process.sources.len())
        .filter(|&a| is_ping(process, a))
        .collect();
    if pings.len() < programs.len() {
        return Err(format!(
            "{} recorded trials for {} programs",
            pings.len(),
            programs.len()
        ));
    }
    let lab =
        |a: usize| matches!(process.sources[a], Source::Op(o) if LAB_KERNELS.contains(&name(o)));
    let mut c = Compared::default();
    let first = pings.len() - programs.len();
    // By program: its ops' acts.
    let mut acts_of: Vec<HashMap<usize, OpId>> = Vec::new();
    for (k, p) in programs.iter().enumerate() {
        c.programs += 1;
        let want = expected(p);
        let captures = p.captures();
        let mut acts = Vec::new();
        // The alignment ends with a device sync of its own, right after its kernel.
        let mut at = pings[first + k] + 1;
        while at < process.sources.len() && !matches!(process.sources[at], Source::DeviceSync(_)) {
            at += 1;
        }
        at += 1;
        let mut streams = HashMap::new();
        let mut problem = None;
        for &op in &want {
            while at < process.sources.len() && lab(at) {
                at += 1;
            }
            if at >= process.sources.len() {
                problem = Some(format!("the recording ends before op {}", op.0));
                break;
            }
            if let Err(e) = matches(p, op, process, at, &mut streams, captures[op.0].is_some()) {
                problem = Some(e);
                break;
            }
            acts.push(at);
            at += 1;
        }
        if let Some(e) = problem {
            c.mismatches.push(format!("program {k}: {e}: {p}"));
            acts_of.push(HashMap::new());
            continue;
        }
        let mut sub = sub_program(process, &acts);
        parts_of(process, &acts, &mut sub);
        let rebuilt = HappensBefore::of_issued(&sub, Refinement::Documented);
        let generated = HappensBefore::of(p);
        // A graph's kernels and launch; and a wait on an event never recorded, which takes no
        // time, and whose orders the generated model makes through a capture's begin or end
        // (stream ops to the model, calls the trace holds no act for).
        let graph = |o: OpId| {
            captures[o.0].is_some()
                || matches!(p.ops[o.0].kind, OpKind::GraphLaunch { .. })
                || p.is_noop_wait(o)
        };
        let (mut differ, mut graph_only) = (Vec::new(), true);
        for (x, &a) in want.iter().enumerate() {
            for (y, &b) in want.iter().enumerate() {
                if matches!(p.ops[a.0].kind, OpKind::GraphLaunch { .. })
                    || matches!(p.ops[b.0].kind, OpKind::GraphLaunch { .. })
                {
                    continue; // a launch stands for its graph's span, a join for its end
                }
                c.pairs += 1;
                let (g, r) = (
                    generated.must_precede(a, b),
                    rebuilt.must_precede(OpId(x), OpId(y)),
                );
                if g != r {
                    graph_only &= graph(a) || graph(b);
                    differ.push((a.0, b.0, g, r));
                }
            }
        }
        match (differ.is_empty(), graph_only) {
            (true, _) => c.equal += 1,
            (false, true) => c.graph_only += 1,
            (false, false) => c.mismatches.push(format!(
                "program {k}: (op, op, generated, rebuilt) {differ:?}: {p}"
            )),
        }
        acts_of.push(acts.iter().zip(&want).map(|(&a, &o)| (a, o)).collect());
    }
    // The waits and the model's pairs, step by step (each recorded trial to the next).
    let spec = TrialSpec::EachKernel(Pattern::new("clock_ping").map_err(|e| e.to_string())?);
    let e = explain(&trace, &spec).map_err(|e| e.to_string())?;
    let trials = trace.trials(&spec).map_err(|e| e.to_string())?;
    let skip = trials.len().saturating_sub(programs.len());
    for (k, (trial, step)) in trials.iter().zip(&e.steps).skip(skip).enumerate() {
        c.checked += step.pairs;
        c.broken += step.violations.len();
        c.broken_texts
            .extend(step.violations.iter().map(|v| v.text.clone()));
        let generated = HappensBefore::of(&programs[k]);
        let op_of = |o: OpId| {
            let (_, a) = trial.act(o)?;
            acts_of[k].get(&a).copied()
        };
        for w in &step.waits {
            let (Some(a), Some(b)) = (op_of(w.held.by), op_of(w.held.op)) else {
                continue;
            };
            let captures = programs[k].captures();
            if captures[a.0].is_some() && captures[a.0] == captures[b.0] {
                // Two kernels of one graph: its edges are not in a trace.
                c.waits_in_graph += 1;
                continue;
            }
            if generated.must_precede(a, b) {
                c.waits_ordered += 1;
                match Class::of(w.held.kind) {
                    Class::Asked => c.waits_asked += 1,
                    Class::Implied => c.waits_implied += 1,
                    _ => c.mismatches.push(format!(
                        "program {k}: {} waited for {}, ordered by the program, yet classified {}: {}",
                        w.label,
                        w.by_label,
                        Class::of(w.held.kind).word(),
                        w.held.cause
                    )),
                }
            }
        }
    }
    Ok(c)
}
