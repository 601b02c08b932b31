//! Warnings: legal CUDA in a program that is probably not what its author meant, and what kept
//! the lab from its strongest evidence; reported with the verdict, never fatal.

use super::{EventId, OpId};
use std::fmt;

/// Legal but suspicious: reported with the verdict, never fatal.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case", tag = "warning")]
pub enum Warning {
    /// A wait on an event with no record issued before it: CUDA treats it as complete, so the
    /// wait orders nothing.
    WaitBeforeRecord { op: OpId, event: EventId },
    /// A host sync on an event with no record issued before it: it returns at once.
    SyncBeforeRecord { op: OpId, event: EventId },
    /// CUPTI could not be used, so the copies' spans come from events around them.
    NoCupti { reason: String },
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::WaitBeforeRecord { op, event } => write!(
                f,
                "op {} waits on event e{} before any record of it: CUDA treats the wait as \
                 satisfied, so it orders nothing",
                op.0, event.0
            ),
            Warning::SyncBeforeRecord { op, event } => write!(
                f,
                "op {} synchronizes on event e{} before any record of it: it returns at once",
                op.0, event.0
            ),
            Warning::NoCupti { reason } => write!(
                f,
                "no CUPTI ({reason}): copy spans come from events around each copy, weaker \
                 evidence (an outer bound that includes whatever the copy waited for)"
            ),
        }
    }
}
