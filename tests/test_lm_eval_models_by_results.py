"""lm-eval v0.4.3+ writes each model's files into a folder named after the model; a model without
a slash (``gpt2``) gets a folder name that does not say it is a model, but the run's results
file names it (``model_name``). Rows are keyed by the model a path names, so two such folders'
files of one task are refused, the refusal naming the two models, not as re-runs to pool; a
copy of a run without its results file is still a re-run. A samples file holding the rows of
two filters of a task is refused as that, not as re-runs.

Expected figures are counted here from the raw rows (the harness's ``acc``), never from
calibcli's output."""

from __future__ import annotations

import json
from pathlib import Path

from harness import run

LM_EVAL = Path(__file__).resolve().parent / "fixtures" / "lm_eval"
SCIENCE = LM_EVAL / "samples_toy_mc_science_2026-11-29T18-50-52.260809.jsonl"
STAMPS = ("2026-11-29T18-50-52.260809", "2026-11-30T10-00-00.000001")


def science_rows() -> list[dict]:
    return [json.loads(line) for line in SCIENCE.read_text(encoding="utf-8").splitlines()]


def halved(rows: list[dict]) -> list[dict]:
    """The rows with every loglikelihood halved: other confidences, the same top choices."""
    return [
        {**r, "filtered_resps": [[str(float(ll) / 2), g] for ll, g in r["filtered_resps"]]}
        for r in rows
    ]


def results_naming(model: str) -> str:
    """The fixture run's results file, its model_name set to ``model``."""
    results = json.loads((LM_EVAL / f"results_{STAMPS[0]}.json").read_text(encoding="utf-8"))
    return json.dumps({**results, "model_name": model})


def write_rows(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def two_model_folders(tmp_path: Path) -> dict[str, list[dict]]:
    """out/gpt2 and out/distilgpt2, each one run of toy_mc_science with its results file naming
    the model; distilgpt2's rows are gpt2's with their loglikelihoods halved."""
    rows = science_rows()
    runs = {"gpt2": rows, "distilgpt2": halved(rows)}
    for (model, held), stamp in zip(runs.items(), STAMPS, strict=True):
        folder = tmp_path / "out" / model
        folder.mkdir(parents=True)
        write_rows(folder / f"samples_toy_mc_science_{stamp}.jsonl", held)
        (folder / f"results_{stamp}.json").write_text(results_naming(model))
    return runs


def files_of(tmp_path: Path) -> list[str]:
    return sorted(str(p) for p in (tmp_path / "out").glob("*/samples_*.jsonl"))


def test_folders_named_after_models_without_a_slash_are_refused_as_two_models(tmp_path):
    # the rows are keyed by the model their paths name (none here), so that a copy of a run
    # without its results file keys them as the run does; the refusal names the two models
    two_model_folders(tmp_path)
    first, second = files_of(tmp_path)  # out/distilgpt2/..., then out/gpt2/...
    for args in ([first, second], [first, second, "--by", "model", "--gate-each"]):
        result = run(["calibrate", *args, "--max-ece", "0.99"])
        assert result.exit_code == 2
        assert result.stderr == (
            f"Error: {second}:1: this document's row was read before, at {first}:1, in a run "
            "of another model: the runs' results files name 'gpt2' here and 'distilgpt2' "
            "there, which the files' paths do not tell apart (lm-eval rows are keyed by task, "
            "doc_id and the model a path names, an org__name folder or the model arguments "
            "of a file name); read one model's files at a time\n"
        )
        assert "--all-runs" not in result.stderr


def test_each_model_s_folder_alone_is_read(tmp_path):
    runs = two_model_folders(tmp_path)
    for model, rows in runs.items():
        result = run(["calibrate", tmp_path / "out" / model, "--by", "model", "--json"])
        assert result.exit_code == 0, result.stderr
        report = json.loads(result.stdout)
        assert list(report["groups"]) == [model]
        assert report["n"] == len(rows)
        assert report["accuracy"] == sum(r["acc"] for r in rows) / len(rows)


def test_a_copy_of_a_run_without_its_results_file_is_still_a_re_run(tmp_path):
    # the run beside its results file and a copy elsewhere without it hold one model's rows
    rows = science_rows()
    folder, copies = tmp_path / "run", tmp_path / "copy"
    folder.mkdir()
    copies.mkdir()
    first = write_rows(folder / f"samples_toy_mc_science_{STAMPS[0]}.jsonl", rows)
    (folder / f"results_{STAMPS[0]}.json").write_text(results_naming("gpt2"))
    second = write_rows(copies / f"samples_toy_mc_science_{STAMPS[1]}.jsonl", halved(rows))
    result = run(["calibrate", first, second, "--min-rows", "90"])
    assert result.exit_code == 2
    assert "was read before" in result.stderr and "--all-runs" in result.stderr
    pooled = run(["calibrate", first, second, "--all-runs", "--min-rows", "90"])
    assert pooled.exit_code == 1, pooled.stderr


def test_two_filters_rows_are_not_called_re_runs(tmp_path):
    rows = science_rows()
    second = [{**r, "filter": "take_first"} for r in rows]
    path = write_rows(tmp_path / f"samples_toy_mc_science_{STAMPS[0]}.jsonl", rows + second)
    result = run(["calibrate", path])
    assert result.exit_code == 2
    assert result.stderr == (
        f"Error: {path}:{len(rows) + 1}: the rows of doc_id 0 under filters 'none' (at "
        f"{path}:1) and 'take_first': each filter's rows are one reading of the task; calibcli "
        "reads one filter at a time (give the rows of one filter)\n"
    )
    assert "--all-runs" not in result.stderr


def test_rows_of_one_filter_read_twice_are_still_re_runs(tmp_path):
    rows = science_rows()
    path = write_rows(tmp_path / f"samples_toy_mc_science_{STAMPS[0]}.jsonl", rows + rows[:1])
    result = run(["calibrate", path])
    assert result.exit_code == 2
    assert "was read before" in result.stderr and "--all-runs" in result.stderr


def test_compare_and_the_api_name_the_two_models_too(tmp_path):
    import pytest

    import calibcli
    from calibcli.errors import InputError

    two_model_folders(tmp_path)
    first, second = files_of(tmp_path)
    said = (
        f"this document's row was read before, at {first}:1, in a run of another model: the "
        "runs' results files name 'gpt2' here and 'distilgpt2' there"
    )
    with pytest.raises(InputError) as caught:
        calibcli.read_predictions([first, second])
    assert str(caught.value).startswith(f"{second}:1: {said}")
    pattern = str(tmp_path / "out" / "*" / "samples_*.jsonl")
    result = run(["compare", pattern, second, "-q"])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"Error: {second}:1: {said}")
    assert "--unpaired" not in result.stderr and "--all-runs" not in result.stderr
