"""compare --unpaired says the user chose it: every id of the two files matches, yet neither
the warning, the terminal, the HTML page nor the API's report says that no rows matched."""

from __future__ import annotations

import json

from harness import run, write_jsonl

import calibcli


def files(tmp_path):
    """Two files of the same 30 ids, both with right and wrong answers."""
    base = [{"id": i, "confidence": 0.5 + i / 100, "correct": i % 2 == 0} for i in range(30)]
    new = [{"id": i, "confidence": 0.9 - i / 100, "correct": i % 3 == 0} for i in range(30)]
    return write_jsonl(tmp_path / "base.jsonl", base), write_jsonl(tmp_path / "new.jsonl", new)


def test_the_cli_says_unpaired_was_asked(tmp_path):
    base, new = files(tmp_path)
    out, html = tmp_path / "r.json", tmp_path / "page.html"
    result = run(["compare", base, new, "--unpaired", "--bootstrap", "200", "-o", out])
    assert result.exit_code == 0, result.stderr
    assert run(["render", out, "--html", html]).exit_code == 0
    body = json.loads(out.read_text())
    [warning] = [w for w in body["warnings"] if w.startswith("unpaired")]
    assert warning.startswith("unpaired, as asked: each side was resampled on its own")
    terminal = " ".join(result.stdout.split())
    page = " ".join(html.read_text().split())
    for shown in (warning, result.stderr, terminal, page):
        assert "matched)" not in shown
    line = "Unpaired, as asked: each side resampled on its own, without matching rows by id"
    assert line in terminal
    assert f"<p>{line}.</p>" in page


def test_the_api_says_so_too():
    ids = list(range(30))
    base = ([0.5 + i / 100 for i in ids], [i % 2 == 0 for i in ids], ids)
    new = ([0.9 - i / 100 for i in ids], [i % 3 == 0 for i in ids], ids)
    report = calibcli.compare(base, new, unpaired=True, bootstrap=200)
    said = [w for w in report.warnings if w.startswith("unpaired")]
    assert said and said[0].startswith("unpaired, as asked:")
