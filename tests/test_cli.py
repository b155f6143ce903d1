"""The command line, common behaviour and `calibcli perplexity`: exit codes, errors, -o, stdin.

Numbers are checked against plain-Python arithmetic (hand values and tests/reference.py), never
against calibcli's own functions.
"""

from __future__ import annotations

import gzip
import json
import math
import sys

import pytest
from harness import run, write_jsonl
from reference import perplexity

from calibcli import cli

LN2 = math.log(2.0)


PPL_ROWS = [
    {"nll": 12.5, "tokens": 10, "bytes": 41, "words": 8},
    {"nll": 3.25, "tokens": 2, "bytes": 9, "words": 2},
    {"nll": 0.0, "tokens": 0, "bytes": 0, "words": 0},
    {"nll": 40.0, "tokens": 17, "bytes": 60, "words": 11},
]


PPL_REF = perplexity([r["nll"] for r in PPL_ROWS], [r["tokens"] for r in PPL_ROWS])


@pytest.fixture(params=["file", "stdin"])
def ppl_source(request, tmp_path):
    """(arguments, stdin) for the same rows given as a file or as '-'."""
    path = write_jsonl(tmp_path / "ppl.jsonl", PPL_ROWS)
    if request.param == "file":
        return [path], None
    return ["-"], path.read_text()


# --------------------------------------------------------------------------- top level


def test_version():
    from importlib.metadata import version

    result = run(["--version"])
    assert result.exit_code == 0
    assert result.stdout == f"calibcli {version('calibcli')}\n"


def test_help_documents_exit_codes_and_defaults():
    result = run(["--help"])
    assert result.exit_code == 0
    for text in ("perplexity", "calibrate", "reliability", "Exit codes", "3  internal error"):
        assert text in result.stdout
    calibrate = " ".join(run(["calibrate", "--help"]).stdout.split())
    assert "[default: 3; x>=1]" in calibrate  # --min-populated-bins
    assert "fewer than" in calibrate and "30 predictions" in calibrate
    assert "Exit codes" in calibrate


def test_no_arguments_shows_help_as_usage_error():
    result = run([])
    assert result.exit_code == 2
    assert "Usage:" in result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize(
    "args",
    [
        ["perplexity"],  # missing FILE
        ["perplexity", "x.jsonl", "--no-such-option"],
        ["nonsense"],
        ["calibrate", "x.jsonl", "--bins", "0"],
        ["calibrate", "x.jsonl", "--bins", "ten"],
        ["calibrate", "x.jsonl", "--ci", "1.5"],
        ["calibrate", "x.jsonl", "--ci", "0"],
        ["calibrate", "x.jsonl", "--max-ece", "-0.1"],
        ["calibrate", "x.jsonl", "--max-ece", "nan"],
        ["calibrate", "x.jsonl", "--strategy", "adaptive"],
        ["calibrate", "x.jsonl", "--gate-on", "lower"],
        ["calibrate", "x.jsonl", "--format", "csv"],
        ["calibrate", "x.jsonl", "--bootstrap", "0"],
        ["calibrate", "x.jsonl", "--min-populated-bins", "0"],
        ["calibrate", "x.jsonl", "--gate-each"],  # needs --by
        ["calibrate", "x.jsonl", "--label", "a"],  # needs --plot
        ["calibrate", "x.jsonl", "--plot", "out.jpg"],
        ["reliability", "x.jsonl", "--plot", "out"],
        ["perplexity", "x.jsonl", "--max-perplexity", "-1"],
        ["perplexity", "x.jsonl", "--gate-each", "--max-perplexity", "3"],
    ],
)
def test_usage_errors_exit_2_without_traceback(args, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = run(args)
    assert result.exit_code == 2, result.stderr
    assert "Error" in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


def test_a_missing_choice_option_is_one_line_naming_the_choices(tmp_path, monkeypatch):
    # click lays the choices out one per line; the error stays one line, with no escapes shown
    monkeypatch.chdir(tmp_path)
    result = run(["fit", "x.jsonl"])
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr == (
        "Error: Missing option '--method'. Choose from: temperature, platt, isotonic, "
        "histogram, beta (see 'calibcli fit -h')\n"
    )


@pytest.mark.parametrize(
    ("args", "gates"),
    [
        (["calibrate", "x.jsonl"], "--max-* gate"),
        (["calibrate", "x.jsonl", "--ci", "0.9", "--by", "subject"], "--max-* gate"),
        (["compare", "x.jsonl", "y.jsonl"], "--max-increase/--max-decrease margin"),
    ],
)
def test_gate_on_upper_without_a_gate_is_refused(args, gates, tmp_path, monkeypatch):
    """``--gate-on upper`` with nothing to gate would exit 0 as if a gate had passed: it is
    refused before any file is read (these do not exist)."""
    monkeypatch.chdir(tmp_path)
    result = run([*args, "--gate-on", "upper"])
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.strip() == (
        f"Error: --gate-on upper reads a {gates} at the upper end of its interval, and none "
        "is given: nothing would be checked (--ci LEVEL adds the intervals alone)"
    )


# --------------------------------------------------------------------------- perplexity


def test_perplexity_json_matches_plain_python(ppl_source):
    args, stdin = ppl_source
    result = run(["perplexity", *args, "--json"], input=stdin)
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    ref = PPL_REF
    assert report["schema_version"] == 1
    assert report["command"] == "perplexity"
    assert report["format"] == "jsonl"
    assert report["sequences"] == 4
    assert report["total_tokens"] == ref["total_tokens"] == 29
    for key in ("total_nll", "mean_nll", "perplexity", "bits_per_token"):
        assert report[key] == pytest.approx(ref[key], rel=1e-15), key
    assert report["total_bytes"] == 110 and report["total_words"] == 21
    assert report["bits_per_byte"] == pytest.approx(55.75 / 110 / LN2, rel=1e-15)
    assert report["byte_perplexity"] == pytest.approx(math.exp(55.75 / 110), rel=1e-15)
    assert report["word_perplexity"] == pytest.approx(math.exp(55.75 / 21), rel=1e-15)
    assert report["warnings"] == []
    assert "gate" not in report
    assert result.stderr == ""
    assert list(report)[:9] == [
        "schema_version",
        "command",
        "format",
        "sequences",
        "total_tokens",
        "total_nll",
        "mean_nll",
        "perplexity",
        "bits_per_token",
    ]
    assert list(report)[-1] == "warnings"


def test_perplexity_table(ppl_source):
    args, stdin = ppl_source
    result = run(["perplexity", *args], input=stdin)
    assert result.exit_code == 0
    out = result.stdout
    ref = PPL_REF
    assert f"{ref['perplexity']:.4f}" in out
    assert f"{ref['mean_nll']:.4f}" in out
    assert f"{ref['bits_per_token']:.4f}" in out
    assert "bits per byte" in out and "word perplexity" in out
    assert "Only bits per byte compares across tokenizers" in out
    assert "\x1b[" not in out


def test_perplexity_without_bytes_has_no_byte_keys(tmp_path):
    path = write_jsonl(tmp_path / "p.jsonl", [{"nll": 2.0, "tokens": 3}])
    report = json.loads(run(["perplexity", path, "--json"]).stdout)
    for key in ("bits_per_byte", "byte_perplexity", "word_perplexity", "null_logprobs"):
        assert key not in report
    table = run(["perplexity", path]).stdout
    assert "tokenizers" not in table


def test_perplexity_field_names(tmp_path):
    rows = [{"loss": 6.0, "n": 4, "b": 12, "w": 3}, {"loss": 2.0, "n": 4, "b": 12, "w": 3}]
    path = write_jsonl(tmp_path / "p.jsonl", rows)
    result = run(
        [
            "perplexity",
            path,
            "--nll-field",
            "loss",
            "--tokens-field",
            "n",
            "--bytes-field",
            "b",
            "--words-field",
            "w",
            "--json",
        ]
    )
    report = json.loads(result.stdout)
    assert report["perplexity"] == pytest.approx(math.exp(1.0), rel=1e-15)
    assert report["bits_per_byte"] == pytest.approx(8.0 / 24 / LN2, rel=1e-15)
    assert report["word_perplexity"] == pytest.approx(math.exp(8.0 / 6), rel=1e-15)


def test_several_files_and_gzip_are_pooled(tmp_path):
    a = write_jsonl(tmp_path / "a.jsonl", PPL_ROWS[:2])
    b = tmp_path / "b.jsonl.gz"
    b.write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in PPL_ROWS[2:]).encode()))
    report = json.loads(run(["perplexity", a, b, "--json"]).stdout)
    ref = PPL_REF
    assert report["sequences"] == 4
    assert report["perplexity"] == pytest.approx(ref["perplexity"], rel=1e-15)


def test_blank_lines_crlf_and_extra_keys_are_tolerated(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_bytes(
        b'{"nll": 2.0, "tokens": 2, "text": "x"}\r\n\r\n\n{"nll": 4.0, "tokens": 2}\r\n'
    )
    report = json.loads(run(["perplexity", path, "--json"]).stdout)
    assert report["sequences"] == 2
    assert report["perplexity"] == pytest.approx(math.exp(1.5), rel=1e-15)


@pytest.mark.parametrize("literal", ["Infinity", "1e999"])
def test_infinite_nll_gives_null_perplexity_and_a_warning(tmp_path, literal):
    path = tmp_path / "p.jsonl"
    path.write_text(f'{{"nll": 1.0, "tokens": 2}}\n{{"nll": {literal}, "tokens": 3}}\n')
    result = run(["perplexity", path, "--json"])
    assert result.exit_code == 0
    report = json.loads(result.stdout)
    assert report["perplexity"] is None and report["total_nll"] is None
    assert report["total_tokens"] == 5
    assert any("infinite" in w for w in report["warnings"])
    assert result.stderr.count("warning:") == len(report["warnings"]) == 1
    gated = run(["perplexity", path, "--max-perplexity", "1e300", "--json"])
    assert gated.exit_code == 1
    assert "gate failed: perplexity" in gated.stderr
    assert json.loads(gated.stdout)["gate"]["checks"][0]["value"] is None


def test_empty_input_warns_and_fails_a_gate_closed(tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_text("\n\n")
    result = run(["perplexity", path, "--json"])
    assert result.exit_code == 0
    report = json.loads(result.stdout)
    assert report["sequences"] == 0 and report["perplexity"] is None
    assert result.stderr.startswith("warning: no rows")
    gated = run(["perplexity", path, "--max-perplexity", "100", "--json"])
    assert gated.exit_code == 1
    check = json.loads(gated.stdout)["gate"]["checks"][0]
    assert check["passed"] is False and "no rows" in check["reason"]
    assert "gate failed: perplexity: no rows were read" in gated.stderr


def test_zero_tokens_warns_and_fails_a_gate_closed(tmp_path):
    path = write_jsonl(tmp_path / "z.jsonl", [{"nll": 0.0, "tokens": 0}] * 3)
    result = run(["perplexity", path, "--json"])
    assert result.exit_code == 0
    report = json.loads(result.stdout)
    assert report["total_tokens"] == 0 and report["perplexity"] is None
    assert any("zero tokens" in w for w in report["warnings"])
    gated = run(["perplexity", path, "--max-perplexity", "100"])
    assert gated.exit_code == 1
    assert "zero tokens" in gated.stderr and "fail" in gated.stderr


def test_perplexity_gate_pass_and_fail(tmp_path):
    path = write_jsonl(tmp_path / "p.jsonl", PPL_ROWS)
    ppl = PPL_REF["perplexity"]
    ok = run(["perplexity", path, "--max-perplexity", str(ppl * 1.01), "--json"])
    assert ok.exit_code == 0
    gate = json.loads(ok.stdout)["gate"]
    assert gate == {
        "passed": True,
        "bound": "estimate",
        "checks": [
            {
                "metric": "perplexity",
                "threshold": float(str(ppl * 1.01)),
                "value": pytest.approx(ppl, rel=1e-15),
                "passed": True,
            }
        ],
    }
    bad = run(["perplexity", path, "--max-perplexity", str(ppl * 0.99)])
    assert bad.exit_code == 1
    assert "gate failed: perplexity" in bad.stderr and "exceeds --max-perplexity" in bad.stderr
    assert "FAILED" in bad.stdout  # the table shows the verdict too


# --------------------------------------------------------------------------- invalid input

INVALID_PERPLEXITY = [
    ('{"nll": -1.0, "tokens": 3}', "nll"),
    ('{"nll": NaN, "tokens": 3}', "nll"),
    ('{"nll": "2.0", "tokens": 3}', "nll"),
    ('{"nll": true, "tokens": 3}', "nll"),
    ('{"nll": 2.0, "tokens": 1.5}', "tokens"),
    ('{"nll": 2.0, "tokens": -1}', "tokens"),
    ('{"nll": 2.0, "tokens": "3"}', "tokens"),
    ('{"nll": 2.0, "tokens": 0}', "0 tokens"),
    ('{"tokens": 3}', "nll"),
    ('{"nll": 2.0}', "tokens"),
    ("[1, 2]", "object"),
    ('{"nll": 2.0, "tokens": 3', ""),
    ("not json", ""),
]


@pytest.mark.parametrize(("line", "mentions"), INVALID_PERPLEXITY)
def test_invalid_perplexity_rows_exit_2_naming_file_and_line(tmp_path, line, mentions):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"nll": 1.0, "tokens": 2}\n\n' + line + "\n")
    report = tmp_path / "report.json"
    report.write_text("previous report\n")
    result = run(["perplexity", path, "-o", report])
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"Error: {path}:3: ")
    assert mentions in lines[0]
    assert result.stdout == ""
    assert report.read_text() == "previous report\n"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_invalid_stdin_names_stdin(tmp_path):
    result = run(["perplexity", "-"], input='{"nll": -2, "tokens": 1}\n')
    assert result.exit_code == 2
    assert result.stderr.startswith("Error: <stdin>:1: ")


def test_missing_file_exits_2(tmp_path):
    missing = tmp_path / "missing.jsonl"
    result = run(["perplexity", missing])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"Error: {missing}: ")
    assert len(result.stderr.splitlines()) == 1


def test_corrupt_gzip_exits_2(tmp_path):
    path = tmp_path / "bad.jsonl.gz"
    path.write_bytes(gzip.compress(b'{"nll": 1.0, "tokens": 2}\n' * 50)[:-20])
    result = run(["perplexity", path])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"Error: {path}")
    assert "Traceback" not in result.stderr


# --------------------------------------------------------------------------- -o


def test_output_writes_report_and_still_shows_table(tmp_path):
    path = write_jsonl(tmp_path / "p.jsonl", PPL_ROWS)
    out = tmp_path / "report.json"
    result = run(["perplexity", path, "-o", out])
    assert result.exit_code == 0
    assert "Perplexity" in result.stdout
    written = out.read_text()
    assert written.endswith("}\n") and written.count("\n") == 1
    assert json.loads(written)["perplexity"] == pytest.approx(PPL_REF["perplexity"], rel=1e-15)
    # --json and -o together: identical bytes on stdout and in the file
    both = run(["perplexity", path, "--json", "--output", out])
    assert both.stdout == out.read_text() == written
    assert {p.name for p in tmp_path.iterdir()} == {"p.jsonl", "report.json"}


def test_output_is_written_even_when_the_gate_fails(tmp_path):
    path = write_jsonl(tmp_path / "p.jsonl", PPL_ROWS)
    out = tmp_path / "report.json"
    result = run(["perplexity", path, "--max-perplexity", "1", "-o", out])
    assert result.exit_code == 1
    assert json.loads(out.read_text())["gate"]["passed"] is False


def test_output_into_missing_directory_exits_2(tmp_path):
    path = write_jsonl(tmp_path / "p.jsonl", PPL_ROWS)
    result = run(["perplexity", path, "-o", tmp_path / "no" / "such" / "r.json"])
    assert result.exit_code == 2
    assert result.stderr.startswith("Error: ")
    assert "cannot write the report" in result.stderr
    assert result.stdout == ""


def test_reports_are_byte_identical_across_runs(tmp_path):
    path = write_jsonl(tmp_path / "p.jsonl", PPL_ROWS)
    first = run(["perplexity", path, "--json"]).stdout
    assert first == run(["perplexity", path, "--json"]).stdout


def test_no_color_and_piped_output_have_no_escape_codes(tmp_path):
    path = write_jsonl(tmp_path / "p.jsonl", PPL_ROWS)
    for env in ({"NO_COLOR": "1"}, {"FORCE_COLOR": None, "NO_COLOR": None}):
        result = run(["perplexity", path, "--max-perplexity", "1"], env=env)
        assert "\x1b[" not in result.stdout and "\x1b[" not in result.stderr


# --------------------------------------------------------------------------- exit 3


def test_main_maps_a_crash_to_exit_3_with_traceback(tmp_path, monkeypatch, capsys):
    path = write_jsonl(tmp_path / "p.jsonl", PPL_ROWS)

    def broken(*args, **kwargs):
        raise RuntimeError("simulated bug")

    monkeypatch.setattr("calibcli.reports.perplexity.perplexity_report", broken)
    with pytest.raises(SystemExit) as exc:
        cli.main(["perplexity", str(path)])
    assert exc.value.code == 3
    err = capsys.readouterr().err
    assert "Traceback" in err and "RuntimeError: simulated bug" in err


@pytest.mark.parametrize(
    ("argv", "code"),
    [
        (["--version"], 0),
        (["perplexity", "{path}"], 0),
        (["perplexity", "{path}", "--max-perplexity", "1"], 1),
        (["perplexity", "{path}", "--bogus"], 2),
        (["perplexity", "{missing}"], 2),
    ],
)
def test_main_exit_codes(tmp_path, capsys, argv, code):
    path = write_jsonl(tmp_path / "p.jsonl", PPL_ROWS)
    argv = [a.format(path=path, missing=tmp_path / "missing") for a in argv]
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert (exc.value.code or 0) == code
    assert "Traceback" not in capsys.readouterr().err


def test_help_does_not_import_numpy_or_rich():
    import subprocess

    code = (
        "import sys\n"
        "from calibcli.cli import main\n"
        "try:\n    main(['--help'])\n"
        "except SystemExit:\n    pass\n"
        "heavy = ('numpy', 'rich.table', 'msgspec', 'matplotlib')\n"
        "heavy = [m for m in heavy if m in sys.modules]\n"
        "print('HEAVY:' + ','.join(heavy))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip().splitlines()[-1] == "HEAVY:"


def test_infinite_perplexity_reads_inf_in_the_table_and_null_in_the_json(tmp_path):
    ppl = tmp_path / "ppl.jsonl"
    ppl.write_text('{"nll": 1e999, "tokens": 3}\n{"nll": 2.0, "tokens": 1}\n')
    table = run(["perplexity", str(ppl)])
    assert table.exit_code == 0
    rows = {line[:24].strip(): line[24:].strip() for line in table.stdout.splitlines()}
    assert rows["perplexity (per token)"] == "inf"
    assert rows["total NLL (nats)"] == "inf"
    assert rows["tokens"] == "4"
    report = json.loads(run(["perplexity", str(ppl), "--json"]).stdout)
    assert report["perplexity"] is None and report["total_nll"] is None
    assert any("infinite" in w for w in report["warnings"])
