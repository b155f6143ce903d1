"""compare's cases where a figure, a group or a verdict could be wrong without a word: each
pinned to what the rows say, worked out here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from harness import make_rows, run, write_jsonl

B = "200"


def test_an_id_in_another_by_group_on_new_is_an_error_naming_its_line(tmp_path):
    # BASE puts ids 0-49 in "x" and 50-99 in "y"; NEW agrees except for id 60, which it puts
    # in "z": grouping by BASE's groups alone would report NEW's row under "y" unsaid
    rows = make_rows(100, seed=3)
    base = [{**r, "g": "x" if r["id"] < 50 else "y"} for r in rows]
    new = [{**r, "g": "z" if r["id"] == 60 else b["g"]} for r, b in zip(rows, base, strict=True)]
    new = new[::-1]  # NEW's order differs: id 60 is on line 40
    base_path = write_jsonl(tmp_path / "base.jsonl", base)
    new_path = write_jsonl(tmp_path / "new.jsonl", new)
    out = tmp_path / "report.json"
    result = run(["compare", base_path, new_path, "--by", "g", "-q", "-o", out, "--bootstrap", B])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output
    assert lines[0].startswith(f"Error: {new_path}:40: --by g is 'z' here but 'y' for id 60 in")
    assert not out.exists()


def test_new_rows_without_a_partner_may_be_in_any_group(tmp_path):
    # the rows BASE lacks are left out (and counted), whatever their group
    rows = make_rows(100, seed=4)
    base = [{**r, "g": "x" if r["id"] % 2 else "y"} for r in rows]
    new = [*base, {"id": 1000, "confidence": 0.5, "correct": True, "g": "w"}]
    base_path = write_jsonl(tmp_path / "base.jsonl", base)
    new_path = write_jsonl(tmp_path / "new.jsonl", new)
    result = run(["compare", base_path, new_path, "--by", "g", "--json", "-q", "--bootstrap", B])
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert body["unmatched_new"] == 1 and sorted(body["groups"]) == ["x", "y"]
    assert [body["groups"][g]["n_base"] for g in ("x", "y")] == [50, 50]


def test_a_base_group_without_a_matched_row_fails_gate_each_closed(tmp_path):
    # NEW lacks every row of BASE's group "y": 40 of 1,000 rows, under the 5% that needs
    # --allow-unmatched, so the group would vanish and --gate-each pass on "x" alone
    rows = make_rows(1000, seed=5)
    base = [{**r, "g": "y" if r["id"] < 40 else "x"} for r in rows]
    new = [r for r in base if r["g"] == "x"]
    base_path = write_jsonl(tmp_path / "base.jsonl", base)
    new_path = write_jsonl(tmp_path / "new.jsonl", new)
    args = ["compare", base_path, new_path, "--by", "g", "--json", "-q", "--bootstrap", B]
    result = run([*args, "--gate-each", "--max-increase", "ece=1"])
    assert result.exit_code == 1, result.output
    body = json.loads(result.stdout)
    assert body["matched"] == 960 and body["unmatched_base"] == 40
    assert body["groups"]["x"]["n_base"] == 960
    assert body["groups"]["y"]["n_base"] == 0 and body["groups"]["y"]["figures"] is None
    checks = {c.get("group"): c for c in body["gate"]["checks"]}
    assert checks[None]["passed"] and checks["x"]["passed"]  # NEW is BASE on these rows
    assert checks["y"]["passed"] is False and checks["y"]["reason"] == "no rows to compare"
    assert body["gate"]["failed_groups"] == ["y"]
    assert "group 'y': none of its BASE rows has a partner on NEW" in result.stderr


def test_a_group_only_new_holds_is_named(tmp_path):
    # NEW evaluated a task BASE did not: its 30 rows have no partner, so --allow-unmatched
    # compares the rest; the task is named rather than merely counted among the rows left out
    rows = make_rows(200, seed=7)
    base = [{**r, "g": "x" if r["id"] % 2 else "y"} for r in rows]
    extra = [{"id": 1000 + i, "confidence": 0.9, "correct": False, "g": "w"} for i in range(30)]
    base_path = write_jsonl(tmp_path / "base.jsonl", base)
    new_path = write_jsonl(tmp_path / "new.jsonl", [*base, *extra])
    args = ["compare", base_path, new_path, "--by", "g", "--json", "-q", "--bootstrap", B]
    result = run([*args, "--allow-unmatched"])
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert body["unmatched_new"] == 30 and sorted(body["groups"]) == ["x", "y"]
    said = "group 'w': only NEW holds it (none of its rows has a partner on BASE)"
    assert said in result.stderr
    assert any(said in w for w in body["warnings"])
    # the API's arrays say it too
    import calibcli

    def side(rows):
        return (
            [r["confidence"] for r in rows],
            [r["correct"] for r in rows],
            [r["id"] for r in rows],
            [r["g"] for r in rows],
        )

    report = calibcli.compare(side(base), side([*base, *extra]), allow_unmatched=True)
    assert any(said in w for w in json.loads(report.to_json())["warnings"])


LM_EVAL = Path(__file__).resolve().parent / "fixtures" / "lm_eval"


def _lm_eval_copy(folder: Path, task: str, *, reverse: bool = False) -> Path:
    """The fixture samples of ``task`` as ``folder/preds.jsonl`` (a name that names no task)."""
    source = next(LM_EVAL.glob(f"samples_{task}_*.jsonl"))
    lines = source.read_text(encoding="utf-8").splitlines(keepends=True)
    folder.mkdir()
    path = folder / "preds.jsonl"
    path.write_text("".join(lines[::-1] if reverse else lines), encoding="utf-8")
    return path


def _doc_hashes(path: Path) -> dict:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return {r["doc_id"]: r["doc_hash"] for r in rows}


def test_lm_eval_files_of_two_tasks_under_one_name_are_named(tmp_path):
    # both files are preds.jsonl, so both rows' task is "preds" and doc_id 0 of the science
    # task matches doc_id 0 of the trivia task: other questions, paired without a word
    base = _lm_eval_copy(tmp_path / "base", "toy_mc_science")
    new = _lm_eval_copy(tmp_path / "new", "toy_mc_trivia")
    base_docs, new_docs = _doc_hashes(base), _doc_hashes(new)
    shared = sorted(set(base_docs) & set(new_docs))
    other = [d for d in shared if base_docs[d] != new_docs[d]]
    assert len(other) == len(shared) > 1  # every shared doc_id is another question
    args = ["compare", base, new, "--allow-unmatched", "--json", "-q", "--bootstrap", B]
    result = run(args)
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert body["matched"] == len(shared)
    want = (
        f"{new}:1: id preds/0 holds another document here than in {base} (its doc_hash "
        f"differs), as do {len(other) - 1} more of the {len(shared)} matched ids: are the two "
        "files of the same task and dataset?"
    )
    assert want in body["warnings"]
    assert f"warning: {want}" in result.stderr


def test_lm_eval_files_of_one_task_under_one_name_are_not_named(tmp_path):
    base = _lm_eval_copy(tmp_path / "base", "toy_mc_science")
    new = _lm_eval_copy(tmp_path / "new", "toy_mc_science", reverse=True)
    result = run(["compare", base, new, "--json", "-q", "--bootstrap", B])
    assert result.exit_code == 0, result.output
    assert "doc_hash" not in result.stderr
    assert not any("doc_hash" in w for w in json.loads(result.stdout).get("warnings", []))


INSPECT = Path(__file__).resolve().parent / "fixtures" / "inspect_ai"


def test_inspect_logs_of_two_tasks_are_named(tmp_path):
    # another task's log numbers its samples 1, 2, ... too: its sample 1 asks another question
    log = json.loads((INSPECT / "toy_arithmetic.json").read_text(encoding="utf-8"))
    samples = log["samples"]
    other = [s["id"] for s in samples if s["epoch"] == 1][2:]  # ids 1 and 2 ask the same
    for s in samples:
        if s["id"] in other:
            s["input"] = f"Name a colour ({s['id']})"
    new = tmp_path / "other_task.json"
    new.write_text(json.dumps(log), encoding="utf-8")
    base = INSPECT / "toy_arithmetic.json"
    first = samples.index(next(s for s in samples if s["id"] == other[0]))
    matched = len(samples)
    result = run(["compare", base, new, "--scorer", "match", "--json", "-q", "--bootstrap", B])
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert body["matched"] == matched
    changed = sum(1 for s in samples if s["id"] in other)
    want = (
        f"{new}:samples[{first}] (id {other[0]}, epoch {samples[first]['epoch']}): id "
        f"{other[0]} (epoch {samples[first]['epoch']}) holds another sample here than in {base} "
        f"(its input or target differs), as do {changed - 1} more of the {matched} matched ids: "
        "are the two files of the same task and dataset?"
    )
    assert want in body["warnings"]


def test_one_inspect_log_as_json_and_as_eval_is_not_named(tmp_path):
    base, new = INSPECT / "toy_arithmetic.json", INSPECT / "toy_arithmetic.eval"
    result = run(["compare", base, new, "--scorer", "match", "--json", "-q", "--bootstrap", B])
    assert result.exit_code == 0, result.output
    assert "another sample" not in result.stderr


def test_api_arrays_with_groups_on_new_are_checked_against_base():
    import numpy as np
    import pytest

    import calibcli
    from calibcli.errors import InputError

    rows = make_rows(100, seed=6)
    conf = np.array([r["confidence"] for r in rows])
    corr = [r["correct"] for r in rows]
    ids = list(range(100))
    base_groups = ["x" if i < 50 else "y" for i in ids]
    new_groups = ["x" if i < 50 else ("z" if i == 70 else "y") for i in ids]
    # NEW's groups were ignored: id 70 counted in BASE's "y" though NEW puts it in "z"
    with pytest.raises(InputError) as err:
        calibcli.compare((conf, corr, ids, base_groups), (conf, corr, ids, new_groups))
    assert "index 70: id 70 is in group 'z' but in 'y' on base" in str(err.value)
    # groups on NEW alone were ignored too: the report had no groups
    with pytest.raises(InputError, match="new has groups and base none"):
        calibcli.compare((conf, corr, ids), (conf, corr, ids, new_groups))
    # the same groups on both sides compare as BASE's alone
    both = calibcli.compare((conf, corr, ids, base_groups), (conf**2, corr, ids, base_groups))
    alone = calibcli.compare((conf, corr, ids, base_groups), (conf**2, corr, ids))
    assert both.to_json() == alone.to_json()
    assert {k: g["n_base"] for k, g in json.loads(both.to_json())["groups"].items()} == {
        "x": 50,
        "y": 50,
    }


@pytest.mark.parametrize("flags", [[], ["--unpaired"]])
def test_standard_input_as_both_sides_is_refused(flags):
    # BASE reads standard input to its end, so NEW would find it empty: no row matched, or
    # with --unpaired an empty side compared without an error
    rows = "".join(
        json.dumps({"id": i, "confidence": 0.5, "correct": i % 2 == 0}) + "\n" for i in range(40)
    )
    result = run(["compare", "-", "-", *flags], input=rows)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == (
        "Error: <stdin>: standard input is given as both BASE and NEW: it can be read once; "
        "save one of them to a file\n"
    )


def test_a_figure_given_two_margins_is_refused(tmp_path):
    # the last margin would win without a word: a looser one given after a CI's own (a
    # Makefile's flags, then a job's) would loosen the gate
    rows = make_rows(60, seed=4)
    base = write_jsonl(tmp_path / "base.jsonl", rows)
    new = write_jsonl(tmp_path / "new.jsonl", rows)
    out = tmp_path / "report.json"
    gates = ["--max-increase", "ece=0.01", "--max-increase", "ece=0.5"]
    result = run(["compare", base, new, *gates, "-o", out, "-q", "--bootstrap", B])
    assert result.exit_code == 2
    assert result.stderr == (
        "Error: --max-increase ece is given twice (ece=0.01, then ece=0.5): give each figure once\n"
    )
    assert not out.exists()
    # the same margin twice, or two figures, say one thing each
    for gates in (
        ["--max-increase", "ece=0.5", "--max-increase", "ece=0.5"],
        ["--max-increase", "ece=0.5", "--max-increase", "brier=0.5"],
    ):
        result = run(["compare", base, new, *gates, "-o", out, "-q", "--bootstrap", B])
        assert result.exit_code == 0, result.output


def _api_and_command(base, new, *flags, **reading):
    """compare's JSON for two files, by the command and by calibcli.compare given the rows
    read by read_predictions."""
    import calibcli

    args = ["compare", base, new, *flags, "--json", "-q", "--bootstrap", B]
    result = run(args)
    assert result.exit_code == 0, result.output
    sides = [calibcli.read_predictions(path, **reading) for path in (base, new)]
    options = {"allow_unmatched": True} if "--allow-unmatched" in flags else {}
    api = calibcli.compare(*sides, bootstrap=int(B), **options)
    return json.loads(result.stdout), json.loads(api.to_json())


def test_api_rows_of_two_lm_eval_tasks_are_named_as_the_command_names_them(tmp_path):
    # rows read by read_predictions keep what each asks: the function says what the command
    # says of the two files (it said nothing: only the raw rows held the doc_hash)
    base = _lm_eval_copy(tmp_path / "base", "toy_mc_science")
    new = _lm_eval_copy(tmp_path / "new", "toy_mc_trivia")
    command, api = _api_and_command(base, new, "--allow-unmatched")
    assert any("(its doc_hash differs)" in w for w in command["warnings"])
    assert api["warnings"] == command["warnings"]
    assert api == command


def test_api_rows_of_two_inspect_tasks_are_named_as_the_command_names_them(tmp_path):
    log = json.loads((INSPECT / "toy_arithmetic.json").read_text(encoding="utf-8"))
    for s in log["samples"]:
        if s["id"] != 1:
            s["input"] = f"Name a colour ({s['id']})"
    new = tmp_path / "other_task.json"
    new.write_text(json.dumps(log), encoding="utf-8")
    base = INSPECT / "toy_arithmetic.json"
    command, api = _api_and_command(base, new, "--scorer", "match", scorer="match")
    assert any("(its input or target differs)" in w for w in command["warnings"])
    assert api == command


def test_api_rows_of_one_task_are_not_named(tmp_path):
    base = _lm_eval_copy(tmp_path / "base", "toy_mc_science")
    new = _lm_eval_copy(tmp_path / "new", "toy_mc_science", reverse=True)
    command, api = _api_and_command(base, new)
    assert api == command
    assert not any("doc_hash" in w for w in api.get("warnings", []))


def test_an_infinite_nll_is_said_once_per_side_not_as_unexplained_nulls(tmp_path):
    # NEW says 1.0 on a wrong answer: its NLL is infinite, and with it the difference, which
    # has no interval; the nulls are explained by one warning, pooled and per group
    rows = make_rows(60, seed=6)
    base = [{**r, "g": "x" if r["id"] % 2 else "y"} for r in rows]
    new = [dict(r) for r in base]
    wrong = next(i for i, r in enumerate(new) if not r["correct"] and r["g"] == "x")
    new[wrong]["confidence"] = 1.0
    base_path = write_jsonl(tmp_path / "base.jsonl", base)
    new_path = write_jsonl(tmp_path / "new.jsonl", new)
    result = run(["compare", base_path, new_path, "--by", "g", "--json", "-q", "--bootstrap", B])
    assert result.exit_code == 0, result.output
    said = (
        "a confidence of exactly 1 on a wrong answer (or 0 on a right one); written as null, as "
        "is the difference it leaves infinite or undefined, and that difference has no interval "
        "(the resamples that miss such a row estimate another quantity)"
    )
    report = json.loads(result.stdout)
    assert report["warnings"] == [
        f"nll is infinite on NEW: {said}",
        f"group 'x': nll is infinite on NEW: {said}",
    ]
    assert report["figures"]["nll"]["new"] is None
    assert report["figures"]["nll"]["difference"] is None
    assert report["figures"]["nll"]["base"] is not None
    assert report["non_finite"]["figures.nll.new"] == "inf"
    assert report["groups"]["y"]["figures"]["nll"]["new"] is not None
    assert "not finite numbers" not in result.stderr


def test_a_group_named_like_a_figure_keeps_its_own_nulls_said():
    # a note on the figure nll explains the nulls in nll's objects (figures.nll.new), pooled
    # and per group, but not a null of another figure in a group that happens to be named nll
    from calibcli.reports.report import Note, finish

    inf, nan = float("inf"), float("nan")
    body = {
        "figures": {"nll": {"base": 0.5, "new": inf}},
        "groups": {
            "nll": {"ece": nan, "figures": {"nll": {"new": inf}}},
            "law": {"ece": nan},
        },
    }
    report = finish(body, [Note("INFINITE", "nll is infinite on NEW", explains=("nll",))], [])
    assert report.warnings[1:] == [
        "2 value(s) are not finite numbers and were written as null: groups.nll.ece, groups.law.ece"
    ]


@pytest.mark.parametrize("flags", [[], ["--unpaired"]])
def test_the_files_a_folder_skips_are_named(tmp_path, flags):
    # a run folder holds its results file and a perplexity task beside the multiple-choice
    # ones: compare skips both, and says so as calibrate does
    sides = []
    for side in ("base", "new"):
        folder = tmp_path / side
        folder.mkdir()
        for source in LM_EVAL.glob("*_2026-11-29T18-50-52.260809.json*"):
            (folder / source.name).write_bytes(source.read_bytes())
        sides.append(folder)
    result = run(["compare", *sides, "--json", "-q", "--bootstrap", B, *flags])
    assert result.exit_code == 0, result.stderr
    body = json.loads(result.stdout)
    said: list[str] = []
    for folder in sides:
        got = run(["calibrate", folder, "--json", "-q"])
        skipped = [w for w in json.loads(got.stdout)["warnings"] if "skipped" in w]
        assert len(skipped) == 2  # the results file and the perplexity task
        said += skipped
    assert [w for w in body["warnings"] if "skipped" in w] == said
