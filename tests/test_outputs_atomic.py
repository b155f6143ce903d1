"""A run's outputs change together or not at all: a run that exits 2 because one output cannot
be written leaves every other output file byte for byte as it was (a replaced file, an appended
summary, a file that did not exist); an output path through a file is one line of exit 2; the
Markdown summary keeps names from the data inside their line; the engines' part files are put
in place only once written in full."""

from __future__ import annotations

import errno
import json
import os
import re
from pathlib import Path

import pytest
from harness import make_rows, run, write_jsonl

from calibcli.cli import staging
from calibcli.render import markdown_summary

OLD = '{"old": true}\n'
SUMMARY = "# earlier step\n"
FULL = Path("/dev/full")
needs_dev_full = pytest.mark.skipif(
    not (FULL.exists() and os.access(FULL, os.W_OK)), reason="no writable /dev/full"
)


@pytest.fixture
def preds(tmp_path):
    return write_jsonl(tmp_path / "preds.jsonl", make_rows(80))


def one_error_line(result, *parts):
    assert result.exit_code == 2, (result.exit_code, result.stderr)
    errors = [line for line in result.stderr.splitlines() if not line.startswith("warning: ")]
    assert len(errors) == 1 and errors[0].startswith("Error: "), result.stderr
    for part in parts:
        assert part in errors[0], errors[0]
    return errors[0]


def files_in(folder):
    return sorted(p.name for p in folder.iterdir())


# ------------------------------------------------------------- a failing output, others kept


@needs_dev_full
@pytest.mark.parametrize(
    ("kept", "failing"),
    [
        (("-o", "r.json"), ("--html", FULL)),
        (("--html", "r.html"), ("-o", FULL)),
        (("--summary", "s.md"), ("-o", FULL)),
        (("--summary", "s.md"), ("--html", FULL)),
    ],
    ids=["report-kept", "html-kept", "summary-kept", "summary-kept-html"],
)
def test_a_full_device_leaves_the_other_outputs_as_they_were(tmp_path, preds, kept, failing):
    option, name = kept
    target = tmp_path / name
    target.write_text(SUMMARY if option == "--summary" else OLD, encoding="utf-8")
    before = files_in(tmp_path)
    result = run(["calibrate", preds, option, target, *failing, "-q"])
    one_error_line(result, "/dev/full: cannot write the", "No space left on device")
    assert target.read_text(encoding="utf-8") == (SUMMARY if option == "--summary" else OLD)
    assert files_in(tmp_path) == before  # no temporary file left behind


@needs_dev_full
def test_a_full_device_creates_no_new_output(tmp_path, preds):
    outputs = ["-o", tmp_path / "r.json", "--summary", tmp_path / "s.md", "--html", FULL]
    result = run(["calibrate", preds, *outputs, "-q"])
    one_error_line(result, "No space left on device")
    assert files_in(tmp_path) == ["preds.jsonl"]


def short_then_full(monkeypatch):
    """os.write takes the first 10 bytes of the first call, then fails as a full disk does."""
    real, calls = os.write, []

    def write(fd, data):
        calls.append(len(data))
        if len(calls) == 1:
            return real(fd, bytes(data[:10]))
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "write", write)
    return calls


@pytest.mark.parametrize("existing", [True, False], ids=["appended", "created"])
def test_a_summary_that_fills_the_disk_is_cut_back_and_nothing_replaced(
    tmp_path, preds, monkeypatch, existing
):
    report, summary = tmp_path / "r.json", tmp_path / "s.md"
    report.write_text(OLD, encoding="utf-8")
    if existing:
        summary.write_text(SUMMARY, encoding="utf-8")
    calls = short_then_full(monkeypatch)
    result = run(["calibrate", preds, "-o", report, "--summary", summary, "-q"])
    one_error_line(result, f"{summary}: cannot write the summary: No space left on device")
    assert len(calls) == 2  # part of the text went in before the disk was full
    assert report.read_text(encoding="utf-8") == OLD
    if existing:
        assert summary.read_text(encoding="utf-8") == SUMMARY
    else:
        assert not summary.exists()
    assert files_in(tmp_path) == sorted(["preds.jsonl", "r.json", *(["s.md"] if existing else [])])


def test_a_failed_rename_takes_the_appended_text_back(tmp_path, preds, monkeypatch):
    report, summary = tmp_path / "r.json", tmp_path / "s.md"
    report.write_text(OLD, encoding="utf-8")
    summary.write_text(SUMMARY, encoding="utf-8")

    def fail(src, dst):
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(os, "replace", fail)
    one_error_line(run(["calibrate", preds, "-o", report, "--summary", summary, "-q"]))
    assert report.read_text(encoding="utf-8") == OLD
    assert summary.read_text(encoding="utf-8") == SUMMARY
    assert files_in(tmp_path) == ["preds.jsonl", "r.json", "s.md"]


def test_a_stream_is_written_before_any_file_changes(tmp_path, monkeypatch):
    """A target that is not a regular file cannot be staged: it is written first, so that when
    it fails the staged report and the summary are still as they were."""
    report, summary, stream = tmp_path / "r.json", tmp_path / "s.md", tmp_path / "stream"
    report.write_text(OLD, encoding="utf-8")
    summary.write_text(SUMMARY, encoding="utf-8")
    real = staging.is_special
    monkeypatch.setattr(staging, "is_special", lambda p: Path(p) == stream or real(p))

    def full(path, mode="r", *args, **kwargs):
        assert Path(path) == stream and "a" in mode
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(staging, "open", full, raising=False)
    staged = staging.Staged()
    staged.add(report, "new\n", "report")
    staged.add(summary, "new section\n", "summary", append=True)
    staged.add(stream, "page\n", "HTML report")
    with pytest.raises(staging.OutputError, match=r"stream: cannot write the HTML report: No "):
        staged.commit()
    assert report.read_text(encoding="utf-8") == OLD
    assert summary.read_text(encoding="utf-8") == SUMMARY
    assert files_in(tmp_path) == ["r.json", "s.md"]


def test_a_summary_another_run_appended_to_is_not_cut(tmp_path, monkeypatch):
    """Cutting back removes this run's text only: once another run's text follows it, the file
    is left with both."""
    summary = tmp_path / "s.md"
    summary.write_text(SUMMARY, encoding="utf-8")
    staged = staging.Staged()
    staged.add(summary, "mine\n", "summary", append=True)
    staged.add(tmp_path / "r.json", "new\n", "report")

    def fail(src, dst):
        with open(summary, "a", encoding="utf-8") as other:
            other.write("theirs\n")
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(staging.OutputError):
        staged.commit()
    assert summary.read_text(encoding="utf-8") == SUMMARY + "mine\ntheirs\n"
    assert files_in(tmp_path) == ["s.md"]


# ------------------------------------------------------------- an output path through a file


@pytest.mark.parametrize(
    ("option", "name", "what"),
    [
        ("-o", "x", "report"),
        ("--html", "x.html", "HTML report"),
        ("--summary", "x.md", "summary"),
        ("--plot", "x.png", "plot"),
        ("-o", "y/x", "report"),
    ],
)
def test_an_output_path_through_a_file_is_one_error_line(tmp_path, preds, option, name, what):
    path = f"{preds}/{name}"
    result = run(["calibrate", preds, option, path, "-q"])
    assert (
        one_error_line(result) == f"Error: {path}: cannot write the {what}: {preds} is not a folder"
    )
    assert files_in(tmp_path) == ["preds.jsonl"]


def test_merge_output_through_a_file_is_one_error_line(tmp_path, preds):
    part = tmp_path / "p.cbs"
    assert run(["summarize", preds, "-o", part, "-q"]).exit_code == 0
    path = f"{preds}/x.cbs"
    result = run(["merge", part, "-o", path, "-q"])
    assert one_error_line(result).endswith(f": {preds} is not a folder")


# ------------------------------------------------------------- Markdown names stay in their line

GROUP = "x|y\n## H"


def table_cells(line):
    """The cells of a GFM table row: split at pipes not escaped by a backslash."""
    return re.split(r"(?<!\\)\|", line.strip().strip("|"))


def test_group_names_in_the_summary_stay_inside_their_line(tmp_path):
    rows = [
        {"confidence": 0.05 + 0.9 * i / 59, "correct": i % 3 != 0, "task": t}
        for t in ("plain", GROUP)
        for i in range(60)
    ]
    data = write_jsonl(tmp_path / "pipe.jsonl", rows)
    summary = tmp_path / "s.md"
    result = run(["calibrate", data, "--by", "task", "--summary", summary, "-q"])
    assert result.exit_code == 0, result.stderr
    text = summary.read_text(encoding="utf-8")
    headings = [line for line in text.splitlines() if line.lstrip().startswith("#")]
    assert headings == [f"### calibcli calibrate: `{data}`"]
    assert "x\\|y ## H" in text


def test_data_in_gate_rows_and_warnings_is_escaped():
    body = {
        "command": "calibrate",
        "gate": {
            "passed": False,
            "bound": "estimate",
            "checks": [
                {"metric": "ece", "group": GROUP, "threshold": 0.1, "value": 0.2, "passed": False}
            ],
        },
        "warnings": ["group *a*\n- b: <img src=x> [l](u) `c` & $m$"],
    }
    text = markdown_summary(body, ["we`ird\n## f.jsonl"])
    lines = text.rstrip("\n").splitlines()
    assert lines[0] == "### calibcli calibrate: ``we`ird ## f.jsonl`` — gate FAILED"
    row = next(line for line in lines if line.startswith("| ece"))
    # the limit as given; the group's line break shown as its literal
    assert row == "| ece ('x\\|y\\\\n## H') | 0.1 | 0.2000 | **no** |"
    assert len(table_cells(row)) == 4
    assert lines[-1] == (
        "> warning: group \\*a\\* - b: \\<img src=x\\> \\[l\\](u) \\`c\\` \\& \\$m\\$"
    )


# ------------------------------------------------------------- the engines' part files


def test_engine_summary_write_leaves_the_file_on_failure(tmp_path, preds, monkeypatch):
    from calibcli.engines.result import EngineSummary
    from calibcli.summaries import from_bytes

    part = tmp_path / "p.cbs"
    assert run(["summarize", preds, "-o", part, "-q"]).exit_code == 0
    engine = EngineSummary(from_bytes(part.read_bytes()))
    target = tmp_path / "all.cbs"
    target.write_bytes(b"old part")

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with monkeypatch.context() as patched:
        patched.setattr(os, "fsync", full)
        with pytest.raises(OSError, match="No space left on device"):
            engine.write(target)
    assert target.read_bytes() == b"old part"
    assert files_in(tmp_path) == ["all.cbs", "p.cbs", "preds.jsonl"]
    os.chmod(target, 0o640)
    engine.write(target)
    assert target.read_bytes() == part.read_bytes()  # what summarize -o wrote for these rows
    assert target.stat().st_mode & 0o777 == 0o640
    assert files_in(tmp_path) == ["all.cbs", "p.cbs", "preds.jsonl"]


def test_a_commonmark_renderer_shows_the_data_as_written():
    """markdown-it (CommonMark, with GFM tables) as the independent reader: one heading, one
    table row of four cells, one blockquote, each holding the data's text literally."""
    markdown_it = pytest.importorskip("markdown_it")
    name, warning = "x|y\n## H _a_ *b*", "w *a*\n- <b>x</b> [l](u) `c` & $m$ __i__ a__b"
    body = {
        "command": "calibrate",
        "gate": {
            "passed": True,
            "bound": "estimate",
            "checks": [
                {"metric": "ece", "group": name, "threshold": 0.1, "value": 0.05, "passed": True}
            ],
        },
        "warnings": [warning],
    }
    md = markdown_it.MarkdownIt("commonmark").enable("table")
    tokens = md.parse(markdown_summary(body, ["f.jsonl"]))
    opened = [t.type for t in tokens if t.nesting == 1]
    assert opened.count("heading_open") == 1 and opened.count("blockquote_open") == 1
    assert opened.count("td_open") == 4
    texts = [t.children for t in tokens if t.type == "inline"]
    plain = ["".join(c.content for c in kids if c.type in ("text", "softbreak")) for kids in texts]
    assert "ece ('x|y\\n## H _a_ *b*')" in plain
    assert "warning: w *a* - <b>x</b> [l](u) `c` & $m$ __i__ a__b" in plain


def test_a_calibrator_saved_from_python_is_put_in_place_only_in_full(tmp_path, monkeypatch):
    import calibcli

    rows = ([0.2, 0.4, 0.6, 0.8] * 10, [False, True, True, True] * 10)
    calibrator = calibcli.fit(*rows, method="platt")
    path = tmp_path / "cal.json"
    calibrator.save(path)
    assert json.loads(path.read_text()) == json.loads(calibrator.to_json())
    path.write_text("old")

    def fail(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", fail)
    with pytest.raises(OSError):
        calibrator.save(path)
    assert path.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cal.json"]
