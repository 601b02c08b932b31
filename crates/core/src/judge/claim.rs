//! Claims: a statement from the notes, the program that tests it, the relations it predicts and
//! the verdict its author expects, all as data.
//!
//! A claim reads like a litmus test. It names its source (a seed file and section, or a section
//! of NVIDIA's documentation), states what the notes say in words, builds a [`Program`], lists
//! the [`Check`]s that must hold on every trial, and says whether it is expected to hold or to be
//! a misconception. Environment variables the driver reads once at start-up (such as
//! `CUDA_DEVICE_MAX_CONNECTIONS`) are part of the claim, and make the lab run it in a child
//! process.

use crate::judge::relation::Check;
use crate::judge::verdict::Expect;
use crate::program::{OpId, Program, ProgramBuilder};
use serde::{Deserialize, Serialize};
use std::ops::{Deref, DerefMut};

/// Where a claim comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Source {
    /// A seed file name under `shared/seeds/`, or a document title.
    pub document: String,
    /// The section, heading or item within it.
    pub section: String,
}

impl Source {
    pub fn new(document: impl Into<String>, section: impl Into<String>) -> Source {
        Source {
            document: document.into(),
            section: section.into(),
        }
    }
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}, {}", self.document, self.section)
    }
}

/// An environment variable the program must run under; `None` means it must be unset.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct EnvVar {
    pub name: String,
    pub value: Option<String>,
}

impl EnvVar {
    /// Whether this process already runs under every one of `env` (so no child is needed).
    pub fn all_current(env: &[EnvVar]) -> bool {
        env.iter().all(|v| std::env::var(&v.name).ok() == v.value)
    }
}

impl std::fmt::Display for EnvVar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.value {
            Some(v) => write!(f, "{}={v}", self.name),
            None => write!(f, "{} unset", self.name),
        }
    }
}

/// Which scenario table a claim is a row of (`report::scenario`): the reports choose claims by
/// this field, not by their ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Table {
    /// Seed 000's sleep experiment.
    Sleep,
    /// Seed 004's chunked pipeline.
    Pipeline,
    /// Seed 002's weight prefetch.
    Prefetch,
}

impl Table {
    pub const ALL: [Table; 3] = [Table::Sleep, Table::Pipeline, Table::Prefetch];

    /// The name in claim files and results files: `sleep`, `pipeline`, `prefetch`.
    pub fn name(self) -> &'static str {
        match self {
            Table::Sleep => "sleep",
            Table::Pipeline => "pipeline",
            Table::Prefetch => "prefetch",
        }
    }

    /// The table a claim id names, for results files written before claims carried the field:
    /// the catalogue's scenario claims were `scenario.sleep.*`, `scenario.pipeline.*` and
    /// `scenario.prefetch.*`. Used only when loading such a file (`RunRecord::load`).
    pub fn from_legacy_id(id: &str) -> Option<Table> {
        Table::ALL
            .into_iter()
            .find(|t| id.starts_with(&format!("scenario.{}.", t.name())))
    }
}

impl std::fmt::Display for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A table name that is none of [`Table::ALL`]'s.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown table `{0}`")]
pub struct UnknownTable(pub String);

impl std::str::FromStr for Table {
    type Err = UnknownTable;
    fn from_str(s: &str) -> Result<Table, UnknownTable> {
        Table::ALL
            .into_iter()
            .find(|t| t.name() == s)
            .ok_or_else(|| UnknownTable(s.into()))
    }
}

/// What every claim says before its test, on a program ([`Claim`]) or on traces
/// (`trace_claims::TraceClaim`): its id, what the notes say, where from, the verdict its author
/// expects and why. Both carry it flattened: in their JSON these are fields of the claim itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClaimHeader {
    /// Dotted id, e.g. `fifo.blocking`; filters and reports use it.
    pub id: String,
    /// What the notes say, in words.
    pub statement: String,
    pub source: Source,
    pub expect: Expect,
    /// Why the expectation is what it is, when that is not obvious (a misconception, a
    /// documented rule).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rationale: Option<String>,
}

/// A claim, ready to run. It reads as its header (`claim.id`, `claim.expect`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claim {
    #[serde(flatten)]
    pub header: ClaimHeader,
    pub program: Program,
    pub checks: Vec<Check>,
    /// Measured on every trial and reported with the evidence, but not part of the verdict:
    /// what an experiment reports beside its claim (how long a call blocked the host, say).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub observations: Vec<Check>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<EnvVar>,
    /// The scenario table this claim is a row of, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table: Option<Table>,
}

impl Deref for Claim {
    type Target = ClaimHeader;
    fn deref(&self) -> &ClaimHeader {
        &self.header
    }
}

impl DerefMut for Claim {
    fn deref_mut(&mut self) -> &mut ClaimHeader {
        &mut self.header
    }
}

impl Claim {
    /// Starts a claim; the builder also builds its program (it derefs to [`ProgramBuilder`]).
    ///
    /// ```
    /// use stream_litmus_core::judge::claim::{Claim, Source};
    /// use stream_litmus_core::judge::verdict::Expect;
    /// use stream_litmus_core::program::StreamKind;
    /// use std::time::Duration;
    ///
    /// let mut c = Claim::builder(
    ///     "null.barrier",
    ///     "The legacy null stream waits for blocking streams and they wait for it",
    ///     Source::new("002_84e77744080bec39.txt", "4. 流同步"),
    /// );
    /// let s1 = c.stream(StreamKind::Blocking);
    /// let null = c.stream(StreamKind::LegacyNull);
    /// let a = c.spin(s1, "A", Duration::from_micros(20));
    /// let n = c.spin(null, "N", Duration::from_micros(20));
    /// c.precedes(a, n);
    /// let claim = c.build(Expect::Holds);
    /// assert_eq!(claim.checks.len(), 1);
    /// ```
    pub fn builder(
        id: impl Into<String>,
        statement: impl Into<String>,
        source: Source,
    ) -> ClaimBuilder {
        let id = id.into();
        ClaimBuilder {
            program: Program::builder(id.clone()),
            id,
            statement: statement.into(),
            source,
            rationale: None,
            checks: Vec::new(),
            observations: Vec::new(),
            env: Vec::new(),
            table: None,
        }
    }

    /// Whether the claim needs an environment the current process does not have.
    pub fn needs_child(&self) -> bool {
        !EnvVar::all_current(&self.env)
    }
}

/// Builds a [`Claim`]; derefs to the [`ProgramBuilder`] of its program.
#[derive(Debug, Clone)]
pub struct ClaimBuilder {
    id: String,
    statement: String,
    source: Source,
    rationale: Option<String>,
    program: ProgramBuilder,
    checks: Vec<Check>,
    observations: Vec<Check>,
    env: Vec<EnvVar>,
    table: Option<Table>,
}

impl ClaimBuilder {
    /// Expect `check` on every trial (for checks without a shorthand below).
    pub fn check(&mut self, check: Check) -> &mut Self {
        self.checks.push(check);
        self
    }

    /// Measure `check` on every trial and report it, without letting it decide the verdict.
    pub fn observe(&mut self, check: Check) -> &mut Self {
        self.observations.push(check);
        self
    }

    /// Expect `after` to start no earlier than `before` ends, on every trial.
    pub fn precedes(&mut self, before: OpId, after: OpId) -> &mut Self {
        self.checks.push(Check::Precedes { before, after });
        self
    }

    /// Expect `a` and `b` to run at the same time, on every trial.
    pub fn overlaps(&mut self, a: OpId, b: OpId) -> &mut Self {
        self.checks.push(Check::Overlaps { a, b });
        self
    }

    /// Expect some blocks of `low` to be dispatched after the first block of `high` started.
    pub fn interleaves(&mut self, low: OpId, high: OpId) -> &mut Self {
        self.checks.push(Check::Interleaves { low, high });
        self
    }

    /// Expect every block of `low` to be dispatched before the first block of `high` starts.
    pub fn behind(&mut self, low: OpId, high: OpId) -> &mut Self {
        self.checks.push(Check::Behind { low, high });
        self
    }

    /// Expect no block of `op` to be held off its SM by the blocks of `by`.
    pub fn uninterrupted(&mut self, op: OpId, by: OpId) -> &mut Self {
        self.checks.push(Check::Uninterrupted { op, by });
        self
    }

    /// Expect the elapsed time `elapsed` read to cover the stamped run of `span`.
    pub fn elapsed_covers(&mut self, elapsed: OpId, span: OpId) -> &mut Self {
        self.checks.push(Check::ElapsedCovers { elapsed, span });
        self
    }

    /// Expect the ops to run one after another in the order given.
    pub fn chain(&mut self, ops: &[OpId]) -> &mut Self {
        for w in ops.windows(2) {
            self.precedes(w[0], w[1]);
        }
        self
    }

    /// Run under `name=value` (`None`: with `name` unset).
    pub fn env(&mut self, name: impl Into<String>, value: Option<&str>) -> &mut Self {
        self.env.push(EnvVar {
            name: name.into(),
            value: value.map(str::to_owned),
        });
        self
    }

    /// Why the expectation is what it is.
    pub fn rationale(&mut self, why: impl Into<String>) -> &mut Self {
        self.rationale = Some(why.into());
        self
    }

    /// Make the claim a row of the scenario table `table`.
    pub fn table(&mut self, table: Table) -> &mut Self {
        self.table = Some(table);
        self
    }

    pub fn build(self, expect: Expect) -> Claim {
        let mut env = self.env;
        env.sort();
        Claim {
            header: ClaimHeader {
                id: self.id,
                statement: self.statement,
                source: self.source,
                expect,
                rationale: self.rationale,
            },
            program: self.program.build(),
            checks: self.checks,
            observations: self.observations,
            env,
            table: self.table,
        }
    }
}

impl Deref for ClaimBuilder {
    type Target = ProgramBuilder;
    fn deref(&self) -> &ProgramBuilder {
        &self.program
    }
}

impl DerefMut for ClaimBuilder {
    fn deref_mut(&mut self) -> &mut ProgramBuilder {
        &mut self.program
    }
}
