//! `stream-litmus predict FILE…`: what the happens-before model says of each check of claim
//! files, without a GPU, and which checks only the GPU can decide.

use std::path::PathBuf;
use std::process::ExitCode;
use stream_litmus::litmus;

pub fn predict(files: &[PathBuf]) -> ExitCode {
    let claims = match super::check::load_all(files) {
        Ok(claims) => claims,
        Err(code) => return code,
    };
    for (i, claim) in claims.iter().enumerate() {
        if i > 0 {
            println!();
        }
        print!("{}", litmus::predict(claim));
    }
    ExitCode::SUCCESS
}
