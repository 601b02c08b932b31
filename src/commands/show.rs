//! `stream-litmus show ID`: one claim as a listing (with the model's predictions), as JSON, or
//! as a claim file.

use std::process::ExitCode;
use stream_litmus::catalogue;

pub fn show(id: &str, json: bool, litmus: bool) -> ExitCode {
    let Some(claim) = catalogue::all(catalogue::DEFAULT_SPIN)
        .into_iter()
        .find(|c| c.id == id)
    else {
        eprintln!("stream-litmus: no claim '{id}'; see `stream-litmus list`");
        return ExitCode::from(2);
    };
    if litmus {
        print!("{}", stream_litmus::litmus::print_claim(&claim));
    } else if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&claim).expect("claims serialize")
        );
    } else {
        println!(
            "claim  {} — {}\nsource {}\nexpect {}",
            claim.id, claim.statement, claim.source, claim.expect
        );
        for var in &claim.env {
            println!("env    {var}");
        }
        print!("{}", claim.program);
        let connections = claim
            .env
            .iter()
            .find(|v| v.name == "CUDA_DEVICE_MAX_CONNECTIONS")
            .and_then(|v| v.value.as_deref());
        let refinement = stream_litmus::model::Refinement::for_connections(connections);
        let model = stream_litmus::model::HappensBefore::with(&claim.program, refinement);
        for check in &claim.checks {
            let predicted = match model.predicts(check) {
                Some(true) => "predicted",
                Some(false) => "not predicted",
                None => "not a happens-before question",
            };
            println!(
                "  check {:<10} model ({refinement:?}): {}",
                check.describe(&claim.program),
                predicted
            );
        }
    }
    ExitCode::SUCCESS
}
