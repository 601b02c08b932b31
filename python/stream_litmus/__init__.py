"""stream-litmus from Python: claims about CUDA streams judged on traces of your own program.

    import stream_litmus

    with stream_litmus.profile("step.json.gz") as prof:      # torch.profiler, set up for us
        for batch in batches:
            train_step(batch)
            prof.step()                                      # one ProfilerStep#N per step

    verdicts = stream_litmus.check("claims.litmus", traces=["step.json.gz"])
    stream_litmus.assert_claims("claims.litmus", traces=["step.json.gz"])   # in pytest

Every function runs the `stream-litmus` binary installed with this package and reads the JSON it
writes (`check --json`, `explain --json`; schemas in docs/schemas/): the verdicts are the
binary's, never recomputed here. torch is imported only by `profile`.
"""

from ._binary import StreamLitmusError, binary, run
from ._check import (
    Check,
    ClaimsNotAsExpected,
    Explanation,
    Trial,
    Verdict,
    assert_claims,
    check,
    explain,
)
from ._profile import Profile, profile

__all__ = [
    "Check",
    "ClaimsNotAsExpected",
    "Explanation",
    "Profile",
    "StreamLitmusError",
    "Trial",
    "Verdict",
    "assert_claims",
    "binary",
    "check",
    "explain",
    "profile",
    "run",
]
