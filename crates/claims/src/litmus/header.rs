//! The header lines every claim starts with, on a program or on traces: `statement`, `source`,
//! `expect` and `rationale`, each at most once, read into a [`ClaimHeader`].

use super::claim_error::{Cx, LitmusError};
use super::syntax::{Name, Span, Stmt};
use crate::judge::claim::{ClaimHeader, Source};
use crate::judge::verdict::Expect;

type R<T> = Result<T, LitmusError>;

/// The header lines of a claim read so far.
#[derive(Debug, Default)]
pub(super) struct HeaderLines {
    statement: Option<String>,
    source: Option<Source>,
    expect: Option<Expect>,
    rationale: Option<String>,
}

impl HeaderLines {
    /// Reads `stmt`, a line at `span` of claim `id`, if it is a header line (`Ok(None)`); any
    /// other line is handed back. A header line given twice is an error.
    pub(super) fn read(
        &mut self,
        cx: Cx<'_>,
        id: &Name,
        span: &Span,
        stmt: Stmt,
    ) -> R<Option<Stmt>> {
        let once = |set: bool, what: &str| {
            if set {
                Err(cx.err(
                    span,
                    format!("claim `{}` has a second `{what}` line", id.text),
                    "second one",
                ))
            } else {
                Ok(())
            }
        };
        match stmt {
            Stmt::Statement(s) => {
                once(self.statement.is_some(), "statement")?;
                self.statement = Some(s.text);
            }
            Stmt::Source { document, section } => {
                once(self.source.is_some(), "source")?;
                self.source = Some(Source::new(document.text, section.text));
            }
            Stmt::Expect(e) => {
                once(self.expect.is_some(), "expect")?;
                self.expect = Some(expectation(cx, &e)?);
            }
            Stmt::Rationale(r) => {
                once(self.rationale.is_some(), "rationale")?;
                self.rationale = Some(r.text);
            }
            other => return Ok(Some(other)),
        }
        Ok(None)
    }

    /// The header of claim `id`, or an error at its id naming the first line it lacks.
    pub(super) fn finish(self, cx: Cx<'_>, id: &Name) -> R<ClaimHeader> {
        let statement = self
            .statement
            .ok_or_else(|| missing(cx, id, "statement", "statement \"what the notes say\""))?;
        let source = self.source.ok_or_else(|| {
            missing(
                cx,
                id,
                "source",
                "source \"002_84e77744080bec39.txt\" section \"4. 流同步\"",
            )
        })?;
        let expect = (self.expect).ok_or_else(|| missing(cx, id, "expect", "expect holds"))?;
        Ok(ClaimHeader {
            id: id.text.clone(),
            statement,
            source,
            expect,
            rationale: self.rationale,
        })
    }
}

/// The error for claim `id` without a `what` line, with an example of one.
pub(super) fn missing(cx: Cx<'_>, id: &Name, what: &str, example: &str) -> LitmusError {
    cx.help(
        &id.span,
        format!("claim `{}` has no `{what}` line", id.text),
        "this claim",
        &format!("add one, e.g. `{example}`"),
    )
}

/// `holds` or `violated`, in any case.
fn expectation(cx: Cx<'_>, e: &Name) -> R<Expect> {
    match e.text.to_ascii_lowercase().as_str() {
        "holds" => Ok(Expect::Holds),
        "violated" => Ok(Expect::Violated),
        _ => Err(cx.err(
            &e.span,
            format!("unknown expectation `{}`", e.text),
            "expected `holds` or `violated`",
        )),
    }
}
