//! `stream-litmus predict FILE…`: what the happens-before model says of each check of claim
//! files, without a GPU, and which checks only the GPU can decide.

use super::{out, outln, CliResult};
use std::path::PathBuf;
use std::process::ExitCode;
use stream_litmus::litmus;

pub fn predict(files: &[PathBuf]) -> CliResult {
    let (claims, _) = super::check_claims::load_all(files, stream_litmus::catalogue::DEFAULT_SPIN)?;
    for (i, claim) in claims.iter().enumerate() {
        if i > 0 {
            outln!();
        }
        out!("{}", litmus::predict(claim));
    }
    Ok(ExitCode::SUCCESS)
}
