//! The subcommands, one file each, and what they share, one file each too: the error path
//! (`cli_error`), the argument checks (`arguments`), the GPU with its header (`gpu`), the
//! report files (`reports`) and the progress line (`progress`).
//!
//! They sit on top of the library and use only its public API.

pub mod arguments;
mod check_claims;
mod cli_error;
mod explain;
mod filters;
mod fuzz;
mod gpu;
mod hog;
mod predict;
mod progress;
mod replay;
mod reports;
mod run_catalogue;
mod show;
mod sweep;
mod timing_lines;
mod trace;
mod traced;

pub use check_claims::check;
pub use explain::explain;
pub use fuzz::fuzz;
pub use gpu::open_gpu;
pub use hog::hog;
pub use predict::predict;
pub use progress::Progress;
pub use replay::{compare, judge, render};
pub use reports::write_reports;
pub use run_catalogue::run;
pub use show::show;
pub use sweep::sweep;
pub use trace::trace;

pub(crate) use cli_error::{errln, out, outln};
pub use cli_error::{CliError, CliResult};
