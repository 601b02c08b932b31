//! Differential testing: random programs run on the GPU and checked against the [`model`].
//!
//! - **Soundness.** Every must-precede pair of the documented model is checked on the timeline.
//!   A pair whose spans overlap by at least one timer step is a violation: either the model or
//!   the hardware is wrong. Each violation is shrunk to a minimal program, re-run on the GPU
//!   candidate by candidate.
//! - **Precision.** Every may-overlap pair of kernels on two streams is judged like an
//!   `Overlaps` check: it overlapped, it waited although it was free to start (serialized), or
//!   it was issued, or released by its own predecessors, too late to tell. A model that allows overlap the hardware never shows is too loose,
//!   so the rate of overlap among decided pairs is reported per pair of stream kinds.
//!
//! The driver takes the executor as a closure. The CLI passes the GPU; the CPU tests pass a
//! simulated GPU with a known bug and check that the bug is found and shrunk.
//!
//!
//! **May import:** `judge`, `measured`, `program`, `border`. The GPU comes in as a closure.
//! [`model`]: crate::model

mod strategy;

pub use strategy::{programs, Shape};

use crate::border::error::Error;
use crate::judge::relation::{latest_free_start, Check, HostWaits, Measurement, Truth};
use crate::measured::calibration::Tolerances;
use crate::measured::timeline::Timeline;
use crate::model::{HappensBefore, Refinement};
use crate::program::{OpId, OpKind, Program};
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Most candidate programs tried while shrinking one violation.
const MAX_SHRINK_RUNS: usize = 500;

/// What to fuzz.
#[derive(Debug, Clone)]
pub struct FuzzConfig {
    pub cases: usize,
    pub seed: u64,
    pub shape: Shape,
    /// The model precision is measured against (soundness always uses the documented one).
    pub refinement: Refinement,
    /// Programs run once each before the random ones ([`regressions`] and the user's own),
    /// checked for soundness like them, and not shrunk.
    pub regressions: Vec<Program>,
}

/// The shrunk programs of every class of soundness violation the fuzzer found on a GPU, each
/// kept after the model was corrected for it (`src/fuzz/regressions.json`): a wait on a
/// never-recorded event taken as a legacy action (2,000 programs, H100), and a stream sync after
/// a record or wait taken to wait for what the legacy barrier gave that record (100,000
/// programs, H100; docs/model.md, "Findings").
pub fn regressions() -> Vec<Program> {
    serde_json::from_str::<Regressions>(include_str!("regressions.json"))
        .expect("the committed regression corpus parses (tests/cpu/model.rs)")
        .programs
}

/// A regressions file: the corpus above, and what `fuzz --regressions FILE` writes and reads
/// back (a JSON object, as every file the tool reads is).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Regressions {
    pub programs: Vec<Program>,
}

/// Runs one program once: its timeline and the tolerances to judge it with.
pub type Executor<'a> = dyn FnMut(&Program) -> Result<(Timeline, Tolerances), Error> + 'a;

/// Counts of may-overlap pairs of one kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tally {
    pub overlapped: usize,
    pub serialized: usize,
    pub undecided: usize,
}

impl Tally {
    /// Overlapped among decided pairs, if any were decided.
    pub fn rate(&self) -> Option<f64> {
        let decided = self.overlapped + self.serialized;
        (decided > 0).then(|| self.overlapped as f64 / decided as f64)
    }
}

/// A must-precede pair observed out of order, shrunk.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Violation {
    /// The minimal program that still shows it.
    pub program: Program,
    pub measurement: Measurement,
    pub timeline: Timeline,
    /// The program first found, before shrinking.
    pub original: Program,
    pub shrink_runs: usize,
}

/// Everything a fuzz run found.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FuzzReport {
    pub cases: usize,
    pub seed: u64,
    pub spin_ns: u64,
    pub elapsed_ns: u64,
    /// Programs run in all, shrinking included.
    pub programs_run: usize,
    /// `programs_run` per second of `elapsed_ns`: the throughput of this run.
    #[serde(default)]
    pub programs_per_second: f64,
    /// Of `elapsed_ns`, the time spent in the executor (GPU work, setup, trials); the rest is
    /// generating, checking and shrinking programs on the CPU.
    #[serde(default)]
    pub exec_ns: u64,
    /// Of `programs_run`, the candidates run while shrinking violations.
    #[serde(default)]
    pub shrink_runs: usize,
    /// Of `programs_run`, the regression programs run before the random ones.
    #[serde(default)]
    pub regressions: usize,
    /// Must-precede pairs of kernels checked.
    pub must_pairs: usize,
    pub violations: Vec<Violation>,
    /// Per pair of stream kinds ("blocking × non-blocking").
    pub precision: BTreeMap<String, Tally>,
    /// Programs the executor failed on, with the first error.
    pub errors: usize,
    pub first_error: Option<Error>,
}

impl FuzzReport {
    pub fn programs_per_second(&self) -> f64 {
        self.programs_run as f64 / (self.elapsed_ns.max(1) as f64 / 1e9)
    }
}

/// Kernels (stamped ops) of a program, leaving out captured ones: the model orders a graph's
/// nodes only through its launch, so pairs of them would measure the graph rule's imprecision,
/// not the streams'.
fn kernels(program: &Program) -> Vec<OpId> {
    let captured = program.captures();
    program
        .ops
        .iter()
        .filter(|op| op.kind.is_stamped() && captured[op.id.0].is_none())
        .map(|op| op.id)
        .collect()
}

/// The ops whose must-precede pairs soundness checks: stamped ops, host functions (placed with
/// the clock sync) and graph launches (the span of their graph's nodes).
fn timed_ops(program: &Program) -> Vec<OpId> {
    program
        .ops
        .iter()
        .filter(|op| {
            op.kind.is_stamped()
                || matches!(op.kind, OpKind::HostFn { .. } | OpKind::GraphLaunch { .. })
        })
        .map(|op| op.id)
        .collect()
}

/// The first must-precede pair of timed ops ([`timed_ops`]) the timeline shows out of order, and
/// how many pairs were checked.
pub fn unsound(
    program: &Program,
    timeline: &Timeline,
    tol: &Tolerances,
) -> (Option<Measurement>, usize) {
    let model = HappensBefore::of(program);
    unsound_with(&Judged::new(program, model), timeline, tol)
}

/// A program with what judging it needs, built once: its documented model and host waits.
struct Judged<'a> {
    program: &'a Program,
    model: HappensBefore,
    waits: HostWaits,
    timed: Vec<OpId>,
}

impl<'a> Judged<'a> {
    fn new(program: &'a Program, model: HappensBefore) -> Judged<'a> {
        Judged {
            program,
            waits: HostWaits::with(program, &model),
            timed: timed_ops(program),
            model,
        }
    }
}

fn unsound_with(
    j: &Judged<'_>,
    timeline: &Timeline,
    tol: &Tolerances,
) -> (Option<Measurement>, usize) {
    let (model, waits, ks) = (&j.model, &j.waits, &j.timed);
    let mut checked = 0;
    for &a in ks {
        for &b in ks {
            if model.must_precede(a, b) {
                checked += 1;
                let m = Check::Precedes {
                    before: a,
                    after: b,
                }
                .measure_with(waits, timeline, tol);
                if m.truth == Truth::No {
                    return (Some(m), checked);
                }
            }
        }
    }
    (None, checked)
}

fn pair_kind(program: &Program, a: OpId, b: OpId) -> String {
    let kind = |op: OpId| match program.ops[op.0].kind {
        OpKind::Spin { stream, .. } => program.streams[stream.0].kind.name(),
        _ => "host",
    };
    let mut k = [kind(a), kind(b)];
    k.sort_unstable();
    format!("{} × {}", k[0], k[1])
}

/// Whether a may-overlap pair ran together, and if not, whether that shows serialization.
///
/// Like an `Overlaps` check, except that the later kernel counts as free to start only once it
/// was issued (plus the launch jitter) *and* every kernel the model makes it wait for had ended
/// (plus the dependent gap and the jitter). Without that, a kernel held back by a third op would be
/// blamed on the pair.
fn pair_truth(
    j: &Judged<'_>,
    model: &HappensBefore,
    timeline: &Timeline,
    tol: &Tolerances,
    a: OpId,
    b: OpId,
) -> Truth {
    let waits = &j.waits;
    let (Some(sa), Some(sb)) = (timeline.span(a), timeline.span(b)) else {
        return Truth::Unknown;
    };
    let step = tol.timer_step_ns as i64;
    let overlap = sa.end().min(sb.end()) as i64 - sa.start().max(sb.start()) as i64;
    if overlap >= step {
        return Truth::Yes;
    }
    let (first, later) = if sa.start() <= sb.start() {
        (sa, sb)
    } else {
        (sb, sa)
    };
    let jitter = tol.launch_jitter_ns as i64;
    let Some(mut free) = latest_free_start(waits, timeline, later.op, tol) else {
        return Truth::Unknown;
    };
    // Everything that takes time and must come first: kernels, host functions, graph launches
    // (their nodes' span). One that cannot be placed may be what held the kernel back.
    for &p in &j.timed {
        if model.must_precede(p, later.op) {
            match waits.interval(timeline, p) {
                Some(i) => free = free.max(i.end + tol.dependent_gap_ns as i64 + jitter),
                None => return Truth::Unknown,
            }
        }
    }
    if free < first.end() as i64 {
        Truth::No
    } else {
        Truth::Unknown
    }
}

fn tally_precision(
    j: &Judged<'_>,
    timeline: &Timeline,
    tol: &Tolerances,
    refinement: Refinement,
    precision: &mut BTreeMap<String, Tally>,
) {
    let program = j.program;
    // The documented model is the one soundness used; a refinement is built apart.
    let refined;
    let model = match refinement {
        Refinement::Documented => &j.model,
        r => {
            refined = HappensBefore::with(program, r);
            &refined
        }
    };
    let ks = kernels(program);
    for (i, &a) in ks.iter().enumerate() {
        for &b in &ks[i + 1..] {
            if !model.may_overlap(a, b) {
                continue;
            }
            let t = precision.entry(pair_kind(program, a, b)).or_default();
            match pair_truth(j, model, timeline, tol, a, b) {
                Truth::Yes => t.overlapped += 1,
                Truth::No => t.serialized += 1,
                Truth::Unknown => t.undecided += 1,
            }
        }
    }
}

/// The runner a fuzz run of `seed` draws its programs from.
fn runner(seed: u64) -> TestRunner {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    TestRunner::new_with_rng(
        Config::default(),
        TestRng::from_seed(RngAlgorithm::ChaCha, &bytes),
    )
}

/// The programs a fuzz run of `config` runs, in order, where nothing is shrunk: its regressions,
/// then `config.cases` random programs of its seed. A recording of the run (`stream-litmus trace
/// -- stream-litmus fuzz …`) is of these programs (tests/cpu/program_behind.rs rebuilds them from it).
pub fn generated(config: &FuzzConfig) -> Vec<Program> {
    let mut runner = runner(config.seed);
    let strategy = programs(config.shape);
    let random = (0..config.cases).map(|_| {
        (strategy.new_tree(&mut runner))
            .expect("the program strategy never rejects")
            .current()
    });
    config.regressions.iter().cloned().chain(random).collect()
}

/// Runs `config.cases` random programs through `exec`; `progress(done, total)` after each.
pub fn fuzz(
    config: &FuzzConfig,
    exec: &mut Executor<'_>,
    progress: &mut dyn FnMut(usize, usize),
) -> FuzzReport {
    let started = Instant::now();
    let mut runner = runner(config.seed);
    let strategy = programs(config.shape);
    let mut report = FuzzReport {
        cases: config.cases,
        seed: config.seed,
        spin_ns: config.shape.spin.as_nanos() as u64,
        elapsed_ns: 0,
        programs_run: 0,
        programs_per_second: 0.0,
        exec_ns: 0,
        shrink_runs: 0,
        regressions: 0,
        must_pairs: 0,
        violations: Vec::new(),
        precision: BTreeMap::new(),
        errors: 0,
        first_error: None,
    };
    // Every executor call is timed, so the report can tell the GPU side from the model's.
    let mut exec_ns = 0u64;
    let mut timed = |p: &Program| {
        let t = Instant::now();
        let r = exec(p);
        exec_ns += t.elapsed().as_nanos() as u64;
        r
    };
    let exec: &mut Executor<'_> = &mut timed;
    for program in &config.regressions {
        report.regressions += 1;
        let judged = Judged::new(program, HappensBefore::of(program));
        if let Some((timeline, _, Some(measurement))) = run_one(&mut report, exec, &judged) {
            report.violations.push(Violation {
                program: program.clone(),
                original: program.clone(),
                measurement,
                timeline,
                shrink_runs: 0,
            });
        }
    }
    for case in 0..config.cases {
        let mut tree = strategy
            .new_tree(&mut runner)
            .expect("the program strategy never rejects");
        let program = tree.current();
        let judged = Judged::new(&program, HappensBefore::of(&program));
        if let Some((timeline, tol, bad)) = run_one(&mut report, exec, &judged) {
            tally_precision(
                &judged,
                &timeline,
                &tol,
                config.refinement,
                &mut report.precision,
            );
            if let Some(m) = bad {
                let v = shrink(&mut tree, exec, program, m, timeline);
                report.programs_run += v.shrink_runs;
                report.shrink_runs += v.shrink_runs;
                report.violations.push(v);
            }
        }
        progress(case + 1, config.cases);
    }
    report.elapsed_ns = started.elapsed().as_nanos() as u64;
    report.exec_ns = exec_ns;
    report.programs_per_second = report.programs_per_second();
    report
}

/// Runs `program` once and checks it for soundness, counting it in `report`: its timeline, its
/// tolerances and the violation found, or `None` when the executor failed (counted as an error).
fn run_one(
    report: &mut FuzzReport,
    exec: &mut Executor<'_>,
    judged: &Judged<'_>,
) -> Option<(Timeline, Tolerances, Option<Measurement>)> {
    report.programs_run += 1;
    match exec(judged.program) {
        Err(e) => {
            report.errors += 1;
            report.first_error.get_or_insert(e);
            None
        }
        Ok((timeline, tol)) => {
            let (bad, checked) = unsound_with(judged, &timeline, &tol);
            report.must_pairs += checked;
            Some((timeline, tol, bad))
        }
    }
}

/// Shrinks a violating program: simplify while the violation persists, complicate back when a
/// candidate no longer shows it (proptest's own shrinking loop, with the GPU in it).
fn shrink(
    tree: &mut impl ValueTree<Value = Program>,
    exec: &mut Executor<'_>,
    original: Program,
    measurement: Measurement,
    timeline: Timeline,
) -> Violation {
    let mut best = Violation {
        program: original.clone(),
        measurement,
        timeline,
        original,
        shrink_runs: 0,
    };
    if !tree.simplify() {
        return best;
    }
    while best.shrink_runs < MAX_SHRINK_RUNS {
        let candidate = tree.current();
        best.shrink_runs += 1;
        let shown = exec(&candidate)
            .ok()
            .and_then(|(t, tol)| unsound(&candidate, &t, &tol).0.map(|m| (m, t)));
        let more = match shown {
            Some((m, t)) => {
                best.program = candidate;
                best.measurement = m;
                best.timeline = t;
                tree.simplify()
            }
            None => tree.complicate(),
        };
        if !more {
            break;
        }
    }
    best
}

/// How long the fuzz command's programs spin by default: the shortest spin at which the
/// catalogue's verdicts were all decided on an H100 (see docs/claims.md).
pub const DEFAULT_FUZZ_SPIN: Duration = Duration::from_micros(20);
