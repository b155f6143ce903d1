"""What an inspect-ai log, a HELM file and an OpenAI evals log say of themselves is held to.

- An inspect-ai log of a run that succeeded, holding fewer samples than its header says the
  run scored (``results.completed_samples``, else ``eval.dataset.sample_ids`` x epochs), is
  read with a warning naming the file, the samples it holds and those expected, as an lm-eval
  samples file cut short is: gates are decided as for that file (they do not fail closed).
- A HELM statistic given twice for one instance with different fields is refused (which one
  HELM meant cannot be told), one given twice alike is read once, and a sum or count written
  as a JSON string is refused: HELM writes numbers.
- A second match event of an OpenAI evals sample is named as what it is.

The files are the committed fixtures (tests/fixtures) cut or edited here; every count is
counted by hand from the fixtures' READMEs and their raw JSON."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
import zstandard
from harness import run

FIXTURES = Path(__file__).parent / "fixtures"
INSPECT = FIXTURES / "inspect_ai"
EVAL, LOG = INSPECT / "toy_arithmetic.eval", INSPECT / "toy_arithmetic.json"
LIMIT8 = INSPECT / "toy_arithmetic_limit8.json"
MMLU = FIXTURES / "helm" / "mmlu" / "per_instance_stats.json"
EVALS = FIXTURES / "openai_evals" / "toy-mc.jsonl"
CALIBRATE = ("calibrate", "--scorer", "match", "--json")


def eval_entries() -> dict[str, bytes]:
    """Every entry of the fixture's ``.eval`` zip, its zstd data (method 93) decoded here."""
    data, out = EVAL.read_bytes(), {}
    with zipfile.ZipFile(EVAL) as z:
        for info in z.infolist():
            at = info.header_offset  # local header: 30 bytes, the name, an extra field
            start = (
                at
                + 30
                + len(info.filename.encode())
                + int.from_bytes(data[at + 28 : at + 30], "little")
            )
            blob = data[start : start + info.compress_size]
            with zstandard.ZstdDecompressor().stream_reader(blob) as r:
                out[info.filename] = r.read()
    return out


def eval_without(tmp_path: Path, ids: range) -> Path:
    """The fixture's ``.eval`` log without the samples ``ids`` (its header as written)."""
    path = tmp_path / "miss.eval"
    gone = {f"samples/{i}_epoch_1.json" for i in ids}
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for name, data in eval_entries().items():
            if name not in gone:
                z.writestr(name, data)
    return path


def json_log(tmp_path: Path, keep: int, source: Path = LOG, name: str = "miss.json") -> Path:
    """A ``.json`` log holding the first ``keep`` samples of ``source``, its top level kept."""
    value = json.loads(source.read_text(encoding="utf-8"))
    value["samples"] = value["samples"][:keep]
    path = tmp_path / name
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


def cut_said(path: Path, held: int, scored: int, how: str) -> str:
    return (
        f"{path}: holds {held} samples, but its run scored {scored} ({how}): the log is cut "
        "short, and the figures are those of the samples it holds"
    )


def calibrate(*args, code: int = 0):
    result = run([*CALIBRATE, *args])
    assert result.exit_code == code, result.stderr
    return json.loads(result.stdout), result.stderr


def cut(warnings) -> list[str]:
    return [w for w in warnings if "cut short" in w]


# --------------------------------------------------------------------------- inspect-ai


def test_an_eval_log_missing_samples_is_said(tmp_path):
    """Samples 3, 4 and 5 of the 20 removed: 17 held, the header lists 20 ids x 1 epoch."""
    path = eval_without(tmp_path, range(3, 6))
    body, stderr = calibrate(path)
    said = cut_said(path, 17, 20, "20 samples x 1 epoch")
    assert body["n"] == 17
    assert cut(body["warnings"]) == [said]
    assert f"warning: {said}" in stderr.splitlines()


def test_a_json_log_cut_short_is_said_and_whole_logs_are_not(tmp_path):
    path = json_log(tmp_path, 15)
    body, stderr = calibrate(path)
    said = cut_said(path, 15, 20, "20 samples x 1 epoch")
    assert body["n"] == 15
    assert cut(body["warnings"]) == [said]
    assert f"warning: {said}" in stderr.splitlines()
    for whole in (EVAL, LOG, LIMIT8, INSPECT / "toy_arithmetic_limit8.eval"):
        assert cut(calibrate(whole)[0]["warnings"]) == []


def test_every_reader_says_a_log_cut_short(tmp_path):
    """The Python API and compare's reader by id say it as calibrate does."""
    import calibcli

    path = json_log(tmp_path, 15)
    said = cut_said(path, 15, 20, "20 samples x 1 epoch")
    assert cut(calibcli.read_predictions(str(path), scorer="match").warnings) == [said]
    result = run(["compare", "--scorer", "match", "--json", "-q", LOG, path, "--allow-unmatched"])
    assert result.exit_code == 0, result.stderr
    assert cut(json.loads(result.stdout)["warnings"]) == [said]


def test_epochs_count_in_the_samples_expected(tmp_path):
    """A run of 2 epochs whose log holds epoch 1's 20 samples and 10 of epoch 2's, without
    results.completed_samples: 30 held of 20 x 2 = 40."""
    value = json.loads(LOG.read_text(encoding="utf-8"))
    value["eval"]["config"]["epochs"] = 2
    del value["results"]["completed_samples"]
    again = [{**s, "epoch": 2} for s in value["samples"][:10]]
    value["samples"] = value["samples"] + again
    path = tmp_path / "epochs.json"
    path.write_text(json.dumps(value), encoding="utf-8")
    result = run([*CALIBRATE, path])
    body = json.loads(result.stdout)
    assert body["n"] == 30
    assert cut(body["warnings"]) == [cut_said(path, 30, 40, "20 samples x 2 epochs")]


def test_a_limited_or_failed_run_is_not_said_twice(tmp_path):
    """A --limit 8 run lists the 8 ids it ran: cut to 5, its own warning and this one. A run
    that did not succeed: its status warning alone, which says its samples may be a part of
    those it planned."""
    path = json_log(tmp_path, 5, LIMIT8)
    body, _ = calibrate(path)
    assert body["n"] == 5
    assert cut(body["warnings"]) == [cut_said(path, 5, 8, "8 samples x 1 epoch")]
    assert any("evaluated only 8 of the 20 samples" in w for w in body["warnings"])
    value = json.loads(LOG.read_text(encoding="utf-8"))
    value["samples"], value["status"] = value["samples"][:7], "cancelled"
    cancelled = tmp_path / "cancelled.json"
    cancelled.write_text(json.dumps(value), encoding="utf-8")
    body, _ = calibrate(cancelled)
    assert cut(body["warnings"]) == []
    assert any("status 'cancelled'" in w for w in body["warnings"])


def test_gates_are_decided_as_for_an_lm_eval_file_cut_short(tmp_path):
    """An lm-eval samples file cut short is a warning and its gates are decided on its rows
    (tests/test_limited_runs.py): the same here."""
    path = json_log(tmp_path, 15)
    result = run([*CALIBRATE, path, "--max-ece", "1"])
    assert result.exit_code == 0, result.stderr
    body = json.loads(result.stdout)
    assert body["gate"]["passed"] is True and len(cut(body["warnings"])) == 1


# --------------------------------------------------------------------------- HELM


def helm_file(tmp_path: Path, edit) -> Path:
    """The fixture with ``edit(entries)`` applied, written as HELM writes it (indent 2: the
    first entry starts on line 2)."""
    entries = json.loads(MMLU.read_text(encoding="utf-8"))
    edit(entries)
    folder = tmp_path / "run"
    folder.mkdir(parents=True)
    path = folder / "per_instance_stats.json"
    path.write_text(json.dumps(entries, indent=2), encoding="utf-8")
    return path


def stat_of(entry: dict, name: str) -> dict:
    (found,) = [
        s for s in entry["stats"] if s["name"]["name"] == name and not s["name"].get("perturbation")
    ]
    return found


def helm(path: Path, code: int):
    result = run(["calibrate", path, "--json", "-q"])
    assert result.exit_code == code, result.stderr
    return result


def test_a_statistic_given_twice_differently_is_refused_alike_read_once(tmp_path):
    """The fixture's 6 unperturbed entries: exact_match 1, 0, 1, 1, 0, 0 (accuracy 3/6);
    max_prob 0.8125, 0.46875, 0.90625, 0.59375, 0.375, 0.6875 (mean 3.84375 / 6). id100's
    exact_match (sum 1) given again with sum 0: the last one won (accuracy 2/6)."""
    path = helm_file(
        tmp_path, lambda e: e[0]["stats"].append({**stat_of(e[0], "exact_match"), "sum": 0})
    )
    result = helm(path, 2)
    assert result.stdout == ""
    assert result.stderr.splitlines()[-1] == (
        f"Error: {path}:2: id100: exact_match given twice, with different fields (stats[4] "
        "and stats[8]): which one HELM meant cannot be told"
    )
    alike = helm_file(
        tmp_path / "alike", lambda e: e[0]["stats"].append(stat_of(e[0], "exact_match"))
    )
    body = json.loads(helm(alike, 0).stdout)
    assert body["n"] == 6
    assert body["accuracy"] == 0.5
    assert body["mean_confidence"] == 0.640625


@pytest.mark.parametrize("field", ["sum", "count"])
def test_a_number_written_as_a_string_is_refused(tmp_path, field):
    """id100's max_prob sum 0.8125, count 1; "0.8" was read as 0.8."""
    value = {"sum": "0.8", "count": "1"}[field]

    def edit(entries):
        stat_of(entries[0], "max_prob")[field] = value

    path = helm_file(tmp_path, edit)
    result = helm(path, 2)
    assert result.stderr.splitlines()[-1] == (
        f'Error: {path}:2: max_prob.{field} "{value}" is a string, not a number'
    )


# --------------------------------------------------------------------------- OpenAI evals


def test_a_second_match_event_is_named(tmp_path):
    """The fixture's match of toy-mc.dev.0 (line 4) given again as line 11."""
    lines = EVALS.read_text(encoding="utf-8").splitlines()
    again = json.loads(lines[3])
    assert again["type"] == "match" and again["sample_id"] == "toy-mc.dev.0"
    path = tmp_path / "dup_match.jsonl"
    path.write_text("\n".join([*lines, json.dumps({**again, "event_id": 99})]) + "\n")
    for extra in ([], ["--all-runs"]):
        result = run(["calibrate", path, "--json", "-q", *extra])
        assert result.exit_code == 2, result.stderr
        assert result.stderr.splitlines()[-1] == (
            f"Error: {path}:11: a second match event for sample 'toy-mc.dev.0' (first at line 4)"
        )
    # a match with no sampling event before it, and none before: said as before
    path.write_text("\n".join(lines[:2] + lines[3:]) + "\n")
    result = run(["calibrate", path, "--json", "-q"])
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == (
        f"Error: {path}:3: no sampling event of sample 'toy-mc.dev.0' comes before its match event"
    )
