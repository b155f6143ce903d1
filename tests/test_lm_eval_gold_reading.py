"""How lm-eval multiple-choice rows are read where the harness's logs leave two readings open.

The gold choice. The harness takes ``doc_to_target`` as an index when it is an int and as a
choice's text when it is a str, and its samples file logs the target as a string either way; so
a digit target of a task whose choices are digits ("2" of ``["1", ..., "5"]``) is choice 2 by
index and choice 1 by text. The row's ``acc`` (argmax of the loglikelihoods == gold, the first
on ties) tells them apart where it agrees with one reading only; the other rows of the file
decide the rest (one task logs its targets one way); a row that agrees with neither reading,
or a file whose rows never tell, stops a fit that needs the gold choice.

The choice lengths. ``acc_norm`` / ``acc_bytes`` divide each loglikelihood by the length of the
choice text, which the samples log as the continuation ``target_delimiter + choice``; the
delimiter is the task's (its results file's ``configs[task]``), " " without a results file.

References by hand with numpy: softmax over the (length-normalised) loglikelihoods, the Brier
score, and the temperature from scipy's bounded minimiser of the mean NLL of the gold choice.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from harness import run
from scipy.optimize import minimize_scalar
from scipy.special import logsumexp

from calibcli.formats import FileGold, GoldReadingError, lm_eval_gold

STAMP = "2026-01-02T03-04-05.678901"
DIGITS = ["1", "2", "3", "4", "5"]


def mc_row(doc_id, lls, choices, target, *, delimiter=" ", gold=None):
    """A samples row as the harness logs it; acc, acc_norm and acc_bytes computed from
    ``gold`` (default: ``target`` as an index) as the harness computes them."""
    gold = int(target) if gold is None else gold
    lls = np.asarray(lls, np.float64)
    chars = np.array([len(c) for c in choices], np.float64)
    nbytes = np.array([len(c.encode("utf-8")) for c in choices], np.float64)
    return {
        "doc_id": doc_id,
        "doc": {"q": doc_id},
        "target": target,
        "arguments": {
            f"gen_args_{i}": {"arg_0": "Q:", "arg_1": delimiter + c} for i, c in enumerate(choices)
        },
        "resps": [[[str(x), "False"]] for x in lls.tolist()],
        "filtered_resps": [[str(x), "False"] for x in lls.tolist()],
        "filter": "none",
        "metrics": ["acc", "acc_norm", "acc_bytes"],
        "acc": float(np.argmax(lls) == gold),
        "acc_norm": float(np.argmax(lls / chars) == gold),
        "acc_bytes": float(np.argmax(lls / nbytes) == gold),
    }


def write_run(folder, task, rows, *, delimiter=None):
    """samples_<task>_<stamp>.jsonl, and beside it the run's results file recording the task's
    target_delimiter (none when ``delimiter`` is None)."""
    folder.mkdir(parents=True, exist_ok=True)
    samples = folder / f"samples_{task}_{STAMP}.jsonl"
    samples.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    if delimiter is not None:
        config = {"task": task, "output_type": "multiple_choice", "target_delimiter": delimiter}
        results = {
            "results": {task: {"alias": task}},
            "configs": {task: config},
            "n-samples": {task: {"original": len(rows), "effective": len(rows)}},
            "config": {"model": "toy", "limit": None},
        }
        (folder / f"results_{STAMP}.json").write_text(json.dumps(results), encoding="utf-8")
    return samples


def json_out(args):
    result = run([*args, "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def ref_temperature(values, gold):
    """T minimising the mean gold NLL of softmax(values / T), on log T in [1e-4, 1e4]."""

    def nll(log_t):
        scaled = values / math.exp(log_t)
        return float(np.mean(logsumexp(scaled, axis=1) - scaled[np.arange(len(gold)), gold]))

    res = minimize_scalar(
        nll, bounds=(math.log(1e-4), math.log(1e4)), method="bounded", options={"xatol": 1e-12}
    )
    return math.exp(res.x)


def fitted_temperature(*args):
    return json_out(["fit", *args, "--method", "temperature"])["params"]["temperature"]


# --------------------------------------------------------------------------- the gold choice


def digit_rows(n, seed, *, as_text):
    """Rows of a five-choice task whose choices are the digits 1 to 5; the target is logged as
    the gold choice's text ("2" for choice 1) or as its index ("1" for choice 1)."""
    rng = np.random.default_rng(seed)
    rows, values, gold = [], [], []
    for i in range(n):
        g = int(rng.integers(5))
        lls = rng.normal(-3.0, 1.0, 5)
        lls[g] += 1.2
        lls = np.minimum(lls, -0.01)  # log-probabilities
        target = DIGITS[g] if as_text else str(g)
        rows.append(mc_row(i, lls, DIGITS, target, gold=g))
        values.append([float(r[0]) for r in rows[-1]["filtered_resps"]])
        gold.append(g)
    return rows, np.array(values), np.array(gold)


@pytest.mark.parametrize("as_text", [True, False], ids=["target-text", "target-index"])
def test_a_digit_target_of_digit_choices_is_read_the_way_acc_agrees_with(tmp_path, as_text):
    rows, values, gold = digit_rows(120, 3, as_text=as_text)
    samples = write_run(tmp_path, "numchoice", rows)
    t = fitted_temperature(samples)
    assert t == pytest.approx(ref_temperature(values, gold), rel=1e-6)
    assert 0.3 < t < 3  # not a boundary optimum of a fit to the wrong gold choices


def test_the_row_s_verdict_picks_the_reading():
    lls = [-1.0, -2.0, -3.0, -4.0, -5.0]  # the top choice is choice 0, text "1"
    right = mc_row(0, lls, DIGITS, "1", gold=0)  # index 1, text choice 0: acc says text
    assert right["acc"] == 1.0
    assert lm_eval_gold(right, lls, True) == 0
    index_only = mc_row(1, lls, DIGITS, "0", gold=0)  # no choice's text is "0"
    assert lm_eval_gold(index_only, lls, True) == 0
    # target "1" scored wrong: index 1 ("2") agrees, text "1" (choice 0, the top) does not
    assert lm_eval_gold({**right, "acc": 0.0}, lls, False) == 1
    # target "3" scored wrong with the top choice 0: index 3 and text choice 2 both agree
    both = mc_row(2, lls, DIGITS, "3", gold=3)
    with pytest.raises(GoldReadingError, match="agrees with both"):
        lm_eval_gold(both, lls, False)
    assert lm_eval_gold(both, lls, False, reading="index") == 3
    assert lm_eval_gold(both, lls, False, reading="text") == 2
    # target "3" scored right with the top choice 0: neither reading agrees
    with pytest.raises(GoldReadingError, match="agrees with neither"):
        lm_eval_gold(both, lls, True)


def test_rows_the_verdict_leaves_open_take_the_reading_the_file_tells():
    lls = [-1.0, -2.0, -3.0, -4.0, -5.0]
    reader = FileGold()
    assert reader.add(mc_row(0, lls, DIGITS, "1", gold=0), lls, True, 0) == 0  # tells text
    assert reader.add(mc_row(1, lls, DIGITS, "3", gold=2), lls, False, 1) == -1  # waits
    assert reader.add(mc_row(2, lls, DIGITS, "4", gold=3), lls, False, 2) == -1
    assert reader.settle() == ({1: 2, 2: 3}, None)
    unsure = FileGold()
    assert unsure.add(mc_row(0, lls, DIGITS, "3", gold=2), lls, False, 0) == -1
    settled, why = unsure.settle()
    assert settled == {} and "no row of it tells which" in why
    assert unsure.add(mc_row(1, lls, DIGITS, "0", gold=0), lls, True, 1) == 0  # tells index
    assert unsure.add(mc_row(2, lls, DIGITS, "1", gold=0), lls, True, 2) == 0  # tells text
    settled, why = unsure.settle()
    assert settled == {} and "its other rows tell both readings (1 index, 1 text)" in why


def test_the_file_s_reading_settles_the_rows_scored_wrong_under_both(tmp_path):
    """Rows scored wrong whose top choice is neither reading's take the file's reading: the
    text, which the other rows tell."""
    rows, values, gold = digit_rows(120, 5, as_text=True)
    top = values.argmax(axis=1)
    index = np.array([int(r["target"]) for r in rows])
    open_rows = (gold != top) & (index < 5) & (index != top)
    assert 10 < open_rows.sum() < len(rows) - 10  # some wait, many tell
    samples = write_run(tmp_path, "numchoice", rows)
    assert fitted_temperature(samples) == pytest.approx(ref_temperature(values, gold), rel=1e-6)


def test_a_file_whose_rows_never_tell_the_reading_stops_the_fit(tmp_path):
    lls = [-1.0, -2.0, -3.0, -4.0, -5.0]  # top choice 0 ("1"); targets "2" to "4", all wrong
    rows = [mc_row(i, lls, DIGITS, DIGITS[1 + i % 3], gold=1 + i % 3) for i in range(9)]
    samples = write_run(tmp_path, "numchoice", rows)
    for args in (
        ["fit", samples, "--method", "temperature", "--json"],
        ["calibrate", samples, "--recalibrate", "temperature", "--folds", "3", "--json"],
    ):
        result = run(args)
        assert result.exit_code == 2, result.stderr
        errors = [line for line in result.stderr.splitlines() if line.startswith("Error: ")]
        assert len(errors) == 1 and f"{samples}:1:" in errors[0], result.stderr
        assert "as 9 rows of the file are; no row of it tells which" in errors[0]
        assert result.stdout == ""
    # figures that need no gold choice are read as ever
    assert json_out(["calibrate", samples])["n"] == 9


def test_a_row_its_verdict_contradicts_under_both_readings_stops_the_fit(tmp_path):
    rows, _, _ = digit_rows(20, 7, as_text=True)
    lls = [-1.0, -2.0, -3.0, -4.0, -5.0]
    rows[4] = mc_row(4, lls, DIGITS, "3", gold=0)  # scored right, yet choice 0 is neither
    samples = write_run(tmp_path, "numchoice", rows)
    result = run(["fit", samples, "--method", "temperature", "--json"])
    assert result.exit_code == 2
    assert f"{samples}:5:" in result.stderr and "agrees with neither" in result.stderr


# --------------------------------------------------------------------------- the delimiter


def spaced_rows(n, seed):
    """Rows of a task with target_delimiter "": every choice starts with its own space, some
    hold two-byte characters."""
    rng = np.random.default_rng(seed)
    words = ["a", "bcdefghij", "ééé", "klm", "nopqrstu", "vé", "wxyz12"]
    rows = []
    for i in range(n):
        k = int(rng.integers(2, 5))
        choices = [" " + words[j] for j in rng.choice(len(words), k, replace=False)]
        g = int(rng.integers(k))
        per_char = rng.uniform(0.3, 1.5, k)
        per_char[g] *= 0.6  # the gold choice is likelier per character
        lls = np.round(-per_char * np.array([len(c) for c in choices]), 6)
        rows.append(mc_row(i, lls, choices, str(g), delimiter=""))
    return rows


def by_hand(rows, mc_norm, *, strip):
    """Mean confidence and Brier score: max softmax of each row's loglikelihoods over the
    lengths of its choices (the continuations, less one leading space when ``strip``)."""
    conf, right = [], []
    for row in rows:
        lls = np.array([float(r[0]) for r in row["filtered_resps"]])
        conts = [row["arguments"][f"gen_args_{i}"]["arg_1"] for i in range(len(lls))]
        if strip:
            conts = [c[1:] for c in conts]
        size = [len(c) if mc_norm == "chars" else len(c.encode("utf-8")) for c in conts]
        scores = lls / np.array(size, np.float64)
        p = np.exp(scores - scores.max())
        conf.append(p.max() / p.sum())
        right.append(row["acc_norm" if mc_norm == "chars" else "acc_bytes"])
    conf, right = np.array(conf), np.array(right)
    return conf.mean(), np.mean((conf - right) ** 2)


@pytest.mark.parametrize("mc_norm", ["chars", "bytes"])
def test_length_normalisation_keeps_the_space_of_a_task_whose_delimiter_is_empty(tmp_path, mc_norm):
    rows = spaced_rows(60, 11)
    samples = write_run(tmp_path / "run", "toy_delim", rows, delimiter="")
    conf, brier = by_hand(rows, mc_norm, strip=False)
    assert by_hand(rows, mc_norm, strip=True)[0] != pytest.approx(conf, abs=1e-3)
    for source in (samples, tmp_path / "run"):
        got = json_out(["calibrate", source, "--mc-norm", mc_norm])
        assert got["n"] == 60
        assert got["mean_confidence"] == pytest.approx(conf, rel=1e-12)
        assert got["brier"] == pytest.approx(brier, rel=1e-12)


def test_without_a_results_file_the_delimiter_is_a_space(tmp_path):
    rows = spaced_rows(60, 11)
    samples = write_run(tmp_path, "toy_delim", rows)
    conf, brier = by_hand(rows, "chars", strip=True)
    got = json_out(["calibrate", samples, "--mc-norm", "chars"])
    assert got["mean_confidence"] == pytest.approx(conf, rel=1e-12)
    assert got["brier"] == pytest.approx(brier, rel=1e-12)


def test_the_column_path_takes_the_task_s_delimiter(tmp_path, monkeypatch):
    """A file past the typed path's smallest block is read by the column functions, which
    take the same lengths."""
    from calibcli.formats import lm_eval_columns

    calls = []
    for name in ("choice_columns", "choice_number_columns"):
        original = getattr(lm_eval_columns, name)

        def counted(rows, mc_norm, delimiter=" ", original=original):
            calls.append(delimiter)
            return original(rows, mc_norm, delimiter)

        monkeypatch.setattr(lm_eval_columns, name, counted)
    rows = spaced_rows(600, 13)
    samples = write_run(tmp_path, "toy_delim", rows, delimiter="")
    assert samples.stat().st_size > 64 << 10
    conf, brier = by_hand(rows, "chars", strip=False)
    got = json_out(["calibrate", samples, "--mc-norm", "chars"])
    assert calls and set(calls) == {""}
    assert got["mean_confidence"] == pytest.approx(conf, rel=1e-12)
    assert got["brier"] == pytest.approx(brier, rel=1e-12)


def test_temperature_over_the_choices_takes_the_task_s_delimiter(tmp_path):
    rows = spaced_rows(80, 17)
    samples = write_run(tmp_path, "toy_delim", rows, delimiter="")
    width = max(len(r["filtered_resps"]) for r in rows)
    values = np.full((len(rows), width), -np.inf)
    for r, row in enumerate(rows):
        lls = np.array([float(x[0]) for x in row["filtered_resps"]])
        conts = [row["arguments"][f"gen_args_{i}"]["arg_1"] for i in range(len(lls))]
        values[r, : len(lls)] = lls / np.array([len(c) for c in conts], np.float64)
    gold = np.array([int(row["target"]) for row in rows])
    t = fitted_temperature(samples, "--mc-norm", "chars")
    assert t == pytest.approx(ref_temperature(values, gold), rel=1e-6)
    assert 0.05 < t < 20  # an optimum inside the range, where the lengths tell


# ------------------------------------------------------------- a delimiter no results file records

ASSUMED = "no results file of its run records the task's target_delimiter"


@pytest.mark.parametrize("mc_norm", ["chars", "bytes"])
def test_a_delimiter_taken_without_a_record_is_said(tmp_path, mc_norm):
    """The default is taken as before (the figures by hand, one space off each choice), and the
    warning names the file: a task that sets its own delimiter would read otherwise."""
    rows = spaced_rows(40, 19)
    samples = write_run(tmp_path, "toy_delim", rows)
    conf, _ = by_hand(rows, mc_norm, strip=True)
    got = json_out(["calibrate", samples, "--mc-norm", mc_norm])
    assert got["mean_confidence"] == pytest.approx(conf, rel=1e-12)
    said = [w for w in got["warnings"] if ASSUMED in w]
    assert len(said) == 1 and said[0].startswith(f"{samples}: ")
    assert f"--mc-norm {mc_norm} takes the harness's default, a space" in said[0]
    result = run(["compare", samples, samples, "--mc-norm", mc_norm, "-q", "--json"])
    assert result.exit_code == 0, result.stderr
    assert sum(ASSUMED in w for w in json.loads(result.stdout)["warnings"]) == 1


def test_standard_input_has_no_results_file(tmp_path):
    rows = spaced_rows(20, 23)
    text = "".join(json.dumps(r) + "\n" for r in rows)
    result = run(["calibrate", "-", "--mc-norm", "chars", "--json", "-q"], input=text)
    assert result.exit_code == 0, result.stderr
    assert [w for w in json.loads(result.stdout)["warnings"] if ASSUMED in w] == [
        f"<stdin>: {ASSUMED}; --mc-norm chars takes the harness's default, a space, off each "
        "choice's text (keep the samples file beside its run's results_<timestamp>.json)"
    ]


def test_a_results_file_that_records_no_delimiter_for_the_task_is_said(tmp_path):
    rows = spaced_rows(20, 29)
    samples = write_run(tmp_path, "toy_delim", rows, delimiter=" ")
    results = tmp_path / f"results_{STAMP}.json"
    record = json.loads(results.read_text(encoding="utf-8"))
    del record["configs"]["toy_delim"]["target_delimiter"]
    results.write_text(json.dumps(record), encoding="utf-8")
    got = json_out(["calibrate", samples, "--mc-norm", "chars"])
    assert sum(ASSUMED in w for w in got["warnings"]) == 1


@pytest.mark.parametrize("args", [["--mc-norm", "none"], ["--mc-norm", "chars"]])
def test_nothing_is_said_where_no_delimiter_is_assumed(tmp_path, args):
    """Without length normalisation the delimiter is not used; with a results file recording
    it (a space, as here), it is not assumed."""
    rows = spaced_rows(20, 31)
    recorded = " " if args[1] == "chars" else None
    samples = write_run(tmp_path, "toy_delim", rows, delimiter=recorded)
    got = json_out(["calibrate", samples, *args])
    assert not [w for w in got["warnings"] if ASSUMED in w]
