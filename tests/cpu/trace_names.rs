//! Names in traces: one claim selects a kernel by the profiler's demangled name and by the
//! compiler's name a `trace --` recording keeps (issue 35, point 11).

use crate::common;

use common::kineto::two_kernels as trace;
use stream_litmus::litmus;
use stream_litmus::trace::{Trace, TraceError};
use stream_litmus::trace_claims::judge;
use stream_litmus::Verdict;

fn verdict(trace_text: &str, claim: &str) -> Verdict {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.json");
    std::fs::write(&path, trace_text).unwrap();
    let trace = Trace::read(&[path]).unwrap();
    let text =
        format!("claim t.c\nstatement \"s\"\nsource \"x\" section \"y\"\nexpect holds\n{claim}\n");
    let claims = litmus::parse_traced("t.litmus", &text).unwrap();
    judge(&claims[0], &trace).unwrap().verdict
}

const NCCL_MANGLED: &str =
    "_Z40ncclDevKernel_AllReduce_Sum_bf16_RING_LL24ncclDevKernelArgsStorageILm4096EE";
const NCCL_PROFILER: &str =
    "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)";

#[test]
fn one_claim_selects_the_profilers_names_and_the_compilers() {
    // Seed 003's selections, unchanged, on both forms of the same kernels.
    let claim =
        "select AR = kernel \"ncclDevKernel_AllReduce*\"\nselect K = kernel \"k_before*\"\n\
                 check overlaps(AR, K)";
    let profiler = trace(NCCL_PROFILER, "k_before(long long)");
    let recorded = trace(NCCL_MANGLED, "_Z8k_beforex");
    assert_eq!(verdict(&profiler, claim), Verdict::Holds);
    assert_eq!(verdict(&recorded, claim), Verdict::Holds);
    // A pattern written for the compiler's form still selects it.
    let mangled = "select AR = kernel \"_Z*ncclDevKernel_AllReduce*\"\nselect K = kernel \
                   \"_Z8k_before?\"\ncheck overlaps(AR, K)";
    assert_eq!(verdict(&recorded, mangled), Verdict::Holds);
}

/// Issue 35, point 12: a trial pattern of kernels that matches none says so, and the names
/// listed put the one the user most likely meant first.
#[test]
fn names_that_match_nothing_are_listed_nearest_first() {
    let dir = tempfile::tempdir().unwrap();
    let mut names: Vec<String> = (0..20).map(|i| format!("aaa_kernel_{i:02}")).collect();
    names.push("zz_my_wanted_kernel_for_the_step".into());
    let path = dir.path().join("t.json");
    std::fs::write(&path, common::kineto::kernels_named(&names)).unwrap();
    let trace = Trace::read(&[path]).unwrap();
    let judged = |claim: &str| {
        let text = format!(
            "claim t.c\nstatement \"s\"\nsource \"x\" section \"y\"\nexpect holds\n{claim}\n"
        );
        judge(&litmus::parse_traced("t.litmus", &text).unwrap()[0], &trace)
            .unwrap_err()
            .to_string()
    };
    let err = judged(
        "trial each kernel \"my_wanted_kernl*\"\nselect A = kernel\ncheck exists overlaps(A, A)",
    );
    assert!(err.contains("no kernel launch matches"), "{err}");
    assert!(!err.contains("host range"), "{err}");
    let first = err.split('`').nth(3).unwrap_or_default();
    assert_eq!(first, "zz_my_wanted_kernel_for_the_step", "{err}");
    let err = judged("select A = kernel \"*wanted_kernl*\"\ncheck exists overlaps(A, A)");
    assert!(err.contains("holds no op"), "{err}");
    assert!(
        err.contains("`zz_my_wanted_kernel_for_the_step`, `aaa"),
        "the nearest name first: {err}"
    );
}

/// Issue 51, point 10: a range trial on a trace whose steps are begin and end events (which are
/// not read) says there are none and why, not an empty list of names.
#[test]
fn a_range_trial_on_a_trace_of_no_ranges_says_none_and_why() {
    let dir = tempfile::tempdir().unwrap();
    let names = vec!["k".to_string()];
    let path = dir.path().join("t.json");
    let with_steps = common::kineto::kernels_named(&names).replace(
        "\"traceEvents\":[",
        r#""traceEvents":[{"ph":"B","cat":"user_annotation","name":"ProfilerStep#0","pid":1,"tid":1,"ts":0.0},{"ph":"E","cat":"user_annotation","name":"ProfilerStep#0","pid":1,"tid":1,"ts":20.0},"#,
    );
    std::fs::write(&path, with_steps).unwrap();
    let trace = Trace::read(&[path]).unwrap();
    let text = "claim t.c\nstatement \"s\"\nsource \"x\" section \"y\"\nexpect holds\n\
                trial each \"ProfilerStep#*\"\nselect A = kernel\ncheck exists overlaps(A, A)\n";
    let err = judge(&litmus::parse_traced("t.litmus", text).unwrap()[0], &trace).unwrap_err();
    assert!(matches!(err, TraceError::Trials(_)), "{err}");
    let err = err.to_string();
    assert!(
        err.contains("the trace's ranges are: none (") && err.contains("\"B\" and \"E\""),
        "{err}"
    );
}
