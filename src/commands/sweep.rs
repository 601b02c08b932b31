//! `stream-litmus sweep`: launch offsets and hardware queues, as tables.

use super::{out, outln, CliResult};
use std::process::ExitCode;
use std::time::Duration;
use stream_litmus::{catalogue, Lab};

pub fn sweep(trials: usize, max_streams: usize) -> CliResult {
    use stream_litmus::model::Refinement;
    use stream_litmus::report::sweep_tables::{offsets_table, queues_table};
    use stream_litmus::sweep::{offsets_program, offsets_row, queues_program, queues_row};
    use stream_litmus::EnvVar;
    let lab = Lab::new().with_trials(trials);
    super::open_gpu(&lab, trials)?;
    let counts = [2, 4, 8, 16];
    let programs: Vec<_> = counts
        .iter()
        .map(|&n| offsets_program(n, catalogue::DEFAULT_SPIN))
        .collect();
    let runs = lab.run_all_under(&programs, &[])?;
    let mut rows = Vec::new();
    for (&n, run) in counts.iter().zip(runs) {
        rows.push(offsets_row(n, &run?));
    }
    outln!("\n{}", offsets_table(&rows));
    // Long spins: every A must still run while the host issues all 2k launches.
    let spin = Duration::from_micros(200);
    let programs: Vec<_> = (1..=max_streams).map(|k| queues_program(k, spin)).collect();
    let mut settings = Vec::new();
    for value in [None, Some("32")] {
        let env = [EnvVar {
            name: "CUDA_DEVICE_MAX_CONNECTIONS".into(),
            value: value.map(str::to_owned),
        }];
        let refinement = Refinement::for_connections(value).expect("the sweep's own values");
        let runs = lab.run_all_under(&programs, &env)?;
        let mut rows = Vec::new();
        for (program, run) in programs.iter().zip(runs) {
            rows.push(queues_row(program, &run?, refinement));
        }
        let name = match value {
            None => "default connections (model: 8 queues)".to_string(),
            Some(v) => format!("CUDA_DEVICE_MAX_CONNECTIONS={v}"),
        };
        settings.push((name, rows));
    }
    out!("{}", queues_table(&settings));
    Ok(ExitCode::SUCCESS)
}
