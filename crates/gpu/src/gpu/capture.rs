//! Stream capture and graph launch.
//!
//! A capture records the ops issued into it instead of running them; `cuStreamEndCapture` hands
//! back the graph, which is instantiated at once (part of the end-capture op's host time) and
//! kept per op until the trial is over. Capture runs in the relaxed mode: the executor's thread
//! makes no other driver call meanwhile, and the other modes would only add checks on calls the
//! validation already rules out.
//!
//! A graph launched more than once keeps its graph too, for its kernel nodes: a kernel's stamp
//! record is one of its parameters, baked in at capture, so before each later launch every
//! kernel node of the instantiated graph is pointed at that launch's own records
//! (`cuGraphExecKernelNodeSetParams`, which "only affect[s] future launches … Already enqueued or
//! running launches … are not affected"). The update is part of the later launch's host call.

use super::probe::call;
use crate::border::error::Error;
use crate::program::{OpKind, Program};
use cudarc::driver::sys;
use std::ffi::c_void;

/// The kernel nodes of a graph launched more than once, with the stamp record each was captured
/// with (its first parameter).
struct Kept {
    graph: sys::CUgraph,
    nodes: Vec<(
        sys::CUgraphNode,
        sys::CUDA_KERNEL_NODE_PARAMS,
        sys::CUdeviceptr,
    )>,
}

/// The instantiated graphs of one trial, by end-capture op.
pub struct Graphs {
    execs: Vec<Option<sys::CUgraphExec>>,
    kept: Vec<Option<Kept>>,
    /// Per end-capture op: whether its graph is launched more than once.
    relaunched: Vec<bool>,
}

impl Graphs {
    pub fn new(program: &Program) -> Graphs {
        let mut launches = vec![0u32; program.ops.len()];
        for op in &program.ops {
            if let OpKind::GraphLaunch { graph, .. } = op.kind {
                if let Some(n) = launches.get_mut(graph.0) {
                    *n += 1;
                }
            }
        }
        Graphs {
            execs: vec![None; program.ops.len()],
            kept: (0..program.ops.len()).map(|_| None).collect(),
            relaunched: launches.iter().map(|&n| n > 1).collect(),
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
        // SAFETY: out-pointers valid; the graph is destroyed once instantiated (or, launched
        // more than once, in `clear`), the exec in `clear`.
        unsafe {
            sys::cuStreamEndCapture(stream, &mut graph)
                .result()
                .map_err(call("cuStreamEndCapture"))?;
            let mut exec: sys::CUgraphExec = std::ptr::null_mut();
            let made = sys::cuGraphInstantiateWithFlags(&mut exec, graph, 0).result();
            if made.is_err() || !self.relaunched[i] {
                let _ = sys::cuGraphDestroy(graph);
            }
            made.map_err(call("cuGraphInstantiate"))?;
            self.execs[i] = Some(exec);
            if self.relaunched[i] {
                // Kept before its nodes are read, so that `clear` destroys it either way.
                let nodes = kernel_nodes(graph);
                let kept = self.kept[i].insert(Kept {
                    graph,
                    nodes: Vec::new(),
                });
                kept.nodes = nodes?;
            }
        }
        Ok(())
    }

    /// Launches the graph op `graph` made on `stream`.
    pub fn launch(&self, graph: usize, stream: sys::CUstream) -> Result<(), Error> {
        let exec = self.exec(graph)?;
        // SAFETY: instantiated in `end` this trial, destroyed only in `clear`.
        unsafe { sys::cuGraphLaunch(exec, stream) }
            .result()
            .map_err(call("cuGraphLaunch"))
    }

    /// A later launch of the graph op `graph` made: first points every kernel node at the
    /// records `retarget` gives for the record it was captured with (and its parameter count),
    /// then launches.
    pub fn relaunch(
        &self,
        graph: usize,
        stream: sys::CUstream,
        retarget: impl Fn(sys::CUdeviceptr) -> Option<(sys::CUdeviceptr, usize)>,
    ) -> Result<(), Error> {
        let exec = self.exec(graph)?;
        let kept = self.kept[graph].as_ref().ok_or_else(|| Error::Driver {
            call: "cuGraphExecKernelNodeSetParams".into(),
            message: format!("op {graph}'s graph was not kept for a second launch"),
        })?;
        for (node, params, stamps) in &kept.nodes {
            let Some((mut target, count)) = retarget(*stamps) else {
                continue;
            };
            // SAFETY: `params.kernelParams` holds at least `count` pointers to the node's
            // argument values, owned by the node of the kept graph and unchanged (only the
            // exec's copy is updated); the first argument is the stamp pointer.
            let mut args: Vec<*mut c_void> = (0..count.max(1))
                .map(|j| match j {
                    0 => &mut target as *mut sys::CUdeviceptr as *mut c_void,
                    // SAFETY: `j < count`, within the node's argument pointers (above).
                    _ => unsafe { *params.kernelParams.add(j) },
                })
                .collect();
            let mut update = *params;
            update.kernelParams = args.as_mut_ptr();
            update.extra = std::ptr::null_mut();
            // SAFETY: the node belongs to the graph `exec` was instantiated from; the update
            // copies the argument values before it returns.
            unsafe { sys::cuGraphExecKernelNodeSetParams_v2(exec, *node, &update) }
                .result()
                .map_err(call("cuGraphExecKernelNodeSetParams"))?;
        }
        // SAFETY: as in `launch`.
        unsafe { sys::cuGraphLaunch(exec, stream) }
            .result()
            .map_err(call("cuGraphLaunch"))
    }

    fn exec(&self, graph: usize) -> Result<sys::CUgraphExec, Error> {
        self.execs[graph].ok_or_else(|| Error::Driver {
            call: "cuGraphLaunch".into(),
            message: format!("op {graph} made no graph in this trial"),
        })
    }

    /// After the trial's final synchronize: destroys the trial's graphs.
    pub fn clear(&mut self) {
        for exec in self.execs.iter_mut().filter_map(Option::take) {
            // SAFETY: instantiated in `end`; the context is idle.
            let _ = unsafe { sys::cuGraphExecDestroy(exec) };
        }
        for kept in self.kept.iter_mut().filter_map(Option::take) {
            // SAFETY: made in `end`, its exec destroyed above.
            let _ = unsafe { sys::cuGraphDestroy(kept.graph) };
        }
    }
}

/// The kernel nodes of `graph`, with their parameters and the stamp record each was captured with.
///
/// # Safety
/// `graph` is a live graph.
unsafe fn kernel_nodes(
    graph: sys::CUgraph,
) -> Result<
    Vec<(
        sys::CUgraphNode,
        sys::CUDA_KERNEL_NODE_PARAMS,
        sys::CUdeviceptr,
    )>,
    Error,
> {
    let mut count = 0usize;
    sys::cuGraphGetNodes(graph, std::ptr::null_mut(), &mut count)
        .result()
        .map_err(call("cuGraphGetNodes"))?;
    let mut nodes: Vec<sys::CUgraphNode> = vec![std::ptr::null_mut(); count];
    sys::cuGraphGetNodes(graph, nodes.as_mut_ptr(), &mut count)
        .result()
        .map_err(call("cuGraphGetNodes"))?;
    let mut out = Vec::new();
    for &node in nodes.iter().take(count) {
        let mut kind = sys::CUgraphNodeType::CU_GRAPH_NODE_TYPE_EMPTY;
        sys::cuGraphNodeGetType(node, &mut kind)
            .result()
            .map_err(call("cuGraphNodeGetType"))?;
        if kind != sys::CUgraphNodeType::CU_GRAPH_NODE_TYPE_KERNEL {
            continue;
        }
        let mut params: sys::CUDA_KERNEL_NODE_PARAMS = std::mem::zeroed();
        sys::cuGraphKernelNodeGetParams_v2(node, &mut params)
            .result()
            .map_err(call("cuGraphKernelNodeGetParams"))?;
        if params.kernelParams.is_null() || (*params.kernelParams).is_null() {
            continue;
        }
        let stamps = *(*params.kernelParams as *const sys::CUdeviceptr);
        out.push((node, params, stamps));
    }
    Ok(out)
}

impl Drop for Graphs {
    fn drop(&mut self) {
        self.clear();
    }
}
