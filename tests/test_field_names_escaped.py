"""Field names holding a character JSON escapes (``"``, ``\\``, a control character) read the
same on every route: a file under 64 KiB is read line by line, a larger one through msgspec
structs, which cannot hold such a name as a key. Rows read by one decode into dicts there, as
rows read by a dotted name do, so the figures and messages of a large file are those of the
same rows in small files, and of a hand computation here."""

from __future__ import annotations

import json
import math
import random

import msgspec
import pytest
from harness import run

from calibcli.io.decode import SMALL_BLOCK, struct_names_ok

CONF, CORR, GROUP, IDENT = "model\\score", 'cor"rect', 'sub"ject', "i\\d"
NLL, TOKENS = 'nll"x', "to\\k"
ROWS = 2400
PIECE_ROWS = 300  # rows of one small file: each under SMALL_BLOCK


def calibration_rows(conf: str = CONF, seed: int = 3) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    for i in range(ROWS):
        c = rng.random()
        row = {conf: c, CORR: rng.random() < c**1.4, GROUP: "ab"[i % 2], IDENT: i}
        rows.append({**row, "note": "x" * 40})
    return rows


def write(path, rows) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def pieces(tmp_path, rows, stem="piece") -> list[str]:
    """The rows in several files, each small enough to be read line by line."""
    paths = []
    for k in range(0, len(rows), PIECE_ROWS):
        path = write(tmp_path / f"{stem}{k // PIECE_ROWS:02d}.jsonl", rows[k : k + PIECE_ROWS])
        assert (tmp_path / path).stat().st_size < SMALL_BLOCK
        paths.append(path)
    return paths


def big(tmp_path, rows, name="big.jsonl") -> str:
    path = write(tmp_path / name, rows)
    assert (tmp_path / name).stat().st_size > 3 * SMALL_BLOCK  # halves too, with --workers 2
    return path


def body(args) -> dict:
    result = run([*args, "--json", "-q"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def hand_figures(conf: list[float], corr: list[bool]) -> dict:
    """n, accuracy, Brier and ECE over ten equal-width bins, summed here."""
    n = len(conf)
    bins: dict[int, list[int]] = {}
    for i, c in enumerate(conf):
        bins.setdefault(min(int(c * 10), 9), []).append(i)
    ece = sum(
        abs(sum(conf[i] for i in members) - sum(corr[i] for i in members)) / n
        for members in bins.values()
    )
    brier = math.fsum((c - y) ** 2 for c, y in zip(conf, corr, strict=True)) / n
    return {"n": n, "accuracy": sum(corr) / n, "brier": brier, "ece": ece}


def assert_hand(report: dict, conf: list[float], corr: list[bool]) -> None:
    for key, value in hand_figures(conf, corr).items():
        assert report[key] == pytest.approx(value, rel=1e-12, abs=1e-12), key


@pytest.mark.parametrize("conf", [CONF, 'p"q', "c\x01f", "tab\there"])
@pytest.mark.parametrize("workers", [[], ["--workers", "2"]])
def test_calibrate_by_escaped_names_reads_a_large_file_as_small_ones(tmp_path, conf, workers):
    rows = calibration_rows(conf)
    opts = ["--confidence-field", conf, "--correct-field", CORR, "--by", GROUP]
    large = body(["calibrate", big(tmp_path, rows), *opts, *workers])
    small = body(["calibrate", *pieces(tmp_path, rows), *opts])
    assert large == small
    assert_hand(large, [r[conf] for r in rows], [r[CORR] for r in rows])
    for group in "ab":
        mine = [r for r in rows if r[GROUP] == group]
        assert_hand(large["groups"][group], [r[conf] for r in mine], [r[CORR] for r in mine])


def test_threshold_and_reliability_read_a_large_file_as_small_ones(tmp_path):
    rows = calibration_rows()
    opts = ["--confidence-field", CONF, "--correct-field", CORR]
    path, small = big(tmp_path, rows), pieces(tmp_path, rows)
    for command in (["threshold", "--target-accuracy", "0.8"], ["reliability"]):
        large = body([*command, path, *opts])
        pooled = body([*command, *small, *opts])
        pooled.pop("per_file", None)  # the small files' own figures beside the pooled ones
        assert large == pooled
    counts = body(["reliability", path, *opts])
    assert counts["n"] == ROWS


@pytest.mark.parametrize("workers", [[], ["--workers", "2"]])
def test_perplexity_by_escaped_names(tmp_path, workers):
    rng = random.Random(11)
    rows = []
    for i in range(ROWS):
        tokens = rng.randint(1, 60)
        rows.append({NLL: tokens * rng.uniform(0.5, 3.0), TOKENS: tokens, GROUP: "ab"[i % 2]})
    opts = ["--nll-field", NLL, "--tokens-field", TOKENS, "--by", GROUP]
    path = big(tmp_path, [{**r, "text": "y" * 60} for r in rows])
    large = body(["perplexity", path, *opts, *workers])
    small = body(["perplexity", *pieces(tmp_path, rows), *opts])
    for got, want in [(large, small), *((large["groups"][g], small["groups"][g]) for g in "ab")]:
        for key in ("sequences", "total_tokens", "total_nll", "perplexity"):
            assert got[key] == want[key], key
    for group, mine in (("all", rows), ("a", rows[0::2]), ("b", rows[1::2])):
        got = large if group == "all" else large["groups"][group]
        nll, tokens = math.fsum(r[NLL] for r in mine), sum(r[TOKENS] for r in mine)
        assert got["total_tokens"] == tokens
        assert got["perplexity"] == pytest.approx(math.exp(nll / tokens), rel=1e-12)


def plain(rows: list[dict]) -> list[dict]:
    """The rows with names the typed structs hold, and padding to keep them large."""
    return [{"conf": r[CONF], "correct": r[CORR], "id": r[IDENT], "note": "x" * 60} for r in rows]


def test_compare_by_an_escaped_id_field(tmp_path):
    base = calibration_rows()
    new = [{**r, CONF: r[CONF] ** 1.3} for r in reversed(base)]  # other order: ids pair them
    opts = ["--confidence-field", CONF, "--correct-field", CORR, "--id-field", IDENT]
    opts += ["--bootstrap", "200"]
    large = body(["compare", big(tmp_path, base), big(tmp_path, new, "new.jsonl"), *opts])
    (tmp_path / "b").mkdir()
    (tmp_path / "n").mkdir()
    pieces(tmp_path / "b", base)
    pieces(tmp_path / "n", new)
    small = body(["compare", tmp_path / "b", tmp_path / "n", *opts])
    pb, pn = big(tmp_path, plain(base), "pb.jsonl"), big(tmp_path, plain(new), "pn.jsonl")
    typed = body(["compare", pb, pn, "--confidence-field", "conf", "--bootstrap", "200"])
    keep = ("matched", "figures", "mcnemar", "auroc_test")
    assert {k: large[k] for k in keep} == {k: small[k] for k in keep}
    assert {k: large[k] for k in keep} == {k: typed[k] for k in keep}
    assert large["matched"] == ROWS
    assert_hand(large["sides"]["base"], [r[CONF] for r in base], [r[CORR] for r in base])
    assert_hand(large["sides"]["new"], [r[CONF] for r in new], [r[CORR] for r in new])


def test_apply_rewrites_an_escaped_field_of_a_large_file_as_of_small_ones(tmp_path):
    rows = calibration_rows()
    calibrator = tmp_path / "cal.json"
    names = ["--confidence-field", CONF, "--correct-field", CORR]
    fit = run(
        ["fit", *pieces(tmp_path, rows, "fit"), "--method", "platt", "-o", calibrator, *names]
    )
    assert fit.exit_code == 0, fit.output
    opts = ["--by", GROUP, "--allow-in-sample"]
    large = run(["apply", calibrator, big(tmp_path, rows), "--confidence-field", CONF, *opts])
    small = run(["apply", calibrator, *pieces(tmp_path, rows), "--confidence-field", CONF, *opts])
    path = big(tmp_path, plain(rows), "p.jsonl")
    typed = run(["apply", calibrator, path, "--confidence-field", "conf", "--allow-in-sample"])
    assert large.exit_code == small.exit_code == typed.exit_code == 0, large.output
    assert large.stdout == small.stdout
    out = [json.loads(line) for line in large.stdout.splitlines()]
    assert [{**r, CONF: 0} for r in out] == [{**r, CONF: 0} for r in rows]  # all else kept
    mapped = [json.loads(line)["conf"] for line in typed.stdout.splitlines()]
    assert [r[CONF] for r in out] == mapped
    assert [r[CONF] for r in out] != [r[CONF] for r in rows]


def inspect_log(path, rows) -> str:
    letters = "ABCD"
    samples = []
    for i, (pick, target, lp) in enumerate(rows):
        tokens = [{"token": letters[pick], "logprob": lp}]
        samples.append(
            {
                "id": i + 1,
                "epoch": 1,
                "input": "q",
                "choices": ["one", "two", "three", "four"],
                "output": {"choices": [{"logprobs": {"content": tokens}}]},
                "scores": {"choice": {"value": "C" if pick == target else "I"}},
                GROUP: "ab"[i % 2],
                IDENT: f"q{i}",
            }
        )
    log = {"version": 2, "status": "success", "eval": {"task": "t"}, "samples": samples}
    path.write_text(json.dumps(log, indent=2))
    return str(path)


def test_inspect_log_grouped_and_keyed_by_escaped_names(tmp_path):
    rng = random.Random(5)
    rows = [(rng.randrange(4), rng.randrange(4), -rng.uniform(0.01, 2.0)) for _ in range(300)]
    path = inspect_log(tmp_path / "log.json", rows)
    report = body(["calibrate", path, "--by", GROUP, "--id-field", IDENT])
    conf = [math.exp(lp) for _, _, lp in rows]
    corr = [pick == target for pick, target, _ in rows]
    assert_hand(report, conf, corr)
    assert_hand(report["groups"]["b"], conf[1::2], corr[1::2])


@pytest.mark.parametrize("rows_count", [200, ROWS])
def test_a_missing_escaped_field_is_exit_2_naming_file_and_line(tmp_path, rows_count):
    rows = calibration_rows()[:rows_count]
    path = write(tmp_path / "rows.jsonl", rows)
    opts = ["--confidence-field", CONF, "--correct-field", CORR]
    result = run(["calibrate", path, *opts, "--by", 'x"y'])
    assert result.exit_code == 2
    assert result.stderr == f"Error: {path}:1: missing field 'x\"y': no 'x\"y'\n"
    rows[150] = {**rows[150], CONF: 1.5}
    write(tmp_path / "rows.jsonl", rows)
    bad = run(["calibrate", path, *opts, "--by", GROUP])
    assert bad.exit_code == 2
    assert bad.stderr == f"Error: {path}:151: {CONF} 1.5 is outside [0, 1]\n"
    rows[150] = {k: v for k, v in rows[150].items() if k != CORR}
    rows[150][CONF] = 0.5
    write(tmp_path / "rows.jsonl", rows)
    gone = run(["calibrate", path, *opts])
    assert gone.exit_code == 2
    assert gone.stderr == f'Error: {path}:151: missing field "{CORR}"\n'


def struct_takes(name: str) -> bool:
    try:
        row = msgspec.defstruct("Row", [("c", float)], rename={"c": name})
        msgspec.json.Decoder(row)
    except (ValueError, UnicodeEncodeError):
        return False
    return True


TAKEN = ["confidence", "a.b", "", "é", "a/b", "a\x7fb", "a\u2028b"]
REFUSED = ['a"b', "a\\b", "a\x00", "\x1f", "a\udcffb", "\ud800"]


@pytest.mark.parametrize("name", TAKEN + REFUSED)
def test_names_a_struct_takes(name):
    assert struct_names_ok([name]) == struct_takes(name) == (name in TAKEN)
