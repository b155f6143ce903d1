"""Every threshold the risk–coverage table prints accepts exactly the rows its row counts: the
printed number is cut, never rounded up past its own rows, and kept above the next distinct
confidence down, which a thinned table does not list. Counted by hand on the rows."""

from __future__ import annotations

import json
import random
import re

from harness import run

from calibcli.render.digits import cut, table_decimals


def test_a_threshold_is_cut_to_the_fewest_decimals_that_keep_its_rows():
    assert cut(0.96097, 4) == "0.9609" and cut(0.96097, 5) == "0.96097"
    assert cut(1.0, 4) == "1.0000" and cut(0.5, 6) == "0.500000"
    assert cut(0.123456789, 17) == "0.12345678900000000"  # the shortest text, then zeros
    assert table_decimals([0.96104], [0.96101]) == 5  # 0.9610 would accept 0.96101's rows
    assert table_decimals([0.96104], [0.96099]) == 4
    assert table_decimals([0.00004], [None]) == 5  # the lowest row is kept apart from 0
    # a column is cut at one width: the row that needs the most decides
    assert table_decimals([0.9, 0.79820002, 0.79820001], [0.79820002, 0.79820001, 0.6]) == 8


def near_neighbours(tmp_path):
    """Confidences a few 1e-5 apart, many rows on each: a thinned table lists few of them."""
    rng = random.Random(7)
    rows = []
    for k in range(300):
        c = 0.95 + k * 3.7e-5 + rng.random() * 1e-6
        rows += [{"confidence": c, "correct": rng.random() < 0.97}] * rng.randint(1, 6)
    rows += [{"confidence": rng.random(), "correct": rng.random() < 0.5} for _ in range(200)]
    path = tmp_path / "near.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path, [r["confidence"] for r in rows]


def accepted_by_hand(confidences, printed):
    return sum(c >= float(printed) for c in confidences)


def test_each_printed_row_accepts_its_own_count_in_the_terminal_and_the_page(tmp_path):
    path, confidences = near_neighbours(tmp_path)
    args = ["threshold", path, "--target-accuracy", "0.9"]
    result = run(args)
    assert result.exit_code == 0, result.stderr
    table = result.stdout.split("Risk-coverage", 1)[1].split("\n\n", 1)[0]
    rows = re.findall(r"^(\d\.\d+)\s+\S+\s+([\d,]+)\s", table, flags=re.M)
    assert len(rows) >= 15
    for printed, accepted in rows:
        assert accepted_by_hand(confidences, printed) == int(accepted.replace(",", "")), printed
    page = tmp_path / "t.html"
    assert run([*args, "--html", page, "-q"]).exit_code == 0
    html = page.read_text(encoding="utf-8").split("Risk–coverage", 1)[1]
    cells = re.findall(
        r'<tr><th scope="row"><data value="[^"]+">([\d.]+)</data></th><td>.*?</td>'
        r'<td><data value="\d+">([\d,]+)</data></td>',
        html,
    )
    assert len(cells) == len(rows)
    for printed, accepted in cells:
        assert accepted_by_hand(confidences, printed) == int(accepted.replace(",", "")), printed


def test_the_json_table_names_each_rows_next_confidence_down(tmp_path):
    path, confidences = near_neighbours(tmp_path)
    out = tmp_path / "t.json"
    assert run(["threshold", path, "--target-accuracy", "0.9", "-o", out, "-q"]).exit_code == 0
    curve = json.loads(out.read_text(encoding="utf-8"))["curve"]
    distinct = sorted(set(confidences), reverse=True)
    for t, h in zip(curve["threshold"], curve["highest_rejected"], strict=True):
        below = [c for c in distinct if c < t]
        assert h == (below[0] if below else None)


def test_a_report_without_the_next_confidences_prints_its_rows_apart(tmp_path):
    # a report written before the table carried highest_rejected: each row is kept above the
    # next row the table lists, so 0.96008 and 0.96 do not both print as 0.9600
    path, _ = near_neighbours(tmp_path)
    out, page = tmp_path / "t.json", tmp_path / "t.html"
    assert run(["threshold", path, "--target-accuracy", "0.9", "-o", out, "-q"]).exit_code == 0
    body = json.loads(out.read_text(encoding="utf-8"))
    curve = {k: v[:3] for k, v in body["curve"].items() if k != "highest_rejected"}
    body["curve"] = {**curve, "threshold": [0.9600799999999999, 0.96, 0.5]}
    out.write_text(json.dumps(body), encoding="utf-8")
    assert run(["render", out, "--html", page]).exit_code == 0
    html = page.read_text(encoding="utf-8").split("Risk–coverage", 1)[1]
    shown = re.findall(r'<tr><th scope="row"><data value="[^"]+">([\d.]+)</data>', html)
    assert shown == ["0.96007", "0.96000", "0.50000"]
