//! The progress line on stderr while claims run on the GPU.

/// A progress line on stderr while claims run, only when stderr is a terminal.
pub struct Progress {
    total: usize,
    done: usize,
    tty: bool,
}

impl Progress {
    pub fn new(total: usize) -> Progress {
        use std::io::IsTerminal;
        Progress {
            total,
            done: 0,
            tty: std::io::stderr().is_terminal(),
        }
    }

    pub fn step(&mut self, last: &str) {
        self.done += 1;
        if self.tty {
            let last = stream_litmus::report::shown::shown(last);
            eprint!("\r[{}/{}] {last}", self.done, self.total);
        }
    }

    pub fn clear(&self) {
        if self.tty {
            eprint!("\r\x1b[2K");
        }
    }
}
