"""Tests of calibcli.formats: lm-eval, logprobs and native row conversion and detection.

The lm-eval fixtures in tests/fixtures/lm_eval/ were written by the real lm-evaluation-harness
(see the README there). Figures recomputed here from its samples files are compared with the
results file the harness wrote in the same run; the arithmetic (sums, softmax, argmax, word and
byte counts) is written out in the tests, independent of calibcli's code.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from calibcli.formats import (
    by_value,
    detect_format,
    lm_eval_choice_row,
    lm_eval_output_type,
    lm_eval_rolling_row,
    logprobs_row,
    task_from_filename,
)

FIXTURES = Path(__file__).parent / "fixtures" / "lm_eval"
MC_TASKS = ("toy_mc_science", "toy_mc_trivia")
ALL_TASKS = (*MC_TASKS, "toy_wikitext")


def samples_path(task: str) -> Path:
    (path,) = FIXTURES.glob(f"samples_{task}_*.jsonl")
    return path


def samples(task: str) -> list[dict]:
    with open(samples_path(task), encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def harness_results(task: str) -> dict:
    (path,) = FIXTURES.glob("results_*.json")
    return json.loads(path.read_text(encoding="utf-8"))["results"][task]


def choice_texts(task: str, doc: dict) -> list[str]:
    """The choices as the task YAML defines them (doc_to_choice), straight from the document."""
    return doc["choices"] if task == "toy_mc_science" else doc["options"]


def close(a: float, b: float, tol: float = 1e-9) -> bool:
    return abs(a - b) <= tol * max(1.0, abs(b))


def first_argmax(xs: list[float]) -> int:
    best = 0
    for i, x in enumerate(xs):
        if x > xs[best]:
            best = i
    return best


# --------------------------------------------------------------------------- fixtures themselves


def test_fixtures_are_real_harness_output():
    (results_file,) = FIXTURES.glob("results_*.json")
    results = json.loads(results_file.read_text(encoding="utf-8"))
    assert results["lm_eval_version"].startswith("0.4.")
    date = results_file.name.removeprefix("results_").removesuffix(".json")
    for task in ALL_TASKS:
        assert samples_path(task).name == f"samples_{task}_{date}.jsonl"
        assert len(samples(task)) == results["n-samples"][task]["effective"]
    total = sum(p.stat().st_size for p in FIXTURES.rglob("*") if p.is_file())
    assert total < 300_000


# --------------------------------------------------------------------------- multiple choice


@pytest.mark.parametrize(
    ("task", "mc_norm", "metric"),
    [
        ("toy_mc_science", "none", "acc"),
        ("toy_mc_science", "chars", "acc_norm"),
        ("toy_mc_science", "bytes", "acc_bytes"),
        ("toy_mc_trivia", "none", "acc"),
        ("toy_mc_trivia", "chars", "acc_norm"),
    ],
)
def test_accuracy_matches_harness_results(task, mc_norm, metric):
    rows = samples(task)
    correct = [lm_eval_choice_row(row, mc_norm=mc_norm)[1] for row in rows]
    accuracy = sum(correct) / len(correct)
    expected = harness_results(task)[f"{metric},none"]
    assert close(accuracy, expected)
    assert 0 < accuracy < 1


@pytest.mark.parametrize(
    ("task", "mc_norm"),
    [
        ("toy_mc_science", "none"),
        ("toy_mc_science", "chars"),
        ("toy_mc_science", "bytes"),
        ("toy_mc_trivia", "none"),
        ("toy_mc_trivia", "chars"),  # the trivia task does not compute acc_bytes
    ],
)
def test_confidence_is_max_softmax_of_the_choices(task, mc_norm):
    confidences = []
    for row in samples(task):
        choices = choice_texts(task, row["doc"])
        lls = [float(resp[0]) for resp in row["filtered_resps"][: len(choices)]]
        if mc_norm == "chars":
            lls = [ll / len(c) for ll, c in zip(lls, choices, strict=True)]
        elif mc_norm == "bytes":
            lls = [ll / len(c.encode("utf-8")) for ll, c in zip(lls, choices, strict=True)]
        probs = [math.exp(x) / sum(math.exp(y) for y in lls) for x in lls]
        confidence, correct = lm_eval_choice_row(row, mc_norm=mc_norm)
        assert confidence == pytest.approx(max(probs), rel=1e-12)
        # The harness's own verdict, and it agrees with the argmax of the same scores.
        gold = row["doc"]["label"] if task == "toy_mc_science" else choices.index(row["target"])
        assert correct == (first_argmax(lls) == gold)
        confidences.append(confidence)
    assert len(set(confidences)) == len(confidences)  # they vary


def test_mutual_info_rows_use_only_the_conditional_half():
    row = samples("toy_mc_trivia")[0]
    assert len(row["filtered_resps"]) == 6 and "acc_mutual_info" in row
    lls = [float(resp[0]) for resp in row["filtered_resps"][:3]]
    expected = max(math.exp(x) for x in lls) / sum(math.exp(x) for x in lls)
    assert lm_eval_choice_row(row)[0] == pytest.approx(expected, rel=1e-12)


def test_harness_brier_is_the_multiclass_one_not_calibcli_top_label():
    # Documents why the logged brier_score is never read: the harness averages the squared error
    # over every class's probability. Recomputed here from filtered_resps, never parsed.
    rows = samples("toy_mc_science")
    total = 0.0
    for row in rows:
        lls = [float(resp[0]) for resp in row["filtered_resps"]]
        probs = [math.exp(x) / sum(math.exp(y) for y in lls) for x in lls]
        gold = row["doc"]["label"]
        total += sum((p - (i == gold)) ** 2 for i, p in enumerate(probs))
    assert close(total / len(rows), harness_results("toy_mc_science")["brier_score,none"])
    assert isinstance(rows[0]["brier_score"][1], str)


def mc_row(lls, *, conts=None, acc=1.0, **extra):
    conts = conts or [f" choice {i}" for i in range(len(lls))]
    return {
        "doc_id": 0,
        "arguments": {f"gen_args_{i}": {"arg_0": "Q:", "arg_1": c} for i, c in enumerate(conts)},
        "filtered_resps": [[str(ll), "False"] for ll in lls],
        "acc": acc,
        **extra,
    }


def test_choice_row_is_stable_for_large_loglikelihoods():
    # exp(-1000) underflows to 0: a naive softmax would divide 0 by 0.
    confidence, correct = lm_eval_choice_row(mc_row([-1000.0, -1001.0, -1003.0]))
    expected = 1 / (1 + math.exp(-1) + math.exp(-3))
    assert confidence == pytest.approx(expected, rel=1e-15)
    assert correct is True


def test_choice_row_accepts_numbers_and_argument_lists():
    row = {
        "doc_id": 3,
        "arguments": [["Q:", " ab"], ["Q:", " abcd"]],
        "filtered_resps": [[-2.0, False], [-3.0, True]],
        "acc": 0,
        "acc_norm": True,
    }
    assert lm_eval_choice_row(row) == (pytest.approx(1 / (1 + math.exp(-1))), False)
    # per character: -2/2 = -1 and -3/4 = -0.75 (the delimiter " " is not counted)
    confidence, correct = lm_eval_choice_row(row, mc_norm="chars")
    assert confidence == pytest.approx(1 / (1 + math.exp(-0.25)))
    assert correct is True


def test_bytes_normalisation_counts_utf8_bytes():
    row = mc_row([-4.0, -4.0], conts=[" ab", " é"], acc_bytes=0.0)  # 2 chars / 2 bytes vs 1 / 2
    confidence, correct = lm_eval_choice_row(row, mc_norm="bytes")
    assert confidence == pytest.approx(0.5)
    assert correct is False
    chars = lm_eval_choice_row({**row, "acc_norm": 1.0}, mc_norm="chars")[0]
    assert chars == pytest.approx(1 / (1 + math.exp(-2.0)))


def test_delimiter_is_kept_when_not_every_choice_starts_with_it():
    row = mc_row([-3.0, -3.0], conts=[" ab", "abc"], acc_norm=1.0)
    # lengths 3 and 3: equal scores
    assert lm_eval_choice_row(row, mc_norm="chars")[0] == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("row", "kwargs", "message"),
    [
        (mc_row([-1.0, -2.0]), {"mc_norm": "bytes"}, "no 'acc_bytes'"),
        (mc_row([-1.0, -2.0]), {"mc_norm": "tokens"}, "mc_norm must be one of"),
        (mc_row([-1.0]), {}, "1 scored continuation"),
        (mc_row([-1.0, -2.0, -3.0], acc_mutual_info=0.0), {}, "even number"),
        (mc_row([-1.0, -2.0], acc=0.5), {}, "'acc' is a number (0.5), expected 0 or 1"),
        (mc_row([-1.0, -2.0], acc="1"), {}, "'acc' is a string"),
        (mc_row([-1.0, float("nan")]), {}, "filtered_resps[1] loglikelihood is NaN"),
        (mc_row([-1.0, float("inf")]), {}, "filtered_resps[1] loglikelihood is +inf"),
        (mc_row([-math.inf, -math.inf]), {}, "every choice has loglikelihood -inf"),
        ({**mc_row([-1.0, -2.0]), "filtered_resps": "x"}, {}, "'filtered_resps' is a string"),
        (
            {**mc_row([-1.0, -2.0]), "filtered_resps": [["False", "False"], ["-1", "False"]]},
            {},
            "filtered_resps[0] loglikelihood is a string ('False')",
        ),
        (
            mc_row([-1.0, -2.0], conts=[" a", " "], acc_norm=1.0),
            {"mc_norm": "chars"},
            "choice 1 is empty",
        ),
        (
            {**mc_row([-1.0, -2.0], acc_norm=1.0), "arguments": None},
            {"mc_norm": "chars"},
            "'arguments' is null",
        ),
    ],
)
def test_choice_row_errors(row, kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        lm_eval_choice_row(row, **kwargs)


def test_rows_of_the_other_kind_say_which_command_reads_them():
    with pytest.raises(ValueError, match=r"loglikelihood_rolling row .* read it with `perplexity`"):
        lm_eval_choice_row(samples("toy_wikitext")[0])
    with pytest.raises(ValueError, match="multiple-choice row: read it with `calibrate`"):
        lm_eval_rolling_row(samples("toy_mc_science")[0])


def test_multiple_input_rows_cannot_be_length_normalised():
    # winogrande-style: the choices are in the contexts, the continuation is shared.
    row = mc_row([-1.0, -2.0], acc_norm=1.0)
    row["arguments"] = {
        "gen_args_0": {"arg_0": "The cup fell because the cup", "arg_1": " was full."},
        "gen_args_1": {"arg_0": "The cup fell because the table", "arg_1": " was full."},
    }
    assert lm_eval_choice_row(row)[0] == pytest.approx(1 / (1 + math.exp(-1)))
    with pytest.raises(ValueError, match="multiple-input task"):
        lm_eval_choice_row(row, mc_norm="chars")


# --------------------------------------------------------------------------- rolling


def test_rolling_figures_match_harness_results():
    rows = samples("toy_wikitext")
    nlls, words, nbytes = [], [], []
    for row in rows:
        nll, w, b = lm_eval_rolling_row(row)
        page = row["doc"]["page"]
        # independent per-row reading: the logged response and the harness's own counting rules
        assert nll == -float(row["filtered_resps"][0])
        assert w == len(re.split(r"\s+", page))
        assert b == len(page.encode("utf-8"))
        nlls.append(nll)
        words.append(w)
        nbytes.append(b)
    expected = harness_results("toy_wikitext")
    total_nll = math.fsum(nlls)
    assert close(math.exp(total_nll / sum(words)), expected["word_perplexity,none"])
    assert close(math.exp(total_nll / sum(nbytes)), expected["byte_perplexity,none"])
    assert close(total_nll / sum(nbytes) / math.log(2), expected["bits_per_byte,none"])
    # pooled, never a mean of per-document perplexities
    mean_of_docs = sum(math.exp(n / w) for n, w in zip(nlls, words, strict=True)) / len(rows)
    assert not close(mean_of_docs, expected["word_perplexity,none"], 1e-3)


def test_rolling_row_with_only_some_metrics():
    assert lm_eval_rolling_row({"bits_per_byte": [-7.0, 10]}) == (7.0, None, 10)
    assert lm_eval_rolling_row({"word_perplexity": [-7.0, 3]}) == (7.0, 3, None)
    assert lm_eval_rolling_row({"word_perplexity": ["-7.5", "3"]}) == (7.5, 3, None)
    nll, _, _ = lm_eval_rolling_row({"byte_perplexity": [-math.inf, 4]})
    assert nll == math.inf
    nll, _, _ = lm_eval_rolling_row({"byte_perplexity": [0.0, 4]})
    assert math.copysign(1.0, nll) == 1.0


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"doc_id": 0, "filtered_resps": ["-1.0"]}, "not a loglikelihood_rolling row"),
        ({"word_perplexity": [-1.0, 2], "bits_per_byte": [-1.5, 9]}, "differs from"),
        ({"byte_perplexity": [-1.0, 9], "bits_per_byte": [-1.0, 8]}, "counts 9 bytes"),
        ({"word_perplexity": [0.5, 2]}, "greater than 0"),
        ({"word_perplexity": [-1.0, -2]}, "expected a non-negative integer"),
        ({"word_perplexity": [-1.0, 2.5]}, "expected a non-negative integer"),
        ({"word_perplexity": [-1.0]}, "expected a [loglikelihood, count] pair"),
        ({"word_perplexity": ["nan", 2]}, "word_perplexity loglikelihood is NaN"),
    ],
)
def test_rolling_row_errors(row, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        lm_eval_rolling_row(row)


def test_output_type_of_each_fixture():
    assert lm_eval_output_type(samples("toy_mc_science")[0]) == "multiple_choice"
    assert lm_eval_output_type(samples("toy_mc_trivia")[0]) == "multiple_choice"
    assert lm_eval_output_type(samples("toy_wikitext")[0]) == "loglikelihood_rolling"
    generation = {"doc_id": 0, "filtered_resps": ["Paris"], "resps": [["Paris"]]}
    with pytest.raises(ValueError, match="output_type multiple_choice or loglikelihood_rolling"):
        lm_eval_output_type(generation)


# --------------------------------------------------------------------------- file names


@pytest.mark.parametrize(
    ("path", "task"),
    [
        ("samples_arc_easy_2024-06-01T12-30-05.123456.jsonl", "arc_easy"),
        (
            "out/m/samples_mmlu_high_school_physics_2024-06-01T12-30-05.jsonl.gz",
            "mmlu_high_school_physics",
        ),
        ("samples_year_2024_2024-06-01T12-30-05.5.jsonl", "year_2024"),
        ("samples_mytask.jsonl", "mytask"),
        ("predictions.jsonl", "predictions"),
        (Path("a") / "samples_hellaswag_2025-01-31T23-59-59.000001.jsonl", "hellaswag"),
    ],
)
def test_task_from_filename(path, task):
    assert task_from_filename(path) == task


@pytest.mark.parametrize("task", ALL_TASKS)
def test_task_from_fixture_filenames(task):
    assert task_from_filename(samples_path(task)) == task


# --------------------------------------------------------------------------- logprobs


def test_logprobs_nulls_are_skipped_and_counted():
    nll, tokens, nulls, sentinels = logprobs_row({"logprobs": [None, -0.1, -2.3, None, -0.5]})
    assert nll == math.fsum([0.1, 2.3, 0.5])
    assert (tokens, nulls, sentinels) == (3, 2, 0)


def test_logprobs_minus_inf_is_a_zero_probability_token():
    assert logprobs_row({"logprobs": [-0.5, -math.inf]}) == (math.inf, 2, 0, 0)


def test_logprobs_sentinels_are_counted_and_summed():
    nll, tokens, nulls, sentinels = logprobs_row({"logprobs": [-9999, -1e4, -9998.5, -1.0]})
    assert nll == 9999 + 10000 + 9998.5 + 1.0
    assert (tokens, nulls, sentinels) == (4, 0, 2)


def test_logprobs_edge_values():
    nll, tokens, _, _ = logprobs_row({"logprobs": [0.0, -0.0]})
    assert nll == 0.0 and math.copysign(1.0, nll) == 1.0 and tokens == 2
    assert logprobs_row({"logprobs": []}) == (0.0, 0, 0, 0)
    assert logprobs_row({"logprobs": [None]}) == (0.0, 0, 1, 0)
    assert logprobs_row({"lp": [-1, -2]}, field="lp") == (3.0, 2, 0, 0)
    # fsum: no rounding drift over many small terms
    nll = logprobs_row({"logprobs": [-0.1] * 10})[0]
    assert nll == 1.0


def test_logprobs_dotted_field_reaches_api_responses():
    row = {"choices": [{"logprobs": {"token_logprobs": [None, -1.25, -0.75]}}]}
    assert logprobs_row(row, field="choices.0.logprobs.token_logprobs") == (2.0, 2, 1, 0)


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"logprobs": [-0.1, -0.2, 0.3]}, "logprobs[2] = 0.3 is greater than 0"),
        ({"logprobs": [-0.1, float("nan")]}, "logprobs[1] is NaN"),
        ({"logprobs": [math.inf]}, "logprobs[0] = inf is greater than 0"),
        ({"logprobs": [-0.1, "-0.2"]}, "logprobs[1] is a string ('-0.2'), expected a number"),
        ({"logprobs": [True]}, "logprobs[0] is a boolean (true)"),
        ({"logprobs": [[-0.1]]}, "logprobs[0] is a list"),
        ({"logprobs": 3}, "'logprobs' is a number (3), expected a list"),
        ({"tokens": [-0.1]}, "missing field 'logprobs'"),
    ],
)
def test_logprobs_errors_name_the_position(row, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        logprobs_row(row)


# --------------------------------------------------------------------------- detection


@pytest.mark.parametrize(
    ("row", "kwargs", "fmt"),
    [
        ({"confidence": 0.7, "correct": True}, {}, "jsonl"),
        ({"nll": 12.5, "tokens": 4}, {}, "jsonl"),
        ({"p": 0.7, "y": 1}, {"confidence_field": "p", "correct_field": "y"}, "jsonl"),
        ({"loss": 3.0, "n": 2}, {"nll_field": "loss", "tokens_field": "n"}, "jsonl"),
        ({"confidence": 0.7}, {}, "jsonl"),  # incomplete: the native reader names what is missing
        ({"logprobs": [None, -0.1]}, {}, "logprobs"),
        ({"token_logprobs": [-0.1]}, {"logprobs_field": "token_logprobs"}, "logprobs"),
        ({"r": {"lp": [-0.1]}}, {"logprobs_field": "r.lp"}, "logprobs"),
        ({"nll": 1.0, "tokens": 2, "logprobs": [-0.5, -0.5]}, {}, "jsonl"),
    ],
)
def test_detect_format(row, kwargs, fmt):
    assert detect_format(row, **kwargs) == fmt


@pytest.mark.parametrize("task", ALL_TASKS)
def test_detect_lm_eval_fixtures(task):
    assert detect_format(samples(task)[0]) == "lm-eval"


@pytest.mark.parametrize(
    "row",
    [{"foo": 1, "bar": 2}, {}, {"logprobs": 3}, {"confidence_score": 0.5}],
)
def test_undetectable_format_is_a_clear_error(row):
    with pytest.raises(ValueError, match="cannot detect the input format") as info:
        detect_format(row)
    for key in row:
        assert repr(key) in str(info.value)
    assert "--format" in str(info.value)


def test_detect_rejects_a_non_object_row():
    with pytest.raises(ValueError, match="the first row is a list"):
        detect_format([0.5, True])


# --------------------------------------------------------------------------- --by


def test_by_value_reaches_nested_fields_of_harness_rows():
    trivia = samples("toy_mc_trivia")
    assert [by_value(r, "doc.meta.difficulty") for r in trivia[:3]] == ["easy", "hard", "easy"]
    assert by_value(trivia[12], "doc.meta.round") == 2
    assert by_value(samples("toy_mc_science")[1], "doc.subject") == "chemistry"
    assert by_value(samples("toy_mc_science")[0], "doc.choices.1") == "About 5 µm across."
    assert by_value({"a.b": 1, "a": {"b": 2}}, "a.b") == 1
    assert by_value({"g": None}, "g") is None


@pytest.mark.parametrize(
    ("row", "path", "message"),
    [
        ({"doc": {"subject": "x"}}, "doc.topic", "missing field 'doc.topic': no 'topic' in 'doc'"),
        ({"a": 1}, "task", "missing field 'task': no 'task'"),
        ({"doc": {"subject": "x"}}, "doc.subject.x", "no 'x' in 'doc.subject' (a string"),
        ({"doc": {"l": [1]}}, "doc.l.3", "no '3' in 'doc.l'"),
        ({"doc": {"subject": "x"}}, "doc", "field 'doc' is an object, not a value to group by"),
    ],
)
def test_by_value_errors(row, path, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        by_value(row, path)
