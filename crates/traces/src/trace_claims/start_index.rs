//! Ops sorted by start with the latest end over every range of them (a segment tree): the
//! index by which `pairs.rs` finds, for one op, the ops that started before it and ended after
//! it was ready, in time log n per op found, where a scan would look at every op that started
//! before it (quadratic over a trial).

/// One op of a sweep: where it ran on the trial's axis, and when it was ready.
#[derive(Debug, Clone, Copy)]
pub(super) struct Placed {
    pub(super) op: crate::program::OpId,
    pub(super) start: i64,
    pub(super) end: i64,
    /// From when it could have met an op that had not ended (`pairs.rs`, `meets_from`).
    pub(super) ready: i64,
}

/// Ops sorted by start, with a segment tree of their latest end.
pub(super) struct Sorted {
    pub(super) ops: Vec<Placed>,
    /// `latest[1]` covers every op; node k covers what nodes 2k and 2k + 1 do; leaves from
    /// `width`.
    latest: Vec<i64>,
    width: usize,
}

impl Sorted {
    pub(super) fn new(mut ops: Vec<Placed>) -> Sorted {
        ops.sort_by_key(|p| (p.start, p.op));
        let width = ops.len().next_power_of_two();
        let mut latest = vec![i64::MIN; 2 * width];
        for (i, p) in ops.iter().enumerate() {
            latest[width + i] = p.end;
        }
        for k in (1..width).rev() {
            latest[k] = latest[2 * k].max(latest[2 * k + 1]);
        }
        Sorted { ops, latest, width }
    }

    /// How many ops started before `at` (or at it, with `inclusive`).
    pub(super) fn starting_by(&self, at: i64, inclusive: bool) -> usize {
        self.ops
            .partition_point(|p| p.start < at || (inclusive && p.start == at))
    }

    /// Hands `f` each of the first `upto` ops that ended after `after`, until it returns false;
    /// returns whether it never did.
    pub(super) fn ending_after(
        &self,
        upto: usize,
        after: i64,
        f: &mut dyn FnMut(&Placed) -> bool,
    ) -> bool {
        self.descend(1, 0, self.width, upto, after, f)
    }

    fn descend(
        &self,
        node: usize,
        lo: usize,
        hi: usize,
        upto: usize,
        after: i64,
        f: &mut dyn FnMut(&Placed) -> bool,
    ) -> bool {
        if lo >= upto || self.latest.get(node).map_or(true, |&l| l <= after) {
            return true;
        }
        if hi - lo == 1 {
            return self.ops.get(lo).map_or(true, &mut *f);
        }
        let mid = (lo + hi) / 2;
        self.descend(2 * node, lo, mid, upto, after, f)
            && self.descend(2 * node + 1, mid, hi, upto, after, f)
    }
}
