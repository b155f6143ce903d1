"""Outputs that must never be lost or damaged, and option values that must never be accepted.

Each case ends in exit 2 with one line (or is handled correctly), never exit 3, and an existing
report file is left byte for byte as it was whenever the run exits 2. Cases that depend on real
file descriptors (a closed or full stdout, an output encoding) run the installed entry point in
a subprocess.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from harness import make_rows, run, write_jsonl

ROWS = [{"confidence": 0.05 + 0.9 * i / 59, "correct": i % 3 != 0} for i in range(60)]
OLD = '{"old": true}\n'


@pytest.fixture
def preds(tmp_path):
    return write_jsonl(tmp_path / "preds.jsonl", ROWS)


def cli(*args, stdout=subprocess.PIPE, env=None, **kwargs):
    """Run ``python -m calibcli`` in a subprocess; returns the CompletedProcess."""
    return subprocess.run(
        [sys.executable, "-m", "calibcli", *map(str, args)],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
        check=False,
        **kwargs,
    )


# --------------------------------------------------------------------------- -o targets


def test_output_through_a_symlink_replaces_the_target_and_keeps_the_link(tmp_path, preds):
    target = tmp_path / "real.json"
    target.write_text(OLD)
    link = tmp_path / "link.json"
    link.symlink_to(target)
    assert run(["calibrate", preds, "-o", link, "--json"]).exit_code == 0
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert json.loads(target.read_text())["command"] == "calibrate"


def test_output_to_dev_null_writes_through_and_keeps_the_device(preds):
    before = os.stat("/dev/null")
    result = cli("calibrate", preds, "-o", "/dev/null", "--json")
    assert result.returncode == 0, result.stderr
    after = os.stat("/dev/null")
    assert (after.st_mode, after.st_rdev) == (before.st_mode, before.st_rdev)


def test_output_to_dev_stdout_writes_the_report_there(preds, tmp_path):
    out = tmp_path / "captured.txt"
    with out.open("w") as f:
        result = cli("calibrate", preds, "-o", "/dev/stdout", "--json", stdout=f)
    assert result.returncode == 0, result.stderr
    lines = out.read_text().splitlines()
    assert len(lines) == 2 and json.loads(lines[0]) == json.loads(lines[1])
    assert out.is_file() and not out.is_symlink()


def test_output_to_a_fifo_is_written_through(preds, tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE, text=True)
    result = cli("calibrate", preds, "-o", fifo, "--json")
    received, _ = reader.communicate(timeout=30)
    assert result.returncode == 0, result.stderr
    assert json.loads(received)["n"] == len(ROWS)
    assert Path(fifo).exists() and not Path(fifo).is_file()


def test_summary_in_a_missing_folder_leaves_the_report_untouched(tmp_path, preds):
    report = tmp_path / "report.json"
    report.write_text(OLD)
    result = run(["calibrate", preds, "-o", report, "--summary", tmp_path / "no" / "s.md"])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and "does not exist" in result.stderr
    assert report.read_text() == OLD


def test_plot_in_a_missing_folder_leaves_the_report_untouched(tmp_path, preds):
    pytest.importorskip("matplotlib")
    report = tmp_path / "report.json"
    report.write_text(OLD)
    result = run(["reliability", preds, "-o", report, "--plot", tmp_path / "no" / "r.png"])
    assert result.exit_code == 2 and "does not exist" in result.stderr
    assert report.read_text() == OLD


def test_output_that_is_a_directory_is_refused_before_reading(tmp_path):
    result = run(["calibrate", tmp_path / "missing.jsonl", "-o", tmp_path])
    assert result.exit_code == 2 and "is a directory" in result.stderr


def test_bad_input_leaves_every_output_untouched(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"confidence": 0.5, "correct": true}\n{"confidence": 1.5, "correct": true}\n')
    report, summary = tmp_path / "report.json", tmp_path / "summary.md"
    report.write_text(OLD)
    summary.write_text("# before\n")
    result = run(["calibrate", bad, "-o", report, "--summary", summary])
    assert result.exit_code == 2 and "bad.jsonl:2:" in result.stderr
    assert report.read_text() == OLD and summary.read_text() == "# before\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.jsonl", "report.json", "summary.md"]


# ------------------------------------------------------------------- outputs that are inputs


@pytest.fixture
def made(tmp_path, preds):
    """The inputs every command reads, each made once: rows, another rows file, perplexity
    rows, a calibrator, a summary part, a saved report, and a folder of rows."""
    other = write_jsonl(tmp_path / "other.jsonl", ROWS[::-1])
    ppl = write_jsonl(tmp_path / "ppl.jsonl", [{"nll": 2.0 + i, "tokens": 3 + i} for i in range(9)])
    folder = tmp_path / "run"
    folder.mkdir()
    write_jsonl(folder / "rows.jsonl", ROWS)
    files = {"preds": preds, "other": other, "ppl": ppl, "folder": folder}
    files.update(cal=tmp_path / "cal.json", part=tmp_path / "part.cbs", report=tmp_path / "r.json")
    for args in (
        ["fit", preds, "--method", "platt", "-o", files["cal"]],
        ["summarize", preds, "-o", files["part"]],
        ["calibrate", preds, "-o", files["report"]],
    ):
        assert run([*args, "-q"]).exit_code == 0
    return files


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# (command line, the output that is an input) with {name} for the files of ``made``
SAME_FILE = [
    ("calibrate {preds} -o {preds}", "{preds}"),
    ("calibrate {preds} --summary {preds}", "{preds}"),
    ("calibrate {preds} --calibrator {cal} -o {cal}", "{cal}"),
    ("reliability {preds} --plot {preds}", "{preds}"),
    ("threshold {preds} --target-accuracy 0.6 --fit {other} --html {other}", "{other}"),
    ("fit {preds} --method platt -o {preds}", "{preds}"),
    ("apply {cal} {preds} -o {preds}", "{preds}"),
    ("apply {cal} {preds} -o {cal}", "{cal}"),
    ("compare {preds} {other} -o {other}", "{other}"),
    ("perplexity {ppl} -o {ppl}", "{ppl}"),
    ("summarize {preds} -o {preds}", "{preds}"),
    ("merge {part} -o {part}", "{part}"),
    ("render {report} --html {report}", "{report}"),
    ("calibrate {folder} -o {folder}/rows.jsonl", "{folder}/rows.jsonl"),
]


@pytest.mark.parametrize(("line", "output"), SAME_FILE, ids=[c[0].split()[0] for c in SAME_FILE])
def test_an_output_that_is_an_input_is_refused_before_reading(made, tmp_path, line, output):
    args = [a.format(**made) for a in line.split()]
    output = output.format(**made)
    before = _snapshot(tmp_path)
    result = run(args)
    assert result.exit_code == 2, result.stderr
    assert result.stdout == ""
    assert result.stderr == (
        f"Error: {output}: the output file is also an input; write the output elsewhere\n"
    )
    assert _snapshot(tmp_path) == before


def test_another_name_of_an_input_is_the_input(made, tmp_path):
    """A symbolic link, a hard link, another spelling and a pattern reach the same file."""
    preds = made["preds"]
    soft, hard = tmp_path / "soft.jsonl", tmp_path / "hard.jsonl"
    soft.symlink_to(preds)
    os.link(preds, hard)
    before = _snapshot(tmp_path)
    for given, written in (
        (preds, soft),
        (preds, hard),
        (hard, f"{tmp_path}/./preds.jsonl"),
        (f"{tmp_path}/p*.jsonl", preds),
    ):
        result = run(["calibrate", given, "-o", written])
        assert result.exit_code == 2, result.stderr
        assert result.stderr.startswith(f"Error: {Path(written)}: the output file is also an input")
        assert len(result.stderr.splitlines()) == 1
    assert _snapshot(tmp_path) == before


def test_a_copy_of_an_input_or_a_stream_may_be_written(made, tmp_path):
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(made["preds"].read_bytes())
    assert run(["calibrate", made["preds"], "-o", copy, "-q"]).exit_code == 0
    assert json.loads(copy.read_text())["command"] == "calibrate"
    result = run(["calibrate", "-", "-o", "/dev/null", "-q"], input=made["preds"].read_text())
    assert result.exit_code == 0, result.stderr


# (command line, the two options, the file both name) with {name} for the files of ``made``
TWO_OUTPUTS = [
    ("calibrate {preds}", "-o", "--html", "{out}/x.json"),
    ("reliability {preds}", "--plot", "--html", "{out}/x.svg"),
    ("calibrate {preds}", "-o", "--summary", "{report}"),
    ("perplexity {ppl}", "-o", "--summary", "{out}/p.md"),
    ("compare {preds} {other}", "--summary", "--plot", "{out}/c"),
    ("threshold {preds} --target-accuracy 0.6", "-o", "--plot", "{report}"),
    ("fit {preds} --method platt", "-o", "--summary", "{out}/f"),
]


@pytest.mark.parametrize(("line", "first", "second", "path"), TWO_OUTPUTS)
def test_two_outputs_naming_one_file_are_refused_before_reading(
    made, tmp_path, line, first, second, path
):
    """One output would replace the other (or the summary be appended to the report)."""
    names = {**made, "out": tmp_path / "out"}
    names["out"].mkdir()
    path = path.format(**names)
    args = [a.format(**names) for a in line.split()]
    before = _snapshot(tmp_path)
    result = run([*args, first, path, second, path])
    assert result.exit_code == 2, result.stderr
    assert result.stdout == ""
    assert result.stderr == (
        f"Error: {path}: given to both {first} and {second}; "
        "write each output to a file of its own\n"
    )
    assert _snapshot(tmp_path) == before


def test_two_names_of_one_output_file_are_one_file(made, tmp_path):
    """A symbolic or hard link, another spelling, and a link to a file not yet written reach
    the same file; the message names the first option's path and the other one's."""
    report = made["report"]
    soft, hard, dangling = tmp_path / "soft.json", tmp_path / "hard.json", tmp_path / "later"
    soft.symlink_to(report)
    os.link(report, hard)
    dangling.symlink_to(tmp_path / "new.html")
    before = _snapshot(tmp_path)
    for first, second in (
        (report, soft),
        (report, hard),
        (report, f"{tmp_path}/run/../r.json"),
        (dangling, tmp_path / "new.html"),
    ):
        result = run(["calibrate", made["preds"], "-o", first, "--html", second])
        assert result.exit_code == 2, result.stderr
        assert result.stderr == (
            f"Error: {first}: given to both -o and --html (as {Path(second)}); "
            "write each output to a file of its own\n"
        )
    assert _snapshot(tmp_path) == before
    assert not (tmp_path / "new.html").exists()


def test_outputs_in_other_files_or_streams_may_share_a_name(made, tmp_path):
    """Distinct files are written; a stream named twice receives each output in turn."""
    preds = made["preds"]
    report, page = tmp_path / "a.json", tmp_path / "a.html"
    assert run(["calibrate", preds, "-o", report, "--html", page, "-q"]).exit_code == 0
    assert json.loads(report.read_text())["command"] == "calibrate"
    assert page.read_text().startswith("<!DOCTYPE html>")
    result = run(["calibrate", preds, "-o", "/dev/null", "--summary", "/dev/null", "-q"])
    assert result.exit_code == 0, result.stderr
    both = cli("calibrate", preds, "--json", "-o", "/dev/stdout", "--html", "/dev/stdout")
    assert both.returncode == 0, both.stderr
    assert both.stdout.count('"command": "calibrate"') == 2 and "<!DOCTYPE html>" in both.stdout


def test_every_file_option_is_an_input_or_an_output():
    """The parameters check_apart compares cover every file a command names: a new one must be
    added to INPUT_PARAMETERS or OUTPUT_PARAMETERS."""
    import typer.main

    from calibcli.cli import app
    from calibcli.cli.staging import INPUT_PARAMETERS, OUTPUT_PARAMETERS

    named = {"FILE", "FILE...", "PATH", "PART...", "CALIBRATOR", "BASE", "NEW", "REPORT"}
    unknown = [
        f"{name} {param.name}"
        for name, command in typer.main.get_command(app).commands.items()
        for param in command.params
        if param.metavar in named and param.name not in INPUT_PARAMETERS + OUTPUT_PARAMETERS
    ]
    assert not unknown


# --------------------------------------------------------------------------- stdout and stderr


def test_full_stdout_is_exit_2_and_leaves_the_report_untouched(tmp_path, preds):
    report = tmp_path / "report.json"
    report.write_text(OLD)
    with open("/dev/full", "w") as full:
        result = cli("calibrate", preds, "-o", report, stdout=full)
    assert result.returncode == 2
    assert result.stderr.endswith(
        "\nError: cannot write to standard output: No space left on device\n"
    )
    assert report.read_text() == OLD


def test_closed_stdout_is_exit_2(preds):
    result = subprocess.run(
        [sys.executable, "-m", "calibcli", "calibrate", str(preds)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
        preexec_fn=lambda: os.close(1),
    )
    assert result.returncode == 2
    assert result.stderr.endswith("\nError: cannot write to standard output: it is closed\n")


def test_closed_stderr_still_gives_the_gate_exit_code(preds):
    result = subprocess.run(
        [sys.executable, "-m", "calibcli", "calibrate", str(preds), "--max-ece", "0.0001"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        check=False,
        preexec_fn=lambda: os.close(2),
    )
    assert result.returncode == 1


@pytest.fixture(scope="module")
def grouped(tmp_path_factory):
    """Rows of 500 groups, a calibrator, a summary part and a saved report of them: each
    output below is far larger than a pipe's buffer (64 kB), so writing it meets the closed
    pipe."""
    tmp_path = tmp_path_factory.mktemp("grouped")
    rows = [{**row, "g": f"group{i % 500:03d}"} for i, row in enumerate(make_rows(5000))]
    files = {"rows": write_jsonl(tmp_path / "g.jsonl", rows)}
    files.update(cal=tmp_path / "cal.json", part=tmp_path / "g.cbs", report=tmp_path / "r.json")
    for args in (
        ["fit", files["rows"], "--method", "histogram", "--by", "g", "-o", files["cal"]],
        ["summarize", files["rows"], "-o", files["part"]],
        ["calibrate", files["rows"], "--by", "g", "-o", files["report"]],
    ):
        assert run([*args, "-q"]).exit_code == 0
    return files


# command lines with {name} for the files of ``grouped``; what the reader reads before it
# leaves (the first bytes, or everything up to the output named /dev/stdout, so that the
# product is read whole and that output meets the closed pipe); the exit code the run ends with
READER_LEAVES = [
    ("calibrate {rows} --by g --json", b"", 0),
    ("reliability {rows} --bins 2000", b"", 0),
    ("reliability {rows} --bins 2000 --json", b"", 0),
    # the calibrator's own rows: written all the same, a reader leaving is what is looked at
    ("apply {cal} {rows} --by g --allow-in-sample", b"", 0),
    ("calibrate {rows} --by g -o /dev/stdout", b'{"schema_version"', 0),
    ("calibrate {rows} --by g --max-ece 0.0001 -o /dev/stdout", b'{"schema_version"', 1),
    ("calibrate {rows} --by g --json --html /dev/stdout --summary /dev/stdout", b"<!DOCTYPE", 0),
    ("render {report} --html /dev/stdout", b"", 0),
    ("apply {cal} {rows} --by g -o /dev/stdout --allow-in-sample", b"", 0),
    ("summarize {rows} -o /dev/stdout", b"", 0),
    ("merge {part} -o /dev/stdout", b"", 0),
]


@pytest.mark.parametrize(
    ("line", "until", "code"), READER_LEAVES, ids=[c[0] for c in READER_LEAVES]
)
def test_a_reader_leaving_stdout_is_no_error(grouped, tmp_path, line, until, code):
    """`calibcli ... | head -c 10`: when the reader of stdout leaves, whatever was still to be
    written there (the product, or an output named /dev/stdout) is dropped without a
    traceback or an error line, and the exit code is the one the run would have had."""
    args = [a.format(**grouped) for a in line.split()]
    with open(tmp_path / "stderr.txt", "w+b") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "calibcli", *args], stdout=subprocess.PIPE, stderr=stderr
        )
        read = process.stdout.read(10)
        while until not in read:
            more = process.stdout.read1(65536)
            assert more, f"{until!r} never came"
            read += more
        process.stdout.close()
        assert process.wait(timeout=600) == code
        stderr.seek(0)
        said = stderr.read().decode()
    assert "Traceback" not in said and "Error" not in said and "Exception" not in said, said


@pytest.mark.parametrize("command", ["calibrate", "reliability"])
def test_latin1_stdout_prints_ascii(command, preds):
    result = cli(command, preds, env={"PYTHONIOENCODING": "latin-1"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.isascii() and "accuracy" in result.stdout


def test_lone_surrogate_group_names_print_as_escapes(tmp_path):
    lines = [
        '{"confidence": 0.6, "correct": true, "g": "\\ud800"}',
        '{"confidence": 0.7, "correct": false, "g": "a"}',
    ]
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(lines) + "\n")
    for command in ("calibrate", "reliability"):
        result = cli(command, path, "--by", "g")
        assert result.returncode == 0, result.stderr
        assert "\\ud800" in result.stdout
    result = cli("calibrate", path, "--by", "g", "--json")
    assert "\ud800" in json.loads(result.stdout)["groups"]


def test_piped_tables_never_cut_a_number(tmp_path):
    names = [
        "mmlu_high_school_european_history_zero_shot",
        "arc_challenge_with_a_rather_long_task_name_indeed",
    ]
    rows = [
        {"confidence": 0.5 + 0.004 * i, "correct": i % 2 == 0, "task": names[i % 2]}
        for i in range(100)
    ]
    path = write_jsonl(tmp_path / "t.jsonl", rows)
    result = cli("calibrate", path, "--by", "task", env={"COLUMNS": ""})
    assert result.returncode == 0
    assert "…" not in result.stdout
    for name in names:
        line = next(x for x in result.stdout.splitlines() if x.startswith(name))
        assert line.split()[1] == "50"  # N of the group, whole


# --------------------------------------------------------------------------- option values


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-0.1"])
@pytest.mark.parametrize(
    ("command", "option"),
    [("calibrate", "--max-ece"), ("calibrate", "--max-brier"), ("perplexity", "--max-perplexity")],
)
def test_thresholds_must_be_finite_and_non_negative(command, option, value, preds):
    result = run([command, preds, option, value])
    assert result.exit_code == 2 and "is not a finite number >= 0" in result.stderr


@pytest.mark.parametrize("bins", ["0", "10001", "10000000"])
def test_bins_are_bounded(bins, preds):
    result = run(["calibrate", preds, "--bins", bins])
    assert result.exit_code == 2 and "--bins" in result.stderr


@pytest.mark.parametrize("level", ["0", "1", "1.5", "-0.5", "nan"])
def test_ci_level_must_be_inside_zero_one(level, preds):
    assert run(["calibrate", preds, "--ci", level]).exit_code == 2


def test_bootstrap_needs_enough_resamples(preds):
    result = run(["calibrate", preds, "--ci", "0.95", "--bootstrap", "2"])
    assert result.exit_code == 2 and "200" in result.stderr


@pytest.mark.parametrize(
    "args",
    [["--bootstrap", "500"], ["--seed", "3"], ["--gate-each", "--by", "correct"]],
)
def test_options_without_their_partner_are_usage_errors(args, preds):
    result = run(["calibrate", preds, *args])
    assert result.exit_code == 2 and result.stderr.startswith("Error: ")


def test_gate_each_without_a_threshold_is_a_usage_error_for_perplexity(tmp_path):
    path = write_jsonl(tmp_path / "p.jsonl", [{"nll": 1.0, "tokens": 2, "g": "a"}])
    result = run(["perplexity", path, "--by", "g", "--gate-each"])
    assert result.exit_code == 2 and "--max-" in result.stderr


def test_workers_option_and_its_environment_variable(preds):
    assert "CALIBCLI_WORKERS" in run(["calibrate", "--help"]).stdout
    assert run(["calibrate", preds, "--workers", "0"]).exit_code == 2
    result = run(["calibrate", preds], env={"CALIBCLI_WORKERS": "many"})
    assert result.exit_code == 2 and "--workers" in result.stderr
    assert run(["calibrate", preds], env={"CALIBCLI_WORKERS": "1"}).exit_code == 0
