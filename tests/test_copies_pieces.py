"""Rows counted twice across inputs whose pieces are apart, refused by every route.

Pieces of one input. The ``--part`` pieces of a file, in several summaries, are one input: their
multiset hashes add up to the whole file's, so a copy of the file (its lines shuffled, or
gzipped) beside them holds their rows and is refused, as the copy beside the file itself is.
So are the byte ranges an engine reads a file in (``blocksize``).

A file beside its shards. A file whose rows are those of some of the other inputs together is
refused whatever else is read with them (an unrelated file beside the file and its shards).

The files: sample_data/overconfident.jsonl (2,000 rows, every confidence distinct), its lines
shuffled, its three line shards (667, 667 and 666 rows), underconfident.jsonl (2,000 other
rows); perplexity.jsonl (200 documents) shuffled, cut in two, beside 200 other documents.
Honest inputs still pass: the three sample files, two shards without the whole, an lm-eval
folder, and --all-runs pools on purpose.
"""

from __future__ import annotations

import gzip
import json
import random
import shutil
from pathlib import Path

import pytest
from conftest import require_engine, require_program
from harness import run

from calibcli.errors import InputError

DATA = Path(__file__).resolve().parent.parent / "sample_data"
LM_EVAL = Path(__file__).resolve().parent / "fixtures" / "lm_eval"
SAME = "(the same confidences and outcomes, in any order)"
SAME_PPL = "(the same NLLs and token counts, in any order)"


def lines(name):
    return (DATA / name).read_text(encoding="utf-8").splitlines(keepends=True)


def shuffled(items):
    items = list(items)
    random.Random(3).shuffle(items)
    return items


def ok(args):
    result = run(args)
    assert result.exit_code == 0, result.stderr
    return result


def summarize(out, *sources, extra=()):
    ok(["summarize", *sources, "-o", out, "-q", *extra])
    return out


@pytest.fixture(scope="module")
def calib(tmp_path_factory):
    """overconfident.jsonl, a shuffled copy and its gzip, its --part pieces, its line shards
    and underconfident.jsonl, as files and as summaries."""
    d = tmp_path_factory.mktemp("calib")
    rows = lines("overconfident.jsonl")
    assert len(rows) == 2000
    (d / "all.jsonl").write_text("".join(rows), encoding="utf-8")
    (d / "shuf.jsonl").write_text("".join(shuffled(rows)), encoding="utf-8")
    (d / "shuf.jsonl.gz").write_bytes(gzip.compress((d / "shuf.jsonl").read_bytes()))
    for k, (a, b) in enumerate([(0, 667), (667, 1334), (1334, 2000)]):
        (d / f"s0{k}.jsonl").write_text("".join(rows[a:b]), encoding="utf-8")
    shutil.copy(DATA / "underconfident.jsonl", d / "other.jsonl")
    for k in (1, 2, 3):
        summarize(d / f"p{k}.cbs", d / "all.jsonl", extra=["--part", f"{k}/3"])
    for name in ("shuf", "all", "s00", "s01", "s02", "other"):
        summarize(d / f"{name}.cbs", d / f"{name}.jsonl")
    summarize(d / "gz.cbs", d / "shuf.jsonl.gz")
    return d


@pytest.fixture(scope="module")
def ppl(tmp_path_factory):
    """perplexity.jsonl, a shuffled copy, its --part pieces and two line shards, and 200
    other documents (each NLL a tenth higher), as files and as summaries."""
    d = tmp_path_factory.mktemp("ppl")
    rows = lines("perplexity.jsonl")
    assert len(rows) == 200
    (d / "all.jsonl").write_text("".join(rows), encoding="utf-8")
    (d / "shuf.jsonl").write_text("".join(shuffled(rows)), encoding="utf-8")
    (d / "s00.jsonl").write_text("".join(rows[:120]), encoding="utf-8")
    (d / "s01.jsonl").write_text("".join(rows[120:]), encoding="utf-8")
    other = [json.loads(r) for r in rows]
    for r in other:
        r["nll"] *= 1.1
    (d / "other.jsonl").write_text("".join(json.dumps(r) + "\n" for r in other), "utf-8")
    for k in (1, 2):
        summarize(d / f"p{k}.cbs", d / "all.jsonl", extra=["--part", f"{k}/2"])
    for name in ("shuf", "all", "s00", "s01", "other"):
        summarize(d / f"{name}.cbs", d / f"{name}.jsonl")
    return d


def n_of(result):
    return json.loads(result.stdout)["n"]


# ---- a copy beside the pieces of its original


def test_merging_a_copy_with_the_pieces_of_its_original_is_refused(calib):
    d = calib
    out = d / "m.cbs"
    result = run(["merge", d / "shuf.cbs", d / "p1.cbs", d / "p2.cbs", d / "p3.cbs", "-o", out])
    assert result.exit_code == 2
    pieces = f"all.jsonl (in {d / 'p1.cbs'}, {d / 'p2.cbs'} and {d / 'p3.cbs'})"
    assert pieces in result.stderr and f"shuf.jsonl (in {d / 'shuf.cbs'})" in result.stderr
    assert SAME in result.stderr
    assert not out.exists()


@pytest.mark.parametrize("copy", ["shuf.cbs", "gz.cbs", "shuf.jsonl"])
@pytest.mark.parametrize("command", ["calibrate", "summarize"])
def test_a_copy_and_the_pieces_of_its_original_are_refused(calib, copy, command):
    d = calib
    pieces = [d / "p1.cbs", d / "p2.cbs", d / "p3.cbs"]
    extra = ["-o", d / "x.cbs"] if command == "summarize" else ["--min-rows", "4000"]
    result = run([command, d / copy, *pieces, *extra, "-q"])
    assert result.exit_code == 2, result.stdout
    assert SAME in result.stderr


def test_the_pieces_alone_hold_the_2000_rows(calib):
    d = calib
    ok(["merge", d / "p1.cbs", d / "p2.cbs", d / "p3.cbs", "-o", d / "whole.cbs", "-q"])
    assert n_of(ok(["calibrate", d / "whole.cbs", "--json"])) == 2000
    pooled = ["calibrate", d / "shuf.cbs", d / "p1.cbs", d / "p2.cbs", d / "p3.cbs"]
    assert n_of(ok([*pooled, "--all-runs", "--json"])) == 4000


def test_a_perplexity_copy_and_the_pieces_of_its_original_are_refused(ppl):
    d = ppl
    merged = run(["merge", d / "shuf.cbs", d / "p1.cbs", d / "p2.cbs", "-o", d / "m.cbs"])
    assert merged.exit_code == 2 and SAME_PPL in merged.stderr
    assert f"all.jsonl (in {d / 'p1.cbs'} and {d / 'p2.cbs'})" in merged.stderr
    for copy in ("shuf.cbs", "shuf.jsonl"):
        result = run(["perplexity", d / copy, d / "p1.cbs", d / "p2.cbs", "-q"])
        assert result.exit_code == 2 and SAME_PPL in result.stderr
    whole = ok(["perplexity", d / "p1.cbs", d / "p2.cbs", "--json"])
    assert json.loads(whole.stdout)["sequences"] == 200


# ---- a file beside its shards and an unrelated file


SHARDS = ["s00", "s01", "s02"]


def test_a_file_beside_its_shards_and_another_file_is_refused(calib):
    d = calib
    files = [d / "all.jsonl", *(d / f"{s}.jsonl" for s in SHARDS), d / "other.jsonl"]
    result = run(["calibrate", *files, "--min-rows", "6000", "--max-ece", "0.2", "-q"])
    assert result.exit_code == 2
    assert f"Error: {d / 'all.jsonl'}: holds the rows of {d / 's00.jsonl'}, " in result.stderr
    assert f"{d / 's02.jsonl'} together {SAME}" in result.stderr
    # in another order: the file last
    again = run(["calibrate", *files[1:], files[0], "-q"])
    assert again.exit_code == 2 and "all.jsonl: holds the rows of" in again.stderr
    pooled = ok(["calibrate", *files, "--all-runs", "--json"])
    assert n_of(pooled) == 2000 + 2000 + 2000


@pytest.mark.parametrize("whole", ["all.cbs", "all.jsonl"])
def test_a_summary_beside_its_shards_and_another_is_refused(calib, whole):
    d = calib
    parts = [d / whole, *(d / f"{s}.cbs" for s in SHARDS), d / "other.cbs"]
    merged = run(["merge", *parts, "-o", d / "m5.cbs"])
    if whole.endswith(".cbs"):
        assert merged.exit_code == 2
        assert (
            f"all.jsonl (in {d / 'all.cbs'}) holds the rows of {d / 's00.jsonl'}" in merged.stderr
        )
        assert not (d / "m5.cbs").exists()
    result = run(["calibrate", *parts, "--min-rows", "6000", "-q"])
    assert result.exit_code == 2 and f"together {SAME}" in result.stderr


def test_a_perplexity_file_beside_its_shards_and_another_is_refused(ppl):
    d = ppl
    for ext in ("jsonl", "cbs"):
        inputs = [d / f"s00.{ext}", d / f"all.{ext}", d / f"other.{ext}", d / f"s01.{ext}"]
        result = run(["perplexity", *inputs, "-q"])
        assert result.exit_code == 2, ext
        assert f"together {SAME_PPL}" in result.stderr
    merged = run(
        ["merge", d / "all.cbs", d / "other.cbs", d / "s00.cbs", d / "s01.cbs", "-o", d / "m.cbs"]
    )
    assert merged.exit_code == 2 and f"together {SAME_PPL}" in merged.stderr


# ---- honest inputs pass


def test_honest_inputs_still_pass(calib, ppl, tmp_path):
    three = [DATA / f"{n}.jsonl" for n in ("overconfident", "underconfident", "well_calibrated")]
    assert n_of(ok(["calibrate", *three, "--json"])) == 6000
    d = calib
    assert n_of(
        ok(["calibrate", d / "s00.jsonl", d / "s01.jsonl", d / "other.jsonl", "--json"])
    ) == (667 + 667 + 2000)
    two = [d / "s00.cbs", d / "s02.cbs", d / "other.cbs"]
    assert n_of(ok(["calibrate", *two, "--json"])) == 667 + 666 + 2000
    ok(["merge", *two, "-o", tmp_path / "two.cbs", "-q"])
    shards = ok(["perplexity", ppl / "s00.jsonl", ppl / "s01.jsonl", ppl / "other.jsonl", "--json"])
    assert json.loads(shards.stdout)["sequences"] == 120 + 80 + 200
    ok(["calibrate", LM_EVAL, "-q"])


# ---- the engines read a file in byte ranges: one input all the same


@pytest.fixture(scope="module")
def dask_sync():
    require_engine("dask", "dask")
    import dask

    from calibcli.dask import summarize_files

    def summarized(paths, **options):
        return dask.compute(summarize_files([str(p) for p in paths], **options), scheduler="sync")[
            0
        ]

    return summarized


@pytest.fixture(scope="module")
def spark():
    require_program("java", "Spark runs on a JVM (Java 17)")
    require_engine("pyspark", "spark")
    from engine_checks import local_spark

    with local_spark("calibcli-copies", memory="1g") as session:
        yield session


@pytest.fixture(params=["dask", "spark"])
def engine(request):
    if request.param == "dask":
        return request.getfixturevalue("dask_sync")
    session = request.getfixturevalue("spark")
    from calibcli.spark import summarize_files

    return lambda paths, **options: summarize_files(session, [str(p) for p in paths], **options)


TWO = r"(all|shuf)\.jsonl: holds the rows of .*(shuf|all)\.jsonl \(the same"
"""The copy and the original, whichever the merge tree holds first."""


def test_engines_refuse_a_copy_beside_the_ranges_of_its_original(engine, calib, ppl):
    d = calib
    assert engine([d / "all.jsonl"], blocksize=20000).n == 2000
    with pytest.raises(InputError, match=TWO):
        engine([d / "shuf.jsonl", d / "all.jsonl"], blocksize=20000)
    with pytest.raises(InputError, match=TWO):
        engine([ppl / "shuf.jsonl", ppl / "all.jsonl"], blocksize=3000)
    pooled = engine([d / "shuf.jsonl", d / "all.jsonl"], blocksize=20000, all_runs=True)
    assert pooled.n == 4000


def test_engines_refuse_a_file_beside_its_shards_and_another(engine, calib):
    d = calib
    files = [d / "all.jsonl", *(d / f"{s}.jsonl" for s in SHARDS), d / "other.jsonl"]
    with pytest.raises(InputError, match=r"all\.jsonl: holds the rows of .*s00\.jsonl.*together"):
        engine(files, blocksize=20000)
    assert engine(files[1:3] + files[4:], blocksize=20000).n == 667 + 667 + 2000


# ---- pieces of one input judged together: a coarse piece beside a varied one


def test_pieces_tell_a_copy_by_their_rows_together():
    from calibcli.summaries.fingerprint import joined_tells_copies

    # one piece keeps its own say
    assert joined_tells_copies([(1000, True)]) and not joined_tells_copies([(1000, False)])
    # a varied piece of 971 rows holds 64 distinct rows or more: the whole tells a copy,
    # whatever its coarse piece of 1,029 rows holds
    assert joined_tells_copies([(1029, False), (971, True)])
    # pieces that each tell a copy tell one together
    assert joined_tells_copies([(30, True)] * 10)
    # a coarse piece of 1,000 rows beside a varied one of 60: at least 30 distinct rows of
    # 1,060, which may be a few levels
    assert not joined_tells_copies([(1000, False), (60, True)])
    # ... beside one of 128 or more: at least 64 distinct rows
    assert joined_tells_copies([(1000, False), (128, True)])
    assert not joined_tells_copies([])


@pytest.fixture(scope="module")
def coarse(tmp_path_factory):
    """lv.jsonl: 1,600 rows on 10 confidence levels, then 400 of distinct confidences (its
    first --part piece of two holds only levels); its lines shuffled, and three line shards of
    the shuffled file beside 300 other rows."""
    d = tmp_path_factory.mktemp("coarse")
    rng = random.Random(5)
    rows = [{"confidence": (i % 10 + 0.5) / 10, "correct": rng.random() < 0.6} for i in range(1600)]
    rows += [{"confidence": rng.random(), "correct": rng.random() < 0.5} for _ in range(400)]
    text = [json.dumps(r) + "\n" for r in rows]
    (d / "lv.jsonl").write_text("".join(text), encoding="utf-8")
    mixed = shuffled(text)
    (d / "shuf.jsonl").write_text("".join(mixed), encoding="utf-8")
    for k, start in enumerate(range(0, 2000, 700)):
        (d / f"s{k:02d}.jsonl").write_text("".join(mixed[start : start + 700]), encoding="utf-8")
    other = [{"confidence": rng.random(), "correct": rng.random() < 0.5} for _ in range(300)]
    (d / "other.jsonl").write_text("".join(json.dumps(r) + "\n" for r in other))
    for k in (1, 2):
        summarize(d / f"q{k}.cbs", d / "lv.jsonl", extra=("--part", f"{k}/2"))
    summarize(d / "shuf.cbs", d / "shuf.jsonl")
    return d


def test_a_copy_beside_pieces_one_of_them_coarse_is_refused(coarse):
    d = coarse
    parts = [d / "shuf.cbs", d / "q1.cbs", d / "q2.cbs"]
    for args in (["calibrate", *parts], ["merge", *parts, "-o", d / "m.cbs"]):
        result = run([*args, "-q"])
        assert result.exit_code == 2, result.stderr
        said = f"lv.jsonl (in {d / 'q1.cbs'} and {d / 'q2.cbs'}) holds the rows of "
        assert f"{said}{d / 'shuf.jsonl'} (in {d / 'shuf.cbs'}) {SAME}" in result.stderr
    shards = [d / "q1.cbs", d / "q2.cbs", *(d / f"s{k:02d}.jsonl" for k in range(3))]
    result = run(["calibrate", *shards, d / "other.jsonl", "-q"])
    assert result.exit_code == 2, result.stderr
    shown = ", ".join(str(d / f"s{k:02d}.jsonl") for k in range(2))
    assert f"holds the rows of {shown} and {d / 's02.jsonl'} together" in result.stderr
    # the pieces alone: 2,000 rows (1,029 + 971 by the line cut)
    alone = ok(["calibrate", d / "q1.cbs", d / "q2.cbs", "--json", "-q"])
    assert json.loads(alone.stdout)["n"] == 2000


def test_engines_read_a_coarse_range_beside_a_varied_one_as_one_input(dask_sync, coarse):
    d = coarse
    with pytest.raises(InputError, match=r"holds the rows of .*lv\.jsonl"):
        dask_sync([d / "lv.jsonl", d / "shuf.jsonl"], blocksize=20000)
    files = [d / "lv.jsonl", *(d / f"s{k:02d}.jsonl" for k in range(3)), d / "other.jsonl"]
    with pytest.raises(InputError, match=r"lv\.jsonl: holds the rows of .*s00\.jsonl.*together"):
        dask_sync(files, blocksize=20000)
