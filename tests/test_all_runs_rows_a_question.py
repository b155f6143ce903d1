"""The warning about re-runs pooled with --all-runs whose ids repeat says how many rows a
question holds in the pooled inputs together, once, of them all: each input may hold a
question once, and "(2 rows a question)" said of each would read as each holding two.

The counts are known by construction: each run below answers the questions q0 to q9 once (a
"doubled" run twice), so n runs pooled hold n rows a question (a doubled one counting two)."""

from __future__ import annotations

import json

from harness import run, write_jsonl

OPENING = (
    "re-runs are pooled (--all-runs): their rows' ids repeat, so each question is answered "
    "several times: "
)
DRAWN = "the figures weigh every answer, and the bootstrap draws each question's answers together"
QUESTIONS = 10


def one_run(tmp_path, name, times=1, shift=0.0):
    """A run answering q0 to q9 ``times`` times each (confidences apart by ``shift``)."""
    rows = [
        {"id": f"q{i}", "confidence": 0.5 + i / 50 + shift + k / 100, "correct": i % 2 == 0}
        for k in range(times)
        for i in range(QUESTIONS)
    ]
    return write_jsonl(tmp_path / name, rows)


def warnings(paths):
    """What calibrate says of the pooled inputs' repeated questions."""
    result = run(["calibrate", *paths, "--all-runs", "--id-field", "id", "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    # the others (few bins populated, ...) are the few rows' own
    return [w for w in json.loads(result.stdout)["warnings"] if w.startswith(OPENING)]


def test_two_runs_of_one_row_a_question_hold_two_among_them(tmp_path):
    paths = [one_run(tmp_path, "gpt4.jsonl"), one_run(tmp_path, "rerun.jsonl", shift=0.01)]
    said = f"{OPENING}gpt4.jsonl and rerun.jsonl (2 rows a question among them): {DRAWN}"
    assert warnings(paths) == [said]


def test_the_count_is_the_pooled_inputs_not_the_most_one_holds(tmp_path):
    paths = [one_run(tmp_path, "twice.jsonl", times=2), one_run(tmp_path, "once.jsonl", 1, 0.2)]
    said = f"{OPENING}twice.jsonl and once.jsonl (3 rows a question among them): {DRAWN}"
    assert warnings(paths) == [said]


def test_one_input_repeating_its_own_ids_holds_them_itself(tmp_path):
    paths = [one_run(tmp_path, "twice.jsonl", times=2)]
    assert warnings(paths) == [f"{OPENING}twice.jsonl (2 rows a question): {DRAWN}"]


def test_many_pooled_inputs_are_named_up_to_five_and_counted(tmp_path):
    paths = [one_run(tmp_path, f"r{k}.jsonl", shift=k / 1000) for k in range(7)]
    shown = "r0.jsonl, r1.jsonl, r2.jsonl, r3.jsonl, r4.jsonl and 2 more"
    assert warnings(paths) == [f"{OPENING}{shown} (7 rows a question among them): {DRAWN}"]
