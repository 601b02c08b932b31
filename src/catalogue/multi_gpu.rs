//! Claims about several GPUs of one host (family `multi`): each device's own legacy null
//! stream, events across devices, a device sync of one device, peer copies, and a real NCCL
//! all-reduce, alone (a barrier with the right sum) and as the gradient hook's communication
//! of seed 003's tests 03/04/05.
//!
//! They need two CUDA devices and are not part of [`super::all`] (the 75 claims every GPU
//! runs): `stream-litmus run` adds them when the machine has two or more devices, and lists them
//! as skipped ("needs 2 GPUs") otherwise. The all-reduce claims also need NCCL (`libnccl.so.2`,
//! loaded at run time); without it they fail with a message naming where it was looked for, and
//! the other claims still run.

use super::seeds::S003;
use crate::judge::claim::{Claim, ClaimBuilder, Source};
use crate::judge::relation::Check;
use crate::judge::verdict::Expect;
use crate::program::{OpId, Place, StreamId, StreamKind};
use std::time::Duration;

/// Devices the family needs.
pub const DEVICES: u32 = 2;
/// Bytes of each rank of the catalogue's all-reduces: 4 MiB, a gradient bucket's order of size
/// (PyTorch DDP buckets are 25 MiB; small enough that the collective lasts tens of µs).
pub const ALL_REDUCE_BYTES: u64 = 4 << 20;
/// Bytes of the peer copies: 16 MiB, long enough (tens of µs over NVLink) to overlap with.
pub const PEER_BYTES: u64 = 16 << 20;

const DRIVER: &str = "CUDA Driver API, Stream synchronization behavior";
const PEER: &str = "CUDA Programming Guide, Peer-to-Peer Memory Access and Copy";
const NCCL: &str = "NCCL User Guide, Collective Operations (AllReduce)";

/// Every claim of the family.
pub fn multi_gpu(spin: Duration) -> Vec<Claim> {
    vec![
        null_per_device(spin),
        event_across_devices(spin),
        device_sync_own_device(spin),
        peer_overlaps_kernels(true, spin),
        peer_overlaps_kernels(false, spin),
        peer_bandwidth(),
        peer_both_ways(),
        all_reduce_barrier(spin),
        hook_same_stream(spin),
        hook_own_stream(spin),
        hook_one_connection(true, spin),
        hook_one_connection(false, spin),
    ]
}

pub fn null_per_device(spin: Duration) -> Claim {
    let mut c = Claim::builder(
        "multi.null.per_device",
        "Each device has its own legacy null stream: null-stream work on GPU 1 does not block a \
         blocking stream on GPU 0, in either issue order",
        Source::new(
            DRIVER,
            "Legacy default stream (one per device's primary context)",
        ),
    );
    let s0 = c.stream_on(0, StreamKind::Blocking);
    let null1 = c.stream_on(1, StreamKind::LegacyNull);
    let n = c.spin(null1, "N", spin);
    let a = c.spin(s0, "A", spin);
    c.device_sync(0);
    c.device_sync(1);
    let a2 = c.spin(s0, "A'", spin);
    let n2 = c.spin(null1, "N'", spin);
    c.overlaps(n, a).overlaps(a2, n2);
    c.build(Expect::Holds)
}

pub fn event_across_devices(spin: Duration) -> Claim {
    let mut c = Claim::builder(
        "multi.event.across_devices",
        "cuStreamWaitEvent with an event recorded on GPU 0 makes a stream of GPU 1 wait for GPU \
         0's work",
        Source::new(
            "CUDA Driver API, cuStreamWaitEvent",
            "\"The event may be from a different context or device than the stream\"",
        ),
    );
    let s0 = c.stream_on(0, StreamKind::NonBlocking);
    let s1 = c.stream_on(1, StreamKind::NonBlocking);
    let e = c.event("E");
    let a = c.spin(s0, "A", spin);
    c.record(s0, e);
    c.wait(s1, e);
    let b = c.spin(s1, "B", spin);
    c.precedes(a, b);
    c.build(Expect::Holds)
}

pub fn device_sync_own_device(spin: Duration) -> Claim {
    let mut c = Claim::builder(
        "multi.device_sync.own_device",
        "A device synchronize of GPU 0 (cuCtxSynchronize in its context) waits for GPU 0's work \
         and not for GPU 1's",
        Source::new(
            "CUDA Driver API, cuCtxSynchronize",
            "\"Blocks until the device has completed all preceding requested tasks\"",
        ),
    );
    let s0 = c.stream_on(0, StreamKind::NonBlocking);
    let s1 = c.stream_on(1, StreamKind::NonBlocking);
    let long = c.spin(s1, "L", spin * 8);
    let a = c.spin(s0, "A", spin);
    let sync = c.device_sync(0);
    c.check(Check::ReturnsAfter {
        call: sync,
        span: a,
    });
    c.check(Check::ReturnsBefore {
        call: sync,
        span: long,
    });
    c.build(Expect::Holds)
}

/// Two device buffers of `bytes`, on devices 0 and 1.
fn pair(
    c: &mut ClaimBuilder,
    name: &str,
    bytes: u64,
) -> (crate::program::BufferId, crate::program::BufferId) {
    (
        c.buffer_on(0, format!("{name}0"), bytes, 1),
        c.buffer_on(1, format!("{name}1"), bytes, 2),
    )
}

pub fn peer_overlaps_kernels(access: bool, spin: Duration) -> Claim {
    let (id, how) = match access {
        true => ("multi.peer.overlaps_kernels", "with peer access enabled"),
        false => (
            "multi.peer.overlaps_kernels.no_peer_access",
            "without peer access (the driver stages it)",
        ),
    };
    let mut c = Claim::builder(
        id,
        format!(
            "A peer copy from GPU 0 to GPU 1 {how} runs while a kernel runs on each device, and \
             delivers the data"
        ),
        Source::new(
            PEER,
            "cuMemcpyPeerAsync; concurrent copy and kernel execution",
        ),
    );
    c.peer_access(access);
    let k0s = c.stream_on(0, StreamKind::NonBlocking);
    let cs = c.stream_on(0, StreamKind::NonBlocking);
    let k1s = c.stream_on(1, StreamKind::NonBlocking);
    let (src, dst) = pair(&mut c, "p", PEER_BYTES);
    c.read_back(dst);
    let k0 = c.spin(k0s, "K0", spin * 40);
    let k1 = c.spin(k1s, "K1", spin * 40);
    let p = c.copy(cs, "P", src, dst);
    c.overlaps(p, k0).overlaps(p, k1);
    c.check(Check::Contents {
        buffer: dst,
        value: 1,
    });
    c.build(Expect::Holds)
}

pub fn peer_bandwidth() -> Claim {
    let mut c = Claim::builder(
        "multi.peer.bandwidth",
        "A peer copy between two GPUs of one host (NVLink) moves 16 MiB faster than a \
         host-to-device copy from pinned memory (PCIe)",
        Source::new(PEER, "Peer-to-Peer Memory Copy"),
    );
    c.peer_access(true);
    let s0 = c.stream_on(0, StreamKind::NonBlocking);
    let host = c.buffer("h", Place::Pinned, PEER_BYTES, 3);
    let (d0, d1) = pair(&mut c, "d", PEER_BYTES);
    let h2d = c.copy(s0, "H2D", host, d0);
    c.device_sync(0);
    let p = c.copy(s0, "P", d0, d1);
    c.check(Check::Faster {
        slow: (h2d, h2d),
        fast: (p, p),
    });
    c.build(Expect::Holds)
}

pub fn peer_both_ways() -> Claim {
    let mut c = Claim::builder(
        "multi.peer.both_ways",
        "Two peer copies in opposite directions (GPU 0 → GPU 1 and GPU 1 → GPU 0) run at the same \
         time",
        Source::new(PEER, "Peer-to-Peer Memory Copy"),
    );
    c.peer_access(true);
    let s0 = c.stream_on(0, StreamKind::NonBlocking);
    let s1 = c.stream_on(1, StreamKind::NonBlocking);
    let (a0, a1) = pair(&mut c, "a", PEER_BYTES);
    let (b0, b1) = pair(&mut c, "b", PEER_BYTES);
    let there = c.copy(s0, "P01", a0, a1);
    let back = c.copy(s1, "P10", b1, b0);
    c.overlaps(there, back);
    c.build(Expect::Holds)
}

/// Per device: the rank buffer (device 0 holds 1.0, device 1 2.0, read back).
fn rank_buffers(c: &mut ClaimBuilder) -> [crate::program::BufferId; 2] {
    let (g0, g1) = pair(c, "grad", ALL_REDUCE_BYTES);
    c.read_back(g0);
    c.read_back(g1);
    [g0, g1]
}

/// The sum both ranks must hold afterwards: 1 + 2.
fn check_sum(c: &mut ClaimBuilder, buffers: [crate::program::BufferId; 2]) {
    for buffer in buffers {
        c.check(Check::Contents { buffer, value: 3 });
    }
}

pub fn all_reduce_barrier(spin: Duration) -> Claim {
    let mut c = Claim::builder(
        "multi.all_reduce.barrier",
        "An NCCL all-reduce is a barrier: work issued after it on GPU 1 starts only after the \
         work issued before it on GPU 0 has ended, and both ranks hold the sum",
        Source::new(
            NCCL,
            "AllReduce; every rank's result depends on every rank's input",
        ),
    );
    let s0 = c.stream_on(0, StreamKind::NonBlocking);
    let s1 = c.stream_on(1, StreamKind::NonBlocking);
    let bufs = rank_buffers(&mut c);
    let a = c.spin(s0, "A", spin * 2);
    c.all_reduce("AR", &[(s0, bufs[0]), (s1, bufs[1])]);
    let b = c.spin(s1, "B", spin);
    c.precedes(a, b);
    check_sum(&mut c, bufs);
    c.build(Expect::Holds)
}

/// Per device: a compute and a comm stream.
fn training_streams(c: &mut ClaimBuilder) -> [(StreamId, StreamId); 2] {
    [0, 1].map(|d| {
        let compute = c.stream_on(d, StreamKind::NonBlocking);
        let comm = c.stream_on(d, StreamKind::NonBlocking);
        (compute, comm)
    })
}

/// The backward kernel before the hook lasts this many spins. The all-reduce is launched when
/// the NCCL group ends, 45–55 µs after the first backward kernel started on a 2 × H200: with one
/// spin (50 µs) the order B1 → all-reduce was issued too late to prove anything, and the hook
/// claims were Inconclusive in every run.
const B1_SPINS: u32 = 4;

pub fn hook_same_stream(spin: Duration) -> Claim {
    let mut c = Claim::builder(
        "multi.hook.same_stream",
        "With the gradient hook's all-reduce on the compute stream, the next backward kernel \
         waits for it on both GPUs (\"hook会阻塞backward\", with a real all-reduce)",
        Source::new(S003, "测试 03_test_graph_block"),
    );
    let st = training_streams(&mut c);
    let bufs = rank_buffers(&mut c);
    let b1: Vec<OpId> = (0..2)
        .map(|d| c.spin(st[d].0, format!("B1.gpu{d}"), spin * B1_SPINS))
        .collect();
    let ar = c.all_reduce("AR", &[(st[0].0, bufs[0]), (st[1].0, bufs[1])]);
    let b2: Vec<OpId> = (0..2)
        .map(|d| c.spin(st[d].0, format!("B2.gpu{d}"), spin))
        .collect();
    for d in 0..2 {
        c.chain(&[b1[d], ar[d], b2[d]]);
    }
    check_sum(&mut c, bufs);
    c.build(Expect::Holds)
}

/// B1 on compute, the gradient event, the comm stream waiting for it; the all-reduce and a hook
/// on comm; B2 on compute, issued before the comm work (`comm_first == false`) or after it.
fn hooked(
    c: &mut ClaimBuilder,
    comm_first: bool,
    spin: Duration,
) -> ([OpId; 2], [OpId; 2], [OpId; 2], [OpId; 2]) {
    let st = training_streams(c);
    let bufs = rank_buffers(c);
    check_sum(c, bufs);
    let grads = [c.event("grad.gpu0"), c.event("grad.gpu1")];
    let mut b1 = [OpId(0); 2];
    for d in 0..2 {
        b1[d] = c.spin(st[d].0, format!("B1.gpu{d}"), spin * B1_SPINS);
        c.record(st[d].0, grads[d]);
    }
    let mut b2 = [OpId(0); 2];
    let backward = |c: &mut ClaimBuilder, b2: &mut [OpId; 2]| {
        for d in 0..2 {
            b2[d] = c.spin(st[d].0, format!("B2.gpu{d}"), spin * 2);
        }
    };
    if !comm_first {
        backward(c, &mut b2);
    }
    for d in 0..2 {
        c.wait(st[d].1, grads[d]);
    }
    let ar = c.all_reduce("AR", &[(st[0].1, bufs[0]), (st[1].1, bufs[1])]);
    let h: Vec<OpId> = (0..2)
        .map(|d| c.spin(st[d].1, format!("H.gpu{d}"), spin / 4))
        .collect();
    if comm_first {
        backward(c, &mut b2);
    }
    (b1, [ar[0], ar[1]], [h[0], h[1]], b2)
}

pub fn hook_own_stream(spin: Duration) -> Claim {
    let mut c = Claim::builder(
        "multi.hook.own_stream",
        "With the all-reduce and the hook on their own stream, joined by an event, the next \
         backward kernel runs while the all-reduce does, on both GPUs (\"hook没有阻塞backward\")",
        Source::new(S003, "测试 04_test_graph_no_block"),
    );
    let (b1, ar, _, b2) = hooked(&mut c, true, spin);
    for d in 0..2 {
        c.precedes(b1[d], ar[d]).overlaps(ar[d], b2[d]);
    }
    c.env("CUDA_DEVICE_MAX_CONNECTIONS", None);
    c.build(Expect::Holds)
}

/// 05 in both issue orders. Comm first: the backward kernel, queued behind the hook, waits for
/// the all-reduce (seed 05). Comm after: does the backward kernel ahead of it in the one queue
/// hold the all-reduce back until it ends (the overlap blog's "the compute kernel delays the
/// communication kernel")? Judged by the hook, which stamps and starts when the all-reduce has
/// ended: the queue model says the all-reduce waits only for the backward kernel's start, so the
/// hook overlaps it, and the claim is expected Violated; the GPU decides.
pub fn hook_one_connection(comm_first: bool, spin: Duration) -> Claim {
    let (id, statement, expect) = match comm_first {
        true => (
            "multi.hook.one_connection.comm_first",
            "With CUDA_DEVICE_MAX_CONNECTIONS=1 and the all-reduce issued before the next \
             backward kernel, the backward kernel waits for the all-reduce on both GPUs \
             (\"会阻塞backward\")",
            Expect::Holds,
        ),
        false => (
            "multi.hook.one_connection.comm_after",
            "With CUDA_DEVICE_MAX_CONNECTIONS=1 and the all-reduce issued after the next backward \
             kernel, the compute kernel delays the communication: the all-reduce (and its hook) \
             ends only after the backward kernel ends",
            Expect::Violated,
        ),
    };
    let mut c = Claim::builder(
        id,
        statement,
        Source::new(
            S003,
            "测试 05_test_graph_no_block_queue1; overlap blog note",
        ),
    );
    let (_, ar, h, b2) = hooked(&mut c, comm_first, spin);
    for d in 0..2 {
        match comm_first {
            true => c.precedes(ar[d], b2[d]),
            false => c.precedes(b2[d], h[d]),
        };
    }
    c.env("CUDA_DEVICE_MAX_CONNECTIONS", Some("1"));
    c.build(expect)
}
