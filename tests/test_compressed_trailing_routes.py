"""Bytes written onto a compressed file after it was compressed are named, with their count, by
every reader of a file, not only the JSON Lines one: a CSV or TSV table, a Parquet table, a
summary file read by a report or by ``merge``. Each refusal is one line naming the file, exit 2,
with nothing written. Concatenated streams (``cat a.gz b.gz``) still read as one on these
readers. Files are compressed by libraries other than calibcli's reader where one exists
(harness.pack); the byte counts are those written here."""

from __future__ import annotations

import csv
import io
import json

import pytest
from harness import make_rows, pack, refused, run, write_jsonl

NAMES = {".gz": "gzip", ".zst": "Zstandard", ".xz": "xz", ".bz2": "bzip2"}
JUNK = b"this is not compressed data"  # 27 bytes


def appended(count, name):
    what, start = ("byte comes", "starts") if count == 1 else (f"{count} bytes come", "start")
    return (
        f"cannot decompress: its last {what} after the end of the {name} data and {start} no "
        f"{name} stream (written to the file after it was compressed?)"
    )


def table_bytes(rows, delimiter=","):
    out = io.StringIO()
    writer = csv.DictWriter(out, ["id", "confidence", "correct"], delimiter=delimiter)
    writer.writeheader()
    for row in rows:
        writer.writerow({**row, "correct": str(row["correct"]).lower()})
    return out.getvalue().encode()


def report(*args):
    result = run([*map(str, args), "--json"])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture
def rows():
    return make_rows(600, seed=11)


@pytest.fixture
def plain(tmp_path, rows):
    return write_jsonl(tmp_path / "rows.jsonl", rows)


@pytest.mark.parametrize("suffix", list(NAMES))
@pytest.mark.parametrize(("name", "delimiter"), [("rows.csv", ","), ("rows.tsv", "\t")])
def test_a_table_names_bytes_written_after_the_stream(tmp_path, rows, suffix, name, delimiter):
    damaged = tmp_path / f"{name}{suffix}"
    damaged.write_bytes(pack(suffix, table_bytes(rows, delimiter)) + JUNK)
    assert refused("calibrate", damaged) == f"Error: {damaged}: {appended(27, NAMES[suffix])}"


@pytest.mark.parametrize("suffix", list(NAMES))
def test_one_newline_echoed_onto_a_table_is_named_too(tmp_path, rows, suffix):
    damaged = tmp_path / f"rows.csv{suffix}"
    damaged.write_bytes(pack(suffix, table_bytes(rows)) + b"\n")
    assert refused("calibrate", damaged) == f"Error: {damaged}: {appended(1, NAMES[suffix])}"


@pytest.mark.parametrize(
    "command",
    [
        ["threshold", "DAMAGED", "--target-accuracy", "0.9"],
        ["fit", "DAMAGED", "--method", "platt", "-o", "cal.json"],
        ["summarize", "DAMAGED", "-o", "part.cbs"],
        ["compare", "PLAIN", "DAMAGED"],
        ["apply", "CAL", "DAMAGED", "-o", "out.csv"],
    ],
)
def test_every_command_names_it_on_a_table_and_writes_nothing(
    tmp_path, rows, plain, monkeypatch, command
):
    monkeypatch.chdir(tmp_path)
    fitted = run(["fit", plain, "--method", "platt", "-o", tmp_path / "CAL", "-q"])
    assert fitted.exit_code == 0, fitted.stderr
    damaged = tmp_path / "rows.csv.xz"
    damaged.write_bytes(pack(".xz", table_bytes(rows)) + JUNK)
    names = {"DAMAGED": str(damaged), "PLAIN": str(plain)}
    before = sorted(p.name for p in tmp_path.iterdir())
    line = refused(*[names.get(a, a) for a in command])
    assert line == f"Error: {damaged}: {appended(27, 'xz')}"
    assert sorted(p.name for p in tmp_path.iterdir()) == before


@pytest.mark.parametrize("suffix", list(NAMES))
def test_a_parquet_table_names_it(tmp_path, suffix):
    """A table larger than the first read that tells its kind (64 KiB), so that its own
    reader, not the line reader, meets the bytes."""
    pa = pytest.importorskip("pyarrow")
    parquet = pytest.importorskip("pyarrow.parquet")
    buffer = io.BytesIO()
    parquet.write_table(pa.Table.from_pylist(make_rows(20_000, seed=2)), buffer)
    assert len(buffer.getvalue()) > 1 << 17
    damaged = tmp_path / f"rows.parquet{suffix}"
    damaged.write_bytes(pack(suffix, buffer.getvalue()) + JUNK)
    assert refused("calibrate", damaged) == f"Error: {damaged}: {appended(27, NAMES[suffix])}"


@pytest.fixture
def summary(tmp_path, plain):
    path = tmp_path / "plain.cbs"
    result = run(["summarize", plain, "-o", path])
    assert result.exit_code == 0, result.stderr
    return path


@pytest.mark.parametrize("suffix", list(NAMES))
def test_a_summary_file_names_it(tmp_path, summary, suffix):
    damaged = tmp_path / f"part.cbs{suffix}"
    damaged.write_bytes(pack(suffix, summary.read_bytes()) + JUNK)
    assert refused("calibrate", damaged) == f"Error: {damaged}: {appended(27, NAMES[suffix])}"


@pytest.mark.parametrize("suffix", [".gz", ".bz2"])
def test_merge_names_it_and_writes_nothing(tmp_path, summary, suffix):
    damaged = tmp_path / f"part.cbs{suffix}"
    damaged.write_bytes(pack(suffix, summary.read_bytes()) + b"\n")
    out = tmp_path / "merged.cbs"
    line = refused("merge", summary, damaged, "-o", out)
    assert line == f"Error: {damaged}: {appended(1, NAMES[suffix])}"
    assert not out.exists()


@pytest.mark.parametrize("suffix", list(NAMES))
def test_concatenated_streams_of_a_table_and_a_summary_still_read_as_one(
    tmp_path, rows, plain, summary, suffix
):
    """``cat a.gz b.gz`` (multi-member gzip, several Zstandard frames, xz or bzip2 streams) is
    one file's content, as on the JSON Lines reader."""
    text = table_bytes(rows)
    cut = text.index(b"\n", len(text) // 2) + 1
    joined = tmp_path / f"joined.csv{suffix}"
    joined.write_bytes(pack(suffix, text[:cut]) + pack(suffix, text[cut:]))
    expected = report("calibrate", plain)
    got = report("calibrate", joined)
    assert got["n"] == 600
    assert got["ece"] == expected["ece"]
    assert got["brier"] == expected["brier"]
    whole = summary.read_bytes()
    packed = tmp_path / f"joined.cbs{suffix}"
    packed.write_bytes(pack(suffix, whole[:100]) + pack(suffix, whole[100:]))
    assert report("calibrate", packed)["ece"] == report("calibrate", summary)["ece"]


def test_a_truncated_table_is_not_called_appended_bytes(tmp_path, rows):
    """A stream cut short, or followed by the start of another stream's magic number, is not
    text written after the data."""
    whole = pack(".gz", table_bytes(rows))
    cut = tmp_path / "cut.csv.gz"
    cut.write_bytes(whole[: len(whole) * 2 // 3])
    assert "written to the file after" not in refused("calibrate", cut)
    started = tmp_path / "started.csv.gz"
    started.write_bytes(whole + whole[:1])
    assert "written to the file after" not in refused("calibrate", started)


@pytest.mark.parametrize("suffix", list(NAMES))
def test_a_whole_json_document_names_it(tmp_path, suffix):
    """A JSON array longer than the first read that tells it from JSON Lines (64 KiB) is read
    by the document reader, which names the bytes as the line reader does."""
    text = json.dumps(make_rows(3000, seed=4), indent=1).encode()
    assert len(text) > 1 << 17
    damaged = tmp_path / f"rows.json{suffix}"
    damaged.write_bytes(pack(suffix, text) + JUNK)
    assert refused("calibrate", damaged) == f"Error: {damaged}: {appended(27, NAMES[suffix])}"
    plain = write_jsonl(tmp_path / "plain.jsonl", make_rows(3000, seed=4))
    assert refused("compare", plain, damaged) == f"Error: {damaged}: {appended(27, NAMES[suffix])}"
    joined = tmp_path / f"joined.json{suffix}"
    joined.write_bytes(pack(suffix, text[:1000]) + pack(suffix, text[1000:]))
    assert report("calibrate", joined)["n"] == 3000


def test_the_python_api_raises_the_same_line(tmp_path, rows):
    from calibcli.api import read_predictions
    from calibcli.errors import InputError

    damaged = tmp_path / "rows.csv.bz2"
    damaged.write_bytes(pack(".bz2", table_bytes(rows)) + JUNK)
    with pytest.raises(InputError) as caught:
        read_predictions(str(damaged))
    assert str(caught.value) == f"{damaged}: {appended(27, 'bzip2')}"
