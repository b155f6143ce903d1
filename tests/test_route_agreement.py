"""The same bytes give the same verdict on every input route.

A file is read by msgspec's block decoder (a first block of 64 KiB or more), line by line with
json.loads (a smaller file, a worker's small share), whole (a JSON array), from a stream (gzip,
stdin), from a folder, or in ``--part`` ranges merged afterwards. msgspec skips a field no rule
reads without looking at it; the rules below hold on every route all the same:

* text that is not UTF-8 is refused wherever it sits (the README: input is UTF-8);
* an integer of more digits than int() converts (4,300) is refused only where a rule reads it.

Every file holds ROWS rows of about 100 bytes, so it is over 128 KiB: with ``--workers 2`` it is
cut into two ranges at line starts, each over 64 KiB, and both take msgspec's block path.
"""

from __future__ import annotations

import bz2
import decimal
import gzip
import json
from pathlib import Path

import pytest
from harness import run

FIXTURES = Path(__file__).resolve().parent / "fixtures"

ROWS = 3000
BAD = 2500  # 0-based index of the row that holds the odd value: line 2501
LONG = "9" * 5000  # 5,000 digits, more than the 4,300 int() converts
LONG_MESSAGE = "is an integer of 5,000 digits, more than the 4,300 calibcli reads"
ROUTES = ["plain", "workers2", "gz", "stdin", "folder", "array", "parts"]


def row_text(i: int, *, note: bytes = b'"padding-padding-padding"', conf: bytes | None = None):
    c = conf if conf is not None else b"%.2f" % ((i % 100 + 0.5) / 100)
    return b'{"id": %d, "confidence": %s, "correct": %s, "note": %s}' % (
        i,
        c,
        b"true" if i % 2 else b"false",
        note,
    )


def lines(**odd) -> list[bytes]:
    return [row_text(i, **odd) if i == BAD else row_text(i) for i in range(ROWS)]


def read(tmp_path, route: str, rows: list[bytes], id_field: bool):
    """Run calibrate --json on ``rows`` reached by ``route``; the CliRunner result."""
    extra = ["--id-field", "id"] if id_field else []
    text = b"".join(r + b"\n" for r in rows)
    plain = tmp_path / "rows.jsonl"
    plain.write_bytes(text)
    assert len(text) > 2 * (64 << 10)
    if route == "plain":
        return run(["calibrate", plain, "-q", "--json", "--workers", "1", *extra])
    if route == "workers2":
        return run(["calibrate", plain, "-q", "--json", "--workers", "2", *extra])
    if route == "gz":
        packed = tmp_path / "rows.jsonl.gz"
        packed.write_bytes(gzip.compress(text, mtime=0))
        return run(["calibrate", packed, "-q", "--json", *extra])
    if route == "stdin":
        return run(["calibrate", "-", "-q", "--json", *extra], input=text)
    if route == "folder":
        folder = tmp_path / "folder"
        folder.mkdir()
        (folder / "rows.jsonl").write_bytes(text)
        return run(["calibrate", folder, "-q", "--json", *extra])
    if route == "array":
        array = tmp_path / "rows.json"
        array.write_bytes(b"[\n" + b",\n".join(rows) + b"\n]\n")
        return run(["calibrate", array, "-q", "--json", *extra])
    assert route == "parts"
    for k in (1, 2):
        got = run(
            ["summarize", plain, "-q", "--part", f"{k}/2", "-o", tmp_path / f"p{k}.cbs", *extra]
        )
        if got.exit_code != 0:
            return got
    merged = tmp_path / "m.cbs"
    got = run(["merge", tmp_path / "p1.cbs", tmp_path / "p2.cbs", "-o", merged, "-q"])
    assert got.exit_code == 0, got.stderr
    return run(["calibrate", merged, "-q", "--json"])


@pytest.mark.parametrize("id_field", [False, True])
@pytest.mark.parametrize("route", ROUTES)
def test_invalid_utf8_in_an_unread_field_is_refused_on_every_route(tmp_path, route, id_field):
    got = read(tmp_path, route, lines(note=b'"caf\xe9"'), id_field)  # Latin-1, not UTF-8
    assert got.exit_code == 2, got.stdout[:200]
    assert "UTF-8" in got.stderr
    if route in ("plain", "workers2", "folder", "parts"):
        assert f":{BAD + 1}: line is not valid UTF-8" in got.stderr


def test_invalid_utf8_in_an_unread_field_is_refused_by_compare_apply_and_lm_eval(tmp_path):
    """The other block readers check their blocks too: compare's keyed reader, apply's
    rewriter and lm-eval's typed decoder."""
    bad, good = tmp_path / "bad.jsonl", tmp_path / "good.jsonl"
    bad.write_bytes(b"".join(r + b"\n" for r in lines(note=b'"caf\xe9"')))
    good.write_bytes(b"".join(r + b"\n" for r in lines()))
    said = f"Error: {bad}:{BAD + 1}: line is not valid UTF-8"
    compared = run(["compare", good, bad, "--id-field", "id", "-q", "--json"])
    assert (compared.exit_code, compared.stderr.strip()) == (2, said)
    calibrator = tmp_path / "cal.json"
    assert run(["fit", good, "--method", "platt", "-o", calibrator, "-q"]).exit_code == 0
    applied = run(["apply", calibrator, bad])
    assert (applied.exit_code, said) == (2, applied.stderr.strip().splitlines()[-1])
    source = next((FIXTURES / "lm_eval").glob("samples_toy_mc_trivia_*.jsonl"))
    rows = [json.loads(line) for line in source.read_text().splitlines()]
    out = []
    for k in range(2000):
        row = dict(rows[k % len(rows)], doc_id=k)
        out.append(json.dumps(row).encode())
    out[BAD - 1000] = out[BAD - 1000][:-1] + b', "x": "\xff"}'
    samples = tmp_path / source.name
    samples.write_bytes(b"\n".join(out) + b"\n")
    assert samples.stat().st_size > 2 * (64 << 10)
    read_ = run(["calibrate", samples, "-q", "--json", "--workers", "1"])
    assert read_.exit_code == 2
    assert read_.stderr.strip() == f"Error: {samples}:{BAD - 999}: line is not valid UTF-8"


@pytest.mark.parametrize("id_field", [False, True])
@pytest.mark.parametrize("route", ROUTES)
def test_long_integer_in_an_unread_field_is_accepted_on_every_route(tmp_path, route, id_field):
    got = read(tmp_path, route, lines(note=LONG.encode()), id_field)
    assert got.exit_code == 0, got.stderr
    assert json.loads(got.stdout)["n"] == ROWS


@pytest.mark.parametrize("route", ROUTES)
def test_long_integer_in_a_read_field_is_refused_on_every_route(tmp_path, route):
    got = read(tmp_path, route, lines(conf=LONG.encode()), False)
    assert got.exit_code == 2
    assert f"confidence {LONG_MESSAGE}" in got.stderr


def test_long_integer_as_by_or_id_value_is_refused(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(
        '{"id": 1, "g": ' + LONG + ', "confidence": 0.5, "correct": true}\n', encoding="utf-8"
    )
    got = run(["calibrate", path, "-q", "--by", "g"])
    assert got.exit_code == 2 and LONG_MESSAGE in got.stderr
    path.write_text('{"id": ' + LONG + ', "confidence": 0.5, "correct": true}\n', encoding="utf-8")
    got = run(["calibrate", path, "-q", "--id-field", "id"])
    assert got.exit_code == 2 and LONG_MESSAGE in got.stderr


def test_equal_numbers_past_2_53_are_one_group(tmp_path):
    # 1e16 and 10000000000000000 are one number (10**16 is a double exactly), so one id and one
    # group, named by its integer digits as 1.0 is named 1
    path = tmp_path / "r.jsonl"
    path.write_text(
        '{"g": 1e16, "confidence": 0.5, "correct": true}\n'
        '{"g": 10000000000000000, "confidence": 0.5, "correct": false}\n'
        '{"g": 3.0, "confidence": 0.5, "correct": true}\n',
        encoding="utf-8",
    )
    got = run(["calibrate", path, "-q", "--by", "g", "--json"])
    assert got.exit_code == 0, got.stderr
    groups = json.loads(got.stdout)["groups"]
    assert sorted(groups) == ["10000000000000000", "3"]
    assert groups["10000000000000000"]["n"] == 2


def test_csv_cell_over_128_kib_is_read(tmp_path):
    path = tmp_path / "r.csv"
    path.write_text(
        "confidence,correct,note\n0.25,true," + "x" * (200 << 10) + "\n0.75,false,y\n",
        encoding="utf-8",
    )
    got = run(["calibrate", path, "-q", "--json"])
    assert got.exit_code == 0, got.stderr
    assert json.loads(got.stdout)["n"] == 2


def test_csv_long_integer_is_a_number_refused_where_read(tmp_path):
    path = tmp_path / "r.csv"
    path.write_text(f"g,confidence,correct\n{LONG},0.5,true\n1,0.5,false\n", encoding="utf-8")
    got = run(["calibrate", path, "-q", "--by", "g"])
    assert got.exit_code == 2 and LONG_MESSAGE in got.stderr
    got = run(["calibrate", path, "-q", "--json"])  # g unread: accepted, as in JSON
    assert got.exit_code == 0 and json.loads(got.stdout)["n"] == 2


def test_csv_plus_sign_makes_a_number_for_integers_and_decimals(tmp_path):
    path = tmp_path / "r.csv"
    path.write_text("g,confidence,correct\n+1,0.5,true\n1,0.5,false\n", encoding="utf-8")
    got = run(["calibrate", path, "-q", "--by", "g", "--json"])
    assert got.exit_code == 0, got.stderr
    assert list(json.loads(got.stdout)["groups"]) == ["1"]


@pytest.mark.parametrize("codec", ["zst", "bz2"])
def test_nul_padding_after_a_stream_is_skipped_in_every_codec(tmp_path, codec):
    text = b'{"confidence": 0.5, "correct": true}\n{"confidence": 0.25, "correct": false}\n'
    if codec == "bz2":
        packed = bz2.compress(text)
    else:
        from calibcli.io.compression import ZSTD, compressing

        out: list[bytes] = []
        write, finish = compressing(out.append, ZSTD)
        write(text)
        finish()
        packed = b"".join(out)
    path = tmp_path / f"r.jsonl.{codec}"
    path.write_bytes(packed + b"\0" * 1000)
    got = run(["calibrate", path, "-q", "--json"])
    assert got.exit_code == 0, got.stderr
    assert json.loads(got.stdout)["n"] == 2
    path.write_bytes(packed + b"\0\0junk")  # bytes that start no stream stay refused
    assert run(["calibrate", path, "-q"]).exit_code == 2


def test_messages_read_cleanly(tmp_path):
    path = tmp_path / "r.jsonl"
    ok = b'{"confidence": 0.5, "correct": true}\n'
    path.write_bytes(ok + b'{"confidence": 0.5, "correct": true, "n": "a\x01b"}\n')
    got = run(["calibrate", path, "-q"])
    assert got.exit_code == 2
    assert "(Invalid control character at column" in got.stderr
    assert "at at" not in got.stderr
    path.write_bytes(ok + b'\xef\xbb\xbf\xef\xbb\xbf{"confidence": 0.5, "correct": true}\n')
    got = run(["calibrate", path, "-q"])
    assert got.exit_code == 2 and "CSV" not in got.stderr
    from calibcli.io.rows import show

    assert show(decimal.Decimal("0.200")) == "0.200"
