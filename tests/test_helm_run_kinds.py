"""The kinds of HELM run calibcli reads, and as what (tests/helm_requests.py writes the entries).

HELM's ``BasicGenerationMetric`` writes ``logprob``, ``num_perplexity_tokens`` and
``num_bytes`` for every generation request (``compute_language_modeling_metrics``), where they
score the model's own output: the letter of a multiple-choice answer, a completion. Only a
``language_modeling`` run (``LanguageModelingMetric``) scores a text, so ``perplexity`` reads no
other: the adapter method of ``run_spec.json`` (or of the run folder's name) says which, and a
file read without them says it by its statistics (an answer's ``max_prob`` and
``exact_match``; a completion's tokens all generated). A model that returns no log-probabilities
gets ``logprob`` 0 everywhere, so ``max_prob`` exp(0) = 1: HELM computes no calibration metric
for such a run (``compute_calibration_metrics``: "logprobs were not available"), and calibcli
refuses it. A run folder given whole is read for its ``per_instance_stats.json``; HELM's
published run names carry ``groups=`` (and ``eval_split=test``), which name no other questions.
The figures expected are computed here with numpy from the values written."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from harness import run
from helm_requests import answer_entry, completion_entry, text_entry, write_run

MMLU = "mmlu:subject=anatomy,method=multiple_choice_joint,model=openai_gpt2"
INSTRUCT = "self_instruct:num_respondents=1,model=openai_gpt-4-0613"
WIKI = "wikitext_103:model=openai_gpt2"
PUBLISHED = (
    "mmlu:subject=anatomy,method=multiple_choice_joint,model=openai_gpt2,"
    "eval_split=test,groups=mmlu_anatomy"
)
LOCAL = (
    "mmlu:subject=anatomy,method=multiple_choice_joint,eval_split=test,model=eleutherai_pythia-1b"
)


def answers(n, seed, shift=0.0):
    """(logprobs, outcomes) of ``n`` answers: each probability uniform in [0.3, 0.99), right
    with that probability less ``shift``."""
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.3, 0.99, n)
    right = rng.uniform(0.0, 1.0, n) < p - shift
    return np.log(p), right


def answer_run(folder, n, seed, shift=0.0, **kw):
    logprobs, right = answers(n, seed, shift)
    entries = [
        answer_entry(i, float(lp), bool(y))
        for i, (lp, y) in enumerate(zip(logprobs, right, strict=True))
    ]
    return write_run(folder, entries, **kw), np.exp(logprobs), right


def ece(confidence, right, bins=10):
    """ECE over ``bins`` equal-width bins (no confidence here falls on an edge)."""
    k = np.minimum((confidence * bins).astype(int), bins - 1)
    total = sum(
        (k == b).sum() * abs(confidence[k == b].mean() - right[k == b].mean())
        for b in range(bins)
        if (k == b).any()
    )
    return total / len(confidence)


def body(args, code=0):
    result = run([*map(str, args), "--json", "-q"])
    assert result.exit_code == code, result.stderr
    return json.loads(result.stdout), result.stderr


def refused(args):
    result = run([*map(str, args), "-q"])
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    return result.stderr


# perplexity reads language-modelling runs alone


def test_a_generation_run_without_logprobs_gives_no_perplexity(tmp_path):
    # HELM Instruct's self_instruct of a chat model: no references, every logprob 0.0
    path = write_run(tmp_path / INSTRUCT, [completion_entry(i, 0.0, 120) for i in range(100)])
    said = refused(["perplexity", path, "--max-perplexity", "1.5", "--min-rows", "50"])
    assert f"{path}: no log-probabilities: none of the 100 entries' 'logprob' is below 0" in said
    out = tmp_path / "run.cbs"
    said = refused(["summarize", path, "--kind", "auto", "-o", out])
    assert "no log-probabilities" in said and not out.exists()


@pytest.mark.parametrize("spec", [True, False])
def test_a_generation_run_s_logprobs_are_of_its_own_output(tmp_path, spec):
    # a model with logprobs: each completion's tokens scored, every one of them generated; the
    # run spec names the method, a copy without it is told by its figures alike
    tokens = [80 + 7 * i for i in range(60)]
    entries = [completion_entry(i, -0.5 * t, t) for i, t in enumerate(tokens)]
    folder = tmp_path / (INSTRUCT if spec else "copied")
    path = write_run(folder, entries, method="generation" if spec else None)
    said = refused(["perplexity", path, "--max-perplexity", "2"])
    assert f"{path}: every entry's 'logprob' scores tokens the model generated" in said


@pytest.mark.parametrize("where", ["run_spec.json", "the run folder's name", "entries"])
def test_a_multiple_choice_run_gives_no_perplexity(tmp_path, where):
    # BasicGenerationMetric's logprob of the answer letter, one token
    folder = tmp_path / ("copied" if where == "entries" else MMLU)
    method = "multiple_choice_joint" if where == "run_spec.json" else None
    path, confidence, right = answer_run(folder, 80, 1, method=method, compact=True)
    said = refused(["perplexity", path, "--max-perplexity", "2"])
    if where == "entries":
        assert f"{path}:2: 'max_prob' and 'exact_match' beside 'logprob'" in said
    else:
        assert f"{path}:2: a HELM run of adapter method 'multiple_choice_joint' ({where})" in said
    assert "read it with `calibrate`" in said
    report, _ = body(["calibrate", path])
    assert report["n"] == 80 and report["accuracy"] == right.mean()
    assert report["brier"] == pytest.approx(np.mean((confidence - right) ** 2), rel=1e-12)


def test_a_language_modelling_run_is_read(tmp_path):
    docs = [(-(40.0 + 3 * i), 20 + i, 90 + 4 * i) for i in range(30)]
    entries = [text_entry(i, *doc) for i, doc in enumerate(docs)]
    path = write_run(tmp_path / WIKI, entries, method="language_modeling", side=True)
    report, _ = body(["perplexity", path])
    nll = -math.fsum(lp for lp, _, _ in docs)
    tokens = sum(t for _, t, _ in docs)
    nbytes = sum(b for _, _, b in docs)
    assert (report["sequences"], report["total_tokens"], report["total_bytes"]) == (
        30,
        tokens,
        nbytes,
    )
    assert report["perplexity"] == pytest.approx(math.exp(nll / tokens), rel=1e-12)
    assert report["bits_per_byte"] == pytest.approx(nll / nbytes / math.log(2), rel=1e-12)
    # the run folder given whole reads the same
    assert body(["perplexity", path.parent])[0]["perplexity"] == report["perplexity"]


# a model without log-probabilities


def test_a_model_without_logprobs_is_refused(tmp_path):
    # a chat API: logprob 0.0 for every answer, so max_prob exp(0) = 1 and 97% right
    rng = np.random.default_rng(7)
    entries = [answer_entry(i, 0.0, rng.uniform() < 0.97) for i in range(200)]
    path = write_run(tmp_path / MMLU, entries, method="multiple_choice_joint")
    said = refused(["calibrate", path, "--max-brier", "0.05", "--max-smece", "0.05"])
    assert f"{path}: no log-probabilities: none of the 200 entries' 'logprob' is below 0" in said
    assert "(every answer's 'max_prob' is then exp(0) = 1)" in said
    assert "HELM computes no calibration metric for such a run" in said
    assert "no log-probabilities" in refused(
        ["fit", path, "--method", "platt", "-o", tmp_path / "c"]
    )
    text = write_run(tmp_path / WIKI, [text_entry(i, 0.0, 20, 80) for i in range(10)])
    assert "no log-probabilities" in refused(["perplexity", text])


def test_one_certain_answer_among_others_is_read(tmp_path):
    logprobs, right = answers(50, 3)
    logprobs[7], right[7] = 0.0, True
    entries = [
        answer_entry(i, float(lp), bool(y))
        for i, (lp, y) in enumerate(zip(logprobs, right, strict=True))
    ]
    path = write_run(tmp_path / MMLU, entries, method="multiple_choice_joint")
    report, _ = body(["calibrate", path])
    confidence = np.exp(logprobs)
    assert report["n"] == 50 and report["mean_confidence"] == pytest.approx(confidence.mean())
    assert report["brier"] == pytest.approx(np.mean((confidence - right) ** 2), rel=1e-12)


# a run folder given whole


def test_a_run_folder_given_whole_reads_its_statistics(tmp_path):
    path, confidence, right = answer_run(
        tmp_path / MMLU, 120, 4, method="multiple_choice_joint", side=True
    )
    report, stderr = body(["calibrate", path.parent])
    assert report["n"] == 120 and report["ece"] == pytest.approx(ece(confidence, right))
    assert report["brier"] == pytest.approx(np.mean((confidence - right) ** 2), rel=1e-12)
    assert "run_spec.json" not in stderr and "stats.json" not in stderr.replace(path.name, "")


def test_a_helm_run_folder_without_its_statistics_is_refused(tmp_path):
    path, _, _ = answer_run(tmp_path / MMLU, 10, 5, method="multiple_choice_joint", side=True)
    path.unlink()
    said = refused(["calibrate", path.parent])
    assert "a HELM run folder without its per_instance_stats.json" in said


def test_files_of_helm_s_names_in_another_folder_are_read(tmp_path):
    folder = tmp_path / "rows"
    folder.mkdir()
    rows = [{"confidence": 0.25 + 0.125 * (i % 6), "correct": i % 3 == 0} for i in range(24)]
    (folder / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[:12]))
    (folder / "stats.json").write_text(json.dumps(rows[12:]))
    report, _ = body(["calibrate", folder])
    confidence = np.array([r["confidence"] for r in rows])
    right = np.array([r["correct"] for r in rows])
    assert report["n"] == 24
    assert report["brier"] == pytest.approx(np.mean((confidence - right) ** 2), rel=1e-12)


# a published run and a local run of one scenario


@pytest.mark.parametrize("local", [LOCAL, LOCAL.replace(",eval_split=test", "")])
def test_a_published_run_and_a_local_run_ask_the_same_questions(tmp_path, local):
    base, base_c, base_y = answer_run(
        tmp_path / "official" / PUBLISHED, 150, 11, method="multiple_choice_joint", side=True
    )
    new, new_c, new_y = answer_run(
        tmp_path / "local" / local, 150, 12, shift=0.2, method="multiple_choice_joint", side=True
    )
    report, _ = body(["compare", base.parent, new.parent, "--max-increase", "ece=0.5"])
    assert report["matched"] == 150 and report["gate"]["passed"]
    assert not [w for w in report["warnings"] if "different tasks" in w]
    ece_base, ece_new = ece(base_c, base_y), ece(new_c, new_y)
    assert report["figures"]["ece"]["base"] == pytest.approx(ece_base, rel=1e-12)
    assert report["figures"]["ece"]["difference"] == pytest.approx(ece_new - ece_base, rel=1e-9)


def test_the_validation_and_the_test_split_are_other_questions(tmp_path):
    base, _, _ = answer_run(tmp_path / "a" / PUBLISHED, 40, 1)
    new, _, _ = answer_run(tmp_path / "b" / LOCAL.replace("=test", "=valid"), 40, 2)
    result = run(["compare", base, new, "--max-increase", "ece=0.5", "--json", "-q"])
    assert result.exit_code == 1
    assert [w for w in json.loads(result.stdout)["warnings"] if "different tasks" in w]


@pytest.mark.parametrize(
    ("scenario", "questions"),
    [
        (
            "mmlu:subject=anatomy,method=multiple_choice_joint,eval_split=test,groups=mmlu_anatomy",
            "mmlu:subject=anatomy",
        ),
        (
            "mmlu:subject=anatomy,eval_split=valid,groups=mmlu_anatomy",
            "mmlu:subject=anatomy,eval_split=valid",
        ),
        ("image2struct:subset=latex,num_trials=5", "image2struct:subset=latex"),
    ],
)
def test_what_labels_a_run_names_no_questions(scenario, questions):
    from calibcli.io.helm_run import helm_questions

    assert helm_questions(scenario) == questions
