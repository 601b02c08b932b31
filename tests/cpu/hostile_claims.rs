//! Claim files made to hurt, in two ways, both with fixed budgets so `cargo test` stays quick
//! and repeatable (issue 22):
//! - a property test (proptest, fixed seed) mutates the printed form of every catalogue claim,
//!   the claims of several GPUs included: deletions, duplicated lines, byte edits, extreme numbers;
//! - a corpus fuzzer (a fixed xorshift stream) mutates the committed corpus in tests/corpus/claims
//!   and the files under claims/.
//!
//! Every mutant must parse, or fail with an error located at a line and column of the text; a
//! parsed claim must go through the model's prediction and the results file's rules without a
//! panic. A panic anywhere fails the test.

use crate::common;

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use std::path::Path;
use std::sync::OnceLock;
use std::time::Duration;
use stream_litmus::{catalogue, litmus};

fn printed() -> &'static [String] {
    static P: OnceLock<Vec<String>> = OnceLock::new();
    P.get_or_init(|| {
        let spin = Duration::from_micros(50);
        let mut claims = catalogue::all(spin);
        claims.extend(catalogue::multi_gpu(spin));
        claims.iter().map(litmus::print_claim).collect()
    })
}

/// Parses `text`; a success goes on through the model and the results file's rules, an error
/// must point into the text.
fn judge_text(text: &str) {
    match litmus::parse("mutant.litmus", text) {
        Ok(claims) => {
            for c in &claims {
                let _ = litmus::predict(c).to_string();
                let _ = stream_litmus::claim_rules(c);
            }
        }
        Err(e) => {
            let (line, column) = e.location();
            let lines = text.split('\n').count().max(1);
            assert!(
                (1..=lines).contains(&line) && column >= 1,
                "an error not located in the text ({line}:{column} of {lines} lines): {e}"
            );
        }
    }
}

#[derive(Debug, Clone)]
enum Mutation {
    Delete(usize, usize),
    DuplicateLine(usize),
    Byte(usize, u8),
    Number(usize, &'static str),
    LongName(usize, usize),
}

fn apply(text: &str, m: &Mutation) -> String {
    let mut b = text.as_bytes().to_vec();
    let at = |i: usize| i % (b.len() + 1);
    match *m {
        Mutation::Delete(i, n) => {
            let start = at(i);
            let end = (start + n).min(b.len());
            b.drain(start..end);
        }
        Mutation::DuplicateLine(i) => {
            let lines: Vec<&str> = text.split_inclusive('\n').collect();
            let k = i % lines.len();
            let mut out = lines.clone();
            out.insert(k, lines[k]);
            return out.concat();
        }
        Mutation::Byte(i, v) => {
            let i = at(i).min(b.len().saturating_sub(1));
            if !b.is_empty() {
                b[i] = v;
            }
        }
        Mutation::Number(i, n) => {
            // Replace the first number at or after `i` by an extreme one.
            let start = at(i);
            if let Some(p) = b[start..].iter().position(u8::is_ascii_digit) {
                let p = start + p;
                let q = p + b[p..].iter().take_while(|c| c.is_ascii_digit()).count();
                b.splice(p..q, n.bytes());
            }
        }
        Mutation::LongName(i, n) => {
            let start = at(i);
            b.splice(start..start, std::iter::repeat(b'x').take(n));
        }
    }
    String::from_utf8_lossy(&b).into_owned()
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 1usize..40).prop_map(|(i, n)| Mutation::Delete(i, n)),
        any::<usize>().prop_map(Mutation::DuplicateLine),
        (any::<usize>(), any::<u8>()).prop_map(|(i, v)| Mutation::Byte(i, v)),
        (any::<usize>(), proptest::sample::select(common::EXTREMES))
            .prop_map(|(i, n)| Mutation::Number(i, n)),
        (
            any::<usize>(),
            prop_oneof![Just(300usize), Just(70_000usize)]
        )
            .prop_map(|(i, n)| Mutation::LongName(i, n)),
    ]
}

#[test]
fn mutated_catalogue_claims_parse_or_fail_located() {
    let config = Config {
        cases: 1500,
        failure_persistence: None,
        rng_algorithm: RngAlgorithm::ChaCha,
        ..Config::default()
    };
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &[22; 32]);
    let mut runner = TestRunner::new_with_rng(config, rng);
    let n = printed().len();
    runner
        .run(
            &(0..n, proptest::collection::vec(mutation(), 1..4)),
            |(k, ms)| {
                let mut text = printed()[k].clone();
                for m in &ms {
                    text = apply(&text, m);
                }
                judge_text(&text);
                Ok(())
            },
        )
        .unwrap();
}

fn corpus() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut texts = Vec::new();
    for dir in ["tests/corpus/claims", "claims/notes", "claims/newcomer"] {
        let mut files: Vec<_> = std::fs::read_dir(root.join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "litmus"))
            .collect();
        files.sort();
        for f in files {
            texts.push(String::from_utf8_lossy(&std::fs::read(f).unwrap()).into_owned());
        }
    }
    texts
}

#[test]
fn the_committed_corpus_survives_a_fixed_budget_of_mutations() {
    let corpus = corpus();
    assert!(corpus.len() >= 4, "the corpus is missing");
    let mut rng = common::XorShift(0x2222_5eed_1ab5_0001);
    for _ in 0..3000 {
        let mut text = corpus[rng.below(corpus.len())].clone();
        // The catalogue file is large: most mutants cut it to a window of a few claims.
        if text.len() > 8192 {
            let start = rng.below(text.len() - 4096);
            let start = (start..text.len())
                .find(|&i| text.is_char_boundary(i))
                .unwrap();
            let end = (start + 4096..text.len())
                .find(|&i| text.is_char_boundary(i))
                .unwrap_or(text.len());
            text = text[start..end].to_string();
        }
        for _ in 0..1 + rng.below(3) {
            let m = match rng.below(5) {
                0 => Mutation::Delete(rng.below(1 << 20), 1 + rng.below(40)),
                1 => Mutation::DuplicateLine(rng.below(1 << 20)),
                2 => Mutation::Byte(rng.below(1 << 20), rng.next() as u8),
                3 => Mutation::Number(
                    rng.below(1 << 20),
                    common::EXTREMES[rng.below(common::EXTREMES.len())],
                ),
                _ => Mutation::LongName(rng.below(1 << 20), 1 + rng.below(400)),
            };
            text = apply(&text, &m);
        }
        judge_text(&text);
    }
}
