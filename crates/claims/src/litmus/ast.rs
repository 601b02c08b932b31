//! The statements of a claim file as the grammar reads them: names, numbers and units kept as
//! written, each with its byte span, for `resolve.rs` to interpret and to point errors at.

use std::ops::Range;

pub(super) type Span = Range<usize>;

/// A name as written: an identifier or a quoted string.
#[derive(Debug, Clone)]
pub(super) struct Name {
    pub text: String,
    pub span: Span,
}

/// A reference to an op: its label, or `#N` (its index in issue order).
#[derive(Debug, Clone)]
pub(super) enum OpRef {
    Label(Name),
    Index(usize, Span),
}

/// A number with an optional unit (`50us`, `4KiB`), kept as text for `resolve.rs` to convert.
#[derive(Debug, Clone)]
pub(super) struct Quantity {
    pub number: String,
    pub unit: Option<Name>,
    pub span: Span,
}

/// A whole number as text, with its span (grid, block, fill and contents values).
#[derive(Debug, Clone)]
pub(super) struct Int {
    pub text: String,
    pub span: Span,
}

#[derive(Debug, Clone)]
pub(super) struct Launch {
    pub grid: Int,
    pub block: Int,
}

/// What a host sync or query waits for.
#[derive(Debug, Clone)]
pub(super) enum Target {
    Device,
    Stream(Name),
    Event(Name),
}

#[derive(Debug, Clone)]
pub(super) enum OpSyntax {
    Spin {
        duration: Quantity,
        launch: Option<Launch>,
        stream: Name,
    },
    Record {
        event: Name,
        stream: Name,
    },
    Wait {
        event: Name,
        stream: Name,
    },
    HostSync(Target),
    Query(Target),
    Elapsed {
        from: Name,
        to: Name,
    },
    HostFn {
        duration: Quantity,
        stream: Name,
        via: Option<Name>,
    },
    Api {
        call: Name,
        size: Quantity,
    },
    AllocAsync {
        size: Quantity,
        stream: Name,
    },
    FreeAsync {
        alloc: OpRef,
        stream: Name,
    },
    BeginCapture(Name),
    EndCapture(Name),
    /// `device_sync N`: the host waits for every op of device N.
    DeviceSync(Int),
    /// `all_reduce BUFFER on STREAM`: one rank of an NCCL all-reduce.
    AllReduce {
        buffer: Name,
        stream: Name,
    },
    GraphLaunch {
        graph: OpRef,
        stream: Name,
    },
    Copy {
        size: Option<Quantity>,
        src: Name,
        dst: Name,
        stream: Name,
    },
    Add {
        out: Name,
        a: Name,
        b: Name,
        launch: Option<Launch>,
        stream: Name,
    },
}

/// A word of a `select` line: a keyword, a quoted pattern, or a number.
#[derive(Debug, Clone)]
pub(super) enum Word {
    Name(Name),
    Int(Int),
}

/// An argument of a check: an op or buffer, a range of ops, a number, or `next B` (claims on
/// traces: the op of selection B issued next after each op of the other selection).
#[derive(Debug, Clone)]
pub(super) enum Arg {
    Ref(OpRef),
    Range(OpRef, OpRef, Span),
    Int(Int),
    Next(OpRef, Span),
}

#[derive(Debug, Clone)]
pub(super) enum Stmt {
    Claim(Name),
    Statement(Name),
    Source {
        document: Name,
        section: Name,
    },
    Expect(Name),
    Rationale(Name),
    Table(Name),
    Program(Name),
    Env {
        name: Name,
        value: Option<Name>,
    },
    Stream {
        names: Vec<Name>,
        kind: Name,
        priority: Option<Name>,
        device: Option<Int>,
    },
    Event(Vec<Name>),
    /// `peer_access`: peer access between the program's devices is enabled before it runs.
    PeerAccess,
    Buffer {
        name: Name,
        place: Name,
        size: Quantity,
        fill: Option<Int>,
        read_back: bool,
        device: Option<Int>,
    },
    Op {
        label: Option<Name>,
        /// `D0..D99: spin …`: the last label of a run of ops, one per number.
        last: Option<Name>,
        op: OpSyntax,
    },
    Check {
        observe: bool,
        /// `exists`, `forall` or `~exists` (claims on traces).
        quantifier: Option<Name>,
        relation: Name,
        args: Vec<Arg>,
    },
    /// `trace "PATH" [as NAME]`: a trace the claim is judged on, relative to the claim file;
    /// files named alike are the ranks of one recording, which
    /// selections take with `from NAME`.
    Trace {
        path: Name,
        run: Option<Name>,
    },
    /// `trial each "PATTERN"`: each host range of that name is a trial; `trial each kernel
    /// "PATTERN"`: each launch of a kernel of that name starts one.
    Trial {
        kernel: bool,
        pattern: Name,
    },
    /// `select NAME = KIND ...`: ops of a trace the checks name.
    Select {
        name: Name,
        words: Vec<Word>,
    },
}

/// One statement and the span of its line's text.
#[derive(Debug, Clone)]
pub(super) struct Line {
    pub stmt: Stmt,
    pub span: Span,
}

/// The op keywords: the names of the builder's methods.
pub(super) const OPS: [&str; 17] = [
    "spin",
    "record",
    "wait",
    "host_sync",
    "query",
    "elapsed",
    "host_fn",
    "api",
    "alloc_async",
    "free_async",
    "begin_capture",
    "end_capture",
    "graph_launch",
    "copy",
    "add",
    "device_sync",
    "all_reduce",
];

pub(super) const STATEMENT: &str =
    "a statement (claim, statement, source, expect, rationale, table, program, env, \
     stream, event, buffer, peer_access, check, observe, trace, trial, select) or an op (spin, record, wait, \
     host_sync, query, elapsed, host_fn, api, alloc_async, free_async, begin_capture, \
     end_capture, graph_launch, copy, add, device_sync, all_reduce)";
