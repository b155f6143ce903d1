"""An output path that names a folder (``out/``) is refused before anything is read, for the
outputs of apply, summarize, merge and render too: ``Path`` drops the trailing slash, and
would write a file of the folder's name in its place."""

from __future__ import annotations

import pytest
from harness import make_rows, refused, run, write_jsonl


@pytest.mark.parametrize("command", ["apply", "summarize", "merge", "render"])
@pytest.mark.parametrize("name", ["newdir/", "newdir/.", "."])
def test_an_output_naming_a_folder_is_refused(tmp_path, monkeypatch, command, name):
    monkeypatch.chdir(tmp_path)
    rows = write_jsonl(tmp_path / "rows.jsonl", make_rows(50))
    assert run(["summarize", rows, "-o", "part.cbs", "-q"]).exit_code == 0
    assert run(["calibrate", rows, "-o", "report.json", "-q"]).exit_code == 0
    assert run(["fit", rows, "--method", "platt", "-o", "cal.json", "-q"]).exit_code == 0
    args = {
        "apply": ["apply", "cal.json", rows, "-o", name],
        "summarize": ["summarize", rows, "-o", name],
        "merge": ["merge", "part.cbs", "-o", name],
        "render": ["render", "report.json", "--html", name],
    }[command]
    option = {"render": "'--html'", "apply": "'-o' / '--output'"}.get(command, "'--output' / '-o'")
    line = refused(*args)
    assert line.startswith(f"Error: Invalid value for {option}: {name!r} names a folder")
    assert not (tmp_path / "newdir").exists()
