//! `stream-litmus show ID`: one claim as a listing (with the model's predictions), as JSON, or
//! as a claim file.

use super::{out, outln, CliError, CliResult};
use std::process::ExitCode;
use stream_litmus::catalogue;

pub fn show(id: &str, json: bool, litmus: bool) -> CliResult {
    let Some(claim) = catalogue::all(catalogue::DEFAULT_SPIN)
        .into_iter()
        .chain(catalogue::multi_gpu(catalogue::DEFAULT_SPIN))
        .find(|c| c.id == id)
    else {
        return Err(CliError::usage(format!(
            "no claim '{id}'; see `stream-litmus list`"
        )));
    };
    if litmus {
        out!("{}", stream_litmus::litmus::print_claim(&claim));
    } else if json {
        let json = serde_json::to_string_pretty(&claim)
            .map_err(|e| CliError::usage(format!("the claim could not be serialized: {e}")))?;
        outln!("{json}");
    } else {
        outln!(
            "claim  {} — {}\nsource {}\nexpect {}",
            stream_litmus::report::shown::one_line(&claim.id),
            stream_litmus::report::shown::one_line(&claim.statement),
            claim.source,
            claim.expect
        );
        for var in &claim.env {
            outln!("env    {var}");
        }
        out!("{}", claim.program);
        let connections = claim
            .env
            .iter()
            .find(|v| v.name == "CUDA_DEVICE_MAX_CONNECTIONS")
            .and_then(|v| v.value.as_deref());
        let refinement = stream_litmus::model::Refinement::for_connections(connections)
            .map_err(CliError::usage)?;
        let model = stream_litmus::model::HappensBefore::with(&claim.program, refinement);
        for check in &claim.checks {
            let predicted = match model.predicts(check) {
                Some(true) => "predicted",
                Some(false) => "not predicted",
                None => "not a happens-before question",
            };
            outln!(
                "  check {:<10} model ({refinement:?}): {}",
                check.describe(&claim.program),
                predicted
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
