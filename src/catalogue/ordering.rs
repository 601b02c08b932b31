//! Same-stream order: the first thing every note says about streams.

use super::seeds::S002;
use crate::judge::claim::{Claim, Source};
use crate::judge::verdict::Expect;
use crate::program::StreamKind;
use std::time::Duration;

/// Kernels in one stream never overlap and run in issue order, on a stream of `kind`.
///
/// Short and long kernels alternate, so a scheduler that let a short kernel pass a long one
/// would show it.
pub fn fifo(kind: StreamKind, spin: Duration) -> Claim {
    let mut c = Claim::builder(
        format!("fifo.{}", kind.name()),
        format!(
            "Kernels in one stream ({kind}) never overlap and run in issue order: \
             \"该队列中的操作将以添加到流中的先后顺序而依次执行\""
        ),
        Source::new(S002, "1. CUDA 流简介"),
    );
    let s = c.stream(kind);
    let k1 = c.spin(s, "K1", spin);
    let k2 = c.spin(s, "K2", spin / 4);
    let k3 = c.spin(s, "K3", spin);
    let k4 = c.spin(s, "K4", spin / 4);
    c.chain(&[k1, k2, k3, k4]);
    c.build(Expect::Holds)
}
