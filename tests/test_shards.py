"""Shards summarized, merged and measured give the figures of one pass over every shard.

The data are bench/make_shards.py's: 200,000 rows in 8 shards (seed 0), their concatenation
(for --part), and a small perplexity set. The reference of every comparison is calibcli reading
the rows themselves in one run (`calibcli calibrate shards/*.jsonl`, `threshold`, `perplexity`),
never a summary. Reports are compared key by key (`assert_same_report`): integers, strings and
nulls equal; the floats under EXACT_KEYS (AUROC, smooth-ECE bandwidth, AURC, E-AURC,
thresholds, token/byte/word totals) bit-identical; every other float within 1e-12 relative.

The summary file is also read here without calibcli (`read_summary`: struct, json and
numpy.frombuffer over the layout calibcli.summaries.encoding documents) and checked against the
shard's rows parsed with json.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import random
import struct
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from harness import make_rows, run, write_jsonl

import calibcli

ROOT = Path(__file__).resolve().parents[1]
ROWS, SHARDS = 200_000, 8
REL = 1e-12
EXACT_KEYS = frozenset(
    {
        "auroc",
        "smece_bandwidth",
        "aurc",
        "e_aurc",
        "threshold",
        "total_tokens",
        "total_bytes",
        "total_words",
    }
)
"""Floats that must be bit-identical; integers (bin counts, populated bins, bins_used, n) are
compared exactly whatever their key."""


def test_calibcli_is_imported_from_this_tree():
    assert Path(calibcli.__file__).resolve().is_relative_to(ROOT)


# --------------------------------------------------------------------------- comparing reports


def assert_same_report(got, want, *, exact=EXACT_KEYS, where="report"):
    """Walk two JSON reports: the same keys and lengths; a float within REL relative of the
    other unless its key (the nearest dict key above it) is in ``exact``; anything else equal."""
    if isinstance(want, dict):
        assert isinstance(got, dict), f"{where}: {got!r} is not an object"
        assert got.keys() == want.keys(), f"{where}: keys {sorted(got)} != {sorted(want)}"
        for key in want:
            _walk(got[key], want[key], exact, f"{where}.{key}", key)
    else:
        _walk(got, want, exact, where, None)


def _walk(got, want, exact, where, key):
    if isinstance(want, dict):
        assert_same_report(got, want, exact=exact, where=where)
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), f"{where}: {got!r} vs {want!r}"
        for i, (a, b) in enumerate(zip(got, want, strict=True)):
            _walk(a, b, exact, f"{where}[{i}]", key)
    elif isinstance(want, float) and isinstance(got, float) and key not in exact:
        assert abs(got - want) <= REL * max(abs(got), abs(want)), f"{where}: {got!r} vs {want!r}"
    else:
        assert type(got) is type(want) and got == want, f"{where}: {got!r} != {want!r}"


def _figures(body):
    """A report without its warnings."""
    return {key: value for key, value in body.items() if key != "warnings"}


def test_the_report_rules():
    assert_same_report({"ece": 0.1, "n": 3}, {"ece": 0.1 * (1 + 5e-13), "n": 3})
    assert_same_report({"r": {"count": [1, 2]}}, {"r": {"count": [1, 2]}})
    for got, want in [
        ({"ece": 0.1}, {"ece": 0.1 * (1 + 3e-12)}),
        ({"auroc": 0.7}, {"auroc": 0.7 + 2**-53}),
        ({"curve": {"threshold": [0.5]}}, {"curve": {"threshold": [0.5 + 2**-53]}}),
        ({"n": 3}, {"n": 3.0}),
        ({"n": 3}, {"n": 3, "m": 1}),
        ({"auroc": None}, {"auroc": 0.5}),
    ]:
        with pytest.raises(AssertionError):
            assert_same_report(got, want)


# --------------------------------------------------------------------------- data and runs


def cli(*args, code=0):
    result = run(args)
    assert result.exit_code == code, f"{args}: exit {result.exit_code}\n{result.stderr}"
    return result


def report(*args):
    return json.loads(cli(*args, "--json", "-q").stdout)


def one_line_error(*args):
    """A refusal: exit 2, one line on stderr, nothing on stdout."""
    result = cli(*args, code=2)
    assert result.stdout == "" and result.stderr.startswith("Error: "), result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    return result.stderr


class Data:
    """The shard files, and the parts, merges and references made from them, each made once."""

    def __init__(self, folder: Path):
        spec = importlib.util.spec_from_file_location("make_shards", ROOT / "bench/make_shards.py")
        make_shards = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(make_shards)
        self.folder = folder
        self.shards = [str(p) for p in make_shards.write_shards(folder / "shards", ROWS, SHARDS)]
        self.whole = folder / "whole.jsonl"
        self.whole.write_bytes(b"".join(Path(s).read_bytes() for s in self.shards))
        self.ppl = self._perplexity_shards(folder / "ppl")
        self._made: dict = {}

    @staticmethod
    def _perplexity_shards(folder: Path) -> list[str]:
        folder.mkdir()
        rng = np.random.default_rng(1)
        paths = []
        for k in range(4):
            tokens = rng.integers(1, 600, 3000)
            nll = tokens * rng.uniform(1.0, 4.0, tokens.shape[0])
            path = folder / f"{k}.jsonl"
            path.write_text(
                "".join(
                    json.dumps({"nll": n, "tokens": t, "bytes": 4 * t + k, "words": t // 2 + 1})
                    + "\n"
                    for n, t in zip(nll.tolist(), tokens.tolist(), strict=True)
                )
            )
            paths.append(str(path))
        return paths

    def once(self, key, make):
        if key not in self._made:
            self._made[key] = make()
        return self._made[key]

    def summarize(self, name: str, *args) -> str:
        out = self.folder / "parts" / f"{name}.cbs"

        def make():
            out.parent.mkdir(exist_ok=True)
            cli("summarize", *args, "-o", out, "-q")
            return str(out)

        return self.once(("summarize", name), make)

    def parts(self, *options, files=None) -> list[str]:
        """One part per shard (or per file given), summarized with ``options``."""
        tag = "_".join(o.lstrip("-") for o in options) or "plain"
        files = files or self.shards
        return [self.summarize(f"{tag}_{Path(f).stem}", f, *options) for f in files]

    def cuts(self, count: int, *options) -> list[str]:
        """The concatenated file cut into ``count`` parts with --part."""
        tag = "_".join(o.lstrip("-") for o in options) or "plain"
        return [
            self.summarize(f"cut{count}_{tag}_{k}", self.whole, "--part", f"{k}/{count}", *options)
            for k in range(1, count + 1)
        ]

    def merged(self, parts: list[str]) -> str:
        out = self.folder / "merged" / f"{len(self._made)}.cbs"

        def make():
            out.parent.mkdir(exist_ok=True)
            cli("merge", *parts, "-o", out, "-q")
            return str(out)

        return self.once(("merge", *parts), make)

    def reference(self, *args) -> dict:
        """The report of one run over the rows themselves."""
        return self.once(("report", *args), lambda: report(*args))


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return Data(tmp_path_factory.mktemp("shards"))


# --------------------------------------------------------------------------- merged parts


@pytest.mark.parametrize("by", [(), ("--by", "task")], ids=["pooled", "by-task"])
@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
def test_merged_parts_calibrate_as_one_pass(data, strategy, by):
    merged = data.merged(data.parts(*by))
    want = data.reference("calibrate", *data.shards, "--strategy", strategy, *by)
    assert want["n"] == ROWS
    assert_same_report(report("calibrate", merged, "--strategy", strategy, *by), want)


@pytest.mark.parametrize(
    ("method", "by"),
    [("ltt", ()), ("sgr", ()), ("ltt", ("--by", "task"))],
    ids=["ltt", "sgr", "ltt-by-task"],
)
def test_merged_parts_give_the_one_pass_thresholds(data, method, by):
    args = ("--target-accuracy", "0.8", "--method", method, *by)
    merged = data.merged(data.parts(*by))
    want = data.reference("threshold", *data.shards, *args)
    assert want["guaranteed"]["threshold"] is not None and want["aurc"] > 0
    assert_same_report(report("threshold", merged, *args), want)


def test_merged_perplexity_parts_give_the_one_pass_totals(data):
    merged = data.merged(data.parts(files=data.ppl))
    want = data.reference("perplexity", *data.ppl)
    assert want["sequences"] == 12_000 and want["total_words"] > 0
    assert_same_report(report("perplexity", merged), want)


def test_merge_order_does_not_change_a_byte(data, tmp_path):
    parts = data.parts()
    rng = random.Random(0)
    blobs = set()
    for k in range(20):
        out = tmp_path / f"{k}.cbs"
        cli("merge", *rng.sample(parts, len(parts)), "-o", out, "-q")
        blobs.add(out.read_bytes())
    assert len(blobs) == 1
    assert blobs == {Path(data.merged(parts)).read_bytes()}


def test_any_tree_of_merges_measures_the_single_pass(data, tmp_path):
    rng = random.Random(1)
    for t in range(20):
        by = ("--by", "task") if t % 2 else ()
        nodes = rng.sample(data.parts(*by), SHARDS)
        while len(nodes) > 1:
            i, j = rng.sample(range(len(nodes)), 2)
            out = tmp_path / f"{t}_{len(nodes)}.cbs"
            cli("merge", nodes[i], nodes[j], "-o", out, "-q")
            nodes = [n for k, n in enumerate(nodes) if k not in (i, j)] + [str(out)]
        want = data.reference("calibrate", *data.shards, "--strategy", "uniform", *by)
        assert_same_report(report("calibrate", nodes[0], *by), want)


def test_a_part_counted_twice_is_refused(data, tmp_path):
    a, b, c = data.parts()[:3]
    message = one_line_error("merge", a, b, a, "-o", tmp_path / "x.cbs")
    assert f"{a} and {a} both count" in message and "merged twice" in message
    ab = tmp_path / "ab.cbs"
    cli("merge", a, b, "-o", ab, "-q")
    message = one_line_error("merge", ab, c, b, "-o", tmp_path / "x.cbs")
    assert f"{ab} and {b} both count {data.shards[1]}" in message
    bc = tmp_path / "bc.cbs"
    cli("merge", b, c, "-o", bc, "-q")
    one_line_error("merge", ab, bc, "-o", tmp_path / "x.cbs")
    one_line_error("calibrate", ab, bc)
    assert not (tmp_path / "x.cbs").exists()


def test_a_summary_of_one_input_given_twice_measures_and_merges(tmp_path):
    """A summary of two files with the same bytes (a copy) whose rows carry ids, made with
    --all-runs, counts what it holds when measured or merged, while another part holding the
    same input is still refused; without --all-runs the copy is refused, and without ids too.
    A hard link is the file itself under another path, refused with --all-runs too."""
    x = write_jsonl(tmp_path / "x.jsonl", make_rows(300, seed=3))
    y = tmp_path / "y.jsonl"
    y.write_bytes(x.read_bytes())
    os.link(x, tmp_path / "hard.jsonl")
    both, pooled = tmp_path / "both.cbs", tmp_path / "pooled.cbs"
    assert "holds the same bytes" in one_line_error("summarize", x, y, "-o", both)
    assert "holds the same bytes" in one_line_error("summarize", x, y, "--all-runs", "-o", both)
    assert not both.exists()
    ids = ["--all-runs", "--id-field", "id"]
    cli("summarize", x, y, *ids, "-o", both, "-q")
    hard = one_line_error("summarize", x, tmp_path / "hard.jsonl", *ids, "-o", pooled)
    assert "one file reached by two paths is not a re-run" in hard and not pooled.exists()
    want = report("calibrate", x, y, *ids)
    assert want["n"] == 600
    # the summary keeps the questions, not which row answers which: its warning says its
    # bootstrap draws rows (see "Other re-runs pooled with --all-runs" in the README)
    got = report("calibrate", both)
    assert_same_report(_figures(got), _figures(want))
    merged = tmp_path / "merged_both.cbs"
    cli("merge", both, "-o", merged, "-q")
    assert_same_report(report("calibrate", merged), got)
    alone = tmp_path / "x.cbs"
    cli("summarize", x, "-o", alone, "-q")
    assert "both count" in one_line_error("merge", alone, both, "-o", tmp_path / "no.cbs")
    assert "both count" in one_line_error("calibrate", both, alone)
    assert "is read here" in one_line_error("calibrate", both, y)
    assert not (tmp_path / "no.cbs").exists()


def test_an_overlap_names_both_parts_and_the_bytes_both_counted(tmp_path):
    """Two ranges of one file that overlap are refused naming the two parts (not another part
    given), the source as the first part names it and the bytes that both ranges hold; a
    measuring command prints the line merge prints, each file named once."""
    g = write_jsonl(tmp_path / "g.jsonl", make_rows(300, seed=5))
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(g.read_bytes())
    half, third, copied, other = (tmp_path / f"{n}.cbs" for n in ("half", "third", "c", "o"))
    cli("summarize", g, "--part", "1/2", "-o", half, "-q")
    cli("summarize", g, "--part", "2/3", "-o", third, "-q")
    cli("summarize", copy, "--part", "2/3", "-o", copied, "-q")
    cli("summarize", write_jsonl(tmp_path / "o.jsonl", make_rows(50, seed=6)), "-o", other, "-q")
    (a,), (b,) = (read_summary(p)[0]["sources"] for p in (half, third))
    assert a["start"] < b["start"] < a["stop"] < b["stop"]  # a half and the middle third
    shared = f"bytes {b['start']:,}-{a['stop']:,}"
    tail = "a part merged twice, or one input summarized twice; merge each part once\n"
    out = tmp_path / "no.cbs"
    for first, then in ((half, third), (third, half)):
        line = f"Error: {first} and {then} both count {shared} of {g} (the same content): {tail}"
        assert one_line_error("merge", first, then, "-o", out) == line
        assert one_line_error("calibrate", first, then) == line  # each file named once
    assert one_line_error("merge", half, copied, "-o", out) == (
        f"Error: {half} and {copied} both count {shared} of {g} (as {copy} in {copied}: the "
        f"same content): {tail}"
    )
    assert one_line_error("calibrate", other, half, third) == (
        f"Error: {half} and {third} both count {shared} of {g} (the same content): {tail}"
    )
    assert one_line_error("calibrate", copy, other, third) == (
        f"Error: {copy} is read here and its bytes {b['start']:,}-{b['stop']:,} are "
        f"counted in {third} too: give the summary or the file, not both\n"
    )
    assert not out.exists()


def test_summary_files_are_written_whole_and_in_place(data, tmp_path):
    """A summary file is written piece by piece: its bytes are the documented layout (the
    decoded summary encodes to the very same bytes), a symbolic link keeps pointing at the
    file it names, a device is written through, and a file that cannot be written is refused
    in one line, leaving what was there."""
    from calibcli.summaries.encoding import from_bytes, to_bytes

    part = data.parts()[0]
    blob = Path(part).read_bytes()
    assert to_bytes(from_bytes(blob)) == blob
    magic, version, _, header = struct.unpack("<16sIIQ", blob[:32])
    assert magic == b"CALIBCLI SUMMARY" and version == 5
    meta = json.loads(blob[32 : 32 + header])
    sizes = [np.dtype(a["dtype"]).itemsize * int(np.prod(a["shape"])) for a in meta["arrays"]]
    assert len(blob) == 32 + header + sum(size + (-size % 8) for size in sizes)

    real = tmp_path / "real.cbs"
    real.write_bytes(b"old")
    link = tmp_path / "link.cbs"
    link.symlink_to(real)
    cli("merge", part, "-o", link, "-q")
    assert link.is_symlink() and real.read_bytes() == blob
    cli("merge", part, "-o", "/dev/null", "-q")

    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "x.cbs").write_bytes(b"kept")
    locked.chmod(0o500)
    try:
        if os.access(locked, os.W_OK):  # root writes anywhere: a missing folder instead
            one_line_error("merge", part, "-o", tmp_path / "missing" / "x.cbs")
        else:
            one_line_error("merge", part, "-o", locked / "x.cbs")
    finally:
        locked.chmod(0o700)
    assert (locked / "x.cbs").read_bytes() == b"kept"
    assert sorted(p.name for p in locked.iterdir()) == ["x.cbs"]
    assert not (tmp_path / "missing").exists()


def test_a_shard_as_file_and_as_part_is_refused(data):
    parts = data.parts()
    message = one_line_error("calibrate", data.shards[0], parts[0])
    assert f"{data.shards[0]} is read here and its rows are counted in {parts[0]}" in message
    one_line_error("calibrate", data.merged(parts), data.shards[5])


# --------------------------------------------------------------------------- without the table


def no_table_parts(data, how, monkeypatch) -> tuple[str, str]:
    """The merged parts of the shards without their tables, and the reason they give."""
    if how == "never":
        return data.merged(data.parts("--table", "never")), "summarized with --table never"
    monkeypatch.setattr("calibcli.summaries.distinct.MAX_DISTINCT", 20_000)
    out = data.folder / "capped"
    out.mkdir(exist_ok=True)
    parts = []
    for k, shard in enumerate(data.shards):
        parts.append(str(out / f"{k}.cbs"))
        result = cli("summarize", shard, "-o", parts[-1])
        assert result.stderr.startswith("warning: the table of distinct confidences was dropped")
    merged = out / "merged.cbs"
    cli("merge", *parts, "-o", merged, "-q")
    return str(merged), "exceed the 20,000 that --table auto keeps"


@pytest.mark.parametrize("how", ["never", "above-cap"])
def test_without_the_table_binned_figures_stay_and_row_figures_go(data, how, monkeypatch):
    merged, reason = no_table_parts(data, how, monkeypatch)
    result = cli("calibrate", merged, "--json", "-q")
    got = json.loads(result.stdout)
    assert got["auroc"] is None
    assert [w for w in got["warnings"] if w.startswith("auroc needs every row")]
    assert reason in result.stderr and reason in " ".join(got["warnings"])
    want = dict(data.reference("calibrate", *data.shards, "--strategy", "uniform"))
    want.update(auroc=None, warnings=got["warnings"])
    assert_same_report(got, want)  # ECE ... NLL and smECE from sums, the bandwidth identical

    for args in [
        ("calibrate", merged, "--strategy", "quantile"),
        ("calibrate", merged, "--ci", "0.95"),
        ("threshold", merged, "--target-accuracy", "0.8"),
        ("fit", merged, "--method", "platt", "-o", data.folder / "never.json"),
    ]:
        assert reason in one_line_error(*args)
    assert not (data.folder / "never.json").exists()

    ece = want["ece"]
    gate = cli("calibrate", merged, "--max-ece", ece * 0.99, "-q", code=1)
    assert "gate failed: ece" in gate.stderr
    cli("calibrate", merged, "--max-ece", ece * 1.01, "-q")


# --------------------------------------------------------------------------- --part


@pytest.mark.parametrize("count", [3, 8])
def test_ranges_of_one_file_merge_to_its_single_pass(data, count):
    merged = data.merged(data.cuts(count))
    want = data.reference("calibrate", data.whole)
    assert_same_report(report("calibrate", merged), want)


def bad_copy(path: Path, line: int, out: Path) -> Path:
    lines = path.read_bytes().splitlines(keepends=True)
    row = json.loads(lines[line - 1])
    lines[line - 1] = json.dumps({**row, "confidence": 1.5}).encode() + b"\n"
    out.write_bytes(b"".join(lines))
    return out


def test_a_bad_line_is_named_by_its_line_in_the_whole_file(data, tmp_path):
    shard = bad_copy(Path(data.shards[5]), 1234, tmp_path / "05.jsonl")
    whole = tmp_path / "whole.jsonl"
    whole.write_bytes(
        b"".join(Path(s).read_bytes() for s in data.shards[:5])
        + shard.read_bytes()
        + b"".join(Path(s).read_bytes() for s in data.shards[6:])
    )
    line = 5 * ROWS // SHARDS + 1234
    out = tmp_path / "out.cbs"
    out.write_bytes(b"left alone")
    for path, at in [(shard, 1234), (whole, line)]:
        message = one_line_error("summarize", path, "-o", out)
        assert message == f"Error: {path}:{at}: confidence 1.5 is outside [0, 1]\n"
    failed = []
    for k in range(1, 9):
        result = run(["summarize", whole, "--part", f"{k}/8", "-o", tmp_path / f"{k}.cbs", "-q"])
        if result.exit_code:
            failed.append(k)
            assert result.exit_code == 2
            assert result.stderr == f"Error: {whole}:{line}: confidence 1.5 is outside [0, 1]\n"
            assert not (tmp_path / f"{k}.cbs").exists()
    assert len(failed) == 1
    assert out.read_bytes() == b"left alone"


# --------------------------------------------------------------------------- Poisson bootstrap

POISSON = ("--ci", "0.95", "--bootstrap-scheme", "poisson")
ROW_INTERVALS = ("auroc", "smece", "smece_bandwidth")


@pytest.mark.parametrize("count", [1, 3, 8, 24])
def test_poisson_intervals_from_parts_equal_the_single_pass(data, count):
    samples = ("--bootstrap-samples", "200")
    if count == 1:
        parts, files = [data.summarize("poisson_all", *data.shards, *samples)], data.shards
    elif count == SHARDS:
        parts, files = data.parts(*samples), data.shards
    else:  # rows keyed by the concatenated file's content and line
        parts, files = data.cuts(count, *samples), [data.whole]
    want = data.reference("calibrate", *files, *POISSON, "--bootstrap", "200")
    got = report("calibrate", parts[0] if count == 1 else data.merged(parts), *POISSON)
    assert got["bootstrap_samples"] == 200 and got["seed"] == 0
    for key in ROW_INTERVALS:
        assert got["ci"][key] == [None, None] and None not in want["ci"][key]
        got["ci"][key] = want["ci"][key]
    assert any("auroc or smece" in w for w in got["warnings"])
    got["warnings"] = want["warnings"]
    assert_same_report(got["ci"], want["ci"], exact=())
    assert_same_report(got, want)


def test_poisson_state_refuses_another_seed_and_gates_on_row_intervals(data):
    merged = data.merged(data.parts("--bootstrap-samples", "200"))
    assert "--seed 0, not 1" in one_line_error("calibrate", merged, *POISSON, "--seed", "1")
    gate = ("--gate-on", "upper", "--max-smece", "0.5")
    assert "smece" in one_line_error("calibrate", merged, "--bootstrap-scheme", "poisson", *gate)


# --------------------------------------------------------------------------- the file itself


def read_summary(path) -> tuple[dict, dict]:
    """(header, arrays) of a summary file, read by its documented layout alone."""
    blob = Path(path).read_bytes()
    magic, version, reserved, length = struct.unpack_from("<16sIIQ", blob)
    assert (magic, version, reserved) == (b"CALIBCLI SUMMARY", 5, 0)
    assert length % 8 == 0
    header = json.loads(blob[32 : 32 + length].decode())
    offset, arrays = 32 + length, {}
    for spec in header["arrays"]:
        assert spec["dtype"] in ("<f8", "<i8", "<u4", "<u8")
        dtype = np.dtype(spec["dtype"])
        count = int(np.prod(spec["shape"], dtype=np.int64))
        arrays[spec["name"]] = np.frombuffer(blob, dtype, count, offset).reshape(spec["shape"])
        offset += -(-count * dtype.itemsize // 8) * 8
    assert offset == len(blob)
    return header, arrays


def content_id(path) -> str:
    """A file's identity as calibcli.io.content documents it: BLAKE2b-128 of its size and of
    its bytes, or above 192 KiB of its first and last 64 KiB and 16 windows of 4 KiB between."""
    blob = Path(path).read_bytes()
    h = hashlib.blake2b(digest_size=16)
    h.update(len(blob).to_bytes(8, "little"))
    if len(blob) <= 2 * 65536 + 16 * 4096:
        h.update(blob)
    else:
        step = (len(blob) - 2 * 65536) // 17
        h.update(blob[:65536])
        for k in range(1, 17):
            h.update(blob[65536 + k * step : 65536 + k * step + 4096])
        h.update(blob[-65536:])
    return f"sampled:{h.hexdigest()}"


def distinct_rows(header, arrays) -> Counter:
    """(group, correct, confidence) -> rows, from the distinct table; values sorted per group."""
    table, out = header["distinct"], Counter()
    for side, correct in (("right", True), ("wrong", False)):
        values = arrays[table[side]["values"]]
        counts = arrays[table[side]["counts"]]
        offsets = arrays[table[side]["offsets"]]
        assert offsets.shape == (table["groups"] + 1,) and offsets[0] == 0
        assert offsets[-1] == values.shape[0] == counts.shape[0]
        for g in range(table["groups"]):
            lo, hi = offsets[g], offsets[g + 1]
            assert np.all(np.diff(values[lo:hi]) > 0) and np.all(counts[lo:hi] > 0)
            for v, n in zip(values[lo:hi].tolist(), counts[lo:hi].tolist(), strict=True):
                out[(g, correct, v)] = n
    return out


def parsed_rows(path, groups) -> Counter:
    out = Counter()
    for line in Path(path).read_text().splitlines():
        row = json.loads(line)
        out[(groups.index(row["task"]) if groups else 0, row["correct"], row["confidence"])] += 1
    return out


SETTINGS = {
    "bins": 10,
    "confidence_field": "confidence",
    "correct_field": "correct",
    "fmt": "auto",
    "mc_norm": "none",
    "by": None,
    "scorer": None,
    "inspect_confidence": "auto",
}


@pytest.mark.parametrize("by", [(), ("--by", "task")], ids=["pooled", "by-task"])
def test_an_independent_reader_finds_the_rows(data, by):
    parts = data.parts(*by)
    for shard, part in [(data.shards[3], parts[3]), (None, data.merged(parts))]:
        header, arrays = read_summary(part)
        assert header["kind"] == "calibration"
        assert header["settings"] == {**SETTINGS, "by": by[1] if by else None}
        groups = header["groups"]
        assert groups == (
            sorted({"arc_easy", "hellaswag", "mmlu", "piqa", "winogrande"}) if by else None
        )
        files = [shard] if shard else data.shards
        assert [
            {k: s[k] for k in ("name", "content", "start", "stop", "rows")}
            for s in header["sources"]
        ] == [
            {"name": f, "content": content_id(f), "start": 0, "stop": None, "rows": ROWS // SHARDS}
            for f in files
        ]
        rows = distinct_rows(header, arrays)
        assert sum(rows.values()) == ROWS // SHARDS * len(files) == header["fingerprint"]["rows"]
        if shard:
            assert rows == parsed_rows(shard, groups)


def test_a_table_out_of_order_is_refused(data, tmp_path):
    part = data.parts()[0]
    header, arrays = read_summary(part)
    values = arrays[header["distinct"]["right"]["values"]]
    blob = Path(part).read_bytes()
    at = blob.index(values.tobytes())
    swapped = values.copy()
    swapped[[0, 1]] = swapped[[1, 0]]
    bad = tmp_path / "bad.cbs"
    bad.write_bytes(blob[:at] + swapped.tobytes() + blob[at + values.nbytes :])
    message = one_line_error("calibrate", bad)
    assert message == f"Error: {bad}: a damaged calibcli summary (a bad distinct table)\n"


def test_ranges_are_cut_at_line_starts(data):
    blob = data.whole.read_bytes()
    ranges = [read_summary(p)[0]["sources"] for p in data.cuts(3)]
    assert all(len(s) == 1 and s[0]["name"] == str(data.whole) for s in ranges)
    ranges = [s[0] for s in ranges]
    assert {s["content"] for s in ranges} == {content_id(data.whole)}
    assert [s["start"] for s in ranges] == [0] + [s["stop"] for s in ranges[:-1]]
    assert ranges[-1]["stop"] == len(blob) == os.path.getsize(data.whole)
    for s in ranges:
        assert s["start"] == 0 or blob[s["start"] - 1 : s["start"]] == b"\n"
        assert s["rows"] == blob.count(b"\n", s["start"], s["stop"])
    merged, _ = read_summary(data.merged(data.cuts(3)))
    assert [(s["start"], s["stop"], s["rows"]) for s in merged["sources"]] == [(0, len(blob), ROWS)]


# --------------------------------------------------------------------------- settings


def test_a_part_refuses_other_reading_settings(data):
    message = one_line_error("calibrate", data.parts()[0], "--confidence-field", "other")
    assert "--confidence-field confidence, not --confidence-field other" in message


def test_other_bins_are_rebuilt_from_the_table(data):
    got = report("calibrate", data.merged(data.parts()), "--bins", "15")
    want = dict(data.reference("calibrate", *data.shards, "--bins", "15"))
    assert "per_file" in want and "per_file" not in got
    del want["per_file"]
    assert_same_report(got, want)
    never = data.merged(data.parts("--table", "never"))
    assert "use --bins 10" in one_line_error("calibrate", never, "--bins", "15")
