//! The explanation as text: violations first, then the waits nobody asked for with their causes
//! and the time lost, summed per cause and per stream, then those the streams' kinds imply (the
//! legacy default stream), those for room, those the program asked for, then step by step. The
//! terminal gets a summary ([`Listing::Summary`]: a few waits per step, the rest counted);
//! `--out`'s explain.txt every wait of every step ([`Listing::All`]), as `--json` has them. Every
//! value from the trace (a name, a call) keeps to its line (`border::error::flat`): a kernel
//! named with a line feed cannot forge a line of ours.

use super::{Explanation, Step};
use crate::border::error::flat;
use crate::trace::Trace;
use std::collections::BTreeMap;
use std::fmt::Write;

/// The waits the summary lists per step; the rest are counted.
const LISTED: usize = 5;

/// How many waits each step lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listing {
    /// The terminal's: the first few waits not asked for (or implied) per step.
    Summary,
    /// explain.txt's: every wait of every step, asked for or not.
    All,
}

/// How a wait is told: not asked for, implied by the streams' kinds, for room, asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Class {
    NotAsked,
    Implied,
    Room,
    Asked,
}

impl Class {
    pub fn of(kind: crate::trace::CauseKind) -> Class {
        match () {
            _ if kind.asked() => Class::Asked,
            _ if kind.implied() => Class::Implied,
            _ if kind.room() => Class::Room,
            _ => Class::NotAsked,
        }
    }

    /// Its name in JSON (`explain --json`).
    pub fn key(self) -> &'static str {
        match self {
            Class::NotAsked => "not_asked",
            Class::Implied => "implied",
            Class::Room => "room",
            Class::Asked => "asked",
        }
    }

    pub fn word(self) -> &'static str {
        match self {
            Class::NotAsked => "not asked for",
            Class::Implied => "implied by the streams' kinds",
            Class::Room => "for room",
            Class::Asked => "asked for",
        }
    }
}

fn us(ns: impl Into<i128>) -> String {
    format!("{:.2} µs", ns.into() as f64 / 1e3)
}

/// Time and count per key, in key order; times summed in 128 bits (120,000 waits of a day's
/// trace each overflow 64).
#[derive(Default)]
struct Sums(BTreeMap<String, (i128, usize)>);

impl Sums {
    fn add(&mut self, key: String, (ns, n): (i128, usize)) {
        let e = self.0.entry(key).or_default();
        e.0 += ns;
        e.1 += n;
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

/// The whole explanation, its waits listed as `listing` says.
pub fn text(e: &Explanation, trace: &Trace, listing: Listing) -> String {
    let mut all = String::new();
    let _ = text_each(e, trace, listing, &mut |part| {
        all.push_str(part);
        Ok(())
    });
    all
}

/// [`text`] a part at a time, each of whole lines (the summary, then each step), given to
/// `out` as it is made: a trace's every wait is tens of MB of text (issue 51).
pub fn text_each(
    e: &Explanation,
    trace: &Trace,
    listing: Listing,
    out: &mut dyn FnMut(&str) -> std::io::Result<()>,
) -> std::io::Result<()> {
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
    out(&s)?;
    for st in &e.steps {
        s.clear();
        step_lines(&mut s, st, listing, e.every_wait);
        out(&s)?;
    }
    Ok(())
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

/// The waits of every step summed: not asked for (by cause and stream), implied, for room,
/// asked for.
fn wait_lines(s: &mut String, e: &Explanation, trace: &Trace) {
    let (mut cause, mut lane, mut asked) = (Sums::default(), Sums::default(), Sums::default());
    let (mut room, mut room_cause) = (Sums::default(), Sums::default());
    let mut implied = Sums::default();
    let mut unasked = 0;
    for (&(kind, at), &sum) in &e.tally {
        let word = kind.word().to_string();
        match Class::of(kind) {
            Class::Asked => asked.add(word, sum),
            Class::Room => {
                room.add(lane_name(trace, at), sum);
                room_cause.add(word, sum);
            }
            Class::Implied => implied.add(lane_name(trace, at), sum),
            Class::NotAsked => {
                unasked += sum.1;
                cause.add(word, sum);
                lane.add(lane_name(trace, at), sum);
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
    if !implied.0.is_empty() {
        let _ = writeln!(
            s,
            "implied waits the legacy default stream's barrier makes (the streams' kinds imply \
             them; a non-blocking stream does not wait): by stream {}",
            implied.line()
        );
    }
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

fn step_lines(s: &mut String, st: &Step, listing: Listing, every_wait: bool) {
    let class = |w: &super::Wait| Class::of(w.held.kind);
    let c = st.counted;
    let _ = writeln!(
        s,
        "step   {}: {} waits not asked for ({}), {} implied, {} asked for or for room{}",
        flat(&st.name),
        c.not_asked,
        us(c.not_asked_lost_ns),
        c.implied,
        c.others,
        match st.surprises.len() {
            0 => String::new(),
            n => format!(", {n} surprises"),
        }
    );
    debug_assert!(
        listing == Listing::Summary || every_wait,
        "every wait listed from an explanation that kept only the terminal's"
    );
    let mut listed: Vec<super::Wait> = st.waits.iter().collect();
    listed.sort_by_key(|w| class(w));
    if listing == Listing::Summary {
        listed.retain(|w| matches!(class(w), Class::NotAsked | Class::Implied));
    }
    let shown = match listing {
        Listing::Summary => LISTED,
        Listing::All => usize::MAX,
    };
    for w in listed.iter().take(shown) {
        let _ = writeln!(
            s,
            "  - {} waited {} though ready ({}): {}",
            flat(&w.label),
            us(w.lost_ns),
            Class::of(w.held.kind).word(),
            flat(&w.held.words(&w.by_label))
        );
    }
    if listed.len() > shown {
        let _ = writeln!(
            s,
            "  … and {} more (every wait: explain --out DIR, explain.txt; or --json)",
            listed.len() - shown
        );
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
