//! Names as a trace gives them, made into the names a claim selects by: demangled where the
//! recording kept the compiler's form, clipped where absurdly long, held once each.
//!
//! The PyTorch profiler writes kernel names demangled (`ncclDevKernel_AllReduce_Sum_bf16_RING_LL
//! (ncclDevKernelArgsStorage<4096ul>)`); CUPTI, and so `stream-litmus trace`, hands over the
//! compiler's (`_Z40ncclDevKernel_AllReduce_Sum_bf16_RING_LL24ncclDevKernelArgsStorageILm4096EE`).
//! One claim must select the same kernels in both: a name that demangles (`cpp_demangle`) is
//! shown demangled (by `cpp_demangle`, which writes template values as `(unsigned long)4096`
//! where the C++ runtime writes `4096ul`), and a pattern matches a kernel when it matches either
//! form
//! ([`TraceFile::mangled`](super::events::TraceFile::mangled)).
//!
//! Every distinct name is kept once (ops share it), clipped to [`MAX_NAME_BYTES`], and all of
//! them together count against a budget (an eighth of the read limit): a 2 MB gzip trace of 130
//! distinct 15 MiB kernel names took 3.95 GB before.

use crate::border::error::flat;
use crate::border::limits::{describe_bytes, read_limit, READ_LIMIT_ENV};
use std::collections::HashMap;
use std::fmt;

/// A name of the trace (a kernel, a call, a range, a recording): each distinct name is held
/// once and shared (`names.rs`), by a pointer of 8 bytes where `Arc<str>` takes 16. A 200 MB
/// trace holds three in each of its 150,000 ops (its own, its call's, the call before) and one
/// in each of its 150,000 ranges (issue 51).
pub type Name = arcstr::ArcStr;

/// The longest name kept, in bytes; longer ones end in `…`. CUTLASS kernel names, the longest
/// in our traces, are under 1 KB demangled.
pub const MAX_NAME_BYTES: usize = 16 << 10;

/// The distinct names of one trace file.
pub(super) struct Names {
    held: HashMap<Name, Name>,
    /// Each demangled name, and the compiler's form it came from.
    mangled: HashMap<Name, Name>,
    bytes: u64,
    budget: u64,
}

impl Default for Names {
    fn default() -> Names {
        Names::with_budget(read_limit() / 8)
    }
}

/// The distinct names of a trace past their budget (`budget` bytes).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "its distinct names take over {}, an eighth of the read limit ({READ_LIMIT_ENV} raises it): \
     the trace is damaged, or names are made of data",
    describe_bytes(*budget)
)]
pub struct NamesFull {
    pub budget: u64,
}

impl Names {
    fn with_budget(budget: u64) -> Names {
        Names {
            held: HashMap::new(),
            mangled: HashMap::new(),
            bytes: 0,
            budget,
        }
    }

    /// The name to keep for `raw`; an error once the names are over their budget.
    pub(super) fn intern(&mut self, raw: &str) -> Result<Name, NamesFull> {
        let raw = clip_bytes(raw, MAX_NAME_BYTES);
        // Names reach the terminal inside our own lines (`border::error::flat`); other control
        // characters are escaped where any text is shown (`report/shown.rs`).
        let raw = match raw {
            std::borrow::Cow::Borrowed(r) => flat(r),
            std::borrow::Cow::Owned(r) => flat(&r).into_owned().into(),
        };
        if let Some(shown) = self.held.get(raw.as_ref()) {
            return Ok(shown.clone());
        }
        let key: Name = Name::from(raw.as_ref());
        let shown = match demangled(&key) {
            Some(d) => {
                let d: Name = Name::from(d);
                self.mangled.insert(d.clone(), key.clone());
                d
            }
            None => key.clone(),
        };
        self.bytes += (key.len()
            + if Name::ptr_eq(&key, &shown) {
                0
            } else {
                shown.len() * 2
            }) as u64;
        if self.bytes > self.budget {
            return Err(NamesFull {
                budget: self.budget,
            });
        }
        self.held.insert(key, shown.clone());
        Ok(shown)
    }

    /// Each demangled name and the compiler's form it came from.
    pub(super) fn into_mangled(self) -> HashMap<Name, Name> {
        self.mangled
    }
}

/// `name` cut to at most `max` bytes at a character's edge, with `…` where it was cut.
fn clip_bytes(name: &str, max: usize) -> std::borrow::Cow<'_, str> {
    if name.len() <= max {
        return name.into();
    }
    let mut end = max - '…'.len_utf8();
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &name[..end]).into()
}

/// The demangled form of a C++ name (`_Z…`), where it is one; its length bounded too (a mangled
/// name's back-references can multiply it).
fn demangled(name: &str) -> Option<String> {
    if !name.starts_with("_Z") {
        return None;
    }
    // The crate's default recursion limits keep a hostile name from overflowing the stack.
    let symbol = cpp_demangle::Symbol::new(name.as_bytes()).ok()?;
    let mut out = Bounded(String::new());
    (symbol.structured_demangle(&mut out, &cpp_demangle::DemangleOptions::default())).ok()?;
    Some(out.0)
}

struct Bounded(String);

impl fmt::Write for Bounded {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        if self.0.len() + s.len() > MAX_NAME_BYTES {
            return Err(fmt::Error);
        }
        self.0.push_str(s);
        Ok(())
    }
}

/// A held name's address and length, which stand for it while it is held: each distinct name is
/// held once ([`Names`]), so answers about a name can be kept by it without hashing its text.
pub(super) fn held(name: &str) -> (usize, usize) {
    (name.as_ptr() as usize, name.len())
}

/// The first 60 characters of a name, for messages.
pub fn clip(name: &str) -> String {
    clip_at(name, 60)
}

/// The first `n` characters of a name, for messages.
pub fn clip_at(name: &str, n: usize) -> String {
    match name.char_indices().nth(n) {
        Some((i, _)) => format!("{}…", &name[..i]),
        None => name.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compiler_names_are_demangled_and_both_forms_kept() {
        let mut names = Names::default();
        let nccl =
            "_Z40ncclDevKernel_AllReduce_Sum_bf16_RING_LL24ncclDevKernelArgsStorageILm4096EE";
        let shown = names.intern(nccl).unwrap();
        assert_eq!(
            &*shown,
            "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<(unsigned long)4096>)"
        );
        assert_eq!(
            &*names.intern("_Z8k_beforex").unwrap(),
            "k_before(long long)"
        );
        // Held once: the same name gives the same pointer.
        assert!(Name::ptr_eq(&shown, &names.intern(nccl).unwrap()));
        // Names that are not the compiler's, or do not demangle, stay as they are.
        for plain in ["nvjet_tst_128x256", "_Zfoo", "ProfilerStep#3", "_Z"] {
            assert_eq!(&*names.intern(plain).unwrap(), plain);
        }
        let mangled = names.into_mangled();
        assert_eq!(&*mangled[&shown], nccl);
        assert_eq!(mangled.len(), 2);
    }

    #[test]
    fn names_are_one_line() {
        let mut names = Names::default();
        let forged = names.intern("k\nok   some.claim  Holds\t\r").unwrap();
        assert_eq!(&*forged, "k\\nok   some.claim  Holds\\t\\r");
    }

    #[test]
    fn long_names_are_clipped_and_many_refused() {
        let mut names = Names::default();
        let long = "é".repeat(MAX_NAME_BYTES);
        let kept = names.intern(&long).unwrap();
        assert!(
            kept.len() <= MAX_NAME_BYTES && kept.ends_with('…'),
            "{}",
            kept.len()
        );
        // Names that differ only past the clip are one name.
        let longer = format!("{long}x");
        assert!(Name::ptr_eq(&kept, &names.intern(&longer).unwrap()));
        // The budget: an eighth of the read limit; here 1 MiB.
        let mut names = Names::with_budget(1 << 20);
        let err = (0..100)
            .map(|i| names.intern(&format!("{i:>width$}", width = MAX_NAME_BYTES)))
            .find_map(Result::err)
            .expect("refused before the end");
        assert_eq!(err, NamesFull { budget: 1 << 20 });
        assert!(err.to_string().contains(READ_LIMIT_ENV), "{err}");
    }
}
