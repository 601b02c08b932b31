//! The explanation as text: violations first, then the waits nobody asked for with their causes
//! and the time lost, summed per cause and per stream, then the waits the program asked for,
//! then the surprises. The same figures go to `--out` (`report/explained_chrome.rs`). Every value from
//! the trace (a name, a call) keeps to its line (`border::error::flat`): a kernel named with a
//! line feed cannot forge a line of ours.

use super::{Explanation, Step};
use crate::border::error::flat;
use crate::trace::Trace;
use std::collections::BTreeMap;
use std::fmt::Write;

/// The waits listed per step; the rest are counted.
const LISTED: usize = 5;

fn us(ns: i64) -> String {
    format!("{:.2} µs", ns as f64 / 1e3)
}

/// Time and count per key, in key order.
#[derive(Default)]
struct Sums(BTreeMap<String, (i64, usize)>);

impl Sums {
    fn add(&mut self, key: String, ns: i64) {
        let e = self.0.entry(key).or_default();
        e.0 += ns;
        e.1 += 1;
    }

    fn line(&self) -> String {
        let mut v: Vec<_> = self.0.iter().collect();
        v.sort_by_key(|(_, (ns, _))| std::cmp::Reverse(*ns));
        (v.iter())
            .map(|(k, (ns, n))| format!("{k} {} ({n})", us(*ns)))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The whole explanation.
pub fn text(e: &Explanation, trace: &Trace) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "steps  {} ({}); tolerances: {}",
        e.steps.len(),
        flat(&e.cut),
        trace.tolerances.describe()
    );
    for n in &e.notes {
        let _ = writeln!(s, "note   {}", flat(n));
    }
    model_lines(&mut s, e);
    wait_lines(&mut s, e, trace);
    for st in &e.steps {
        step_lines(&mut s, st);
    }
    s
}

/// The model's pairs by rule, and every broken one.
fn model_lines(s: &mut String, e: &Explanation) {
    let pairs: usize = e.steps.iter().map(|st| st.pairs).sum();
    let rules = super::rules_summed(e);
    let broken: usize = e.steps.iter().map(|st| st.violations.len()).sum();
    if broken == 0 {
        let _ = writeln!(
            s,
            "model  {pairs} must-precede pairs ({rules}): all hold in every step"
        );
        return;
    }
    let _ = writeln!(
        s,
        "model  {broken} of {pairs} must-precede pairs ({rules}) BROKEN (a trace bug, a model gap \
         or a driver behaviour no note describes):"
    );
    for st in &e.steps {
        for v in &st.violations {
            let (name, text) = (flat(&st.name), flat(&v.text));
            let _ = writeln!(s, "  ! {name}: {}: {text}", v.rule.word());
        }
    }
}

/// The waits of every step summed: not asked for (by cause and stream), for room, asked for.
fn wait_lines(s: &mut String, e: &Explanation, trace: &Trace) {
    let (mut cause, mut lane, mut asked) = (Sums::default(), Sums::default(), Sums::default());
    let (mut room, mut room_cause) = (Sums::default(), Sums::default());
    let mut unasked = 0;
    for w in e.steps.iter().flat_map(|st| st.waits.iter()) {
        let word = w.held.kind.word().to_string();
        match (w.held.kind.asked(), w.held.kind.room()) {
            (true, _) => asked.add(word, w.lost_ns),
            (_, true) => {
                room.add(lane_name(trace, w.lane), w.lost_ns);
                room_cause.add(word, w.lost_ns);
            }
            (false, false) => {
                unasked += 1;
                cause.add(word, w.lost_ns);
                lane.add(lane_name(trace, w.lane), w.lost_ns);
            }
        }
    }
    let _ = match unasked {
        0 => writeln!(s, "waits  none the program did not ask for"),
        n => writeln!(
            s,
            "waits  {n} the program did not ask for: by cause {}; by stream {}",
            cause.line(),
            lane.line()
        ),
    };
    if !room.0.is_empty() {
        let _ = writeln!(
            s,
            "room   waits for room on the GPU, not an order: by cause {}; by stream {}",
            room_cause.line(),
            room.line()
        );
    }
    if !asked.0.is_empty() {
        let _ = writeln!(
            s,
            "asked  waits the program asked for (time queued, not lost): {}",
            asked.line()
        );
    }
}

/// A lane's name ("r0 gpu0 stream 7").
pub fn lane_name(trace: &Trace, lane: super::waits::Lane) -> String {
    let who =
        (trace.files.get(lane.0).and_then(|f| f.rank)).map_or(String::new(), |r| format!("r{r} "));
    format!("{who}gpu{} stream {}", lane.2, lane.3)
}

fn step_lines(s: &mut String, st: &Step) {
    let unasked: Vec<_> = (st.waits.iter())
        .filter(|w| !w.held.kind.asked() && !w.held.kind.room())
        .collect();
    let lost: i64 = unasked.iter().map(|w| w.lost_ns).sum();
    let asked = st.waits.len() - unasked.len();
    let _ = writeln!(
        s,
        "step   {}: {} waits not asked for ({}), {asked} asked for or for room{}",
        flat(&st.name),
        unasked.len(),
        us(lost),
        match st.surprises.len() {
            0 => String::new(),
            n => format!(", {n} surprises"),
        }
    );
    for w in unasked.iter().take(LISTED) {
        let _ = writeln!(
            s,
            "  - {} waited {} though ready: {}",
            flat(&w.label),
            us(w.lost_ns),
            flat(&w.held.words(&w.by_label))
        );
    }
    if unasked.len() > LISTED {
        let _ = writeln!(s, "  … and {} more", unasked.len() - LISTED);
    }
    for p in &st.surprises {
        let _ = writeln!(
            s,
            "  ? the pageable copy {} ran beside {} for {}: the driver stages it through a \
             pinned buffer, so it may overlap compute though its call holds the thread",
            flat(&p.copy_label),
            flat(&p.kernel_label),
            us(p.overlap_ns)
        );
    }
}
