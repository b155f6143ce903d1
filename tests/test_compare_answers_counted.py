"""compare counts questions and answers apart: runs of several epochs pair answers (one per
question and epoch), and the terminal, the HTML page and the Markdown summary say how many
questions those answers answer, while one answer per question keeps the plain wording.

The logs are the committed real inspect-ai log of 20 samples, asked three times under new ids
and scored in three epochs: 60 questions, 180 answers. NEW scores samples 1 and 4 (right on
BASE) and 3 (wrong on BASE) the other way in every copy and epoch: 2 × 9 = 18 answers turn
right → wrong and 1 × 9 = 9 wrong → right."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from harness import run, write_jsonl

INSPECT = Path(__file__).resolve().parent / "fixtures" / "inspect_ai" / "toy_arithmetic.json"
FLIPPED = {1, 3, 4}


def run_log(path, flip=()):
    """The committed log as a run of 3 epochs over 3 copies of its 20 samples (sample i's
    copy k has id i + 100 k); the samples whose id is in ``flip`` scored the other way."""
    log = json.loads(INSPECT.read_text())
    log["eval"]["config"]["epochs"] = 3
    samples = []
    for k in range(3):
        for s in log["samples"]:
            for epoch in (1, 2, 3):
                sample = copy.deepcopy(s)
                sample["id"], sample["epoch"] = s["id"] + 100 * k, epoch
                if s["id"] in flip:
                    match = sample["scores"]["match"]
                    match["value"] = "I" if match["value"] == "C" else "C"
                samples.append(sample)
    log["samples"] = samples
    path.write_text(json.dumps(log))
    return path


def flat(text):
    return " ".join(text.split())


def compared(tmp_path, base, new, *extra):
    html, summary = tmp_path / "page.html", tmp_path / "summary.md"
    args = ["compare", base, new, *extra, "--html", html, "--summary", summary, "-q"]
    result = run(args)
    assert result.exit_code == 0, result.stderr
    return flat(result.stdout), flat(html.read_text()), flat(summary.read_text())


def test_epochs_are_counted_as_answers_to_their_questions(tmp_path):
    base = run_log(tmp_path / "base.json")
    new = run_log(tmp_path / "new.json", flip=FLIPPED)
    terminal, page, summary = compared(tmp_path, base, new, "--scorer", "match")
    pairs = "Paired on 60 questions (180 answers) matched by"
    assert f"{pairs} id + epoch (0 BASE and 0 NEW rows unmatched)" in terminal
    assert f"{pairs} <code>id + epoch</code> (0 BASE and 0 NEW rows unmatched)" in page
    assert "180 questions" not in terminal + page + summary
    assert "(60 questions: 18 answers right->wrong, 9 wrong->right)" in terminal
    assert "(60 questions: 18 answers right → wrong, 9 wrong → right)." in page
    assert "(60 questions: 18 answers right → wrong, 9 wrong → right)." in summary


def test_one_answer_a_question_keeps_the_plain_words(tmp_path):
    # 40 questions; NEW turns questions 0-4 right -> wrong and 5-7 wrong -> right
    base_rows = [{"id": i, "confidence": 0.6, "correct": i < 5 or i >= 20} for i in range(40)]
    flips = {**dict.fromkeys(range(5), False), **dict.fromkeys(range(5, 8), True)}
    new_rows = [{**r, "correct": flips.get(r["id"], r["correct"])} for r in base_rows]
    base = write_jsonl(tmp_path / "base.jsonl", base_rows)
    new = write_jsonl(tmp_path / "new.jsonl", new_rows)
    terminal, page, summary = compared(tmp_path, base, new, "--bootstrap", "200")
    assert "Paired on 40 questions matched by id (0 BASE and 0 NEW rows unmatched)" in terminal
    assert "Paired on 40 questions matched by <code>id</code> (0 BASE" in page
    assert "(5 right->wrong, 3 wrong->right)" in terminal
    assert "(5 right → wrong, 3 wrong → right)." in page
    assert "(5 right → wrong, 3 wrong → right)." in summary
    assert "answers right" not in terminal
