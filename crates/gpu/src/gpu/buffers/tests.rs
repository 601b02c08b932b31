//! The pool and the buffers driven by a fake allocator: no GPU needed.
use super::super::pool::fake::{allocs, Fake};
use super::*;

fn buffer(place: Place, bytes: u64, fill: i32) -> Buffer {
    Buffer {
        label: format!("{place:?}"),
        bytes,
        place,
        fill,
        read_back: false,
        device: 0,
    }
}

/// A block the pool hands to a second program still holds what the first one's trial wrote;
/// the fill before the trial resets it to the second program's values.
#[test]
fn a_pooled_buffer_is_reset_before_the_next_trial() {
    let a0 = allocs();
    let mut pool: Pool<Fake> = Pool::default();
    let first = [buffer(Place::Pinned, 64, 1), buffer(Place::Device, 64, 2)];
    let mut b = Buffers::take(&first, &mut pool).unwrap();
    assert_eq!((b.reused, b.allocated), (0, 2));
    b.fill().unwrap();
    assert!(b.block_mut(0).iter().all(|&x| x == 1.0));
    b.block_mut(0).fill(9.0); // what a trial's copy wrote
    b.block_mut(1)[3] = 9.0;
    b.release(&mut pool);
    drop(b);

    let second = [
        buffer(Place::Device, 64, 5),
        buffer(Place::Pinned, 64, 4),
        buffer(Place::Pinned, 64, 6),
    ];
    let mut b = Buffers::take(&second, &mut pool).unwrap();
    assert_eq!(
        (b.reused, b.allocated),
        (2, 1),
        "same place and size: reused"
    );
    assert_eq!(allocs() - a0, 3);
    assert!(
        b.block_mut(1).contains(&9.0),
        "the pool itself resets nothing"
    );
    b.fill().unwrap();
    for (i, want) in [5.0, 4.0, 6.0].into_iter().enumerate() {
        assert!(b.block_mut(i).iter().all(|&x| x == want), "buffer {i}");
    }
}

/// Which fills a program's buffers get, before its first trial and before each later one: the
/// fill values set, in buffer order (each test buffer has a fill of its own).
fn fills(b: &mut Buffers<Fake>) -> Vec<f32> {
    let mut set = Vec::new();
    b.fill_with(|block, value| {
        set.push(value);
        Fake::fill(block, value)
    })
    .unwrap();
    set
}

/// A buffer is filled only when what it holds can be seen (read back, or read by an op into
/// something seen), and refilled before every trial only when an op also writes it. Each
/// trial starts from the same contents wherever they can be seen.
#[test]
fn only_buffers_that_can_be_seen_are_filled() {
    use crate::program::{Program, StreamKind};
    let mut p = Program::builder("copy");
    let s = p.stream(StreamKind::NonBlocking);
    let input = p.buffer("in", Place::Pinned, 64, 1);
    let data = p.buffer("data", Place::Device, 64, 2);
    let out = p.buffer("out", Place::Pinned, 64, 3);
    let seen = p.buffer("seen", Place::Device, 64, 4);
    let acc = p.buffer("acc", Place::Device, 64, 5);
    let up = p.buffer("up", Place::Pinned, 64, 6);
    p.read_back(seen);
    p.read_back(acc);
    p.copy(s, "up", input, data);
    p.copy(s, "down", data, out);
    p.copy(s, "seen", input, seen);
    p.copy(s, "acc", up, acc);
    p.add(s, "acc += acc", (acc, acc), acc, 1, 32);
    let program = p.build();
    let mut pool: Pool<Fake> = Pool::default();
    let mut b = Buffers::take(&program.buffers, &mut pool).unwrap();
    b.refills_for(&program);
    // in: read into seen; data and out: a chain nothing reads; seen and acc: read back; up:
    // read into acc.
    assert_eq!(fills(&mut b), [1.0, 4.0, 5.0, 6.0]);
    // Written and seen: refilled.
    assert_eq!(fills(&mut b), [4.0, 5.0]);
    b.release(&mut pool);
    drop(b);
    // The blocks no op wrote go back known to hold their fill: taken again, they are not
    // filled again; the written ones are.
    let mut b = Buffers::take(&program.buffers, &mut pool).unwrap();
    b.refills_for(&program);
    assert_eq!(fills(&mut b), [4.0, 5.0]);
}

/// A new pageable block is filled even where nothing sees its contents: the fill touches its
/// pages, which a copy would otherwise fault in while it is timed. Taken again, it is not.
#[test]
fn a_new_pageable_block_is_touched_once() {
    use crate::program::{Program, StreamKind};
    let mut p = Program::builder("pageable");
    let s = p.stream(StreamKind::NonBlocking);
    let src = p.buffer("src", Place::Pageable, 64, 7);
    let dst = p.buffer("dst", Place::Device, 64, 8);
    p.copy(s, "C", src, dst);
    let program = p.build();
    let mut pool: Pool<Fake> = Pool::default();
    let mut b = Buffers::take(&program.buffers, &mut pool).unwrap();
    b.refills_for(&program);
    assert_eq!(fills(&mut b), [7.0]);
    assert_eq!(fills(&mut b), Vec::<f32>::new());
    b.release(&mut pool);
    drop(b);
    let mut b = Buffers::take(&program.buffers, &mut pool).unwrap();
    b.refills_for(&program);
    assert_eq!(fills(&mut b), Vec::<f32>::new());
}

/// A device buffer read back gets a pinned block of its size for the read-back copy, and two
/// device words for asking on the GPU whether it holds one value, from the pool and back to it,
/// like the buffers themselves.
#[test]
fn a_device_buffer_read_back_is_staged_through_the_pool() {
    let mut pool: Pool<Fake> = Pool::default();
    let mut seen = buffer(Place::Device, 64, 3);
    seen.read_back = true;
    let buffers = [seen, buffer(Place::Pinned, 64, 1)];
    let mut b = Buffers::take(&buffers, &mut pool).unwrap();
    assert_eq!(
        (b.reused, b.allocated),
        (0, 4),
        "two buffers, one staging block and the uniformity words"
    );
    b.release(&mut pool);
    drop(b);
    assert_eq!(pool.idle_bytes(), 3 * 64 + UNIFORMITY_BYTES);
    let b = Buffers::take(&buffers, &mut pool).unwrap();
    assert_eq!((b.reused, b.allocated), (4, 0));
}
