"""inspect-ai logs (calibcli.formats.inspect_sample_row) and whole-document input
(calibcli.io.documents), checked against the real logs in tests/fixtures/inspect_ai/.

The expected values are read from the fixtures with zipfile/zstandard/json here, and the
confidence is recomputed as exp of the summed token logprobs in plain Python; accuracy is
compared with the figure inspect-ai itself wrote in the log's results.
"""

from __future__ import annotations

import gzip
import io
import json
import math
import re
import zipfile
from pathlib import Path

import pytest
import zstandard

from calibcli import formats
from calibcli.formats import CalibrationRow, inspect_sample_row, inspect_scorers
from calibcli.io import documents

FIXTURES = Path(__file__).parent / "fixtures" / "inspect_ai"
EVAL = FIXTURES / "toy_arithmetic.eval"
JSON = FIXTURES / "toy_arithmetic.json"


def raw_eval_entries() -> dict[str, bytes]:
    """Every entry of the .eval zip, decoded here from the raw zstd (method 93) data."""
    out = {}
    data = EVAL.read_bytes()
    with zipfile.ZipFile(EVAL) as z:
        for info in z.infolist():
            assert info.compress_type == 93
            # Local header: 30 bytes, the name, then an extra field of the length at 28-29.
            at = info.header_offset
            local_extra = int.from_bytes(data[at + 28 : at + 30], "little")
            start = info.header_offset + 30 + len(info.filename.encode()) + local_extra
            blob = data[start : start + info.compress_size]
            with zstandard.ZstdDecompressor().stream_reader(blob) as r:
                out[info.filename] = r.read()
    return out


def expected(sample: dict, scorer: str) -> tuple[float, bool]:
    logprobs = [t["logprob"] for t in sample["output"]["choices"][0]["logprobs"]["content"]]
    value = sample["scores"][scorer]["value"]
    return math.exp(sum(logprobs)), value in ("C", 1)


def test_eval_zip_rows_match_the_raw_entries():
    entries = raw_eval_entries()
    assert "header.json" in entries
    rows = list(documents.iter_document(EVAL))
    assert documents.document_kind(EVAL) == "eval-zip"
    names = sorted(n for n in entries if n.startswith("samples/"))
    assert sorted(loc for loc, _ in rows) == names
    assert [loc for loc, _ in rows][:3] == [f"samples/{i}_epoch_1.json" for i in (1, 2, 3)]
    for loc, sample in rows:
        raw = json.loads(entries[loc])
        assert sample == raw
        for scorer in ("match", "exact_number"):
            confidence, correct = expected(raw, scorer)
            row = inspect_sample_row(sample, scorer=scorer)
            assert row.correct == correct
            assert row.confidence == pytest.approx(confidence, rel=1e-12)


@pytest.mark.parametrize("path", [EVAL, JSON])
def test_accuracy_matches_the_log_results(path):
    if path == EVAL:
        header = json.loads(raw_eval_entries()["header.json"])
    else:
        header = json.loads(path.read_text(encoding="utf-8"))
    reported = {s["name"]: s["metrics"]["accuracy"]["value"] for s in header["results"]["scores"]}
    samples = [row for _, row in documents.iter_document(path)]
    assert len(samples) == header["results"]["total_samples"] == 20
    for scorer, accuracy in reported.items():
        rows = [inspect_sample_row(s, scorer=scorer) for s in samples]
        assert sum(r.correct for r in rows) / len(rows) == pytest.approx(accuracy, abs=1e-12)
    assert 0 < reported["match"] < 1


def test_json_log_rows_equal_the_eval_rows():
    from_json = [inspect_sample_row(s, scorer="match") for _, s in documents.iter_document(JSON)]
    from_eval = [inspect_sample_row(s, scorer="match") for _, s in documents.iter_document(EVAL)]
    assert from_json == from_eval
    locator, first = next(documents.iter_document(JSON))
    assert locator == "samples[0] (id 1, epoch 1)"
    assert documents.document_kind(JSON) == "json-object"
    assert formats.detect_row_format(first) == "inspect-ai"
    assert inspect_scorers(first) == ["match", "exact_number"]


def test_several_scorers_must_be_chosen():
    _, sample = next(documents.iter_document(JSON))
    with pytest.raises(ValueError, match=r"2 scorers \(match, exact_number\): choose one"):
        inspect_sample_row(sample)
    with pytest.raises(ValueError, match=r"no scorer 'f1' in 'scores' \(scorers: match, exact"):
        inspect_sample_row(sample, scorer="f1")


def sample(value, logprobs=(-0.5, -0.25), **extra):
    content = [{"token": str(i), "logprob": lp} for i, lp in enumerate(logprobs)]
    return {
        "id": 1,
        "epoch": 1,
        "output": {"choices": [{"logprobs": {"content": content}}]},
        "scores": {"s": {"value": value}},
        **extra,
    }


@pytest.mark.parametrize(
    ("value", "correct"),
    [
        ("C", True),
        ("I", False),
        ("N", False),
        (True, True),
        (False, False),
        (1, True),
        (0.0, False),
    ],
)
def test_score_values(value, correct):
    assert inspect_sample_row(sample(value)).correct is correct


@pytest.mark.parametrize(
    ("confidence", "expected_p"),
    [
        ("sequence", math.exp(-0.75)),
        ("first-token", math.exp(-0.5)),
        ("mean-token", math.exp(-0.375)),
    ],
)
def test_confidence_rules(confidence, expected_p):
    row = inspect_sample_row(sample("C"), confidence=confidence)
    assert row == CalibrationRow(pytest.approx(expected_p, rel=1e-15), True)


def test_multi_value_scores_are_named_by_key():
    s = sample({"acc": "C", "f": 0.5})
    assert inspect_sample_row(s, scorer="s.acc").correct is True
    with pytest.raises(ValueError, match=re.escape("several values: choose one of s.acc, s.f")):
        inspect_sample_row(s)


@pytest.mark.parametrize(
    ("row", "kwargs", "message"),
    [
        (sample("P"), {}, "score 's' is a string ('P'): partial credit"),
        (sample(0.5), {}, "score 's' is a number (0.5): not binary"),
        (sample("C", logprobs=()), {}, "no output.choices[0].logprobs: run the eval"),
        ({**sample("C"), "scores": None}, {}, "the sample was not scored"),
        (sample("C", error={"message": "boom"}), {}, "ended in an error: boom"),
        (sample("C"), {"confidence": "max"}, "confidence must be one of"),
    ],
)
def test_sample_errors(row, kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        inspect_sample_row(row, **kwargs)


# --------------------------------------------------------------------------- documents


def test_deflate_eval_zip_of_older_inspect_versions(tmp_path):
    path = tmp_path / "old.eval"
    entries = raw_eval_entries()
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for name, data in entries.items():
            z.writestr(name, data)
    rows = list(documents.iter_document(path))
    assert [json.loads(entries[loc]) for loc, _ in rows] == [s for _, s in rows]
    assert len(rows) == 20


def test_array_document_locators_are_start_lines(tmp_path):
    resps = [[-1.0, False], [-2.0, True]]
    rows = [{"doc_id": i, "filtered_resps": resps, "acc": 1} for i in (0, 1)]
    text = json.dumps(rows, indent=2)
    path = tmp_path / "samples_t.json"
    path.write_text(text)
    lines = text.splitlines()
    starts = [i + 1 for i, line in enumerate(lines) if line == "  {"]
    assert documents.document_kind(path) == "json-array"
    assert list(documents.iter_document(path)) == list(zip(starts, rows, strict=True))
    # The same, gzipped, and given as bytes.
    assert list(documents.iter_document(gzip.compress(text.encode()))) == list(
        zip(starts, rows, strict=True)
    )


@pytest.mark.parametrize(
    ("content", "kind"),
    [
        (b'{"confidence": 0.5, "correct": true}\n{"confidence": 0.2, "correct": false}\n', None),
        (b'\n\n  {"a": 1}\n', None),
        (b"[\n  {}\n]\n", "json-array"),
        (b'{\n  "id": "chatcmpl-1",\n  "choices": []\n}\n', "json-object"),
        (b'{"version": 2, "eval": {"task": "t"}, "samples": []}\n', "json-object"),
        (b"", None),
        (b"PK\x03\x04rest", "eval-zip"),
    ],
)
def test_document_kind_sniffing(content, kind):
    assert documents.document_kind(content) == kind


def test_single_object_document_is_one_row():
    content = json.dumps({"choices": [{"logprobs": {"token_logprobs": [-1.0]}}]}, indent=1)
    assert list(documents.iter_document(content.encode())) == [(1, json.loads(content))]


@pytest.mark.parametrize(
    ("content", "locator", "message"),
    [
        (b'[\n  {"a": 1},\n  {"a": 2\n]\n', 4, "invalid JSON in the array"),
        (b'[\n  {"a": 1}\n  {"a": 2}\n]', 3, "expected ',' or ']'"),
        (b'{\n  "a": 1,\n  "b": \n}', 4, "neither one JSON document nor JSON lines"),
        (b'{\n "version": 2, "status": "started", "eval": {}\n}', 1, "holds no samples"),
    ],
)
def test_document_errors_carry_a_locator(content, locator, message):
    with pytest.raises(documents.DocumentError, match=re.escape(message)) as info:
        list(documents.iter_document(content))
    assert info.value.locator == locator


def test_zip_that_is_not_an_eval_log():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        z.writestr("readme.txt", "hello")
    with pytest.raises(documents.DocumentError, match=re.escape("not an inspect-ai .eval log")):
        list(documents.iter_document(buffer.getvalue()))


def test_a_first_sample_that_ended_in_an_error_is_left_out(tmp_path):
    # an errored sample logs no scores, and inspect-ai's metrics leave it out: as the log's
    # first sample it is left out too (it was taken for a row of no known format, "closest
    # is inspect-ai, lacking 'scores'"), and a warning says so
    from harness import run

    log = json.loads(JSON.read_text())
    first = log["samples"][0]
    first.pop("scores", None)
    first["error"] = {"message": "RuntimeError: boom", "traceback": "..."}
    path = tmp_path / "errored.json"
    path.write_text(json.dumps(log))
    result = run(["calibrate", str(path), "--scorer", "match", "--json", "-q"])
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert body["format"] == "inspect-ai" and body["n"] == len(log["samples"]) - 1
    said = f"{path}: 1 of {len(log['samples'])} samples ended in an error and is left out"
    assert any(w.startswith(said) for w in body["warnings"])
