//! The newcomer test (issue 35): claims a student would write on the committed traces
//! (`tests/trace_oracle/*.litmus`), each judged by the crate and answered by an independent
//! Python script over the raw trace JSON (`tests/trace_oracle/oracle.py`, standard library
//! only). A verdict must equal the oracle's answer, except where the oracle says "Either": the
//! deciding amount lies within the trace's timing uncertainty (its margins are in its docstring).
//! One test per claim; without `python3` they show as ignored, with the reason.

use libtest_mimic::{Arguments, Completion, Failed, Trial};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use stream_litmus::litmus;
use stream_litmus::trace::Trace;
use stream_litmus::trace_claims::judge;

fn main() {
    let args = Arguments::from_args();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/trace_oracle");
    let mut files: Vec<PathBuf> = (std::fs::read_dir(&dir).unwrap().flatten())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "litmus"))
        .collect();
    files.sort();
    let answers = oracle(&dir).map(Arc::new);
    let mut trials = Vec::new();
    let mut ids = Vec::new();
    for file in files {
        let claims = litmus::load_traced(&file).unwrap_or_else(|e| panic!("{e}"));
        for c in claims {
            ids.push(c.id.clone());
            let (file, answers) = (file.clone(), answers.clone());
            let name = format!("oracle::{}", c.id);
            trials.push(match answers {
                Err(why) => Trial::ignorable_test(name, move || Ok(Completion::ignored_with(why))),
                Ok(answers) => Trial::test(name, move || agrees(&file, &c, &answers)),
            });
        }
    }
    let every = "oracle::every_claim_answered_and_most_decided";
    trials.push(match answers {
        Err(why) => Trial::ignorable_test(every, move || Ok(Completion::ignored_with(why))),
        Ok(answers) => Trial::test(every, move || all_answered(&answers, &ids)),
    });
    libtest_mimic::run(&args, trials).exit();
}

/// The oracle answers every claim and no other, and decides most of them.
fn all_answered(answers: &Value, ids: &[String]) -> Result<(), Failed> {
    let obj = answers.as_object().ok_or("the oracle printed no object")?;
    let mut theirs: Vec<&String> = obj.keys().collect();
    theirs.sort();
    let mut ours: Vec<&String> = ids.iter().collect();
    ours.sort();
    if theirs != ours {
        return Err(format!("claims {ours:?}, oracle answers {theirs:?}").into());
    }
    // "Either" is for amounts inside a margin, not a way out: most answers are decided.
    let either = obj.values().filter(|v| v["answer"] == "Either").count();
    if either * 5 > obj.len() {
        return Err(format!("{either} of {} oracle answers are Either", obj.len()).into());
    }
    Ok(())
}

/// The oracle's answers, or why they cannot be had here.
fn oracle(dir: &Path) -> Result<Value, String> {
    let out = std::process::Command::new("python3")
        .arg(dir.join("oracle.py"))
        .output()
        .map_err(|e| format!("needs python3 for the oracle: {e}"))?;
    if !out.status.success() {
        panic!("oracle.py failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(serde_json::from_slice(&out.stdout).expect("oracle.py prints JSON"))
}

fn agrees(
    file: &Path,
    c: &stream_litmus::trace_claims::TraceClaim,
    answers: &Value,
) -> Result<(), Failed> {
    let paths = c.trace_paths(file);
    let trace = Trace::read_runs(&paths, &c.runs)?;
    let j = judge(c, &trace)?;
    let answer = answers[&c.id]["answer"]
        .as_str()
        .ok_or("no oracle answer")?;
    let verdict = j.verdict.to_string();
    if verdict == answer || answer == "Either" {
        return Ok(());
    }
    Err(format!(
        "{}: {verdict} {} trials ({}), the oracle says {answer}: {}",
        c.id,
        j.counts,
        j.evidence(c),
        answers[&c.id]["why"]
    )
    .into())
}
