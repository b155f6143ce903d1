"""A run that evaluated only a part of its documents (``--limit``) is said.

lm-eval writes the part and nothing in its rows says so; its results file beside them records
each task's documents (``n-samples``: ``original``) and those evaluated (``effective``). An
inspect-ai log records its dataset's size (``eval.dataset.samples``) and the samples the run
took from it (``eval.dataset.sample_ids``). The expected counts here come from the harnesses'
own files (the inspect-ai log was written by inspect-ai under ``limit=8``) and from counting the
fixture's lines, never from calibcli's output.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
from harness import run

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures" / "lm_eval"
INSPECT = HERE / "fixtures" / "inspect_ai"
STAMP = "2026-11-29T18-50-52.260809"
RESULTS = f"results_{STAMP}.json"
TASKS = ("toy_mc_science", "toy_mc_trivia", "toy_wikitext")
REALWORLD = HERE.parents[1] / "shared" / "realworld" / "lmeval-pr3936-qwen3-8b-negotiationtom"


def documents(task: str) -> int:
    """The documents of a fixture task: the full run evaluated them all."""
    results = json.loads((FIXTURES / RESULTS).read_text())
    counts = results["n-samples"][task]
    assert counts["original"] == counts["effective"]
    return counts["original"]


def limited_folder(tmp_path: Path, limit: float, *, stamp: str = STAMP) -> Path:
    """The fixture run as ``lm_eval --limit LIMIT`` writes it: each task's first documents
    (an integer limit, or ceil(limit x documents) for a fraction below 1) in its samples
    file, and the results file's ``n-samples`` and ``config.limit`` saying so."""
    folder = tmp_path / "out"
    folder.mkdir(parents=True)
    results = json.loads((FIXTURES / RESULTS).read_text())
    for task in TASKS:
        lines = (FIXTURES / f"samples_{task}_{STAMP}.jsonl").read_text().splitlines(True)
        keep = math.ceil(limit * len(lines)) if limit < 1 else int(limit)
        (folder / f"samples_{task}_{stamp}.jsonl").write_text("".join(lines[:keep]))
        results["n-samples"][task]["effective"] = min(keep, len(lines))
    results["config"]["limit"] = limit
    (folder / f"results_{stamp}.json").write_text(json.dumps(results, indent=2))
    return folder


def report(args, code=0):
    result = run([*args, "--json", "-q"])
    assert result.exit_code == code, result.output
    return json.loads(result.stdout), result.stderr


def one_task(folder: Path, task: str, limit: int) -> str:
    """The warning of a limited run of which one task was read."""
    return (
        f"{folder / RESULTS}: lm-eval evaluated only {limit} of the {documents(task)} documents "
        f"of task {task!r} (--limit {limit}): the figures are those of this part, not of the "
        "whole task"
    )


def limited(warnings) -> list[str]:
    return [w for w in warnings if "lm-eval evaluated only" in w]


def test_a_limited_run_is_said_once_naming_each_task_read(tmp_path):
    folder = limited_folder(tmp_path, 10)
    body, stderr = report(["calibrate", folder])
    assert body["n"] == 20  # the first 10 documents of each multiple-choice task
    science, trivia = documents("toy_mc_science"), documents("toy_mc_trivia")
    said = (
        f"{folder / RESULTS}: lm-eval evaluated only a part of the documents of 2 tasks read "
        f"(--limit 10): 'toy_mc_science' 10 of {science}, 'toy_mc_trivia' 10 of {trivia}: the "
        "figures are those of these parts, not of the whole tasks"
    )
    assert limited(body["warnings"]) == [said]
    assert f"warning: {said}\n" in stderr


def test_perplexity_names_the_task_it_read(tmp_path):
    folder = limited_folder(tmp_path, 10)
    body, _ = report(["perplexity", folder])
    assert body["sequences"] == 10
    assert limited(body["warnings"]) == [one_task(folder, "toy_wikitext", 10)]


def test_a_fraction_is_shown_as_given(tmp_path):
    folder = limited_folder(tmp_path, 0.25)
    files = sorted(folder.glob("samples_toy_mc_science_*"))
    body, _ = report(["calibrate", *files])
    assert body["n"] == math.ceil(0.25 * documents("toy_mc_science")) == 12
    (warning,) = limited(body["warnings"])
    assert f"only 12 of the {documents('toy_mc_science')} documents" in warning
    assert "(--limit 0.25)" in warning


def test_a_task_a_file_of_another_command_holds_is_not_named(tmp_path):
    """calibrate skips the rolling-loglikelihood task: its limit is not calibrate's concern."""
    folder = limited_folder(tmp_path, 10)
    body, _ = report(["calibrate", folder / f"samples_toy_mc_trivia_{STAMP}.jsonl"])
    (warning,) = limited(body["warnings"])
    assert "'toy_mc_trivia'" in warning and "toy_wikitext" not in warning


def test_the_full_run_is_not_said(tmp_path):
    folder = tmp_path / "out"
    shutil.copytree(FIXTURES, folder, ignore=shutil.ignore_patterns("data", "tasks", "*.py"))
    body, _ = report(["calibrate", folder])
    assert body["n"] == documents("toy_mc_science") + documents("toy_mc_trivia")
    assert limited(body["warnings"]) == []


@pytest.mark.parametrize("results", ["missing", "other run", "not json", "no counts"])
def test_without_the_runs_counts_nothing_is_said(tmp_path, results):
    folder = limited_folder(tmp_path, 10)
    path = folder / RESULTS
    if results == "missing":
        path.unlink()
    elif results == "other run":
        path.rename(folder / "results_2026-11-30T00-00-00.000000.json")
    elif results == "not json":
        path.write_text("{not json")
    else:
        path.write_text(json.dumps({"results": {}, "config": {"limit": 10}}))
    body, _ = report(["calibrate", *sorted(folder.glob("samples_*"))])
    assert body["n"] == 20
    assert limited(body["warnings"]) == []


def test_the_gates_are_unchanged_by_the_warning(tmp_path):
    """A limited run is warned about, as an inspect-ai run that did not finish is: the gates
    read the rows given (a smoke test under --limit is a use of its own)."""
    folder = limited_folder(tmp_path, 10)
    body, _ = report(["calibrate", folder, "--max-brier", "1"])
    assert body["gate"]["passed"] is True and limited(body["warnings"])


def test_compare_says_it_of_the_side_that_was_limited(tmp_path):
    folder = limited_folder(tmp_path, 10)
    base = folder / f"samples_toy_mc_trivia_{STAMP}.jsonl"
    new = tmp_path / base.name  # the same rows, without the run's results file beside them
    shutil.copy(base, new)
    body, _ = report(["compare", base, new])
    assert limited(body["warnings"]) == [one_task(folder, "toy_mc_trivia", 10)]


def test_the_python_api_and_worker_processes_say_it_too(tmp_path):
    import calibcli
    from calibcli.io import read_calibration

    folder = limited_folder(tmp_path, 10)
    trivia = str(folder / f"samples_toy_mc_trivia_{STAMP}.jsonl")
    (said,) = limited(calibcli.read_predictions(trivia).warnings)
    for workers in (1, 2):
        data = read_calibration([trivia], workers=workers, block_size=4096)
        assert limited(data.warnings) == [said]


def test_a_summary_file_keeps_it(tmp_path):
    folder = limited_folder(tmp_path, 10)
    summary = tmp_path / "part.json"
    result = run(["summarize", folder / f"samples_toy_mc_trivia_{STAMP}.jsonl", "-o", summary])
    assert result.exit_code == 0, result.output
    body, _ = report(["calibrate", summary])
    (warning,) = limited(body["warnings"])
    assert "'toy_mc_trivia'" in warning


def test_several_runs_are_said_one_line_each(tmp_path):
    first = limited_folder(tmp_path, 10)
    later = "2026-11-30T09-00-00.000001"
    second = limited_folder(tmp_path / "b", 5, stamp=later)
    files = [first / f"samples_toy_mc_trivia_{STAMP}.jsonl"]
    files.append(second / f"samples_toy_mc_trivia_{later}.jsonl")
    body, _ = report(["calibrate", *files, "--all-runs"])
    warnings = limited(body["warnings"])
    assert [w.split(": ", 1)[0] for w in warnings] == [
        str(first / RESULTS),
        str(second / f"results_{later}.json"),
    ]
    assert "only 10 of" in warnings[0] and "only 5 of" in warnings[1]


@pytest.mark.skipif(not REALWORLD.is_dir(), reason="no ../shared/realworld")
def test_a_real_run_under_limit_20():
    """Qwen3-8B's negotiationtom run, published as it came: the harness ran each task on its
    first 20 documents; its results file says how many each task has."""
    stamp = "2026-07-08T18-15-33.115417"
    results = json.loads((REALWORLD / f"results_{stamp}.json").read_text())
    files = sorted(REALWORLD.glob(f"samples_*_{stamp}.jsonl"))
    body, _ = report(["calibrate", *files])
    read = [t for t in sorted(results["n-samples"]) if f"'{t}'" in limited(body["warnings"])[0]]
    assert len(read) == 2  # the intention task is generative: skipped, not named
    shown = ", ".join(
        f"'{t}' {results['n-samples'][t]['effective']} of {results['n-samples'][t]['original']:,}"
        for t in read
    )
    assert limited(body["warnings"]) == [
        f"{REALWORLD / f'results_{stamp}.json'}: lm-eval evaluated only a part of the documents "
        f"of 2 tasks read (--limit {results['config']['limit']:g}): {shown}: the figures are "
        "those of these parts, not of the whole tasks"
    ]
    assert body["n"] == 2 * results["config"]["limit"]


# --------------------------------------------------------------------------- inspect-ai


def inspect_part(path: Path) -> str:
    """The warning of an inspect-ai log of a limited run, from what the log itself records."""
    spec = json.loads((INSPECT / "toy_arithmetic_limit8.json").read_text())["eval"]
    dataset = spec["dataset"]
    return (
        f"{path}: the inspect-ai run evaluated only {len(dataset['sample_ids'])} of the "
        f"{dataset['samples']} samples of its dataset (limit {spec['config']['limit']}): the "
        "figures are those of this part, not of the whole dataset"
    )


@pytest.mark.parametrize("name", ["toy_arithmetic_limit8.json", "toy_arithmetic_limit8.eval"])
def test_an_inspect_run_under_limit_is_said(name):
    path = INSPECT / name
    body, stderr = report(["calibrate", path, "--scorer", "match"])
    assert body["n"] == 8
    said = inspect_part(path)
    assert [w for w in body["warnings"] if "inspect-ai run" in w] == [said]
    assert f"warning: {said}\n" in stderr


def test_the_whole_inspect_run_is_not_said():
    body, _ = report(["calibrate", INSPECT / "toy_arithmetic.json", "--scorer", "match"])
    assert body["n"] == 20 and not [w for w in body["warnings"] if "inspect-ai run" in w]


def test_an_inspect_log_json_loads_reads_says_it_too(tmp_path):
    """A byte-order mark sends the log to the whole-text reader instead of msgspec's."""
    path = tmp_path / "limited.json"
    path.write_bytes(b"\xef\xbb\xbf" + (INSPECT / "toy_arithmetic_limit8.json").read_bytes())
    body, _ = report(["calibrate", path, "--scorer", "match"])
    assert [w for w in body["warnings"] if "inspect-ai run" in w] == [inspect_part(path)]


@pytest.mark.parametrize(
    ("config", "how"),
    [({"limit": [2, 6]}, " (limit 2,6)"), ({"sample_id": [3, 5]}, " (sample_id)"), ({}, "")],
)
def test_how_an_inspect_run_chose_its_part_is_named(tmp_path, config, how):
    """inspect-ai's --limit 2,6 and --sample-id 3,5 take a range or a list of the samples."""
    log = json.loads((INSPECT / "toy_arithmetic_limit8.json").read_text())
    log["eval"]["config"].pop("limit")
    log["eval"]["config"].update(config)
    path = tmp_path / "part.json"
    path.write_text(json.dumps(log))
    body, _ = report(["calibrate", path, "--scorer", "match"])
    (warning,) = [w for w in body["warnings"] if "inspect-ai run" in w]
    assert f"only 8 of the 20 samples of its dataset{how}: the figures" in warning


def test_compare_and_the_python_api_say_it_of_an_inspect_run():
    import calibcli

    limited_log = INSPECT / "toy_arithmetic_limit8.json"
    said = inspect_part(limited_log)
    assert said in calibcli.read_predictions(str(limited_log), scorer="match").warnings
    body, _ = report(
        [
            "compare",
            INSPECT / "toy_arithmetic.json",
            limited_log,
            "--scorer",
            "match",
            "--allow-unmatched",
        ]
    )
    assert said in body["warnings"]


# --------------------------------------------------------------------------- cut short


def cut_folder(tmp_path: Path, keep: int) -> Path:
    """The fixture run with the trivia samples file cut after ``keep`` whole lines (a copy
    stopped short), its results file as the harness wrote it."""
    folder = tmp_path / "out"
    folder.mkdir()
    for task in TASKS:
        shutil.copy(FIXTURES / f"samples_{task}_{STAMP}.jsonl", folder)
    shutil.copy(FIXTURES / RESULTS, folder)
    trivia = folder / f"samples_toy_mc_trivia_{STAMP}.jsonl"
    trivia.write_text("".join(trivia.read_text().splitlines(True)[:keep]))
    return folder


def cut_said(folder: Path, keep: int) -> str:
    return (
        f"{folder / f'samples_toy_mc_trivia_{STAMP}.jsonl'}: holds {keep} rows of task "
        f"'toy_mc_trivia', but its run evaluated {documents('toy_mc_trivia')} documents "
        f"({RESULTS}): the file is cut short, and the figures are those of the rows it holds"
    )


def cut(warnings) -> list[str]:
    return [w for w in warnings if "cut short" in w]


def test_a_samples_file_cut_short_is_said(tmp_path):
    folder = cut_folder(tmp_path, 25)
    body, _ = report(["calibrate", folder])
    assert body["n"] == documents("toy_mc_science") + 25
    assert cut(body["warnings"]) == [cut_said(folder, 25)]
    assert limited(body["warnings"]) == []  # the run itself evaluated every document


def test_a_whole_samples_file_is_not_said(tmp_path):
    folder = cut_folder(tmp_path, documents("toy_mc_trivia"))
    for command in ("calibrate", "perplexity"):
        body, _ = report([command, folder])
        assert cut(body["warnings"]) == []


def test_every_reader_says_a_file_cut_short(tmp_path):
    import calibcli
    from calibcli.io import read_calibration

    folder = cut_folder(tmp_path, 25)
    trivia = str(folder / f"samples_toy_mc_trivia_{STAMP}.jsonl")
    said = cut_said(folder, 25)
    assert cut(calibcli.read_predictions(trivia).warnings) == [said]
    assert cut(read_calibration([trivia], workers=2, block_size=4096).warnings) == [said]
    whole = FIXTURES / f"samples_toy_mc_trivia_{STAMP}.jsonl"
    body, _ = report(["compare", whole, folder, "--allow-unmatched"])
    assert cut(body["warnings"]) == [said]


def test_a_range_of_a_file_is_not_counted_against_its_run(tmp_path):
    """summarize --part reads a range of a file: its rows are a part by design."""
    folder = cut_folder(tmp_path, documents("toy_mc_trivia"))
    trivia = folder / f"samples_toy_mc_trivia_{STAMP}.jsonl"
    part = tmp_path / "part.cbs"
    result = run(["summarize", trivia, "--part", "1/2", "-o", part])
    assert result.exit_code == 0, result.output
    body, _ = report(["calibrate", part])
    assert body["n"] < documents("toy_mc_trivia") and cut(body["warnings"]) == []


@pytest.mark.parametrize("suffix", [".gz", ".zst", ".xz", ".bz2"])
def test_a_compressed_run_folder_is_said_alike(tmp_path, suffix):
    """A run folder kept compressed (every file, the results file too): the same warning,
    naming the compressed results file."""
    from harness import pack

    folder = limited_folder(tmp_path, 10)
    for path in list(folder.iterdir()):
        path.with_name(path.name + suffix).write_bytes(pack(suffix, path.read_bytes()))
        path.unlink()
    body, _ = report(["calibrate", folder])
    assert body["n"] == 20
    science, trivia = documents("toy_mc_science"), documents("toy_mc_trivia")
    said = (
        f"{folder / RESULTS}{suffix}: lm-eval evaluated only a part of the documents of 2 tasks "
        f"read (--limit 10): 'toy_mc_science' 10 of {science}, 'toy_mc_trivia' 10 of {trivia}: "
        "the figures are those of these parts, not of the whole tasks"
    )
    assert limited(body["warnings"]) == [said]
