"""Group names that Unicode draws alike show apart: a name not in NFC (``e`` and a combining
acute beside the composed ``é``), one starting with a combining mark, or one holding a
character drawn as nothing (a variation selector, the combining grapheme joiner) is shown as
its ``ascii`` literal in every table (terminal, gate, Markdown, HTML); names in NFC, accented
ones among them, show as they are. Every shown text is in NFC, so two names that show
differently are never canonically equivalent."""

from __future__ import annotations

import html
import json
import re
import unicodedata

import pytest
from harness import run
from hypothesis import given
from hypothesis import strategies as st

from calibcli.render.digits import group_cell

NFC_E, NFD_E = "\u00e9", "e\u0301"

DRAWN_ALIKE = {
    NFD_E: "'e\\u0301'",  # drawn as é
    "Zoe\u0308": "'Zoe\\u0308'",  # Zoë, decomposed
    "\u212b": "'\\u212b'",  # ANGSTROM SIGN, NFC is Å (U+00C5)
    "\u1100\u1161": "'\\u1100\\u1161'",  # conjoining jamo, NFC is 가 (U+AC00)
    "a\u0323\u0307": "'a\\u0323\\u0307'",  # NFC composes a and the dot below (U+1EA1)
    "\u0301x": "'\\u0301x'",  # would join the character before it in the table
    "e\u034f": "'e\\u034f'",  # combining grapheme joiner: drawn as e
    "a\ufe00": "'a\\ufe00'",  # variation selector: drawn as a
    "x\u3164": "'x\\u3164'",  # Hangul filler: drawn as x
    " e\u0301": "' e\\u0301'",  # a literal anyway (space at the start), escaped as well
    "\ne\u0301": "'\\ne\\u0301'",
}

ORDINARY = [NFC_E, "Zo\u00eb", "\u00c5", "\uac00", "日本語", "हिन्दी", "ก้า", "Ελληνικά", "ok"]


def test_names_drawn_like_another_show_as_their_ascii_literal():
    for name, shown in DRAWN_ALIKE.items():
        assert group_cell(name) == shown, name
        assert group_cell(name, "utf-8") == shown
        assert eval(shown) == name  # reads back as the one name it was made from


def test_names_in_nfc_show_as_they_are():
    for name in ORDINARY:
        assert unicodedata.is_normalized("NFC", name)
        assert group_cell(name) == name
        assert group_cell(name, "utf-8") == name


def test_an_escape_before_a_mark_cannot_compose_into_the_literal():
    # repr("\n\u0301") is quote, backslash, n, U+0301: NFC would draw the n and the mark as ń
    shown = group_cell("\n\u0301")
    assert shown == "'\\n\\u0301'"
    assert unicodedata.is_normalized("NFC", shown)


MARKED = (
    *("e", "\u00e9", "\u0301", "\u0308", "\u0323", "\u0307", "\u034f", "\ufe0f", "\u212b"),
    *("\u00c5", "A", "\u030a", "\u1100", "\u1161", "\uac00", "'", "\\", "\n", " ", "n"),
)
"""Letters, their combining marks and composed forms, and what literals are made of."""

NAMES = st.text(
    alphabet=st.sampled_from(MARKED),
    max_size=5,
)


@given(st.lists(NAMES | st.text(max_size=5), min_size=2, max_size=6, unique=True))
def test_names_that_show_differently_are_never_drawn_alike(names):
    for encoding in (None, "utf-8", "cp1252"):
        shown = [group_cell(n, encoding) for n in names]
        assert all(unicodedata.is_normalized("NFC", s) for s in shown)
        assert len({unicodedata.normalize("NFC", s) for s in shown}) == len(names)


# --------------------------------------------------------------------------- the commands


def _write(path):
    """Group NFD é (100 rows at 0.9, 10 right: Brier 0.73) and NFC é (100 rows at 0.9, 90
    right: Brier 0.09): hand counts."""
    rows = [{"g": NFD_E, "confidence": 0.9, "correct": i < 10} for i in range(100)]
    rows += [{"g": NFC_E, "confidence": 0.9, "correct": i < 90} for i in range(100)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


GATE = ["--max-brier", "0.5", "--gate-each", "-q"]


def test_the_tables_show_the_decomposed_group_apart(tmp_path):
    path = _write(tmp_path / "nfd.jsonl")
    summary, page = tmp_path / "s.md", tmp_path / "s.html"
    result = run(["calibrate", path, "--by", "g", *GATE, "--summary", summary, "--html", page])
    assert result.exit_code == 1, result.stderr
    lines = result.stdout.splitlines()
    gate = lines[next(i for i, line in enumerate(lines) if line.startswith("Gate: ")) :]
    failing = [line.split() for line in gate if line.startswith("brier ")]
    # (pooled): Brier (0.73 + 0.09) / 2 = 0.41
    assert [row[1:3] for row in failing] == [
        ["(pooled)", "0.4100"],
        ["'e\\u0301'", "0.7300"],
        [NFC_E, "0.0900"],
    ]
    assert [row[-1] for row in failing] == ["pass", "fail", "pass"]
    by = lines[next(i for i, line in enumerate(lines) if line.startswith("By g")) :]
    assert any(line.startswith("'e\\u0301' ") for line in by)
    assert any(line.startswith(NFC_E + " ") for line in by)
    markdown = summary.read_text(encoding="utf-8")
    # the Markdown escapes the backslash of the name as shown
    assert "| brier ('e\\\\u0301') | 0.5 | 0.7300 | **no** |" in markdown.splitlines()
    assert f"| brier ({NFC_E}) | 0.5 | 0.0900 | yes |" in markdown.splitlines()
    found = re.findall(
        r'<tr( class="fail")?><th scope="row">brier</th><td>([^<]*)</td>',
        page.read_text(encoding="utf-8"),
    )
    checks = {html.unescape(name): bool(fail) for fail, name in found}
    assert checks == {"(pooled)": False, "'e\\u0301'": True, NFC_E: False}
    table = page.read_text(encoding="utf-8").split("<caption>By g", 1)[1].split("</table>")[0]
    names = [html.unescape(n) for n in re.findall(r'<th scope="row">([^<]*)</th>', table)]
    assert sorted(names) == sorted(["'e\\u0301'", NFC_E])


@pytest.mark.parametrize("name", [NFC_E, "Zo\u00eb", "日本語"])
def test_an_nfc_group_name_shows_as_it_is(tmp_path, name):
    rows = [{"g": name, "confidence": 0.9, "correct": i < 90} for i in range(100)]
    path = tmp_path / "a.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    result = run(["calibrate", path, "--by", "g", "-q"])
    assert result.exit_code == 0, result.stderr
    by = result.stdout.split("By g", 1)[1].splitlines()
    assert any(line.startswith(name + " ") for line in by)
