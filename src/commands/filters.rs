//! `--filter TEXT` (repeatable), one rule for `run`, `check` on the GPU and `check` on traces: a
//! claim is kept when its id contains any of the filters; a filter that matches no claim at all
//! is an error naming it (a mistyped filter would otherwise pass silently, the other filters'
//! claims judged and that one's forgotten), as is a set of filters that keeps nothing.

use super::CliError;

/// The items whose id (`id_of`) contains one of `filters`, in order; all of them where there
/// are no filters. `where_` says where the claims were looked for, for the error.
pub fn kept<T>(
    items: Vec<T>,
    id_of: impl Fn(&T) -> &str,
    filters: &[String],
    where_: &str,
) -> Result<Vec<T>, CliError> {
    if let Some(f) = (filters.iter()).find(|f| !items.iter().any(|c| id_of(c).contains(f.as_str())))
    {
        return Err(CliError::usage(format!(
            "no claim {where_} matches the filter {:?}",
            stream_litmus::report::shown::one_line(f)
        )));
    }
    let kept: Vec<T> = (items.into_iter())
        .filter(|c| filters.is_empty() || filters.iter().any(|f| id_of(c).contains(f.as_str())))
        .collect();
    if kept.is_empty() {
        return Err(CliError::usage(format!("no claim {where_}")));
    }
    Ok(kept)
}
