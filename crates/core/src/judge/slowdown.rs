//! Host slowdowns: trials whose host times a slow host CPU could have decided.
//!
//! Host-time checks ([`Check::reads_host_time`]) read the issuing thread's clock across driver
//! calls. On the H100 VMs of this workplace the whole VM now and then computes about ten times
//! slower for milliseconds, with nobody preempted (see `gpu/pace.rs`), and a graph launch caught
//! in such a stretch took 8 ms instead of 1.4 ms, longer than the 1000 launches one by one. The
//! pace thread records those stretches in the timeline ([`HostSlow`]); this module decides which
//! trials they spoil, so the verdict counts them apart like any disturbed trial.
//!
//! CPU time the host lost (`stolen_ns`) is spread evenly over its stretch, and a call is charged
//! what falls inside it. The pace thread runs on another core, so this estimates what the
//! issuing thread lost rather than measuring it; the rule only ever uses it to set a trial aside,
//! never to correct a figure.
//!
//! The rule is for [`Check::LaunchCheaper`], which compares two amounts of host CPU work: a
//! slowdown only ever lengthens calls, so the trial is set aside when the time lost inside the
//! side the comparison went against could account for the whole margin. A Yes is set aside when
//! the launches one by one lost at least what the graph launch saved; a No when the graph launch
//! lost at least what it cost beyond the launches. Time lost on the other side only made the
//! observed outcome harder to reach, and is not counted. (Taking each side's loss away and
//! comparing again missed a trial caught whole in one 17.7 ms stretch: the estimate charged both
//! sides about 4.5 ms, and the graph launch still came out dearer.)
//!
//! The pace thread cannot see a slowdown of the issuing thread's own core (a busy hyperthread
//! sibling, a vCPU held by the hypervisor). On a calm H100 VM the graph launch of 100 kernels
//! once took 1.90 ms instead of 0.19 ms and its 100 launches 0.93 ms instead of 0.45 ms while the
//! pace thread lost 31 µs in all. So the issuing thread also times one unit right before its
//! first issue and one right after its last ([`crate::IssuerPace`]); a unit over
//! [`SLOW_FACTOR`] times the fastest sets the trial aside whichever way it came out, since which
//! side the slowdown hit is unknown.
//!
//! The other host-time checks ask *when* a call returned against the GPU's work, that is,
//! whether it waited for it, and a waiting call returns when the work ends whatever the host's
//! pace. The pace thread also sees the VMs' steady background loss: 10–25 µs every millisecond
//! (a timer tick's exit to the hypervisor, about 1.5 % of a core), which inside a 6 ms pageable
//! copy adds up to 90 µs without slowing anything that decides. A lost-time rule for those
//! checks set aside 13 of 15 trials of `copy.pageable_returns_late` and made it Inconclusive in
//! 4 of 4 catalogue runs on an H100, where no such check had ever been decided wrongly; they stay
//! under the preemption rule ([`crate::judge::disturbance::marks`]) until a recorded run shows one
//! turned by a slow host.

use crate::judge::relation::Check;
use crate::measured::timeline::{HostSlow, Timeline};
use crate::program::OpId;

pub use crate::measured::timeline::SLOW_FACTOR;

/// CPU time the host lost between two host instants (ns since the trial's first issue).
pub fn stolen_within(slow: &[HostSlow], begin: u64, end: u64) -> u64 {
    slow.iter()
        .map(|s| {
            let len = s.end_ns.saturating_sub(s.begin_ns);
            let inside = end.min(s.end_ns).saturating_sub(begin.max(s.begin_ns));
            if len == 0 || inside == 0 {
                0
            } else {
                (s.stolen_ns as u128 * inside as u128 / len as u128) as u64
            }
        })
        // Saturating: the stretches may come from a results file anyone can edit.
        .fold(0u64, u64::saturating_add)
}

/// What the host lost inside the calls of ops `first..=last`, and the calls' own time.
fn inside_calls(timeline: &Timeline, first: OpId, last: OpId) -> (u64, u64) {
    timeline
        .host_calls_of(first, last)
        .iter()
        .fold((0, 0), |(stolen, took), c| {
            (
                stolen.saturating_add(stolen_within(&timeline.host_slow, c.begin_ns, c.end_ns)),
                took.saturating_add(c.end_ns.saturating_sub(c.begin_ns)),
            )
        })
}

/// Whether the rule reads the host's pace for `checks`: the executor runs the pace thread only
/// then, since it keeps a CPU core busy while a trial is issued.
pub fn watched(checks: &[Check]) -> bool {
    checks
        .iter()
        .any(|c| matches!(c, Check::LaunchCheaper { .. }))
}

/// Why the host's slowdowns spoil this trial for `checks`, or `None`.
pub fn spoiled(checks: &[Check], timeline: &Timeline) -> Option<String> {
    if timeline.host_slow.is_empty() && timeline.issuer_pace.is_none() {
        return None;
    }
    checks.iter().find_map(|c| match *c {
        Check::LaunchCheaper { graph, first, last } => launch_spoiled(timeline, graph, first, last),
        _ => None,
    })
}

/// Why the issuing thread's own core was slow around the trial, or `None`: a probe unit before
/// or after the issue loop took over [`SLOW_FACTOR`] times the fastest unit.
fn issuer_slow(timeline: &Timeline) -> Option<String> {
    let p = timeline.issuer_pace?;
    let limit = SLOW_FACTOR.saturating_mul(p.fastest_ns.max(1));
    (p.before_ns > limit || p.after_ns > limit).then(|| {
        format!(
            "disturbed: the issuing thread's own CPU ran slow around the trial (a unit of fixed \
             work took {:.2} µs before the first issue and {:.2} µs after the last, the fastest \
             {:.2} µs)",
            p.before_ns as f64 / 1e3,
            p.after_ns as f64 / 1e3,
            p.fastest_ns as f64 / 1e3
        )
    })
}

fn launch_spoiled(timeline: &Timeline, graph: OpId, first: OpId, last: OpId) -> Option<String> {
    if let Some(why) = issuer_slow(timeline) {
        return Some(why);
    }
    let micros = |ns: u64| ns as f64 / 1e3;
    let (lost_graph, graph_took) = inside_calls(timeline, graph, graph);
    let (lost_direct, direct_took) = inside_calls(timeline, first, last);
    let (side, lost, margin) = if graph_took < direct_took {
        ("launches one by one", lost_direct, direct_took - graph_took)
    } else {
        ("graph launch", lost_graph, graph_took - direct_took)
    };
    (lost >= margin).then(|| {
        format!(
            "disturbed: the host's CPU ran slow (pace thread) and lost {:.2} µs inside the {side}, \
             at least the {:.2} µs that decided the comparison (graph launch {:.2} µs, launches \
             {:.2} µs)",
            micros(lost),
            micros(margin),
            micros(graph_took),
            micros(direct_took)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measured::timeline::HostCall;

    fn slow(begin_ns: u64, end_ns: u64, stolen_ns: u64) -> HostSlow {
        HostSlow {
            begin_ns,
            end_ns,
            stolen_ns,
        }
    }

    #[test]
    fn lost_time_is_spread_over_its_stretch() {
        let s = [slow(100, 200, 50), slow(300, 300, 7)];
        assert_eq!(stolen_within(&s, 0, 1000), 50);
        assert_eq!(stolen_within(&s, 150, 1000), 25);
        assert_eq!(stolen_within(&s, 0, 100), 0);
        assert_eq!(stolen_within(&s, 120, 130), 5);
        assert_eq!(
            stolen_within(&[slow(0, u64::MAX, u64::MAX)], 0, u64::MAX),
            u64::MAX
        );
    }

    /// Two direct launches (ops 0, 1) and a graph launch (op 2).
    fn launches(direct: [(u64, u64); 2], graph: (u64, u64), slow: Vec<HostSlow>) -> Timeline {
        let call = |op, (b, e)| HostCall {
            op: OpId(op),
            begin_ns: b,
            end_ns: e,
        };
        Timeline::new(
            vec![],
            vec![call(0, direct[0]), call(1, direct[1]), call(2, graph)],
        )
        .with_host_slow(slow, None)
    }

    const CHEAPER: Check = Check::LaunchCheaper {
        graph: OpId(2),
        first: OpId(0),
        last: OpId(1),
    };

    #[test]
    fn a_slow_graph_launch_that_turned_the_comparison_is_set_aside() {
        // 2 ms of launches against a graph launch of 3 ms, 2.5 ms of it lost: No only because slow.
        let t = launches(
            [(0, 1_000_000), (1_000_000, 2_000_000)],
            (2_000_000, 5_000_000),
            vec![slow(2_000_000, 5_000_000, 2_500_000)],
        );
        let why = spoiled(&[CHEAPER], &t).expect("set aside");
        assert!(why.contains("decided the comparison"), "{why}");
        // The same slowdown inside launches that were dearer anyway: the Yes stands either way.
        let t = launches(
            [(0, 1_000_000), (1_000_000, 4_000_000)],
            (4_000_000, 4_500_000),
            vec![slow(1_000_000, 4_000_000, 1_000_000)],
        );
        assert_eq!(spoiled(&[CHEAPER], &t), None);
        // An idle VM's noise: 40 µs lost against a margin of milliseconds.
        let t = launches(
            [(0, 2_000_000), (2_000_000, 4_000_000)],
            (4_000_000, 5_400_000),
            vec![slow(4_100_000, 4_140_000, 40_000)],
        );
        assert_eq!(spoiled(&[CHEAPER], &t), None);
    }

    #[test]
    fn a_yes_that_only_slow_launches_made_is_set_aside() {
        // The launches took 6 ms, 5 ms of it lost; the graph launch 1.5 ms at full pace.
        let t = launches(
            [(0, 3_000_000), (3_000_000, 6_000_000)],
            (6_000_000, 7_500_000),
            vec![slow(0, 6_000_000, 5_000_000)],
        );
        assert!(spoiled(&[CHEAPER], &t).is_some());
    }

    #[test]
    fn one_stretch_over_both_sides_is_judged_by_the_side_that_lost() {
        // Recorded on an H100 VM (graph.launch_cost.1000, trial 874 of 1,000): one 17.7 ms
        // stretch charged 4.74 ms to the graph launch (6.78 ms) and 4.38 ms to the launches
        // (6.28 ms). Taking both away still left the graph launch dearer; its own loss is what
        // counts against the No.
        let t = launches(
            [(0, 3_140_000), (3_140_000, 6_280_000)],
            (6_300_000, 13_080_000),
            vec![slow(0, 17_660_000, 12_373_239)],
        );
        assert!(spoiled(&[CHEAPER], &t).is_some());
    }

    #[test]
    fn a_slow_issuing_core_sets_the_trial_aside_either_way() {
        let pace = |before_ns, after_ns| {
            Some(crate::measured::timeline::IssuerPace {
                before_ns,
                after_ns,
                fastest_ns: 2_000,
            })
        };
        // The graph launch 1.90 ms, its 100 launches 0.93 ms, the pace thread saw nothing.
        let calls = ([(0, 465_000), (465_000, 930_000)], (930_000, 2_830_000));
        let mut t = launches(calls.0, calls.1, vec![]);
        t.issuer_pace = pace(2_100, 4_001);
        let why = spoiled(&[CHEAPER], &t).expect("set aside");
        assert!(why.contains("issuing thread's own CPU"), "{why}");
        // Both units at pace: the comparison stands as measured.
        t.issuer_pace = pace(2_100, 4_000);
        assert_eq!(spoiled(&[CHEAPER], &t), None);
        // A slow core sets a Yes aside too: which side it slowed is unknown.
        let mut yes = launches(
            [(0, 2_000_000), (2_000_000, 4_000_000)],
            (4_000_000, 5_400_000),
            vec![],
        );
        yes.issuer_pace = pace(9_000, 2_000);
        assert!(spoiled(&[CHEAPER], &yes).is_some());
    }

    #[test]
    fn other_host_checks_are_left_to_the_preemption_rule() {
        // A waiting call through a long slow stretch: when it returned is set by the GPU.
        let returns = Check::ReturnsAfter {
            call: OpId(2),
            span: OpId(0),
        };
        let t = launches(
            [(0, 10), (10, 20)],
            (20, 6_000_000),
            vec![slow(20, 6_000_000, 90_000)],
        );
        assert_eq!(spoiled(&[returns], &t), None);
    }
}
