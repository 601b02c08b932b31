//! Reports: analysis kept apart from output. Everything here reads records and writes text;
//! nothing runs or judges anything.

pub mod fuzz;
pub mod terminal;
