"""An inspect-ai perplexity log whose header names a ``target_perplexity`` scorer but whose
samples hold no scores (a run with ``inspect eval --no-score``) cannot say which of the
prompt's last tokens were the target: it is refused, not read as every prompt token. A log
whose header names only ``perplexity`` reads every prompt token, scores or not.

The logs are copies of inspect-ai's own (tests/fixtures/inspect_ai_scorers/) with the samples'
scores dropped, written here; the ``.eval`` members are decoded with zipfile and zstandard."""

from __future__ import annotations

import json
import math
import zipfile
from pathlib import Path

import pytest
import zstandard
from harness import run

HERE = Path(__file__).parent / "fixtures" / "inspect_ai_scorers"
REFUSAL = (
    "the log's task is scored by target_perplexity, which scores the target's last tokens, "
    "and the sample holds no score saying how many (a log written with --no-score): run "
    "`inspect score` on the log first"
)


def unscored(sample: dict, drop: str) -> dict:
    """``sample`` without its scores: ``scores`` null, or absent (``drop`` "null", "absent")."""
    sample = dict(sample)
    if drop == "null":
        sample["scores"] = None
    else:
        del sample["scores"]
    return sample


def json_log(tmp_path: Path, name: str, drop: str = "null") -> Path:
    log = json.loads((HERE / name).read_text(encoding="utf-8"))
    log["samples"] = [unscored(s, drop) for s in log["samples"]]
    out = tmp_path / f"unscored_{name}"
    out.write_text(json.dumps(log), encoding="utf-8")
    return out


def eval_members(path: Path) -> dict[str, bytes]:
    """Every member of an ``.eval`` zip, decoded from its raw zstd (method 93) data."""
    data = path.read_bytes()
    out = {}
    with zipfile.ZipFile(path) as z:
        for info in z.infolist():
            assert info.compress_type == 93
            # local header: 30 bytes, the name, then an extra field of the length at 28-29
            at = info.header_offset
            extra = int.from_bytes(data[at + 28 : at + 30], "little")
            start = at + 30 + len(info.filename.encode()) + extra
            blob = data[start : start + info.compress_size]
            with zstandard.ZstdDecompressor().stream_reader(blob) as r:
                out[info.filename] = r.read()
    return out


def eval_log(tmp_path: Path, scorer: str = "target_perplexity", drop: str = "null") -> Path:
    """target_perplexity.eval without scores, its header's (and journal's) scorer renamed
    ``scorer``; written deflated."""
    out = tmp_path / f"unscored_{scorer}.eval"
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in eval_members(HERE / "target_perplexity.eval").items():
            value = json.loads(data)
            if name.startswith("samples/"):
                value = unscored(value, drop)
            elif name in ("header.json", "_journal/start.json"):
                assert [s["name"] for s in value["eval"]["scorers"]] == ["target_perplexity"]
                value["eval"]["scorers"][0]["name"] = scorer
            z.writestr(name, json.dumps(value))
    return out


def prompt_logprobs(samples: list[dict]) -> list[float]:
    """Every prompt token's logprob, by a hand loop over the samples."""
    found = []
    for sample in samples:
        for token in sample["output"]["choices"][0]["prompt_logprobs"]["content"]:
            found.append(token["logprob"])
    return found


def refused(path: Path, *args: str) -> None:
    result = run(["perplexity", path, "--max-perplexity", "100", "-q", *args])
    assert result.exit_code == 2, result.stdout + result.stderr
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    where = "samples/1_epoch_1.json" if path.suffix == ".eval" else "samples[0] (id 1, epoch 1)"
    assert result.stderr == f"Error: {path}:{where}: {REFUSAL}\n"


@pytest.mark.parametrize("form", ["json", "eval"])
def test_a_target_perplexity_log_without_scores_is_refused(tmp_path, form):
    # every prompt token would read 3.43 over 84 tokens, where the target's 19 read 15.53
    path = json_log(tmp_path, "target_perplexity.json") if form == "json" else eval_log(tmp_path)
    refused(path)


@pytest.mark.parametrize("form", ["json", "eval"])
def test_samples_without_a_scores_field_are_refused_when_read_as_inspect_ai(tmp_path, form):
    if form == "json":
        path = json_log(tmp_path, "target_perplexity.json", drop="absent")
    else:
        path = eval_log(tmp_path, drop="absent")
    refused(path, "--format", "inspect-ai")


def test_a_perplexity_log_without_scores_reads_every_prompt_token(tmp_path):
    logprobs = prompt_logprobs(json.loads((HERE / "perplexity.json").read_text())["samples"])
    assert len(logprobs) == 30
    result = run(["perplexity", json_log(tmp_path, "perplexity.json"), "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    body = json.loads(result.stdout)
    assert (body["sequences"], body["total_tokens"]) == (4, 30)
    assert body["total_nll"] == -math.fsum(logprobs)
    assert body["perplexity"] == math.exp(-math.fsum(logprobs) / 30)


def test_an_eval_log_whose_header_names_perplexity_reads_every_prompt_token(tmp_path):
    samples = eval_members(HERE / "target_perplexity.eval")
    logprobs = prompt_logprobs(
        [json.loads(data) for name, data in samples.items() if name.startswith("samples/")]
    )
    assert len(logprobs) == 84
    result = run(["perplexity", eval_log(tmp_path, "perplexity"), "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    body = json.loads(result.stdout)
    assert (body["sequences"], body["total_tokens"]) == (10, 84)
    assert body["total_nll"] == -math.fsum(logprobs)
