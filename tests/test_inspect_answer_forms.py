"""inspect-ai answer lines in the forms the multiple_choice solver grades (``ANSWER: b``,
``(B)``, ``**B**``, ``$B$``): the confidence is the probability of the token carrying the letter;
and ``--inspect-confidence auto`` reading some samples by their answer letter and others by the
whole completion says so, and fails every gate closed, also through summary files."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import pytest
from harness import run

from calibcli.formats.inspect_ai import answer_index

BASE = Path(__file__).parent / "fixtures" / "inspect_ai_schema" / "toy_mc.json"
REASONING = [("Let", -0.5), (" me", -0.3), (" think", -0.4), (".", -0.2), ("\n", -0.05)]
ANSWER = [("ANSWER", -0.01), (":", -0.001)]
REMEDY = "give --inspect-confidence answer-token or sequence"
# how the warning names mixed_samples()' log: six samples have the answer line, four do not
COUNTED = "mixed.json: 6 of 10 samples answer-token, 4 sequence"


def sample(ident, tokens, right):
    """An inspect-ai multiple-choice sample whose completion is ``tokens`` ((text, logprob)
    pairs), scored right or wrong by its one scorer."""
    content = [
        {"token": t, "logprob": lp, "bytes": list(t.encode()), "top_logprobs": []}
        for t, lp in tokens
    ]
    text = "".join(t for t, _ in tokens)
    return {
        "id": ident,
        "epoch": 1,
        "input": "What is 2 + 2?",
        "choices": ["3", "4", "5"],
        "target": "B",
        "messages": [],
        "output": {
            "model": "org/model",
            "choices": [
                {
                    "message": {"role": "assistant", "content": text, "source": "generate"},
                    "stop_reason": "stop",
                    "logprobs": {"content": content},
                }
            ],
            "completion": text,
        },
        "scores": {"choice": {"value": "C" if right else "I", "answer": "B"}},
        "metadata": {},
    }


def write_log(path, samples):
    """A .json log of the committed schema fixture's run holding ``samples``."""
    log = copy.deepcopy(json.loads(BASE.read_text()))
    log["samples"] = samples
    log["eval"]["dataset"]["samples"] = len(samples)
    log["eval"]["dataset"]["sample_ids"] = [s["id"] for s in samples]
    log["results"]["total_samples"] = log["results"]["completed_samples"] = len(samples)
    path.write_text(json.dumps(log))
    return path


def plain_ece(pairs, bins=10):
    """ECE over ``bins`` uniform bins of (confidence, right) pairs, by a plain loop (no
    confidence here sits on a bin edge)."""
    held = {}
    for p, right in pairs:
        held.setdefault(min(int(p * bins), bins - 1), []).append((p, right))
    total = 0.0
    for rows in held.values():
        mean_p = sum(p for p, _ in rows) / len(rows)
        accuracy = sum(1 for _, right in rows if right) / len(rows)
        total += len(rows) / len(pairs) * abs(mean_p - accuracy)
    return total


def calibrate(*args):
    result = run(["calibrate", *args, "--json", "-q"])
    assert result.exit_code in (0, 1), result.stderr
    return result, json.loads(result.stdout)


# the answer line's tail: the letter's token first takes the logprob written
FORMS = {
    "lower": lambda lp: [(" b", lp)],
    "paren": lambda lp: [(" (", -0.01), ("B", lp), (")", -0.01)],
    "paren_joined": lambda lp: [(" (B", lp), (")", -0.01)],
    "bold": lambda lp: [(" **", -0.01), ("B", lp), ("**", -0.01)],
    "dollar_lower": lambda lp: [(" $", -0.01), ("b", lp), ("$", -0.01)],
}


@pytest.mark.parametrize("form", sorted(FORMS))
def test_answer_forms_take_the_letters_token(tmp_path, form):
    probs = [0.55, 0.62, 0.68, 0.73, 0.77, 0.84, 0.86, 0.93, 0.97, 0.58, 0.66, 0.88]
    samples, pairs = [], []
    for i, p in enumerate(probs):
        lp = math.log(p)
        right = i % 3 != 0
        samples.append(sample(i + 1, [*REASONING, *ANSWER, *FORMS[form](lp)], right))
        pairs.append((math.exp(lp), right))
    result, report = calibrate(write_log(tmp_path / "log.json", samples), "--max-ece", "0.9")
    assert report["n"] == len(probs)
    assert report["mean_confidence"] == pytest.approx(math.fsum(p for p, _ in pairs) / len(probs))
    assert report["ece"] == pytest.approx(plain_ece(pairs))
    assert not any("inspect-confidence auto" in w for w in report["warnings"])
    assert result.exit_code == 0, result.stderr


def test_answers_written_two_ways_are_one_definition(tmp_path):
    # right answers written "ANSWER: B", wrong ones "ANSWER: (B)": both the letter's token
    samples, pairs = [], []
    for i in range(100):
        right = i < 60
        p = 0.905 + 0.08 * ((i * 37) % 100) / 100
        lp = math.log(p)
        tail = [(" B", lp)] if right else FORMS["paren"](lp)
        samples.append(sample(i + 1, [("Let", math.log(0.05 + i / 400)), *ANSWER, *tail], right))
        pairs.append((math.exp(lp), right))
    path = write_log(tmp_path / "format.json", samples)
    result, report = calibrate(path, "--max-ece", "0.15", "--min-populated-bins", "1")
    assert report["ece"] == pytest.approx(plain_ece(pairs))
    assert report["ece"] > 0.3
    assert result.exit_code == 1
    (check,) = report["gate"]["checks"]
    assert check["passed"] is False and check.get("reason") is None  # the figure fails, not a rule
    assert not any("inspect-confidence auto" in w for w in report["warnings"])


def mixed_samples(first=1):
    """Six samples with an answer line (answer-token) and four without (sequence)."""
    out = []
    for k in range(10):
        tokens = [*REASONING, *ANSWER, (" B", math.log(0.7 + k / 50))]
        if k >= 6:
            tokens = [*REASONING, (" four", -0.3)]
        out.append(sample(first + k, tokens, k % 2 == 0))
    return out


def closed_by_mixing(report):
    checks = report["gate"]["checks"]
    return bool(checks) and all(REMEDY in (c.get("reason") or "") for c in checks)


def test_auto_mixing_modes_warns_and_closes_every_gate(tmp_path):
    mixed = write_log(tmp_path / "mixed.json", mixed_samples())
    gate = ["--max-ece", "0.99", "--min-rows", "5", "--min-populated-bins", "1"]
    result, report = calibrate(mixed, *gate)
    assert result.exit_code == 1
    assert closed_by_mixing(report)
    assert report["gate"]["passed"] is False
    (said,) = [w for w in report["warnings"] if "inspect-confidence auto" in w]
    assert COUNTED in said and REMEDY in said
    # one mode chosen: the same rows pass
    result, report = calibrate(mixed, *gate, "--inspect-confidence", "sequence")
    assert result.exit_code == 0 and report["gate"]["passed"] is True
    assert not any("inspect-confidence auto" in w for w in report["warnings"])
    # logs read in one mode each are as they were
    for name, samples in (
        ("answers.json", mixed_samples()[:6]),
        ("none.json", mixed_samples()[6:]),
    ):
        result, report = calibrate(
            write_log(tmp_path / name, samples), *gate[:2], "--min-populated-bins", "1"
        )
        assert result.exit_code == 0, report["gate"]
        assert not any("inspect-confidence auto" in w for w in report["warnings"])


def test_mixing_is_carried_through_summary_files(tmp_path):
    answers = write_log(tmp_path / "answers.json", mixed_samples()[:6])
    none = write_log(tmp_path / "none.json", mixed_samples(first=101)[6:])
    mixed = write_log(tmp_path / "mixed.json", mixed_samples(first=201))
    for path in (answers, none, mixed):
        done = run(["summarize", path, "-o", path.with_suffix(".cbs"), "-q"])
        assert done.exit_code == 0, done.stderr
    merged = tmp_path / "merged.cbs"
    done = run(["merge", answers.with_suffix(".cbs"), none.with_suffix(".cbs"), "-o", merged])
    assert done.exit_code == 0, done.stderr
    for summary in (merged, mixed.with_suffix(".cbs")):
        result, report = calibrate(summary, "--max-ece", "0.99", "--min-populated-bins", "1")
        assert result.exit_code == 1 and closed_by_mixing(report), report["gate"]
    # each pure summary alone passes
    result, report = calibrate(
        answers.with_suffix(".cbs"), "--max-ece", "0.99", "--min-populated-bins", "1"
    )
    assert result.exit_code == 0, report["gate"]


@pytest.mark.parametrize(
    ("text", "letter_at"),
    [
        ("ANSWER: B", 8),
        ("ANSWER: B because", None),
        ("ANSWER: $B$", 9),
        ("ANSWER: b", 8),
        ("Answer: c.", 8),
        ("ANSWER: (B)", 9),
        ("ANSWER: [b]\n", None),  # inspect-ai's solver grades no answer
        ("ANSWER: **B**", 10),
        ("ANSWER: $$b$$", None),
        ("ANSWER: **(c)**", None),
        ("ANSWER: \\boxed{B}", None),
        ("ANSWER: B\nso: ANSWER: (c)", 8),  # the last line opening with ANSWER:
        ("Answer: a bit of both", None),
        ("ANSWER: (B) four", None),
        ("ANSWER: b, c", None),
        ("ANSWER: (B", None),
        ("ANSWER: **B*", None),
        ("ANSWER: (d)", None),  # past the three options
    ],
)
def test_answer_letter_forms(text, letter_at):
    # one character a token: the answer token's index is the letter's position
    assert answer_index(3, list(text)) == letter_at


def test_threshold_and_reliability_say_it_too(tmp_path):
    # a threshold chosen on confidences of two definitions guarantees nothing of either
    mixed = write_log(tmp_path / "mixed.json", mixed_samples())
    chosen = ["--target-accuracy", "0.1", "--delta", "0.5", "--min-coverage", "0.01"]
    result = run(["threshold", mixed, *chosen, "--json", "-q"])
    assert result.exit_code == 1, result.stderr
    report = json.loads(result.stdout)
    assert closed_by_mixing(report)
    assert any(COUNTED in w for w in report["warnings"])
    chosen_one = run(["threshold", mixed, *chosen, "--inspect-confidence", "sequence", "-q"])
    assert chosen_one.exit_code == 0, chosen_one.stderr
    shown = run(["reliability", mixed, "--json", "-q"])
    assert shown.exit_code == 0
    said = json.loads(shown.stdout)["warnings"]
    assert any(COUNTED in w for w in said)


def jsonl_samples(n, lines):
    """``n`` samples, one a line, the first ``lines`` with an answer line (answer-token under
    auto), the rest without (sequence); about 1.4 KB each."""
    rows = []
    for k in range(n):
        tail = [*ANSWER, (" B", math.log(0.6 + k / (3 * n)))] if k < lines else [(" four", -0.3)]
        rows.append(json.dumps(sample(k + 1, [*REASONING, *tail], k % 2 == 0)) + "\n")
    return "".join(rows)


@pytest.mark.parametrize("lines", [100, 300])
def test_every_route_counts_the_samples_of_each_mode(tmp_path, monkeypatch, lines):
    # 400 samples cut in two near the middle (--workers 2, --part k/2): the first range holds
    # both kinds and the second sequence only (100), or the first answer lines only and the
    # second both (300); the counts are the log's wherever the cut falls
    monkeypatch.setattr("calibcli.io.reader._cpus", lambda: 2)
    collected = []
    import calibcli.io.parallel as parallel

    real = parallel._collect
    monkeypatch.setattr(parallel, "_collect", lambda *a, **k: collected.append(1) or real(*a, **k))
    log = tmp_path / "mixed.jsonl"
    log.write_text(jsonl_samples(400, lines))
    said = f"mixed.jsonl: {lines} of 400 samples answer-token, {400 - lines} sequence"

    def warned(args):
        result, report = calibrate(*args)
        assert result.exit_code == 1 and closed_by_mixing(report), report["gate"]
        return [w for w in report["warnings"] if "inspect-confidence auto" in w]

    gate = ["--max-ece", "0.99", "--min-populated-bins", "1"]
    for workers in ("1", "2"):
        (warning,) = warned([log, *gate, "--workers", workers])
        assert said in warning and REMEDY in warning
    assert collected == [1]  # --workers 2 read the second range in a worker
    # summary files: the whole log, and its two halves merged
    parts = [tmp_path / f"part{k}.cbs" for k in (1, 2)]
    for k, part in enumerate(parts, 1):
        done = run(["summarize", log, "--part", f"{k}/2", "-o", part, "-q"])
        assert done.exit_code == 0, done.stderr
    merged = tmp_path / "merged.cbs"
    done = run(["merge", *parts, "-o", merged, "-q"])
    assert done.exit_code == 0, done.stderr
    whole = tmp_path / "whole.cbs"
    done = run(["summarize", log, "-o", whole, "-q", "--workers", "2"])
    assert done.exit_code == 0, done.stderr
    for summary in (merged, whole):
        (warning,) = warned([summary, *gate])
        assert said in warning
    # threshold and reliability name the counts too
    chosen = ["--target-accuracy", "0.1", "--delta", "0.5", "--min-coverage", "0.01"]
    result = run(["threshold", merged, *chosen, "--json", "-q"])
    assert any(said in w for w in json.loads(result.stdout)["warnings"])
    result = run(["reliability", log, "--workers", "2", "--json", "-q"])
    assert any(said in w for w in json.loads(result.stdout)["warnings"])
