"""`check`, `explain` and `assert_claims`: the binary's JSON read into small Python objects."""

import json
import os
import tempfile
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Union

from ._binary import StreamLitmusError, run

PathLike = Union[str, "os.PathLike[str]"]

# The versions of the documented schemas (docs/schemas/) this package reads.
VERDICTS_SCHEMA = ("stream-litmus check", 1)
EXPLANATION_SCHEMA = ("stream-litmus explain", 1)


@dataclass
class Check:
    """One check of one trial: `exists overlaps(H2D, K)`, its truth (yes, no, unknown), the
    deciding number (ns for times) and the reason in words."""

    check: str
    truth: str
    value_ns: int
    reason: str


@dataclass
class Trial:
    """One trial (a step): its name, its truth, and its checks."""

    name: str
    truth: str
    checks: List[Check]


@dataclass
class Verdict:
    """A claim's verdict on a trace. `judged` is False where the binary could not judge it
    (`error` says why); then `verdict` is "inconclusive"."""

    id: str
    statement: str
    file: str
    expect: str
    verdict: str
    as_expected: bool
    judged: bool
    counts: Dict[str, int]
    line: str
    evidence: str
    tolerances: str
    error: Optional[str]
    traces: List[Dict[str, object]]
    trials: List[Trial] = field(repr=False)

    def __str__(self):
        mark = "ok  " if self.as_expected else "FAIL"
        what = self.evidence if self.judged else f"not judged: {self.error}"
        return f"{mark} {self.id} {self.verdict} ({self.line}, expected {self.expect}): {what}"


@dataclass
class Explanation:
    """What `stream-litmus explain` found: every step with its waits (the raw JSON in `data`)."""

    data: Dict[str, object] = field(repr=False)

    @property
    def steps(self) -> List[Dict[str, object]]:
        return self.data["steps"]

    @property
    def waits(self) -> List[Dict[str, object]]:
        """Every wait of every step, each with its step's name under "step"."""
        return [dict(w, step=s["name"]) for s in self.steps for w in s["waits"]]

    def not_asked_for(self) -> List[Dict[str, object]]:
        """The waits the program did not ask for (class `not_asked`): shared hardware queues,
        a first launch, a full GPU, a host call, or nothing the trace says."""
        return [w for w in self.waits if w["class"] == "not_asked"]


class ClaimsNotAsExpected(AssertionError):
    """Raised by `assert_claims`: each claim not as expected, with its verdict and evidence."""

    def __init__(self, failed: Sequence[Verdict]):
        self.failed = list(failed)
        lines = [f"{len(self.failed)} claims not as expected:"] + [f"  {v}" for v in self.failed]
        super().__init__("\n".join(lines))


def _paths(x) -> List[str]:
    if x is None:
        return []
    if isinstance(x, (str, bytes, os.PathLike)):
        return [os.fspath(x)]
    return [os.fspath(p) for p in x]


def _read_json(path, schema):
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    name, version = schema
    if data.get("schema") != name or data.get("version") != version:
        raise StreamLitmusError(
            f"the binary wrote {data.get('schema')!r} version {data.get('version')!r}; this "
            f"package reads {name!r} version {version}: install matching versions"
        )
    return data


def _verdict(c) -> Verdict:
    trials = [
        Trial(t["name"], t["truth"], [Check(**k) for k in t["checks"]]) for t in c["trials"]
    ]
    return Verdict(
        id=c["id"],
        statement=c["statement"],
        file=c["file"],
        expect=c["expect"],
        verdict=c["verdict"],
        as_expected=c["as_expected"],
        judged=c["judged"],
        counts=c["counts"],
        line=c["line"],
        evidence=c["evidence"],
        tolerances=c["tolerances"],
        error=c.get("error"),
        traces=c["traces"],
        trials=trials,
    )


def check(
    claims: Union[PathLike, Sequence[PathLike]],
    traces: Optional[Union[PathLike, Sequence[PathLike]]] = None,
    filters: Optional[Sequence[str]] = None,
    junit: Optional[PathLike] = None,
) -> List[Verdict]:
    """Judges the claims on traces of `claims` (claim files or folders of them) on `traces`
    (the ranks of one run; default: the traces each claim file names). Returns one Verdict per
    claim, those the binary could not judge included (`judged` False). Raises
    StreamLitmusError where nothing could be judged (a missing file, a claim file with errors).
    `junit` also writes a JUnit XML file there."""
    args = ["check", *_paths(claims)]
    for t in _paths(traces):
        args += ["--trace", t]
    for f in filters or []:
        args += ["--filter", f]
    if junit is not None:
        args += ["--junit", os.fspath(junit)]
    with tempfile.TemporaryDirectory(prefix="stream-litmus-") as d:
        out = os.path.join(d, "verdicts.json")
        done = run(*args, "--json", out, check=False)
        data = _read_json(out, VERDICTS_SCHEMA)
    if data is None:
        raise StreamLitmusError(
            f"stream-litmus {' '.join(args)} judged nothing (exit status {done.returncode}):\n"
            f"{done.stderr.strip()}",
            status=done.returncode,
            stderr=done.stderr,
        )
    return [_verdict(c) for c in data["claims"]]


def explain(
    traces: Union[PathLike, Sequence[PathLike]], trial: Optional[str] = None
) -> Explanation:
    """Explains a trace (or the ranks of one run): every wait of every step and what caused it."""
    args = ["explain", *_paths(traces)]
    if trial is not None:
        args += ["--trial", trial]
    with tempfile.TemporaryDirectory(prefix="stream-litmus-") as d:
        out = os.path.join(d, "explanation.json")
        run(*args, "--json", out)
        data = _read_json(out, EXPLANATION_SCHEMA)
    if data is None:
        raise StreamLitmusError(f"stream-litmus {' '.join(args)} wrote no explanation")
    return Explanation(data)


def assert_claims(
    claims: Union[PathLike, Sequence[PathLike]],
    traces: Optional[Union[PathLike, Sequence[PathLike]]] = None,
    filters: Optional[Sequence[str]] = None,
) -> List[Verdict]:
    """For pytest: judges the claims (as `check`) and raises ClaimsNotAsExpected naming every
    claim whose verdict is not the expected one, or that could not be judged, with its evidence.
    Returns the verdicts when all are as expected."""
    verdicts = check(claims, traces=traces, filters=filters)
    failed = [v for v in verdicts if not v.as_expected]
    if failed:
        raise ClaimsNotAsExpected(failed)
    return verdicts
