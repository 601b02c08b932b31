//! A claim being read: what its lines have declared so far. Shared by the readers of ops
//! (`ops.rs`), checks (`check_lines.rs`) and the other lines (`resolve.rs`), each of which adds an
//! `impl Draft` of its own.

use super::header::HeaderLines;
use super::syntax::{Arg, Name, Span};
use crate::judge::claim::{EnvVar, Table};
use crate::program::{BufferId, EventId, OpId, Program, StreamId};
use std::collections::HashMap;

/// A claim being read.
pub(super) struct Draft {
    pub(super) id: Name,
    pub(super) span: Span,
    pub(super) header: HeaderLines,
    pub(super) table: Option<Table>,
    pub(super) name: Option<String>,
    pub(super) env: Vec<EnvVar>,
    pub(super) program: Program,
    pub(super) op_spans: Vec<Span>,
    pub(super) streams: HashMap<String, StreamId>,
    pub(super) events: HashMap<String, EventId>,
    pub(super) buffers: HashMap<String, BufferId>,
    /// The ops of each label, so that a name is looked up without a scan of every op.
    pub(super) labels: HashMap<String, Vec<OpId>>,
    pub(super) checks: Vec<(bool, Name, Vec<Arg>)>,
    /// Set once every op is read: checks may name any op, ops only earlier ones.
    pub(super) all_ops: bool,
}

impl Draft {
    pub(super) fn new(id: Name, span: Span) -> Draft {
        Draft {
            program: Program {
                name: id.text.clone(),
                streams: Vec::new(),
                events: Vec::new(),
                buffers: Vec::new(),
                ops: Vec::new(),
                peer_access: false,
            },
            id,
            span,
            header: HeaderLines::default(),
            table: None,
            name: None,
            env: Vec::new(),
            op_spans: Vec::new(),
            streams: HashMap::new(),
            events: HashMap::new(),
            buffers: HashMap::new(),
            labels: HashMap::new(),
            checks: Vec::new(),
            all_ops: false,
        }
    }
}
