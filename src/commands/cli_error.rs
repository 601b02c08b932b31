//! One error path for the command line: every command returns `Result<ExitCode, CliError>`, and
//! `main` turns an error into its message on stderr and its exit status, in one place.
//!
//! Exit statuses: 0 when every verdict is the expected one, 1 when one is not (or a comparison
//! found differences), 2 when the command could not do its work: bad usage, a file refused on
//! load or not written, no GPU, or standard output not writable. Output goes through [`out!`] and
//! [`outln!`], which return an error where `print!` would panic (`list > /dev/full`), and which
//! show a file's control characters as text instead of sending them to the terminal
//! (`report::shown`); [`errln!`] does the same on stderr.

use std::process::ExitCode;

/// Why a command stopped, with the status it exits with.
#[derive(Debug)]
pub struct CliError {
    message: String,
    code: u8,
}

impl CliError {
    /// Bad usage or input: exit status 2.
    pub fn usage(message: impl std::fmt::Display) -> CliError {
        CliError {
            message: message.to_string(),
            code: 2,
        }
    }

    /// Standard output could not be written (a full disk behind a redirection).
    pub fn stdout(e: std::io::Error) -> CliError {
        CliError::usage(format!(
            "writing to standard output failed: {e}; free space where the output goes, or send \
             it elsewhere"
        ))
    }

    /// Says why on stderr and gives the exit status.
    pub fn report(self) -> ExitCode {
        use std::io::Write;
        let message = stream_litmus::report::shown::shown(&self.message);
        let _ = writeln!(std::io::stderr(), "stream-litmus: {message}");
        ExitCode::from(self.code)
    }
}

impl From<stream_litmus::Error> for CliError {
    fn from(e: stream_litmus::Error) -> CliError {
        CliError::usage(e.to_string())
    }
}

/// What every command returns.
pub type CliResult = Result<ExitCode, CliError>;

/// `print!` to stdout that returns a [`CliError`] from the enclosing function instead of
/// panicking.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let text = format!($($arg)*);
        let text = stream_litmus::report::shown::shown(&text);
        std::io::stdout().write_all(text.as_bytes()).map_err($crate::commands::CliError::stdout)?
    }};
}

/// `println!` that returns a [`CliError`] from the enclosing function instead of panicking.
macro_rules! outln {
    () => {{
        use std::io::Write as _;
        writeln!(std::io::stdout()).map_err($crate::commands::CliError::stdout)?
    }};
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let text = format!($($arg)*);
        let text = stream_litmus::report::shown::shown(&text);
        writeln!(std::io::stdout(), "{text}").map_err($crate::commands::CliError::stdout)?
    }};
}

/// `eprintln!` for text that may hold a file's words: shown, not obeyed.
macro_rules! errln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let text = format!($($arg)*);
        let _ = writeln!(std::io::stderr(), "{}", stream_litmus::report::shown::shown(&text));
    }};
}

pub(crate) use {errln, out, outln};
