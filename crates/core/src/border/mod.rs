//! The border: everything that crosses between the tool and the world outside it.
//!
//! Limits on what is read ([`limits`]), files opened only when they are regular files
//! ([`input_file`]), JSON read with counts kept while the bytes stream in ([`bounded_json`]), the
//! environment a claim file may set ([`allowed_env`]), outputs written so that no failure destroys
//! a file ([`atomic_write`]), freed memory handed back to the system ([`heap`]), the one error
//! type every layer returns ([`error`]), and the one rule for showing text from outside
//! ([`shown`]: control characters escaped, a value kept to its line, paths included).
//!
//! **May import:** nothing of this crate. Every other layer may import it.

pub mod allowed_env;
pub mod atomic_write;
pub mod bounded_json;
pub mod counted;
pub mod digest;
pub mod error;
pub mod heap;
pub mod in_order;
pub mod input_file;
pub mod json_bytes;
pub mod limits;
pub mod read_ahead;
pub mod shown;
