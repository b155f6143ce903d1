"""Input that is not what it seems: a line in another encoding than UTF-8, an integer too long
for Python to convert. Each is one error line naming the file and the line (or the row inside a
document) with exit 2, whichever path reads it: the small-file path (json only), a block that
msgspec decodes and then goes line by line, whole documents, ``apply`` and ``compare``.
"""

from __future__ import annotations

import gzip
import io
import json
import sys
import zipfile
from pathlib import Path

import pytest
from harness import run

INSPECT = Path(__file__).parent / "fixtures" / "inspect_ai" / "toy_arithmetic.json"
# past SMALL_BLOCK (64 KiB): msgspec decodes the block, which then goes line by line
MANY = 3000


def one_error_line(result) -> str:
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    return lines[0]


def cal_line(i: int) -> bytes:
    return json.dumps({"id": i, "confidence": (i % 97) / 97, "correct": i % 3 != 0}).encode()


def write_lines(path: Path, lines: list[bytes]) -> Path:
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return path


def calibrator(tmp_path: Path) -> Path:
    rows = [cal_line(i) for i in range(200)]
    fitted = write_lines(tmp_path / "fit.jsonl", rows)
    out = tmp_path / "cal.json"
    assert run(["fit", fitted, "--method", "histogram", "-o", out, "-q"]).exit_code == 0
    return out


# --------------------------------------------------------------------------- other encodings

WIDE = [
    ("utf-16-le", "UTF-16"),
    ("utf-16-be", "UTF-16"),
    ("utf-16", "UTF-16"),  # with its byte-order mark
    ("utf-32-le", "UTF-32"),
    ("utf-32-be", "UTF-32"),
]


@pytest.mark.parametrize("rows_before", [1, MANY])
@pytest.mark.parametrize(("encoding", "named"), WIDE)
def test_a_line_in_utf16_or_utf32_is_refused(tmp_path, encoding, named, rows_before):
    wide = json.dumps({"confidence": 0.9, "correct": False}).encode(encoding)
    lines = [cal_line(i) for i in range(rows_before)]
    path = write_lines(tmp_path / "mixed.jsonl", [*lines, wide, cal_line(0)])
    line = one_error_line(run(["calibrate", path, "--json"]))
    assert line == f"Error: {path}:{rows_before + 1}: line is {named} text; calibcli reads UTF-8"


@pytest.mark.parametrize(("encoding", "named"), WIDE)
def test_a_perplexity_line_in_utf16_is_refused(tmp_path, encoding, named):
    wide = json.dumps({"nll": 1.5, "tokens": 3}).encode(encoding)
    path = write_lines(tmp_path / "p.jsonl", [b'{"nll": 1.0, "tokens": 2}', wide])
    line = one_error_line(run(["perplexity", path, "--json"]))
    assert line == f"Error: {path}:2: line is {named} text; calibcli reads UTF-8"


@pytest.mark.parametrize("rows_before", [1, MANY])
def test_utf8_with_encoded_surrogates_is_not_utf8(tmp_path, rows_before):
    # ED A0 80 is U+D800 written as UTF-8 would write it, were surrogates characters. In a
    # large block msgspec meets the line first: the field is --by's, so that msgspec decodes
    # its text (it skips a field no rule reads without checking it)
    bad = b'{"confidence": 0.5, "correct": true, "note": "\xed\xa0\x80"}'
    lines = [b'{"confidence": 0.5, "correct": true, "note": "a"}'] * rows_before
    path = write_lines(tmp_path / "s.jsonl", [*lines, bad])
    line = one_error_line(run(["calibrate", path, "--by", "note", "--json"]))
    assert line == f"Error: {path}:{rows_before + 1}: line is not valid UTF-8"


def test_apply_refuses_a_utf16_line_and_writes_nothing(tmp_path):
    cal = calibrator(tmp_path)
    wide = json.dumps({"confidence": 0.9, "correct": False}).encode("utf-16-le")
    path = write_lines(tmp_path / "mixed.jsonl", [cal_line(1), wide])
    result = run(["apply", cal, path])
    assert one_error_line(result) == f"Error: {path}:2: line is UTF-16 text; calibcli reads UTF-8"
    assert result.stdout == ""
    out = tmp_path / "out.jsonl"
    one_error_line(run(["apply", cal, path, "-o", out]))
    assert not out.exists()


def test_compare_refuses_a_utf16_line(tmp_path):
    base = write_lines(tmp_path / "base.jsonl", [cal_line(i) for i in range(40)])
    lines = [cal_line(i) for i in range(40)]
    lines[5] = lines[5].decode().encode("utf-16-le")
    new = write_lines(tmp_path / "new.jsonl", lines)
    line = one_error_line(run(["compare", base, new, "--json"]))
    assert line == f"Error: {new}:6: line is UTF-16 text; calibcli reads UTF-8"


ROWS = [{"confidence": 0.5, "correct": True}, {"confidence": 0.9, "correct": False}]


@pytest.mark.parametrize("indent", [None, 1])
@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-32-le"])
def test_a_json_array_in_utf16_or_utf32_is_refused(tmp_path, encoding, indent):
    path = tmp_path / "rows.json"
    path.write_bytes(json.dumps(ROWS, indent=indent).encode(encoding))
    line = one_error_line(run(["calibrate", path, "--json"]))
    named = encoding[:6].upper()
    assert line == f"Error: {path}: {named} text; calibcli reads UTF-8"


@pytest.mark.parametrize("indent", [None, 1])
def test_a_big_endian_json_array_is_refused_at_its_first_line(tmp_path, indent):
    # its first byte is a zero, not "[": read as JSON Lines, whose first line is refused
    path = tmp_path / "rows.json"
    path.write_bytes(json.dumps(ROWS, indent=indent).encode("utf-16-be"))
    line = one_error_line(run(["calibrate", path, "--json"]))
    assert line == f"Error: {path}:1: line is UTF-16 text; calibcli reads UTF-8"


@pytest.mark.parametrize("indent", [None, 2])
def test_an_inspect_log_in_utf16_is_refused(tmp_path, indent):
    log = json.loads(INSPECT.read_text(encoding="utf-8"))
    path = tmp_path / "log.json"
    path.write_bytes(json.dumps(log, indent=indent).encode("utf-16-le"))
    line = one_error_line(run(["calibrate", path, "--scorer", "match", "--json"]))
    assert line == f"Error: {path}: UTF-16 text; calibcli reads UTF-8"


def eval_log(path: Path, sample: bytes) -> Path:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("header.json", json.dumps({"version": 2, "status": "success", "eval": {}}))
        z.writestr("samples/1_epoch_1.json", sample)
    path.write_bytes(buffer.getvalue())
    return path


def test_an_eval_member_in_utf16_is_refused(tmp_path):
    sample = json.loads(INSPECT.read_text(encoding="utf-8"))["samples"][0]
    path = eval_log(tmp_path / "log.eval", json.dumps(sample).encode("utf-16-le"))
    line = one_error_line(run(["calibrate", path, "--scorer", "match", "--json"]))
    assert line == f"Error: {path}:samples/1_epoch_1.json: UTF-16 text; calibcli reads UTF-8"


def test_what_the_input_rules_accept_is_still_read(tmp_path):
    # a UTF-8 byte-order mark opening the file, Infinity and an overflowing literal as NLLs,
    # CRLF line ends: all through the line-by-line path
    rows = [
        b'{"nll": Infinity, "tokens": 2}',
        b'{"nll": 1e999, "tokens": 3}',
        b'{"nll": 2.5, "tokens": 4}',
    ]
    path = tmp_path / "p.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + b"".join(r + b"\r\n" for r in rows))
    body = json.loads(run(["perplexity", path, "--json", "-q"]).stdout)
    assert body["sequences"] == 3 and body["total_tokens"] == 9
    assert body["non_finite"]["total_nll"] == "inf"


@pytest.mark.parametrize("kind", ["inspect-ai log", "JSON array", "pretty object", "gzipped"])
def test_a_document_opened_by_a_byte_order_mark_is_read_as_a_document(tmp_path, kind):
    """Windows tools write UTF-8 with a byte-order mark; a pretty-printed document after one is
    still a document, not JSON Lines whose first line is '{'."""
    if kind == "inspect-ai log":
        text = INSPECT.read_bytes()
        args, n = ["--scorer", "match"], len(json.loads(text)["samples"])
    elif kind == "JSON array":
        text = b'[\n  {"confidence": 0.5,\n   "correct": true},\n'
        text += b'  {"confidence": 0.25, "correct": false}\n]\n'
        args, n = [], 2
    else:
        text = b'{\n  "confidence": 0.5,\n  "correct": true\n}\n'
        args, n = [], 1
    path = tmp_path / "doc.json"
    path.write_bytes(b"\xef\xbb\xbf" + text)
    if kind == "gzipped":
        path = tmp_path / "doc.json.gz"
        path.write_bytes(gzip.compress(b"\xef\xbb\xbf" + text))
    result = run(["calibrate", path, *args, "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["n"] == n


def test_non_ascii_text_in_utf8_is_read(tmp_path):
    lines = [cal_line(i) for i in range(5)]
    lines.append('{"confidence": 0.25, "correct": true, "q": "naïve 東京 😀"}'.encode())
    path = write_lines(tmp_path / "u.jsonl", lines)
    assert json.loads(run(["calibrate", path, "--json", "-q"]).stdout)["n"] == 6


# --------------------------------------------------------------------------- long integers
#
# json.loads refuses an integer of more digits than sys.get_int_max_str_digits() (4,300 by
# default) with Python's own advice; the message says instead which value and how long. A
# field that no rule reads is ignored whatever it holds, on every route, so these tests put the
# integer where it is read.

LONG = "1" + "0" * 4999  # 5,000 digits
DIGITS = getattr(sys, "get_int_max_str_digits", lambda: 0)()  # Python 3.10.7 and later
LIMIT = f"more than the {DIGITS:,} calibcli reads"
needs_limit = pytest.mark.skipif(
    not 0 < DIGITS < 5000, reason="this Python converts an integer of 5,000 digits"
)


def assert_named(line: str, where: str) -> None:
    assert line == f"Error: {where} is an integer of 5,000 digits, {LIMIT}"
    assert "set_int_max_str_digits" not in line


@needs_limit
def test_a_long_integer_in_a_field_no_rule_reads_is_read_past(tmp_path):
    """An extra key is ignored whatever it holds, on every route (msgspec's block decoder
    skips it unconverted; json.loads keeps it as a marker no rule reads)."""
    extra = f'{{"confidence": 0.5, "correct": true, "tokens": {LONG}}}'.encode()
    nested = f'{{"confidence": 0.5, "correct": true, "meta": {{"xs": [1, 2, -{LONG}]}}}}'.encode()
    path = write_lines(tmp_path / "c.jsonl", [cal_line(1), cal_line(2), extra, nested])
    result = run(["calibrate", path, "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["n"] == 4


@needs_limit
def test_a_long_integer_in_a_large_block(tmp_path):
    lines = [b'{"confidence": 0.5, "correct": true, "g": 1}'] * MANY
    bad = f'{{"confidence": 0.5, "correct": true, "g": {LONG}}}'.encode()
    path = write_lines(tmp_path / "c.jsonl", [*lines, bad])
    line = one_error_line(run(["calibrate", path, "--by", "g", "--json"]))
    assert_named(line, f"{path}:{MANY + 1}: g")


@needs_limit
@pytest.mark.parametrize("field", ["tokens", "nll"])
def test_a_long_integer_in_a_perplexity_row(tmp_path, field):
    row = {"nll": 1.5, "tokens": 3, field: 0}
    bad = json.dumps(row).replace(": 0", f": {LONG}").encode()
    path = write_lines(tmp_path / "p.jsonl", [b'{"nll": 1.0, "tokens": 2}', bad])
    assert_named(one_error_line(run(["perplexity", path, "--json"])), f"{path}:2: {field}")


@needs_limit
@pytest.mark.parametrize("extra", [[], ["--by", "g"]])
def test_a_long_integer_on_the_first_line(tmp_path, extra):
    # the format sniffer reads the first line before any reader does
    bad = f'{{"nll": {LONG}, "tokens": 3, "g": 1}}'.encode()
    path = write_lines(tmp_path / "p.jsonl", [bad])
    assert_named(one_error_line(run(["perplexity", path, "--json", *extra])), f"{path}:1: nll")


@needs_limit
def test_a_long_integer_in_a_json_array(tmp_path):
    path = tmp_path / "rows.json"
    path.write_text(f'[{{"nll": 1.0, "tokens": 3}},\n {{"nll": 1.0, "tokens": {LONG}}}]\n')
    assert_named(one_error_line(run(["perplexity", path, "--json"])), f"{path}:2: tokens")


@needs_limit
def test_a_long_integer_in_an_inspect_log(tmp_path):
    log = json.loads(INSPECT.read_text(encoding="utf-8"))
    log["samples"][2]["epoch"] = 0
    path = tmp_path / "log.json"
    path.write_text(json.dumps(log, indent=2).replace('"epoch": 0', f'"epoch": {LONG}'))
    line = one_error_line(run(["calibrate", path, "--scorer", "match", "--json"]))
    assert_named(line, f"{path}:samples[2]: epoch")


@needs_limit
def test_a_long_integer_in_an_eval_member(tmp_path):
    sample = json.loads(INSPECT.read_text(encoding="utf-8"))["samples"][0]
    sample["metadata"] = {"n": 0}
    text = json.dumps(sample).replace('"n": 0', f'"n": {LONG}')
    path = eval_log(tmp_path / "log.eval", text.encode())
    line = one_error_line(run(["calibrate", path, "--scorer", "match", "--json"]))
    assert_named(line, f"{path}:samples/1_epoch_1.json: metadata.n")


@needs_limit
def test_a_long_integer_in_an_openai_evals_log(tmp_path):
    log = Path(__file__).parent / "fixtures" / "openai_evals" / "toy-mc.jsonl"
    lines = log.read_bytes().splitlines()
    lines[3] = lines[3].replace(b'"event_id": 1', f'"event_id": {LONG}'.encode())
    path = write_lines(tmp_path / "evals.jsonl", lines)
    assert_named(one_error_line(run(["calibrate", path, "--json"])), f"{path}:4: event_id")


@needs_limit
def test_apply_names_a_long_integer(tmp_path):
    cal = calibrator(tmp_path)
    bad = f'{{"confidence": {LONG}, "correct": true}}'.encode()
    path = write_lines(tmp_path / "c.jsonl", [cal_line(1), bad])
    result = run(["apply", cal, path])
    assert_named(one_error_line(result), f"{path}:2: confidence")
    assert result.stdout == ""


@needs_limit
def test_render_names_a_long_integer(tmp_path):
    path = tmp_path / "report.json"
    path.write_text(f'{{"schema_version": 1, "command": "calibrate", "n": {LONG}}}')
    line = one_error_line(run(["render", path, "--html", tmp_path / "r.html"]))
    assert line == f"Error: {path}: not a calibcli report: n is an integer of 5,000 digits, {LIMIT}"


# --------------------------------------------------------------------------- odd file names
#
# A file name may hold a newline, a tab or an escape character; an error or warning naming it
# stays one line, the name shown as its Python repr.

ODD = ["a\nb.jsonl", "tab\there.jsonl", "esc\x1b[31m.jsonl", "sep\u2028x.jsonl"]


def one_warning_per_line(stderr: str) -> list[str]:
    lines = stderr.splitlines()
    assert all(line.startswith(("warning: ", "detected format")) for line in lines), stderr
    return lines


@pytest.mark.parametrize("name", ODD)
def test_an_error_naming_an_odd_file_is_one_line(tmp_path, name):
    path = write_lines(tmp_path / name, [cal_line(1), b'{"confidence": 1.5, "correct": true}'])
    line = one_error_line(run(["calibrate", path, "--json"]))
    assert line == f"Error: {str(path)!r}:2: confidence 1.5 is outside [0, 1]"


@pytest.mark.parametrize("name", ODD)
def test_a_missing_odd_file_is_one_line(tmp_path, name):
    path = tmp_path / name
    line = one_error_line(run(["calibrate", path, "--json"]))
    assert line.startswith(f"Error: {str(path)!r}: ")


def test_a_repeated_row_names_both_odd_files(tmp_path):
    rows = [cal_line(i) for i in range(5)]
    first = write_lines(tmp_path / "a\nb.jsonl", rows)
    second = write_lines(tmp_path / "c\nd.jsonl", [cal_line(7), cal_line(8), cal_line(0)])
    line = one_error_line(run(["calibrate", first, second, "--id-field", "id", "--json"]))
    assert line.startswith(f"Error: {str(second)!r}:3: the row of id 0 was read before, at ")
    assert f"at {str(first)!r}:1: " in line


def test_a_copy_refused_names_both_odd_files_on_one_line(tmp_path):
    rows = [cal_line(i) for i in range(60)]
    first = write_lines(tmp_path / "a\nb.jsonl", rows)
    second = write_lines(tmp_path / "c\td.jsonl", rows)
    line = one_error_line(run(["calibrate", first, second, "--json"]))
    assert line.startswith(f"Error: {str(second)!r}: holds the same bytes as {str(first)!r}: ")


def test_a_skipped_odd_file_and_the_detected_format_are_one_line_each(tmp_path):
    fixtures = Path(__file__).parent / "fixtures" / "lm_eval"
    mc = next(fixtures.glob("samples_toy_mc_science_*.jsonl"))
    rolling = next(fixtures.glob("samples_toy_wikitext_*.jsonl"))
    (tmp_path / "run\none").mkdir()
    read = tmp_path / "run\none" / mc.name
    skipped = tmp_path / "run\none" / rolling.name
    read.write_bytes(mc.read_bytes())
    skipped.write_bytes(rolling.read_bytes())
    result = run(["calibrate", read, skipped, "--json"])
    assert result.exit_code == 0, result.stderr
    lines = one_warning_per_line(result.stderr)
    assert any(line.startswith(f"warning: {str(skipped)!r}: ") for line in lines), lines
    assert f"detected format: lm-eval ({str(read)!r})" in lines


def test_an_output_path_with_a_newline_is_one_line(tmp_path):
    # messages the readers do not build (an output, a report, a calibrator) are escaped as
    # they are printed
    rows = write_lines(tmp_path / "rows.jsonl", [cal_line(i) for i in range(5)])
    out = tmp_path / "no\nsuch" / "report.json"
    line = one_error_line(run(["calibrate", rows, "--json", "-o", out]))
    assert line.startswith(f"Error: {tmp_path}/no\\nsuch/report.json: cannot write the report")


def test_one_line_escapes_what_would_split_a_line():
    from calibcli.errors import one_line, shown_name

    assert one_line("plain: é 東京 \\n") == "plain: é 東京 \\n"
    assert one_line("a\nb\r\tc\x1b[0m\x85\u2028\udcff") == "a\\nb\\r\\tc\\x1b[0m\\x85\\u2028\\udcff"
    assert shown_name("runs/a.jsonl") == "runs/a.jsonl"
    assert shown_name("runs/a\nb.jsonl") == "'runs/a\\nb.jsonl'"
