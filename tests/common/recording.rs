//! Recordings made by the tests as `stream-litmus trace` writes them: kernels and copies with
//! their calls, event records and waits with their streams and events, streams with their
//! kinds, the process's environment; times in µs. Three memsets issued to an idle GPU come
//! first (calls 5 µs long, starting 2, 2.5 and 2.2 µs after their calls returned: launch latency
//! 2 µs; the clock error is 7 µs).

pub struct Recording {
    events: Vec<String>,
    correlation: u32,
}

impl Default for Recording {
    fn default() -> Recording {
        Recording::new()
    }
}

impl Recording {
    pub fn new() -> Recording {
        let mut r = Recording {
            events: vec![
                r#"{"ph":"M","name":"process_records","pid":1,"args":{"recorded_syncs":true}}"#
                    .into(),
            ],
            correlation: 0,
        };
        for (ts, call) in [(7.0, 0.0), (107.5, 100.0), (207.2, 200.0)] {
            r.op(
                "gpu_memset",
                "Memset (Device)",
                7,
                ts,
                1.0,
                call,
                5.0,
                "cudaMemsetAsync",
            );
        }
        r
    }

    fn next(&mut self) -> u32 {
        self.correlation += 1;
        self.correlation
    }

    fn call(&mut self, name: &str, at: f64, dur: f64, correlation: u32) {
        self.events.push(format!(
            r#"{{"ph":"X","cat":"cuda_runtime","name":"{name}","pid":1,"tid":1,"ts":{at:.3},"dur":{dur:.3},"args":{{"correlation":{correlation}}}}}"#
        ));
    }

    /// A GPU op of category `cat` and its call.
    #[allow(clippy::too_many_arguments)]
    pub fn op(
        &mut self,
        cat: &str,
        name: &str,
        stream: u32,
        start: f64,
        dur: f64,
        call_at: f64,
        call_dur: f64,
        call_name: &str,
    ) -> &mut Recording {
        let c = self.next();
        self.events.push(format!(
            r#"{{"ph":"X","cat":"{cat}","name":"{name}","pid":0,"tid":{stream},"ts":{start:.3},"dur":{dur:.3},"args":{{"process":1,"device":0,"stream":{stream},"correlation":{c}}}}}"#
        ));
        self.call(call_name, call_at, call_dur, c);
        self
    }

    /// A kernel launched by a 5 µs `cudaLaunchKernel` at `call_at`.
    pub fn kernel(
        &mut self,
        name: &str,
        stream: u32,
        start: f64,
        dur: f64,
        call_at: f64,
    ) -> &mut Recording {
        self.op(
            "kernel",
            name,
            stream,
            start,
            dur,
            call_at,
            5.0,
            "cudaLaunchKernel",
        )
    }

    /// The kernels of one graph launch: one `cudaGraphLaunch` call for all of them.
    pub fn graph(&mut self, stream: u32, kernels: &[(&str, f64, f64)], call_at: f64) {
        let c = self.next();
        for (name, start, dur) in kernels {
            self.events.push(format!(
                r#"{{"ph":"X","cat":"kernel","name":"{name}","pid":0,"tid":{stream},"ts":{start:.3},"dur":{dur:.3},"args":{{"process":1,"device":0,"stream":{stream},"correlation":{c}}}}}"#
            ));
        }
        self.call("cudaGraphLaunch", call_at, 5.0, c);
    }

    /// `cudaEventRecord(event, stream)` at `call_at`.
    pub fn record(&mut self, stream: u32, event: u32, call_at: f64) -> &mut Recording {
        let c = self.next();
        self.call("cudaEventRecord", call_at, 0.5, c);
        self.events.push(format!(
            r#"{{"ph":"M","name":"cuda_event_record","pid":1,"args":{{"process":1,"stream":{stream},"event":{event},"correlation":{c}}}}}"#
        ));
        self
    }

    /// `cudaStreamWaitEvent(stream, event)` at `call_at`.
    pub fn wait(&mut self, stream: u32, event: u32, call_at: f64) -> &mut Recording {
        let c = self.next();
        self.call("cudaStreamWaitEvent", call_at, 0.5, c);
        self.events.push(format!(
            r#"{{"ph":"X","cat":"cuda_sync","name":"Stream Wait Event","pid":1,"tid":{stream},"ts":{call_at:.3},"dur":0.5,"args":{{"process":1,"cuda_sync_kind":"Stream Wait Event","stream":{stream},"correlation":{c},"wait_on_cuda_event_id":{event}}}}}"#
        ));
        self
    }

    /// A stream with its kind (`legacy_default`, `blocking`, `non_blocking`), created by the
    /// call of correlation `created` (its place among the process's streams).
    pub fn stream(&mut self, id: u32, flag: &str, created: u32) -> &mut Recording {
        self.events.push(format!(
            r#"{{"ph":"M","name":"cuda_stream","pid":1,"args":{{"process":1,"stream":{id},"flag":"{flag}","priority":0,"correlation":{created}}}}}"#
        ));
        self
    }

    /// A host range (`ProfilerStep#…` gets its number) on the launching thread.
    pub fn range(&mut self, name: &str, begin: f64, dur: f64) -> &mut Recording {
        let n = self
            .events
            .iter()
            .filter(|e| e.contains("user_annotation"))
            .count();
        let name = match name {
            "ProfilerStep" => format!("ProfilerStep#{n}"),
            other => other.to_string(),
        };
        self.events.push(format!(
            r#"{{"ph":"X","cat":"user_annotation","name":"{name}","pid":1,"tid":1,"ts":{begin:.3},"dur":{dur:.3}}}"#
        ));
        self
    }

    /// The environment the driver read, as `"NAME":"value"` pairs.
    pub fn env(&mut self, vars: &str) -> &mut Recording {
        self.events.push(format!(
            r#"{{"ph":"M","name":"process_env","pid":1,"args":{{"env":{{{vars}}}}}}}"#
        ));
        self
    }

    pub fn text(&self) -> String {
        format!(
            r#"{{"schemaVersion":1,"traceEvents":[{}]}}"#,
            self.events.join(",\n")
        )
    }
}
