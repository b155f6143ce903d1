"""A summary of rows identified by --id-field that keeps no ids (as an earlier calibcli wrote
one with --all-runs, before pooled summaries kept their questions' keys) is refused beside other
parts, exit 2 naming it: the questions it shares with them could not be counted once, and 600
rows of 300 questions would pass --min-rows 400. Alone it is read as before, its own repeats as
it recorded them."""

from __future__ import annotations

import json
from dataclasses import replace

from harness import run

from calibcli.summaries import from_bytes, to_bytes


def rows(path, shift):
    path.write_text(
        "".join(
            json.dumps({"id": f"q{i}", "confidence": (i % 97 + shift) / 100, "correct": i % 3 > 0})
            + "\n"
            for i in range(300)
        )
    )
    return path


def keyless(tmp_path, name, shift):
    """A summary written with --id-field and --all-runs, its ids dropped as an earlier
    calibcli's are."""
    source = rows(tmp_path / f"{name}.jsonl", shift)
    made = tmp_path / f"{name}.cbs"
    result = run(["summarize", source, "--id-field", "id", "--all-runs", "-o", made, "-q"])
    assert result.exit_code == 0, result.stderr
    summary = from_bytes(made.read_bytes())
    assert summary.settings.id_field == "id" and summary.row_ids is not None
    made.write_bytes(to_bytes(replace(summary, row_ids=None)))
    return made


def test_beside_other_parts_it_is_refused(tmp_path):
    first, second = keyless(tmp_path, "run1", 1), keyless(tmp_path, "run2", 2)
    for args in (
        ["calibrate", first, second, "--min-rows", "400"],
        ["merge", first, second, "-o", tmp_path / "m.cbs"],
    ):
        result = run(args)
        assert result.exit_code == 2, args
        assert result.stderr.startswith(
            f"Error: {first} pools rows identified by --id-field id but keeps no keys of their "
            "questions (an earlier calibcli wrote it with --all-runs)"
        )
    assert not (tmp_path / "m.cbs").exists()


def test_alone_it_is_read(tmp_path):
    alone = keyless(tmp_path, "run1", 1)
    result = run(["calibrate", alone, "--min-rows", "300", "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["n"] == 300
