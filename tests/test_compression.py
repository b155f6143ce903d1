"""Compressed inputs and outputs: gzip, Zstandard, xz and bzip2.

Each file here is compressed by a library other than the one calibcli reads it with where one
exists (``zstandard`` for Zstandard, which calibcli reads with ``compression.zstd`` or its
backport) and by the standard library otherwise; the expected figures are those of the same
bytes given plain, and an ``apply`` output is decompressed here the same way. A damaged or
truncated stream must be refused, never read as fewer rows.
"""

from __future__ import annotations

import bz2
import csv
import gzip
import io
import json
import lzma
import struct
import zipfile
from pathlib import Path

import pytest
import zstandard
from harness import make_rows, pack, run, write_jsonl

from calibcli.formats import task_from_filename
from calibcli.io import file_spans
from calibcli.io.helm_run import helm_trials

HERE = Path(__file__).resolve().parent
INSPECT = HERE / "fixtures" / "inspect_ai"
HELM = HERE / "fixtures" / "helm" / "mmlu" / "per_instance_stats.json"


def zstd_pack(data: bytes) -> bytes:
    return pack(".zst", data)


def zstd_unpack(data: bytes) -> bytes:
    reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data), read_across_frames=True)
    return reader.read()


# suffix -> decompress, none of them calibcli's code (harness.pack compresses)
UNPACK = {
    ".gz": gzip.decompress,
    ".zst": zstd_unpack,
    ".xz": lzma.decompress,
    ".bz2": bz2.decompress,
}
SUFFIXES = list(UNPACK)
TRUNCATED = "Compressed file ended before the end-of-stream marker was reached"


def report(*args, input=None):
    result = run([*map(str, args), "--json"], input=input)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def refused(*args, input=None):
    """The one error line of a run that must exit 2 with nothing on stdout."""
    result = run([*map(str, args)], input=input)
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1, result.stderr
    return result.stderr.rstrip("\n")


@pytest.fixture
def plain(tmp_path):
    return write_jsonl(tmp_path / "rows.jsonl", make_rows(3000, seed=5))


@pytest.mark.parametrize("suffix", SUFFIXES)
@pytest.mark.parametrize("command", ["calibrate", "reliability"])
def test_a_compressed_file_gives_the_plain_file_s_figures(tmp_path, plain, suffix, command):
    packed = tmp_path / f"rows.jsonl{suffix}"
    packed.write_bytes(pack(suffix, plain.read_bytes()))
    assert report(command, packed) == report(command, plain)


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_perplexity_of_a_compressed_file(tmp_path, suffix):
    rows = [{"nll": 0.5 + i % 7, "tokens": 3 + i % 5} for i in range(500)]
    plain = write_jsonl(tmp_path / "nll.jsonl", rows)
    packed = tmp_path / f"nll.jsonl{suffix}"
    packed.write_bytes(pack(suffix, plain.read_bytes()))
    assert report("perplexity", packed) == report("perplexity", plain)


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_the_content_decides_not_the_name(tmp_path, plain, suffix):
    disguised = tmp_path / "disguised.jsonl"
    disguised.write_bytes(pack(suffix, plain.read_bytes()))
    assert report("calibrate", disguised) == report("calibrate", plain)


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_a_compressed_stream_on_stdin(plain, suffix):
    piped = pack(suffix, plain.read_bytes())
    assert report("calibrate", "-", input=piped) == report("calibrate", plain)


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_concatenated_streams_read_as_one(tmp_path, plain, suffix):
    """``cat a.zst b.zst``, multi-member gzip, parallel compressors' output: every stream."""
    lines = plain.read_bytes().splitlines(keepends=True)
    half = len(lines) // 2
    joined = tmp_path / f"joined.jsonl{suffix}"
    joined.write_bytes(pack(suffix, b"".join(lines[:half])) + pack(suffix, b"".join(lines[half:])))
    got = report("calibrate", joined)
    assert got["n"] == 3000
    assert got == report("calibrate", plain)


def test_a_zstandard_skippable_frame_is_skipped(tmp_path, plain):
    """A skippable frame (magic 0x184D2A50-5F, a length, then bytes that are not content), as
    some writers put before the data."""
    skippable = struct.pack("<II", 0x184D2A53, 5) + b"meta!"
    framed = tmp_path / "framed.jsonl.zst"
    framed.write_bytes(skippable + zstd_pack(plain.read_bytes()))
    assert report("calibrate", framed) == report("calibrate", plain)


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_a_truncated_stream_is_refused_not_read_short(tmp_path, plain, suffix):
    """Cut where the rows before the cut are whole: a reader that ended the stream quietly
    would report on fewer rows."""
    whole = pack(suffix, plain.read_bytes())
    cut = tmp_path / f"cut.jsonl{suffix}"
    cut.write_bytes(whole[: len(whole) * 2 // 3])
    assert refused("calibrate", cut) == f"Error: {cut}: cannot decompress: {TRUNCATED}"


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_bytes_after_the_stream_that_are_no_stream_are_refused(tmp_path, plain, suffix):
    damaged = tmp_path / f"damaged.jsonl{suffix}"
    damaged.write_bytes(pack(suffix, plain.read_bytes()) + b"this is not compressed data")
    line = refused("calibrate", damaged)
    assert line.startswith(f"Error: {damaged}: cannot")


def test_a_gate_on_a_truncated_stream_fails_with_2_not_0(tmp_path, plain):
    whole = zstd_pack(plain.read_bytes())
    cut = tmp_path / "cut.jsonl.zst"
    cut.write_bytes(whole[: len(whole) - 8])
    assert refused("calibrate", cut, "--max-ece", "0.99").endswith(TRUNCATED)


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_a_bad_row_inside_a_compressed_file_is_named_by_its_line(tmp_path, suffix):
    lines = [json.dumps(r) for r in make_rows(9, seed=1)] + ['{"confidence": 1.5, "correct": 1}']
    bad = tmp_path / f"bad.jsonl{suffix}"
    bad.write_bytes(pack(suffix, ("\n".join(lines) + "\n").encode()))
    assert refused("calibrate", bad) == f"Error: {bad}:10: confidence 1.5 is outside [0, 1]"


def write_table(path: Path, rows: list[dict], delimiter: str) -> bytes:
    out = io.StringIO()
    writer = csv.DictWriter(out, ["id", "confidence", "correct"], delimiter=delimiter)
    writer.writeheader()
    for row in rows:
        writer.writerow({**row, "correct": str(row["correct"]).lower()})
    return out.getvalue().encode()


@pytest.mark.parametrize(
    ("name", "suffix"), [("t.csv", ".zst"), ("t.tsv", ".bz2"), ("T.CSV", ".XZ")]
)
def test_compressed_tables_are_read_as_tables(tmp_path, plain, name, suffix):
    rows = make_rows(3000, seed=5)
    text = write_table(tmp_path / name, rows, "\t" if name.endswith("tsv") else ",")
    table = tmp_path / f"{name}{suffix}"
    table.write_bytes(pack(suffix.lower(), text))
    assert report("calibrate", table) == report("calibrate", plain)


def test_a_folder_reads_compressed_files_of_every_format(tmp_path):
    """The same folder plain and compressed (three formats, and a file of another kind that
    is left out either way): the same report, file by file."""
    rows = make_rows(1200, seed=9)
    parts = [rows[:400], rows[400:800], rows[800:]]
    contents = {
        "a.jsonl": b"".join(json.dumps(r).encode() + b"\n" for r in parts[0]),
        "b.csv": write_table(tmp_path, parts[1], ","),
        "c.jsonl": b"".join(json.dumps(r).encode() + b"\n" for r in parts[2]),
        "notes.txt": b"not an input",
    }
    plain, packed = tmp_path / "plain", tmp_path / "packed"
    plain.mkdir()
    packed.mkdir()
    for (name, data), suffix in zip(contents.items(), [".zst", ".xz", ".bz2", ".gz"], strict=True):
        (plain / name).write_bytes(data)
        (packed / (name + suffix)).write_bytes(pack(suffix, data))
    expected = report("calibrate", plain)
    got = report("calibrate", packed)
    files = {Path(name).name.rsplit(".", 1)[0]: v for name, v in got.pop("per_file").items()}
    assert files == {Path(name).name: v for name, v in expected.pop("per_file").items()}
    assert got == expected
    assert got["n"] == 1200


def test_an_empty_folder_names_the_compressed_endings(tmp_path):
    (tmp_path / "empty").mkdir()
    line = refused("calibrate", tmp_path / "empty")
    assert line.endswith("or those .gz, .zst, .xz, .bz2)")


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_a_compressed_inspect_log_gives_the_plain_log_s_figures(tmp_path, suffix):
    log = INSPECT / "toy_arithmetic.json"
    packed = tmp_path / f"toy_arithmetic.json{suffix}"
    packed.write_bytes(pack(suffix, log.read_bytes()))
    scorer = ("--scorer", "match")
    assert report("calibrate", packed, *scorer) == report("calibrate", log, *scorer)


def test_a_compressed_document_is_bounded_once_decompressed(tmp_path):
    """A JSON array of 2 MB that compresses to a few kilobytes, read with a 1 MiB bound."""
    rows = [{"confidence": 0.5, "correct": True}] * 60_000
    text = json.dumps(rows).encode()
    assert len(text) > 2 << 20
    packed = tmp_path / "rows.json.xz"
    packed.write_bytes(lzma.compress(text))
    assert report("calibrate", packed)["n"] == 60_000
    line = refused("calibrate", packed, "--max-document-mb", "1")
    assert line.startswith(f"Error: {packed}")
    assert "1 MiB" in line, line


def test_helm_trials_are_found_in_a_compressed_file(tmp_path):
    entries = json.loads(HELM.read_text())
    trials = [{**e, "train_trial_index": t} for t in range(3) for e in entries]
    folder = tmp_path / "helm"
    folder.mkdir()
    path = folder / "per_instance_stats.json.xz"
    path.write_bytes(lzma.compress(json.dumps(trials).encode()))
    assert helm_trials(str(path)) == 3


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_lm_eval_names_look_through_the_compression_suffix(suffix):
    name = f"out/samples_arc_easy_2024-06-01T12-30-05.123456.jsonl{suffix}"
    assert task_from_filename(name) == "arc_easy"


def test_re_runs_of_a_task_are_seen_through_the_compression_suffix(tmp_path):
    """Two runs of one task, compressed differently: the older is left out, as for plain
    files, rather than pooled into one sample."""
    (sample,) = (HERE / "fixtures" / "lm_eval").glob("samples_toy_mc_science_*.jsonl")
    lines = sample.read_bytes()
    older = tmp_path / "samples_toy_mc_science_2024-06-01T12-30-05.123456.jsonl.zst"
    newer = tmp_path / "samples_toy_mc_science_2024-06-02T12-30-05.123456.jsonl.bz2"
    older.write_bytes(zstd_pack(lines))
    newer.write_bytes(bz2.compress(lines))
    both = run(["calibrate", tmp_path, "--json"])
    assert both.exit_code == 0, both.stderr
    assert older.name in both.stderr
    got, expected = json.loads(both.stdout), report("calibrate", sample)
    left_out = got["warnings"].pop(0)
    assert left_out.startswith("re-runs of 1 task(s) ('toy_mc_science') in one folder")
    assert got == expected


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_part_refuses_a_compressed_file_by_its_format(tmp_path, plain, suffix):
    packed = tmp_path / f"rows.jsonl{suffix}"
    packed.write_bytes(pack(suffix, plain.read_bytes()))
    name = {".gz": "gzip", ".zst": "Zstandard", ".xz": "xz", ".bz2": "bzip2"}[suffix]
    line = refused("summarize", packed, "--part", "1/2", "-o", tmp_path / "s.cbs")
    assert line.endswith(f"cuts plain JSON Lines at line starts; this is a {name} stream")
    assert file_spans(str(packed), 1024) is None
    assert file_spans(str(plain), 1024) is not None


@pytest.mark.parametrize("suffix", [*SUFFIXES, ".ZST"])
def test_apply_writes_the_format_its_output_s_suffix_names(tmp_path, plain, suffix):
    cal = tmp_path / "cal.json"
    fitted = run(["fit", plain, "--method", "platt", "-o", cal])
    assert fitted.exit_code == 0, fitted.stderr
    reference = tmp_path / "applied.jsonl"
    # the rows the calibrator was fitted on, written all the same: only the output's format is
    # looked at here
    assert run(["apply", cal, plain, "-q", "-o", reference, "--allow-in-sample"]).exit_code == 0
    out = tmp_path / f"applied.jsonl{suffix}"
    result = run(["apply", cal, plain, "-q", "-o", out, "--allow-in-sample"])
    assert result.exit_code == 0, result.stderr
    assert UNPACK[suffix.lower()](out.read_bytes()) == reference.read_bytes()


def test_a_zstandard_member_of_an_eval_log_is_checked_against_its_crc(tmp_path):
    """The zip's CRC-32 of a sample entry altered in the central directory: its content no
    longer matches, which a reader that skips the check would not see."""
    data = bytearray((INSPECT / "toy_arithmetic.eval").read_bytes())
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as archive:
        info = next(i for i in archive.infolist() if i.filename.startswith("samples/"))
    central = data.find(b"PK\x01\x02")
    while True:  # the central directory header of that entry
        name_len = struct.unpack("<H", data[central + 28 : central + 30])[0]
        if data[central + 46 : central + 46 + name_len].decode() == info.filename:
            break
        central = data.find(b"PK\x01\x02", central + 4)
    data[central + 16 : central + 20] = struct.pack("<I", info.CRC ^ 1)
    damaged = tmp_path / "damaged.eval"
    damaged.write_bytes(bytes(data))
    line = refused("calibrate", damaged)
    assert line == (
        f"Error: {damaged}:{info.filename}: the member's CRC-32 does not match: the archive is "
        "damaged"
    )


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_a_compressed_copy_beside_its_plain_file_is_refused(tmp_path, plain, suffix):
    """``zstd -k rows.jsonl`` leaves both files; given both, every row counts twice."""
    packed = tmp_path / f"rows.jsonl{suffix}"
    packed.write_bytes(pack(suffix, plain.read_bytes()))
    result = run(["calibrate", plain, packed, "--json"])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == (
        f"Error: {packed}: holds the same bytes as {plain} once decompressed: its rows would "
        "count twice (pass --all-runs to pool them on purpose, or give one of them)\n"
    )
    # rows without ids cannot tell a re-run from a copy, --all-runs or not; with ids, a re-run
    pooled = run(["calibrate", plain, packed, "--all-runs", "--json"])
    assert pooled.exit_code == 2
    assert pooled.stderr.startswith(
        f"Error: {packed}: holds the same bytes as {plain} once decompressed, and rows without ids"
    )
    pooled = run(["calibrate", plain, packed, "--all-runs", "--id-field", "id", "--json", "-q"])
    assert pooled.exit_code == 0, pooled.stderr
    assert json.loads(pooled.stdout)["n"] == 6000


def test_two_compressed_copies_of_one_file_are_refused(tmp_path, plain):
    """``rows.jsonl.gz`` and ``rows.jsonl.zst`` of the same bytes, without the plain file: the
    contents are compared when the names less their suffixes agree."""
    gz, zst = tmp_path / "rows.jsonl.gz", tmp_path / "rows.jsonl.zst"
    gz.write_bytes(pack(".gz", plain.read_bytes()))
    zst.write_bytes(pack(".zst", plain.read_bytes()))
    xz = tmp_path / "rows.jsonl.xz"  # the same name, other rows: not a copy
    xz.write_bytes(pack(".xz", b"".join(plain.read_bytes().splitlines(keepends=True)[:10])))
    result = run(["calibrate", gz, zst, xz, "--json"])
    assert result.exit_code == 2
    assert result.stderr == (
        f"Error: {zst}: holds the same bytes as {gz} once decompressed: its rows would count "
        "twice (pass --all-runs to pool them on purpose, or give one of them)\n"
    )
    result = run(["calibrate", gz, zst, xz, "--all-runs", "--json"])
    assert result.exit_code == 2
    assert result.stderr.startswith(
        f"Error: {zst}: holds the same bytes as {gz} once decompressed, and rows without ids"
    )
    result = run(["calibrate", gz, zst, xz, "--all-runs", "--id-field", "id", "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["n"] == 6010
    result = run(["calibrate", gz, xz, "--json"])
    assert result.exit_code == 0 and result.stderr == ""
    result = run(["calibrate", zst, gz, "--json"])  # the later one given is the copy
    assert f"Error: {gz}: holds the same bytes as {zst} once decompressed" in result.stderr


def test_a_compressed_file_of_other_rows_beside_a_plain_one_is_not_said(tmp_path, plain):
    other = write_jsonl(tmp_path / "other.jsonl", make_rows(3000, seed=6))
    packed = tmp_path / "rows.jsonl.zst"
    packed.write_bytes(zstd_pack(other.read_bytes()))
    result = run(["calibrate", plain, packed, "--json"])
    assert result.exit_code == 0, result.stderr
    assert "same bytes" not in result.stderr


@pytest.mark.parametrize(
    "command",
    [
        ["calibrate"],
        ["reliability"],
        ["threshold", "--target-accuracy", "0.9"],
        ["fit", "--method", "platt", "-o", "cal.json"],
        ["summarize", "-o", "part.cbs"],
        ["compare", "BASE"],
        ["apply", "CAL", "-o", "out.jsonl"],
    ],
)
@pytest.mark.parametrize("suffix", [".zst", ".bz2"])
def test_every_command_refuses_a_truncated_stream_alike(
    tmp_path, plain, monkeypatch, command, suffix
):
    """Whichever reader a command takes a file through (the block decoder, the row-by-row
    reader of compare and apply), a truncated stream is the same one line, and nothing is
    written."""
    monkeypatch.chdir(tmp_path)
    whole = pack(suffix, plain.read_bytes())
    cut = tmp_path / f"cut.jsonl{suffix}"
    cut.write_bytes(whole[: len(whole) // 2])
    fitted = run(["fit", plain, "--method", "platt", "-o", tmp_path / "CAL", "-q"])
    assert fitted.exit_code == 0, fitted.stderr
    args = [str(plain) if a == "BASE" else a for a in command]
    args = [*args[:2], str(cut), *args[2:]] if command[0] in ("compare", "apply") else [*args, cut]
    before = sorted(p.name for p in tmp_path.iterdir())
    assert refused(*args) == f"Error: {cut}: cannot decompress: {TRUNCATED}"
    assert sorted(p.name for p in tmp_path.iterdir()) == before


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_a_compressed_inspect_log_of_several_epochs_is_drawn_by_question(tmp_path, suffix):
    """The run's epochs come from the log's ``eval``, read before its samples: compressed, the
    log must still say them, or the bootstrap would draw each answer on its own and give a
    narrower interval (a gate on its upper end could pass by mistake)."""
    from test_epochs import epochs_log

    log = epochs_log(tmp_path)  # 20 questions, 2 epochs
    packed = tmp_path / f"epochs.json{suffix}"
    packed.write_bytes(pack(suffix, log.read_bytes()))
    args = ("--scorer", "match", "--ci", "0.95", "--bootstrap", "200")
    expected, got = report("calibrate", log, *args), report("calibrate", packed, *args)
    said = (
        "inspect-ai runs scored each sample several times: {} (2 epochs): the figures weigh "
        "every answer, and the bootstrap draws each question's answers together"
    )
    assert expected["warnings"][0] == said.format(log.name)
    assert got.pop("warnings")[0] == said.format(packed.name)
    expected.pop("warnings")
    assert got == expected


def test_lm_eval_names_look_through_every_suffix_the_readers_know():
    """The formats stage lists the compression suffixes itself (it imports nothing from the
    reading stage): it must know every one the readers decompress."""
    from calibcli.io.compression import SUFFIXES as KNOWN

    for suffix in KNOWN:
        name = f"samples_arc_easy_2024-06-01T12-30-05.123456.jsonl{suffix}"
        assert task_from_filename(name) == "arc_easy", suffix
