//! Every CPU test of the crate's behaviour, in one test binary: the model, programs and the claim
//! language, re-judging timelines recorded on real GPUs, the checks on hand-made timelines, the
//! reports, traces and `explain`, the CLI run as a child, and claim files made to hurt.
//!
//! One binary, because each test binary links the whole crate: with a binary per file (58 of
//! them), a newcomer's first `cargo test` spent most of its minutes linking and wrote 3.3 GB of
//! `target/` (issue 53, docs/measurements.md). Each module is the file of one concern, as
//! `tests/gpu/` does for the GPU tests; filter by its name (`cargo test --test cpu readiness`).
//! The binaries beside it: `costs` (the bounds on a command's time and memory, beside work of
//! their own size only), `gpu` (claims through the lab), `claim_files` and `examples` (one test
//! per file, custom harnesses), `trace_oracle`, and `parallel_claims` (a user's own test file,
//! kept as one to show it works as one).

#[path = "../common/mod.rs"]
mod common;

mod analysis;
mod cli;
mod cli_docs;
mod copy_records;
mod data_checks;
mod disturbance;
mod disturbance_unseen;
mod explain;
mod host_checks;
mod host_order;
mod hostile_claims;
mod launch_cost;
mod layers;
mod litmus_format;
mod makespan;
mod many_trials;
mod mid_trial_release;
mod model;
mod model_compact;
mod model_properties;
mod outputs_never_inputs;
mod overlap_evidence;
mod pace;
mod placement;
mod program;
mod program_behind;
mod readiness;
mod recorded_rejudged;
mod report;
mod report_ops;
mod retry_plan;
mod robust;
mod robust_checks;
mod robust_runs;
mod shared_files;
mod shown_text;
mod sweep;
mod timing;
mod trace_causes;
mod trace_clock;
mod trace_command_line;
mod trace_host_fns;
mod trace_issue_order;
mod trace_names;
mod trace_next;
mod trace_ranges;
mod trace_recordings;
mod trace_shapes;
mod traces;
mod witness_checks;
