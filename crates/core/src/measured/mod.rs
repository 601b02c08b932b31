//! What a run measured, as plain data: no judgement, no GPU.
//!
//! The GPU layer fills these types and the judge reads them; a results file stores them, so a run
//! recorded on one machine is judged again on any other. [`timeline`]: what each op of one trial
//! did (spans, block stamps); [`host_side`]: its host side (calls, host functions' runs, the clock
//! sync). [`witness`]: the second witness, CUPTI's
//! record of the same ops. [`contents`]: what a buffer held afterwards. [`calibration`]: the
//! device and what the lab measured of it (timer step, launch latency), from which the named
//! tolerances come. [`sharing`]: the other processes seen on the GPU. [`timing`]: where the lab's
//! own time went.
//!
//! **May import:** `program` (ops and buffers are named by id) and `border`.

pub mod blocks;
pub mod calibration;
pub mod columns;
pub mod contents;
pub mod host_side;
pub mod sharing;
pub mod timeline;
pub mod timing;
pub mod witness;
