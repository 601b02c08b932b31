//! Verdicts as JUnit XML (`--junit FILE`), the format CI systems read: one test suite per run,
//! one test case per claim. A claim whose verdict is the expected one passes; one that is not
//! fails, its message the verdict and its text the evidence; one that could not be judged (a
//! CUDA error, a trace that lacks its ranges) is an error. The schema the output keeps is
//! docs/schemas/junit.xsd (the common subset Jenkins, GitLab and GitHub's reporters read).
//!
//! Every text is escaped by the reports' one rule (`canvas::esc`: hidden characters shown as
//! `\u{…}`, then XML's five), and the two characters XML forbids that it leaves, U+FFFE and
//! U+FFFF, are shown too.

use super::canvas::esc;
use std::fmt::Write;

/// How one claim came out.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// As expected.
    Passed,
    /// Judged, not as expected: `message` the verdict against the expectation, `text` the
    /// evidence.
    Failed { message: String, text: String },
    /// Not judged: why.
    Error { message: String, text: String },
}

/// One claim as a test case.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    /// The claim's id.
    pub name: String,
    /// Where it comes from: the claim file, or the catalogue's family (`fifo`, `event`).
    pub classname: String,
    /// Seconds it took, where measured.
    pub time_s: Option<f64>,
    pub outcome: Outcome,
    /// Its verdict line, as the terminal shows it.
    pub out: String,
}

/// The XML text of one text or attribute value.
fn xml(text: &str) -> String {
    esc(text)
        .replace('\u{FFFE}', "\\u{fffe}")
        .replace('\u{FFFF}', "\\u{ffff}")
}

/// The JUnit XML document of `cases`, as one suite named `suite`.
pub fn junit_xml(suite: &str, cases: &[Case]) -> String {
    let count = |f: fn(&Outcome) -> bool| cases.iter().filter(|c| f(&c.outcome)).count();
    let failures = count(|o| matches!(o, Outcome::Failed { .. }));
    let errors = count(|o| matches!(o, Outcome::Error { .. }));
    let time: f64 = cases.iter().filter_map(|c| c.time_s).sum();
    let head = format!(
        "tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"0\" time=\"{time:.3}\"",
        cases.len()
    );
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(x, "<testsuites name=\"stream-litmus\" {head}>");
    let _ = writeln!(x, "  <testsuite name=\"{}\" {head}>", xml(suite));
    for c in cases {
        let time = c
            .time_s
            .map_or(String::new(), |t| format!(" time=\"{t:.3}\""));
        let _ = writeln!(
            x,
            "    <testcase name=\"{}\" classname=\"{}\"{time}>",
            xml(&c.name),
            xml(&c.classname)
        );
        match &c.outcome {
            Outcome::Passed => {}
            Outcome::Failed { message, text } => {
                let _ = writeln!(
                    x,
                    "      <failure message=\"{}\" type=\"not as expected\">{}</failure>",
                    xml(message),
                    xml(text)
                );
            }
            Outcome::Error { message, text } => {
                let _ = writeln!(
                    x,
                    "      <error message=\"{}\" type=\"not judged\">{}</error>",
                    xml(message),
                    xml(text)
                );
            }
        }
        let _ = writeln!(x, "      <system-out>{}</system-out>", xml(&c.out));
        x.push_str("    </testcase>\n");
    }
    x.push_str("  </testsuite>\n</testsuites>\n");
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(name: &str, outcome: Outcome) -> Case {
        Case {
            name: name.into(),
            classname: "claims/x.litmus".into(),
            time_s: Some(0.5),
            outcome,
            out: "ok   x Holds".into(),
        }
    }

    #[test]
    fn counts_failures_and_errors_and_escapes_every_text() {
        let cases = [
            case("a.ok", Outcome::Passed),
            case(
                "b.<bad>&\"q\"",
                Outcome::Failed {
                    message: "Violated, expected holds".into(),
                    text: "gap \u{1b}[31m\u{FFFF} <tag>".into(),
                },
            ),
            case(
                "c.err",
                Outcome::Error {
                    message: "not judged".into(),
                    text: "no range".into(),
                },
            ),
        ];
        let x = junit_xml("check", &cases);
        let doc = roxmltree::Document::parse(&x).expect("well-formed XML");
        let suite = doc
            .descendants()
            .find(|n| n.has_tag_name("testsuite"))
            .unwrap();
        assert_eq!(suite.attribute("tests"), Some("3"));
        assert_eq!(suite.attribute("failures"), Some("1"));
        assert_eq!(suite.attribute("errors"), Some("1"));
        let failure = doc
            .descendants()
            .find(|n| n.has_tag_name("failure"))
            .unwrap();
        assert_eq!(failure.text(), Some("gap \\u{1b}[31m\\u{ffff} <tag>"));
        let names: Vec<_> = (doc.descendants().filter(|n| n.has_tag_name("testcase")))
            .map(|n| n.attribute("name").unwrap().to_string())
            .collect();
        assert_eq!(names, ["a.ok", "b.<bad>&\"q\"", "c.err"]);
        assert!(!x.contains('\u{1b}'), "no raw control character");
    }
}
