//! Stream capture and graph launch.
//!
//! A capture records the ops issued into it instead of running them; `cuStreamEndCapture` hands
//! back the graph, which is instantiated at once (part of the end-capture op's host time) and
//! kept per op until the trial is over. Capture runs in the relaxed mode: the executor's thread
//! makes no other driver call meanwhile, and the other modes would only add checks on calls the
//! validation already rules out.

use super::probe::call;
use crate::border::error::Error;
use cudarc::driver::sys;

/// The instantiated graphs of one trial, by end-capture op.
pub struct Graphs {
    execs: Vec<Option<sys::CUgraphExec>>,
}

impl Graphs {
    pub fn new(ops: usize) -> Graphs {
        Graphs {
            execs: vec![None; ops],
        }
    }

    pub fn begin(stream: sys::CUstream) -> Result<(), Error> {
        // SAFETY: a created stream of this program (validation rules out the built-in ones).
        unsafe {
            sys::cuStreamBeginCapture_v2(
                stream,
                sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED,
            )
        }
        .result()
        .map_err(call("cuStreamBeginCapture"))
    }

    /// Ends the capture on `stream` and instantiates the graph as op `i`'s.
    pub fn end(&mut self, i: usize, stream: sys::CUstream) -> Result<(), Error> {
        let mut graph: sys::CUgraph = std::ptr::null_mut();
        // SAFETY: out-pointers valid; the graph is destroyed once instantiated, the exec in
        // `clear`.
        unsafe {
            sys::cuStreamEndCapture(stream, &mut graph)
                .result()
                .map_err(call("cuStreamEndCapture"))?;
            let mut exec: sys::CUgraphExec = std::ptr::null_mut();
            let made = sys::cuGraphInstantiateWithFlags(&mut exec, graph, 0).result();
            let _ = sys::cuGraphDestroy(graph);
            made.map_err(call("cuGraphInstantiate"))?;
            self.execs[i] = Some(exec);
        }
        Ok(())
    }

    /// Launches the graph op `graph` made on `stream`.
    pub fn launch(&self, graph: usize, stream: sys::CUstream) -> Result<(), Error> {
        let exec = self.execs[graph].ok_or_else(|| Error::Driver {
            call: "cuGraphLaunch".into(),
            message: format!("op {graph} made no graph in this trial"),
        })?;
        // SAFETY: instantiated in `end` this trial, destroyed only in `clear`.
        unsafe { sys::cuGraphLaunch(exec, stream) }
            .result()
            .map_err(call("cuGraphLaunch"))
    }

    /// After the trial's final synchronize: destroys the trial's graphs.
    pub fn clear(&mut self) {
        for exec in self.execs.iter_mut().filter_map(Option::take) {
            // SAFETY: instantiated in `end`; the context is idle.
            let _ = unsafe { sys::cuGraphExecDestroy(exec) };
        }
    }
}

impl Drop for Graphs {
    fn drop(&mut self) {
        self.clear();
    }
}
