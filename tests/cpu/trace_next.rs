//! `RELATION(A, next B)` (issue 35, point 7): "each all-reduce precedes the div that follows
//! it" pairs each op of A with the op of B issued next after it, not with every op of B.

use crate::common;

use common::kineto::{judged, made, MadeOp};
use stream_litmus::trace_claims::TraceJudgement;
use stream_litmus::Verdict;

fn reason(j: &TraceJudgement) -> String {
    j.trials[0].checks[0].reason.clone()
}

/// Two rounds, issued at once, on two streams: an all-reduce `a*` on stream 9, then a div `b*`
/// on stream 7 that waited for it (ready at about 1003 µs, started after its all-reduce ended).
/// The second all-reduce ran after the first div: "every all-reduce precedes every div" is
/// false, "each precedes the div issued next after it" true.
const ROUNDS: [MadeOp; 4] = [
    ("kernel", "a1", 9, 1010.0, 190.0, 1000.0),
    ("kernel", "b1", 7, 1210.0, 50.0, 1001.0),
    ("kernel", "a2", 9, 1300.0, 200.0, 1002.0),
    ("kernel", "b2", 7, 1510.0, 50.0, 1003.0),
];

const SELECT: &str = "select A = kernel \"a*\"\nselect B = kernel \"b*\"\n";

#[test]
fn each_op_is_paired_with_the_next_op_issued_after_it() {
    let trace = made(&ROUNDS, &[]);
    let next = judged(&trace, &format!("{SELECT}check forall precedes(A, next B)"));
    assert_eq!(next.verdict, Verdict::Holds, "{}", reason(&next));
    assert!(
        reason(&next).contains("2 of 2 pairs show it"),
        "{}",
        reason(&next)
    );
    // Every pair: a2 did not precede b1, which ran first though both were issued together.
    let every = judged(&trace, &format!("{SELECT}check forall precedes(A, B)"));
    assert_eq!(every.verdict, Verdict::Violated, "{}", reason(&every));
}

#[test]
fn a_next_op_that_ran_first_violates_it() {
    // The second div ran while its all-reduce still ran.
    let mut rounds = ROUNDS;
    rounds[3] = ("kernel", "b2", 7, 1400.0, 50.0, 1003.0);
    let j = judged(
        &made(&rounds, &[]),
        &format!("{SELECT}check forall precedes(A, next B)"),
    );
    assert_eq!(j.verdict, Verdict::Violated, "{}", reason(&j));
    assert!(
        reason(&j).contains("1 of 2 pairs refute it"),
        "{}",
        reason(&j)
    );
    assert!(
        reason(&j).contains("a2") && reason(&j).contains("b2"),
        "{}",
        reason(&j)
    );
}

#[test]
fn an_op_with_nothing_issued_after_it_is_left_out_and_said() {
    // A third all-reduce, issued last: no div follows it.
    let mut rounds = ROUNDS.to_vec();
    rounds.push(("kernel", "a3", 9, 1600.0, 50.0, 1004.0));
    let j = judged(
        &made(&rounds, &[]),
        &format!("{SELECT}check forall precedes(A, next B)"),
    );
    assert_eq!(j.verdict, Verdict::Holds, "{}", reason(&j));
    assert!(
        reason(&j).contains("1 ops have no op of B issued after them"),
        "{}",
        reason(&j)
    );
}

#[test]
fn next_within_one_selection_is_each_op_and_its_successor() {
    // "Stream 7 runs in issue order", as consecutive pairs: 2 pairs for 3 ops.
    let ops: [MadeOp; 3] = [
        ("kernel", "k1", 7, 1010.0, 100.0, 1000.0),
        ("kernel", "k2", 7, 1111.0, 100.0, 1001.0),
        ("kernel", "k3", 7, 1212.0, 100.0, 1002.0),
    ];
    let j = judged(
        &made(&ops, &[]),
        "select S = kernel \"k*\" stream 7\ncheck forall precedes(S, next S)",
    );
    assert_eq!(j.verdict, Verdict::Holds, "{}", reason(&j));
    assert!(
        reason(&j).contains("2 of 2 pairs show it"),
        "{}",
        reason(&j)
    );
}

#[test]
fn next_is_refused_where_it_means_nothing() {
    let parse = |check: &str| {
        let text = format!(
            "claim t.c\nstatement \"s\"\nsource \"x\" section \"y\"\nexpect holds\n{SELECT}{check}\n"
        );
        stream_litmus::litmus::parse_traced("t.litmus", &text).map(|_| ())
    };
    assert!(parse("check forall precedes(A, next B)").is_ok());
    let first = parse("check forall precedes(next A, B)")
        .unwrap_err()
        .to_string();
    assert!(first.contains("`next` comes second"), "{first}");
    let faster = parse("check faster(A, next B)").unwrap_err().to_string();
    assert!(faster.contains("two phases"), "{faster}");
    // In a claim on the lab's own program, ops are named one by one.
    let lab = "claim t.lab\nstatement \"s\"\nsource \"x\" section \"y\"\nexpect holds\n\
               stream s1 = non-blocking\nK1: spin 10us on s1\nK2: spin 10us on s1\n\
               check precedes(K1, next K2)\n";
    let err = stream_litmus::litmus::parse("t.litmus", lab)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("`next` pairs the ops of selections on a trace"),
        "{err}"
    );
}

#[test]
fn a_chain_on_a_trace_is_its_links() {
    let text = format!(
        "claim t.c\nstatement \"s\"\nsource \"x\" section \"y\"\nexpect holds\n{SELECT}\
         select C = kernel \"c*\"\ncheck forall chain(A, next B, next C)\n"
    );
    let claims = stream_litmus::litmus::parse_traced("t.litmus", &text).unwrap();
    let described: Vec<String> = (claims[0].checks.iter())
        .map(|c| claims[0].describe(c))
        .collect();
    assert_eq!(
        described,
        ["forall precedes(A, next B)", "forall precedes(B, next C)"]
    );
    // The two rounds, each followed by a `c` kernel on stream 7 after its div.
    let mut rounds = ROUNDS.to_vec();
    rounds.insert(2, ("kernel", "c1", 7, 1270.0, 20.0, 1001.5));
    rounds.push(("kernel", "c2", 7, 1570.0, 20.0, 1003.5));
    let j = judged(
        &made(&rounds, &[]),
        &format!("{SELECT}select C = kernel \"c*\"\ncheck forall chain(A, next B, next C)"),
    );
    assert_eq!(j.verdict, Verdict::Holds, "{}", reason(&j));
    assert_eq!(j.trials[0].checks.len(), 2);
}
