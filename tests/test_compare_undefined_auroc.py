"""compare explains an undefined AUROC: when every answer on a side is right (or every one wrong)
the figure, its difference and that difference's interval are null, a warning names the side,
as calibrate warns of the same file, and no output points to an interval that is not there."""

from __future__ import annotations

import json

from harness import run, write_jsonl


def rows(correct):
    """30 questions, id i at confidence 0.5 + i/100, right as ``correct(i)`` says."""
    return [{"id": i, "confidence": 0.5 + i / 100, "correct": bool(correct(i))} for i in range(30)]


def compared(tmp_path, base_rows, new_rows, *extra):
    base = write_jsonl(tmp_path / "base.jsonl", base_rows)
    new = write_jsonl(tmp_path / "new.jsonl", new_rows)
    out, html, summary = tmp_path / "r.json", tmp_path / "page.html", tmp_path / "s.md"
    args = ["compare", base, new, "--bootstrap", "200", "-o", out, "--html", html]
    result = run([*args, "--summary", summary, *extra])
    assert result.exit_code == 0, result.stderr
    texts = (result.stdout, html.read_text(), summary.read_text())
    return json.loads(out.read_text()), result.stderr, *(" ".join(t.split()) for t in texts)


def undefined(warnings):
    return [w for w in warnings if w.startswith("auroc is undefined")]


def test_every_answer_right_on_base(tmp_path):
    body, stderr, terminal, page, summary = compared(
        tmp_path, rows(lambda i: True), rows(lambda i: i % 4 != 0)
    )
    auroc = body["figures"]["auroc"]
    assert auroc["base"] is None and auroc["difference"] is None
    assert auroc["interval"] == [None, None]
    assert auroc["new"] is not None
    [warning] = undefined(body["warnings"])
    assert warning.startswith("auroc is undefined on BASE (every answer right):")
    assert "NEW" not in warning.split(":")[0]
    assert "warning: auroc is undefined on BASE" in stderr
    test = body["auroc_test"]
    assert test["test"] is None
    assert test["reason"].startswith("undefined on BASE (every answer right)")
    for shown in (test["reason"], terminal, page, summary):
        assert "bootstrap interval" not in shown
    assert "AUROC: undefined on BASE (every answer right), so there is no test" in terminal
    assert "AUROC: undefined on BASE (every answer right), so there is no test" in page
    assert "warning: auroc is undefined on BASE (every answer right)" in summary


def test_every_answer_wrong_on_new(tmp_path):
    body, *_ = compared(tmp_path, rows(lambda i: i % 3 != 0), rows(lambda i: False))
    [warning] = undefined(body["warnings"])
    assert warning.startswith("auroc is undefined on NEW (every answer wrong):")
    assert body["figures"]["auroc"]["new"] is None


def test_both_sides_alike_with_one_class(tmp_path):
    body, *_ = compared(tmp_path, rows(lambda i: True), rows(lambda i: True))
    [warning] = undefined(body["warnings"])
    assert warning.startswith(
        "auroc is undefined on BASE (every answer right) and NEW (every answer right):"
    )
    assert body["auroc_test"]["test"] is None


def test_unpaired_warns_too(tmp_path):
    body, *_ = compared(tmp_path, rows(lambda i: True), rows(lambda i: i % 4 != 0), "--unpaired")
    [warning] = undefined(body["warnings"])
    assert warning.startswith("auroc is undefined on BASE (every answer right):")


def test_a_group_with_one_class_on_a_side_is_named(tmp_path):
    # group "a" (even ids): every answer right on BASE; group "b" (odd ids): both classes
    base_rows = [{**r, "task": "ab"[r["id"] % 2]} for r in rows(lambda i: i % 2 == 0 or i % 3)]
    new_rows = [{**r, "task": "ab"[r["id"] % 2]} for r in rows(lambda i: i % 5 != 0)]
    body, *_ = compared(tmp_path, base_rows, new_rows, "--by", "task")
    assert body["figures"]["auroc"]["base"] is not None  # pooled: both classes on each side
    assert body["groups"]["a"]["figures"]["auroc"]["base"] is None
    assert body["groups"]["b"]["figures"]["auroc"]["base"] is not None
    [warning] = [w for w in body["warnings"] if "auroc is undefined" in w]
    assert warning.startswith("group 'a': auroc is undefined on BASE (every answer right):")


def test_both_classes_on_both_sides_say_nothing(tmp_path):
    body, *_ = compared(tmp_path, rows(lambda i: i % 2 == 0), rows(lambda i: i % 3 == 0))
    assert not [w for w in body["warnings"] if "auroc" in w]
    assert body["auroc_test"]["test"] == "bootstrap"
