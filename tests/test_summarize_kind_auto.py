"""``summarize --kind auto`` tells the kind from the first row of the first file that holds one,
in every format the commands read: perplexity rows in a CSV or TSV table (gzipped too), a JSON
array, a Parquet table, an OpenAI response echoing its prompt (without --gold-field, which
calibration rows need) and a HELM language-modelling run are summarized as perplexity rows, as
``calibcli perplexity`` reads them, not refused as calibration rows missing "confidence". The
Dask and Spark ``summarize_files(kind="auto")`` share the detection (``file_jobs``). Expected
totals are summed here by hand from the rows written."""

from __future__ import annotations

import gzip
import json

import pytest
from harness import run, write_jsonl

from calibcli.engines import file_jobs

# (nll, tokens): NLL 1.5 + 2.5 + 0.75 = 4.75 over 3 + 4 + 2 = 9 tokens.
SEQUENCES = [(1.5, 3), (2.5, 4), (0.75, 2)]
TOTALS = (3, 9, 4.75)  # sequences, tokens, NLL

# A legacy completion with echo=True, max_tokens=0, n=2: the prompt's two scored tokens
# (-5.25, -2.5) once.
ECHO = {
    "id": "cmpl-1",
    "object": "text_completion",
    "model": "davinci-002",
    "choices": [
        {
            "index": i,
            "text": "The cat sat",
            "finish_reason": "length",
            "logprobs": {
                "tokens": ["The", " cat", " sat"],
                "token_logprobs": [None, -5.25, -2.5],
                "top_logprobs": None,
                "text_offset": [0, 3, 7],
            },
        }
        for i in range(2)
    ],
    "usage": {"prompt_tokens": 3, "completion_tokens": 0, "total_tokens": 3},
}


def delimited(sep):
    return "".join(f"{nll}{sep}{tokens}\n" for nll, tokens in SEQUENCES)


def write(path, kind):
    """The rows of SEQUENCES as a file of ``kind``; the path written."""
    dicts = [{"nll": nll, "tokens": tokens} for nll, tokens in SEQUENCES]
    if kind == "csv":
        path = path / "rows.csv"
        path.write_text("nll,tokens\n" + delimited(","), encoding="utf-8")
    elif kind == "tsv":
        path = path / "rows.tsv"
        path.write_text("nll\ttokens\n" + delimited("\t"), encoding="utf-8")
    elif kind == "csv.gz":
        path = path / "rows.csv.gz"
        path.write_bytes(gzip.compress(("nll,tokens\n" + delimited(",")).encode()))
    elif kind == "json-array":
        path = path / "rows.json"
        path.write_text(json.dumps(dicts), encoding="utf-8")
    elif kind == "json-array-indented":
        path = path / "rows.json"
        path.write_text(json.dumps(dicts, indent=2), encoding="utf-8")
    elif kind == "parquet":
        pa = pytest.importorskip("pyarrow")
        import pyarrow.parquet as pq

        path = path / "rows.parquet"
        pq.write_table(pa.Table.from_pylist(dicts), path)
    return path


def summarized(tmp_path, inputs, *args):
    """The summary of ``inputs`` (``--kind auto``) measured by perplexity: its JSON report."""
    out = tmp_path / "s.cbs"
    result = run(["summarize", *inputs, "-o", out, *args])
    assert result.exit_code == 0, result.stderr
    assert "perplexity rows" in result.stderr
    measured = run(["perplexity", out, "--json", "-q"])
    assert measured.exit_code == 0, measured.stderr
    return json.loads(measured.stdout)


KINDS = ["csv", "tsv", "csv.gz", "json-array", "json-array-indented", "parquet"]


@pytest.mark.parametrize("kind", KINDS)
def test_perplexity_tables_and_arrays_are_summarized_as_perplexity(tmp_path, kind):
    body = summarized(tmp_path, [write(tmp_path, kind)])
    assert (body["sequences"], body["total_tokens"]) == TOTALS[:2]
    assert body["total_nll"] == pytest.approx(TOTALS[2], abs=1e-12)


def test_a_table_after_an_empty_shard_decides(tmp_path):
    folder = tmp_path / "shards"
    folder.mkdir()
    (folder / "00.csv").write_text("", encoding="utf-8")  # a job that wrote nothing
    write(folder, "csv").rename(folder / "01.csv")
    body = summarized(tmp_path, [folder])
    assert (body["sequences"], body["total_tokens"]) == TOTALS[:2]


def test_an_openai_echo_response_without_gold_field_is_perplexity(tmp_path):
    path = tmp_path / "echo.json"
    path.write_text(json.dumps(ECHO, indent=1), encoding="utf-8")  # as saved, pretty-printed
    body = summarized(tmp_path, [path])
    assert (body["sequences"], body["total_tokens"], body["total_nll"]) == (1, 2, 7.75)


def test_an_openai_response_with_gold_field_stays_calibration(tmp_path):
    """An answer's top_logprobs with --gold-field: calibration rows, as calibrate reads them."""
    answer = {
        "id": "c1",
        "object": "chat.completion",
        "answer": "A",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "A"},
                "logprobs": {
                    "content": [
                        {
                            "token": "A",
                            "logprob": -0.25,
                            "top_logprobs": [
                                {"token": "A", "logprob": -0.25},
                                {"token": "B", "logprob": -1.5},
                            ],
                        }
                    ]
                },
            }
        ],
    }
    path = write_jsonl(tmp_path / "a.jsonl", [answer])
    result = run(["summarize", path, "--gold-field", "answer", "-o", tmp_path / "s.cbs"])
    assert result.exit_code == 0, result.stderr
    assert "1 calibration rows" in result.stderr


def helm_entry(ident, stats):
    return {
        "instance_id": ident,
        "train_trial_index": 0,
        "stats": [
            {"name": {"name": name, "split": "test"}, "count": 1, "sum": value}
            for name, value in stats.items()
        ],
    }


def test_a_helm_language_modelling_run_is_perplexity(tmp_path):
    """logprob -12 over 6 tokens and -3 over 2: NLL 15 over 8 tokens."""
    entries = [
        helm_entry("id1", {"logprob": -12.0, "num_perplexity_tokens": 6, "num_bytes": 20}),
        helm_entry("id2", {"logprob": -3.0, "num_perplexity_tokens": 2, "num_bytes": 7}),
    ]
    path = tmp_path / "per_instance_stats.json"
    path.write_text(json.dumps(entries, indent=2), encoding="utf-8")
    body = summarized(tmp_path, [path])
    assert (body["sequences"], body["total_tokens"], body["total_nll"]) == (2, 8, 15.0)


def test_a_helm_multiple_choice_run_stays_calibration(tmp_path):
    entries = [helm_entry(f"id{i}", {"max_prob": 0.75, "exact_match": i % 2}) for i in range(4)]
    path = tmp_path / "per_instance_stats.json"
    path.write_text(json.dumps(entries), encoding="utf-8")
    result = run(["summarize", path, "-o", tmp_path / "s.cbs"])
    assert result.exit_code == 0, result.stderr
    assert "4 calibration rows" in result.stderr


def test_a_calibration_table_stays_calibration(tmp_path):
    path = tmp_path / "c.csv"
    path.write_text("confidence,correct\n0.75,true\n0.5,false\n", encoding="utf-8")
    result = run(["summarize", path, "-o", tmp_path / "s.cbs"])
    assert result.exit_code == 0, result.stderr
    assert "2 calibration rows" in result.stderr


@pytest.mark.parametrize("kind", ["csv", "json-array", "parquet"])
def test_engine_file_jobs_tell_the_kind_as_summarize_does(tmp_path, kind):
    (job,) = file_jobs([str(write(tmp_path, kind))], "auto", None)
    assert job.kind == "perplexity"


def test_engine_file_jobs_read_an_openai_response_by_its_gold_field(tmp_path):
    path = write_jsonl(tmp_path / "e.jsonl", [ECHO])
    assert file_jobs([str(path)], "auto", None)[0].kind == "perplexity"
    assert file_jobs([str(path)], "auto", None, gold_field="answer")[0].kind == "calibration"


def test_dask_summarize_files_reads_a_perplexity_table(tmp_path):
    dask = pytest.importorskip("dask")
    from calibcli.dask import summarize_files

    (summary,) = dask.compute(summarize_files([str(write(tmp_path, "csv"))]))
    body = summary.report()
    assert (body["sequences"], body["total_tokens"]) == TOTALS[:2]
    assert body["total_nll"] == pytest.approx(TOTALS[2], abs=1e-12)
