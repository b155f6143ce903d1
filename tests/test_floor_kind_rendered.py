"""The gate tables of the Markdown summary and the HTML page name the floor that decided a
paired comparison's check: a discordance floor (NEW's own errors raised to their upper count)
is said as that, not as a rare-class floor."""

from __future__ import annotations

import json

from harness import run


def test_a_discordance_floor_is_named_in_markdown_and_html(tmp_path):
    rows = [{"id": f"q{i}", "confidence": 0.95, "correct": True} for i in range(60)]
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    summary, page = tmp_path / "s.md", tmp_path / "p.html"
    gate = ["--max-increase", "brier=0.02", "--gate-on", "upper"]
    result = run(["compare", path, path, *gate, "--summary", summary, "--html", page, "-q"])
    assert result.exit_code == 1
    text = summary.read_text()
    # 60 questions, none discordant: 4 turned, (4 * (0.95**2 - 0.05**2)) / 60 = 0.06
    assert "(larger of upper end 0.0000 and discordance floor 0.0600)" in text
    assert "or the discordance floor where larger" in text
    assert "rare-class floor" not in text
    html = page.read_text()
    assert "or its discordance floor where larger" in html
    assert "rare-class floor" not in html
