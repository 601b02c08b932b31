//! The GPU of the commands that run on one: opened through the lab, with the report header
//! printed first.

use super::{out, CliError};
use stream_litmus::report::terminal;
use stream_litmus::{Gpu, Lab};

/// The lab's GPU with the report header printed, or the error that says why there is none
/// (every command that runs on the GPU exits 2 with the same message).
pub fn open_gpu(lab: &Lab, trials: usize) -> Result<&Gpu, CliError> {
    let gpu = lab.gpu()?;
    out!("{}", terminal::header(gpu.calibration(), trials));
    Ok(gpu)
}
