//! The environment a claim file may ask for: an allow-list, with each entry's values checked.
//!
//! A claim's `env` lines are set on a child process of `stream-litmus check`, run as the user who
//! typed the command. Claim files are made to be shared, so a file must not be able to choose
//! what that process loads or runs: `LD_PRELOAD`, `LD_LIBRARY_PATH`, `CUDA_INJECTION64_PATH`,
//! `NCCL_NET_PLUGIN`, `PATH` or `STREAM_LITMUS_BIN` would each let a file run code of its choice.
//! So a claim file may set only the variables listed in [`ALLOWED`]: those the CUDA driver, NCCL
//! and the lab read *for the experiment* (how work is queued, launched and reduced), never a path,
//! a library or a plugin, and each only to the values it documents. Anything else is refused
//! when the file is parsed, with the list in the message (docs/writing-claims.md, "Opening files
//! from others").
//!
//! The Rust builder ([`crate::ClaimBuilder::env`]) is not held to this list: Rust code already
//! runs as its user, so it keeps full power.

use super::error::EnvError;

/// The variables the CUDA driver reads as a process starts that change how its work waits
/// (one hardware queue, lazy module loading, blocking launches): `stream-litmus trace` records
/// them for each process it traces (`crates/inject/src/inject.rs`), and a trace's causes name them
/// (`trace::DriverEnv`).
pub const DRIVER_ENV: [&str; 3] = stream_litmus_inject::DRIVER_ENV;

/// Which values an allowed variable takes.
#[derive(Debug, Clone, Copy)]
pub enum Values {
    /// A whole number in this range (decimal digits only: no sign, no spaces).
    Count(u32, u32),
    /// One of these words (compared without regard to case, as the readers do).
    OneOf(&'static [&'static str]),
    /// A comma-separated list of these words, each at most once.
    ListOf(&'static [&'static str]),
}

/// One variable a claim file may set.
#[derive(Debug, Clone, Copy)]
pub struct Allowed {
    pub name: &'static str,
    pub values: Values,
    /// Who reads it, and what it changes in an experiment.
    pub why: &'static str,
}

/// Every variable a claim file may set or unset.
pub const ALLOWED: &[Allowed] = &[
    Allowed {
        name: "CUDA_DEVICE_MAX_CONNECTIONS",
        values: Values::Count(1, 32),
        why: "the driver's hardware work queues per device (default 8, at most 32): seed 003's \
              false dependencies",
    },
    Allowed {
        name: "CUDA_LAUNCH_BLOCKING",
        values: Values::OneOf(&["0", "1"]),
        why: "the driver makes every launch synchronous with 1",
    },
    Allowed {
        name: "CUDA_MODULE_LOADING",
        values: Values::OneOf(&["LAZY", "EAGER"]),
        why: "when the driver loads kernels (lazy loading can delay a first launch)",
    },
    Allowed {
        name: "NCCL_ALGO",
        // NVLS and the CollNet algorithms are left out: NVLS needs NVLink multicast, which must
        // stay off on shared machines, and CollNet a network plugin.
        values: Values::ListOf(&["Ring", "Tree"]),
        why: "the all-reduce algorithm NCCL may choose",
    },
    Allowed {
        name: "NCCL_PROTO",
        values: Values::ListOf(&["LL", "LL128", "Simple"]),
        why: "the all-reduce protocols NCCL may choose",
    },
    Allowed {
        name: "NCCL_MIN_NCHANNELS",
        values: Values::Count(1, 64),
        why: "the fewest channels (blocks) of an NCCL kernel",
    },
    Allowed {
        name: "NCCL_MAX_NCHANNELS",
        values: Values::Count(1, 64),
        why: "the most channels (blocks) of an NCCL kernel: how many SMs an all-reduce takes",
    },
    Allowed {
        name: "NCCL_P2P_DISABLE",
        values: Values::OneOf(&["0", "1"]),
        why: "NCCL's peer-to-peer transport between GPUs",
    },
    Allowed {
        name: "NCCL_SHM_DISABLE",
        values: Values::OneOf(&["0", "1"]),
        why: "NCCL's shared-memory transport",
    },
    Allowed {
        name: "NCCL_NVLS_ENABLE",
        values: Values::OneOf(&["0"]),
        why: "NVLink multicast, which stays off (the lab sets 0 itself)",
    },
    Allowed {
        name: "STREAM_LITMUS_CUPTI",
        values: Values::OneOf(&["off", "on"]),
        why: "the lab's copy witness (CUPTI): off shows the fallback without it",
    },
];

/// The largest value text checked: longer is refused before it is compared.
const MAX_VALUE_BYTES: usize = 64;

/// Whether a claim file may set `name` to `value` (`None`: unset it). The error says why and
/// what is allowed.
pub fn check(name: &str, value: Option<&str>) -> Result<(), EnvError> {
    let Some(allowed) = ALLOWED.iter().find(|a| a.name == name) else {
        return Err(EnvError::NotAllowed {
            name: name.escape_debug().to_string(),
            allowed: names(),
        });
    };
    let Some(value) = value else {
        return Ok(());
    };
    let bad = || EnvError::BadValue {
        name: allowed.name,
        value: value.chars().take(MAX_VALUE_BYTES).collect(),
        expected: expected(allowed.values),
        why: allowed.why,
    };
    if value.len() > MAX_VALUE_BYTES {
        return Err(bad());
    }
    let ok = match allowed.values {
        Values::Count(lo, hi) => {
            !value.is_empty()
                && value.bytes().all(|b| b.is_ascii_digit())
                && value.parse::<u32>().is_ok_and(|n| (lo..=hi).contains(&n))
        }
        Values::OneOf(words) => words.iter().any(|w| w.eq_ignore_ascii_case(value)),
        Values::ListOf(words) => {
            let items: Vec<&str> = value.split(',').collect();
            items.iter().enumerate().all(|(i, item)| {
                words.iter().any(|w| w.eq_ignore_ascii_case(item))
                    && !items[..i].iter().any(|x| x.eq_ignore_ascii_case(item))
            })
        }
    };
    if ok {
        Ok(())
    } else {
        Err(bad())
    }
}

/// The allowed names, for messages.
pub fn names() -> String {
    let names: Vec<&str> = ALLOWED.iter().map(|a| a.name).collect();
    names.join(", ")
}

fn expected(values: Values) -> String {
    match values {
        Values::Count(lo, hi) => format!("it takes a whole number from {lo} to {hi}"),
        Values::OneOf(words) => format!("it takes one of {}", words.join(", ")),
        Values::ListOf(words) => {
            format!("it takes a comma-separated list of {}", words.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_that_load_or_run_code_are_refused() {
        for name in [
            "LD_PRELOAD",
            "LD_LIBRARY_PATH",
            "CUDA_INJECTION64_PATH",
            "PATH",
            "NCCL_NET_PLUGIN",
            "NCCL_TUNER_PLUGIN",
            "STREAM_LITMUS_BIN",
            "STREAM_LITMUS_NCCL",
            "CUDA_VISIBLE_DEVICES",
            "",
            "A=B",
            "A\0B",
            "cuda_device_max_connections",
        ] {
            let err = check(name, Some("1")).unwrap_err();
            assert!(matches!(err, EnvError::NotAllowed { .. }), "{name}: {err}");
            assert!(err.to_string().contains("may not set"), "{name}: {err}");
            assert!(check(name, None).is_err(), "{name} unset");
        }
    }

    #[test]
    fn connections_take_one_to_thirty_two() {
        for ok in ["1", "8", "32"] {
            check("CUDA_DEVICE_MAX_CONNECTIONS", Some(ok)).unwrap();
        }
        for bad in [
            "0",
            "33",
            "-1",
            "+1",
            " 1",
            "abc",
            "",
            "4000000000",
            "9223372036854775807",
            "1e3",
        ] {
            let err = check("CUDA_DEVICE_MAX_CONNECTIONS", Some(bad)).unwrap_err();
            assert!(err.to_string().contains("from 1 to 32"), "{bad}: {err}");
        }
        check("CUDA_DEVICE_MAX_CONNECTIONS", None).unwrap();
    }

    #[test]
    fn words_and_lists_are_checked() {
        check("NCCL_ALGO", Some("ring,Tree")).unwrap();
        assert!(check("NCCL_ALGO", Some("NVLS")).is_err());
        assert!(check("NCCL_ALGO", Some("Ring,Ring")).is_err());
        assert!(check("NCCL_ALGO", Some("Ring,")).is_err());
        check("NCCL_NVLS_ENABLE", Some("0")).unwrap();
        assert!(check("NCCL_NVLS_ENABLE", Some("1")).is_err());
        let long = "1".repeat(10_000);
        let err = check("CUDA_LAUNCH_BLOCKING", Some(&long)).unwrap_err();
        assert!(err.to_string().len() < 400, "{err}");
    }
}
