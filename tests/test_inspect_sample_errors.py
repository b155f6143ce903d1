"""An inspect-ai log some of whose samples ended in an error (``fail_on_error=False``) is read
as inspect-ai's metrics read it: the samples it scored, those that errored without a score
left out with a warning counting them (on stderr and in the report's warnings), whatever the
run's status. The log is inspect-ai's own (tests/fixtures/inspect_ai_scorers/README.md)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from harness import run

HERE = Path(__file__).parent / "fixtures" / "inspect_ai_scorers"
# results.scores[0].metrics.accuracy.value inspect-ai 0.3.285 logged in sample_errors.json
# (and .eval): that of the 10 samples it scored, samples 3 and 8 having raised
INSPECT_ACCURACY = 0.6
LEFT_OUT = "2 of 12 samples ended in an error and are left out"


def log(name="sample_errors.json"):
    return json.loads((HERE / name).read_text(encoding="utf-8"))


def sequence_confidences(samples):
    """(confidence, right) of the samples that did not error: the whole completion's
    probability, by a hand loop."""
    out = []
    for s in samples:
        if s.get("error"):
            continue
        content = s["output"]["choices"][0]["logprobs"]["content"]
        out.append((math.exp(math.fsum(t["logprob"] for t in content)), s["scores"]["choice"]))
    return [(p, score["value"] == "C") for p, score in out]


def calibrate(path, *args):
    result = run(["calibrate", path, "--inspect-confidence", "sequence", "--json", *args])
    assert result.exit_code == 0, result.stderr
    return result, json.loads(result.stdout)


@pytest.mark.parametrize("name", ["sample_errors.eval", "sample_errors.json"])
def test_errored_samples_are_left_out_with_a_warning(name):
    samples = log()["samples"]
    assert [s["id"] for s in samples if s.get("error")] == [3, 8]
    pairs = sequence_confidences(samples)
    result, body = calibrate(HERE / name, "-q")
    assert body["n"] == 10 and body["accuracy"] == INSPECT_ACCURACY
    assert body["mean_confidence"] == pytest.approx(math.fsum(p for p, _ in pairs) / 10)
    brier = math.fsum((p - y) ** 2 for p, y in pairs) / 10
    assert body["brier"] == pytest.approx(brier, rel=1e-12)
    said = [w for w in body["warnings"] if LEFT_OUT in w]
    assert said == [f"{HERE / name}: {LEFT_OUT}, as inspect-ai's own metrics leave them out"]
    assert f"warning: {said[0]}\n" in result.stderr


def test_a_run_that_did_not_succeed_leaves_them_out_too(tmp_path):
    # inspect-ai computes a failed run's metrics from the samples it scored as well
    data = log()
    data["status"] = "error"
    data["error"] = {"message": "too many samples failed", "traceback": "", "traceback_ansi": ""}
    path = tmp_path / "failed.json"
    path.write_text(json.dumps(data))
    _, body = calibrate(path, "-q")
    assert body["n"] == 10
    assert any("ended with status 'error'" in w for w in body["warnings"])
    assert any(LEFT_OUT in w for w in body["warnings"])


def test_an_errored_sample_that_was_scored_is_still_refused(tmp_path):
    # score_on_error scores a sample that raised: its output may be cut short
    data = log()
    data["samples"][0]["error"] = {"message": "boom", "traceback": "", "traceback_ansi": ""}
    path = tmp_path / "scored.json"
    path.write_text(json.dumps(data))
    result = run(["calibrate", path, "-q"])
    assert result.exit_code == 2
    assert "samples[0] (id 1, epoch 1): the sample ended in an error: boom" in result.stderr


def test_perplexity_leaves_them_out_too(tmp_path):
    data = log("target_perplexity.json")
    errored = data["samples"][4]
    errored["error"] = {"message": "boom", "traceback": "", "traceback_ansi": ""}
    errored["scores"] = {}
    path = tmp_path / "ppl.json"
    path.write_text(json.dumps(data))
    tail = []
    for s in data["samples"]:
        if not s.get("error"):
            n = s["scores"]["target_perplexity"]["metadata"]["num_tokens"]
            content = s["output"]["choices"][0]["prompt_logprobs"]["content"]
            tail += [t["logprob"] for t in content[-n:]]
    result = run(["perplexity", path, "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    body = json.loads(result.stdout)
    assert (body["sequences"], body["total_tokens"]) == (9, len(tail))
    assert body["perplexity"] == math.exp(-math.fsum(tail) / len(tail))
    assert any("1 of 10 samples ended in an error and is left out" in w for w in body["warnings"])
