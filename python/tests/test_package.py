"""The installed wheel, as a user's pytest uses it (run by .ci/run in a fresh virtual environment
with only the wheel, pytest, jsonschema and xmlschema installed; no Rust toolchain on PATH is
needed). Every verdict here is the binary's, judged on the committed example traces."""

import json
import os
import subprocess
import sys
import sysconfig

import jsonschema
import pytest
import xmlschema

import stream_litmus

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PIPELINE_CLAIMS = os.path.join(ROOT, "examples", "pytorch", "pipeline.litmus")
PIPELINE = os.path.join(ROOT, "examples", "pytorch", "traces", "pipeline.json.gz")
WRONG = os.path.join(HERE, "not_as_expected.litmus")
SCHEMAS = os.path.join(ROOT, "docs", "schemas")


def test_the_package_and_binary_are_the_installed_ones():
    prefix = os.path.realpath(sys.prefix)
    assert os.path.realpath(stream_litmus.__file__).startswith(prefix), stream_litmus.__file__
    exe = stream_litmus.binary()
    assert os.path.realpath(exe).startswith(prefix), exe
    # The injection library `trace --` loads comes with the wheel, where the binary finds it.
    lib = os.path.join(sys.prefix, "lib", "libstream_litmus_inject.so")
    assert os.path.isfile(lib), lib
    done = subprocess.run([exe, "--help"], capture_output=True, text=True)
    assert done.returncode == 0 and "check" in done.stdout


def test_check_gives_every_verdict_with_its_evidence():
    verdicts = stream_litmus.check(PIPELINE_CLAIMS)
    assert [v.id for v in verdicts] == [
        "pytorch.four_stream_pipeline_is_faster",
        "pytorch.pipeline_overlaps_copies_with_compute",
        "pytorch.one_stream_runs_in_issue_order",
        "pytorch.pipeline_chunk_runs_in_order",
    ]
    for v in verdicts:
        assert v.judged and v.as_expected and v.verdict == "holds", str(v)
        assert v.line == "Always 5/5" and len(v.trials) == 5
        assert v.evidence and v.tolerances
        assert v.traces[0]["path"].endswith("pipeline.json.gz")
        assert len(v.traces[0]["sha256"]) == 64


def test_a_claim_not_as_expected_fails_with_its_evidence():
    with pytest.raises(stream_litmus.ClaimsNotAsExpected) as e:
        stream_litmus.assert_claims(WRONG)
    failed = e.value.failed
    assert [v.id for v in failed] == ["wheel.one_stream_overlaps_copies"]
    (v,) = failed
    assert v.verdict == "violated" and v.line == "Never 0/5"
    assert "wheel.one_stream_overlaps_copies" in str(e.value)
    assert "exists overlaps(C, K)" in str(e.value) and "refute" in str(e.value)
    # The claim that holds is not named.
    assert "four_streams_are_faster" not in str(e.value)


def test_assert_claims_passes_where_every_claim_is_as_expected():
    verdicts = stream_litmus.assert_claims(WRONG, filters=["four_streams"])
    assert [v.id for v in verdicts] == ["wheel.four_streams_are_faster"]


def test_traces_given_replace_the_ones_the_file_names():
    (v,) = stream_litmus.check(PIPELINE_CLAIMS, traces=[PIPELINE], filters=["faster"])
    assert v.as_expected


def test_a_missing_claim_file_raises_with_the_binarys_message(tmp_path):
    with pytest.raises(stream_litmus.StreamLitmusError) as e:
        stream_litmus.check(str(tmp_path / "none.litmus"))
    assert "none.litmus" in str(e.value)


def test_explain_lists_every_wait_with_its_cause():
    e = stream_litmus.explain(PIPELINE)
    assert len(e.steps) == 5
    assert e.waits, "the pipeline's ops wait for one another"
    for w in e.waits:
        assert w["class"] in ("asked", "implied", "room", "not_asked")
        assert w["op"] and w["by"] and w["step"].startswith("ProfilerStep#")
    assert isinstance(e.not_asked_for(), list)


def test_json_and_junit_keep_their_documented_schemas(tmp_path):
    out, junit = tmp_path / "verdicts.json", tmp_path / "verdicts.xml"
    done = stream_litmus.run("check", WRONG, PIPELINE_CLAIMS, "--json", out, "--junit", junit,
                             check=False)
    assert done.returncode == 1, done.stderr  # one claim not as expected
    with open(os.path.join(SCHEMAS, "check.schema.json")) as f:
        schema = json.load(f)
    with open(out) as f:
        data = json.load(f)
    jsonschema.validate(data, schema)
    assert data["summary"] == {"claims": 6, "as_expected": 5, "not_as_expected": 1,
                               "not_judged": 0}
    xsd = xmlschema.XMLSchema(os.path.join(SCHEMAS, "junit.xsd"))
    xsd.validate(str(junit))
    tree = xsd.to_dict(str(junit))
    suite = tree["testsuite"][0]
    assert (suite["@tests"], suite["@failures"], suite["@errors"]) == (6, 1, 0)
    failed = [c for c in suite["testcase"] if "failure" in c]
    assert [c["@name"] for c in failed] == ["wheel.one_stream_overlaps_copies"]
    assert "refute" in failed[0]["failure"]["$"]


def test_a_claim_not_judged_is_an_error_in_both(tmp_path):
    claims = tmp_path / "no_range.litmus"
    claims.write_text(
        'claim wheel.no_such_range\nstatement "x"\nsource "test" section "none"\nexpect holds\n'
        f'trace "{PIPELINE}"\ntrial each "NoSuchRange#*"\nselect A = kernel\nselect B = kernel\n'
        "check exists overlaps(A, B)\n"
    )
    out, junit = tmp_path / "v.json", tmp_path / "v.xml"
    (v,) = stream_litmus.check(claims, junit=junit)
    assert not v.judged and v.verdict == "inconclusive" and "NoSuchRange" in v.error
    xsd = xmlschema.XMLSchema(os.path.join(SCHEMAS, "junit.xsd"))
    xsd.validate(str(junit))
    stream_litmus.run("check", claims, "--json", out, check=False)
    with open(os.path.join(SCHEMAS, "check.schema.json")) as f:
        jsonschema.validate(json.load(open(out)), json.load(f))


@pytest.mark.parametrize("how", ["profiled", "traced"])
def test_the_wheels_own_recordings_keep_their_verdict(how):
    # Recorded on an H100 by python/gpu_smoke.sh with the installed wheel: `stream_litmus.profile`
    # and `stream-litmus trace --` (examples/pytorch/wheel_smoke.py), 5 steps each.
    trace = os.path.join(ROOT, "examples", "pytorch", "traces", f"wheel_smoke.{how}.json.gz")
    claims = os.path.join(ROOT, "examples", "pytorch", "side_stream.litmus")
    (v,) = stream_litmus.assert_claims(claims, traces=[trace])
    assert v.line == "Always 5/5", str(v)


@pytest.mark.parametrize(
    "trace",
    [
        "examples/pytorch/traces/pipeline.json.gz",
        "examples/pytorch/traces/ddp_own_stream.trace.json.gz",
        "examples/cuda/traces/event_two_streams_one_connection.json.gz",
        "examples/cuda/traces/weight_prefetch.json.gz",
    ],
)
def test_explain_json_keeps_its_documented_schema(trace, tmp_path):
    out = tmp_path / "explained.json"
    stream_litmus.run("explain", os.path.join(ROOT, trace), "--json", out)
    with open(os.path.join(SCHEMAS, "explain.schema.json")) as f:
        schema = json.load(f)
    with open(out) as f:
        data = json.load(f)
    jsonschema.validate(data, schema)
    assert data["steps"], trace
