//! The lists a trace's reading grows to an unknown length (its GPU ops, calls and ranges), kept
//! in chunks of a fixed size: growing one never copies it and never holds more than a chunk
//! beyond what it keeps. A `Vec` doubles: it keeps up to twice its length, and holds its old
//! and new buffers together while it grows (a 200 MB trace's ops, calls and ranges peaked at
//! 60 MB so, for 25 MB kept).

/// Bytes per chunk: each allocation well past the point where a large trace's slack would
/// matter, and past the size from which the allocator maps a block of its own and unmaps it
/// when freed (256 KiB, `border/heap.rs`), so that a chunk freed as the list is turned into
/// another gives its pages back at once. Chunks of a count of items did not always: calls of 56
/// bytes made chunks of 224 KiB, which stayed in the heap beside the lists made from them.
const CHUNK_BYTES: usize = 512 << 10;

/// Items per chunk of a list of `T`: [`CHUNK_BYTES`] of them, at least one.
const fn per_chunk<T>() -> usize {
    match std::mem::size_of::<T>() {
        0 => 1,
        n if n >= CHUNK_BYTES => 1,
        n => CHUNK_BYTES / n,
    }
}

/// A list kept in chunks of [`CHUNK_BYTES`].
pub(super) struct Chunked<T> {
    chunks: Vec<Vec<T>>,
    len: usize,
}

impl<T> Default for Chunked<T> {
    fn default() -> Chunked<T> {
        Chunked {
            chunks: Vec::new(),
            len: 0,
        }
    }
}

impl<T> Chunked<T> {
    pub(super) fn push(&mut self, item: T) {
        match self.chunks.last_mut() {
            Some(last) if last.len() < per_chunk::<T>() => last.push(item),
            _ => {
                let mut chunk = Vec::with_capacity(per_chunk::<T>());
                chunk.push(item);
                self.chunks.push(chunk);
            }
        }
        self.len += 1;
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = &T> + Clone {
        self.chunks.iter().flatten()
    }

    /// Its items in order, each chunk freed once it is taken.
    pub(super) fn into_items(self) -> impl Iterator<Item = T> {
        self.chunks.into_iter().flatten()
    }

    /// One `Vec` of exactly its length, each chunk freed as it is moved.
    pub(super) fn into_vec(self) -> Vec<T> {
        let mut all = Vec::with_capacity(self.len);
        for chunk in self.chunks {
            all.extend(chunk);
        }
        all
    }
}

/// Sorts `items` by `key` as a stable sort would (items of equal keys keep their order) with a
/// scratch of 4 bytes an item: the standard stable sort takes a scratch of up to half the
/// items themselves (12 MB for a 200 MB trace's ops). Up to `u32::MAX` items (a trace's read
/// limit keeps far below); beyond, the standard sort.
pub(super) fn sort_stable_by_key<T, K: Ord>(items: &mut [T], key: impl Fn(&T) -> K) {
    if u32::try_from(items.len()).is_err() {
        items.sort_by_key(key);
        return;
    }
    let order = stable_order(items.len(), |i| key(&items[i]));
    permute(order, |a, b| items.swap(a, b));
}

/// The order a stable sort by `key` puts `n` items in: `order[k]` is the index of the item that
/// goes to place k. Up to `u32::MAX` items.
pub(super) fn stable_order<K: Ord>(n: usize, key: impl Fn(usize) -> K) -> Vec<u32> {
    debug_assert!(u32::try_from(n).is_ok(), "at most u32::MAX items");
    let mut order: Vec<u32> = (0..n as u32).collect();
    order.sort_unstable_by(|&a, &b| (key(a as usize).cmp(&key(b as usize))).then(a.cmp(&b)));
    order
}

/// Puts items in `order` ([`stable_order`]) by swaps: `swap(a, b)` swaps the items at places
/// `a` and `b` of every list that moves together. Each cycle of the permutation is followed
/// once, each place marked done as it is filled.
pub(super) fn permute(mut order: Vec<u32>, mut swap: impl FnMut(usize, usize)) {
    for start in 0..order.len() {
        let mut at = start;
        loop {
            let from = order[at] as usize;
            order[at] = at as u32;
            if from == start || from == at {
                break;
            }
            swap(at, from);
            at = from;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    type Page = [usize; 512];

    proptest! {
        #[test]
        fn sorts_as_the_stable_sort_does(v in prop::collection::vec((0u8..6, any::<u16>()), 0..300)) {
            let mut ours = v.clone();
            sort_stable_by_key(&mut ours, |x| x.0);
            let mut std = v;
            std.sort_by_key(|x| x.0);
            prop_assert_eq!(ours, std);
        }

        /// Items of 4 KiB: a few chunks of 128 each.
        #[test]
        fn chunks_keep_order_and_length(n in 0usize..(3 * per_chunk::<Page>())) {
            let mut c = Chunked::default();
            for i in 0..n {
                c.push([i; 512]);
            }
            prop_assert_eq!(c.len(), n);
            prop_assert_eq!(c.is_empty(), n == 0);
            prop_assert!(c.iter().map(|p| p[0]).eq(0..n));
            let all = c.into_vec();
            prop_assert_eq!(all.len(), n);
            prop_assert!(all.iter().enumerate().all(|(i, p)| p[0] == i && p[511] == i));
        }
    }
}
