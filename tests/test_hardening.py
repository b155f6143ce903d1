"""Hostile input: every case ends as exit 2 with one line naming the file and line (or the
option), or is read correctly; never a traceback (exit 3) and never a wrong number.

References are plain Python: exact int sums, math.fsum, loops over the rows written here.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from test_cli import run, write_jsonl

from calibcli.io import InputError, read_calibration, read_perplexity
from calibcli.io.sources import blocks

FIXTURES = Path(__file__).parent / "fixtures" / "lm_eval"
MC_SAMPLES = next(FIXTURES.glob("samples_toy_mc_science_*.jsonl"))
READING = ("perplexity", "calibrate", "reliability", "threshold", "fit")
EXTRA = {"threshold": ["--target-accuracy", "0.5"], "fit": ["--method", "histogram"]}


try:  # the threshold command's figures live in a module this branch may not have yet
    import calibcli.metrics.selective  # noqa: F401

    HAS_THRESHOLD = True
except ImportError:  # pragma: no cover - depends on the checkout
    HAS_THRESHOLD = False
REPORTING = READING if HAS_THRESHOLD else tuple(c for c in READING if c != "threshold")


def command(name: str, *args: object) -> list[str]:
    return [name, *EXTRA.get(name, []), *(str(a) for a in args)]


def one_error_line(result) -> str:
    """The single stderr line of an exit-2 run."""
    assert result.exit_code == 2, (result.exit_code, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    return lines[0]


def cal_rows(n: int, *, offset: int = 0) -> list[dict]:
    return [{"confidence": ((i + offset) % 97) / 97, "correct": i % 3 != 0} for i in range(n)]


# --------------------------------------------------------------------------- 1. exact totals


def test_token_totals_beyond_int64_are_exact(tmp_path):
    big = 1 << 62
    rows = [{"nll": 1.0, "tokens": big, "bytes": big, "words": big} for _ in range(3)]
    path = write_jsonl(tmp_path / "big.jsonl", rows)
    result = run(["perplexity", path, "--json", "--max-perplexity", "1.5"])
    body = json.loads(result.stdout)
    assert body["total_tokens"] == 3 * big  # a Python int, exact
    assert body["total_bytes"] == 3 * big and body["total_words"] == 3 * big
    assert body["mean_nll"] == pytest.approx(3.0 / (3 * big), rel=1e-15)
    assert body["mean_nll"] > 0
    assert result.exit_code == 0  # exp(3 / 1.4e19) really is 1.0 to double precision


@pytest.mark.parametrize("workers", [1, 2])
def test_group_and_worker_totals_are_exact(tmp_path, workers):
    big = (1 << 62) - 7
    rows = [{"nll": 0.5, "tokens": big - i, "g": "ab"[i % 2]} for i in range(400)]
    path = write_jsonl(tmp_path / "big.jsonl", rows)
    data = read_perplexity([str(path)], by="g", workers=workers, block_size=1024)
    assert data.total_tokens == sum(r["tokens"] for r in rows)
    for g in "ab":
        part = [r for r in rows if r["g"] == g]
        assert data.groups[g].total_tokens == sum(r["tokens"] for r in part)
        assert data.groups[g].total_nll == math.fsum(r["nll"] for r in part)


# --------------------------------------------------------------------------- 2. NLL overflow


def no_runtime_warnings(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn()
    assert not [w for w in caught if issubclass(w.category, RuntimeWarning)], caught
    return out


def test_total_nll_overflow_is_named_and_fails_the_gate_closed(tmp_path):
    a = write_jsonl(tmp_path / "a.jsonl", [{"nll": 1e308, "tokens": 1}])
    b = write_jsonl(tmp_path / "b.jsonl", [{"nll": 1e308, "tokens": 2}])
    result = no_runtime_warnings(
        lambda: run(["perplexity", a, b, "--json", "--max-perplexity", "2"])
    )
    assert result.exit_code == 1
    body = json.loads(result.stdout)
    assert body["total_nll"] is None and body["perplexity"] is None
    assert any("the total NLL overflows a double" in w for w in body["warnings"])
    assert not any("zero-probability" in w for w in body["warnings"])
    (check,) = body["gate"]["checks"]
    assert check["passed"] is False and check["reason"] == "the total NLL overflows a double"
    assert "Traceback" not in result.stderr and "RuntimeWarning" not in result.stderr


def test_logprob_sum_overflow_is_named(tmp_path):
    path = write_jsonl(tmp_path / "lp.jsonl", [{"logprobs": [-1e308, -1e308]}])
    result = no_runtime_warnings(lambda: run(["perplexity", path, "--json"]))
    assert result.exit_code == 0
    body = json.loads(result.stdout)
    assert body["total_nll"] is None
    assert any("overflows a double" in w for w in body["warnings"])


def test_a_given_infinity_is_still_a_zero_probability_token(tmp_path):
    path = write_jsonl(tmp_path / "z.jsonl", [{"logprobs": [-1.0, float("-inf")]}])
    body = json.loads(run(["perplexity", path, "--json"]).stdout)
    assert any("zero-probability" in w for w in body["warnings"])
    assert not any("overflows a double" in w for w in body["warnings"])


def test_group_nll_overflow(tmp_path):
    rows = [{"nll": 1e308, "tokens": 1, "g": "x"}] * 2 + [{"nll": 2.0, "tokens": 1, "g": "y"}]
    data = no_runtime_warnings(
        lambda: read_perplexity([str(write_jsonl(tmp_path / "g", rows))], by="g")
    )
    assert data.nll_overflow and data.groups["x"].nll_overflow
    assert not data.groups["y"].nll_overflow and data.groups["y"].total_nll == 2.0


# --------------------------------------------------------------------------- 3. typed group keys


TYPED = [1, "1", None, "null", True, "true", 1.5, "", '"x"', "plain"]
NAMES = ["1", '"1"', "null", '"null"', "true", '"true"', "1.5", '""', '"\\"x\\""', "plain"]


@pytest.mark.parametrize("name", REPORTING)
def test_by_keeps_json_types_apart(tmp_path, name):
    rows = []
    for k, value in enumerate(TYPED):
        for i in range(4):
            c = (k * 4 + i + 1) / 50
            rows.append({"g": value, "confidence": c, "correct": i % 2 == 0, "nll": c, "tokens": 2})
    path = write_jsonl(tmp_path / "typed.jsonl", rows)
    result = run(command(name, path, "--by", "g", "--json"))
    assert result.exit_code in (0, 1), result.stderr
    body = json.loads(result.stdout)
    groups = body["groups"]
    assert sorted(groups) == sorted(NAMES)
    if name == "fit":
        return
    key = "sequences" if name == "perplexity" else "n"
    for group in groups.values():
        if key in group:
            assert group[key] == 4


# --------------------------------------------------------------------------- 4. stdin lm-eval task


def test_lm_eval_task_on_stdin_is_refused(tmp_path):
    text = MC_SAMPLES.read_text(encoding="utf-8")
    line = one_error_line(run(["calibrate", "-", "--by", "task"], input=text))
    assert "stdin has no file name to take the lm-eval task from; use --by FIELD" in line


def test_lm_eval_task_on_stdin_from_the_row(tmp_path):
    rows = [json.loads(x) for x in MC_SAMPLES.read_text(encoding="utf-8").splitlines()]
    for i, row in enumerate(rows):
        row["task"] = "odd" if i % 2 else "even"
    text = "".join(json.dumps(r) + "\n" for r in rows)
    body = json.loads(run(["calibrate", "-", "--by", "task", "--json"], input=text).stdout)
    assert sorted(body["groups"]) == ["even", "odd"]
    assert body["groups"]["even"]["n"] == (len(rows) + 1) // 2


# --------------------------------------------------------------------------- 5. deep nesting


DEEP = "[" * 100_000


@pytest.mark.parametrize("name", READING)
@pytest.mark.parametrize("where", ["alone", "ignored_field"])
@pytest.mark.parametrize("extra", [[], ["--by", "g"], ["--workers", "2"]])
def test_deep_nesting_is_an_input_error(tmp_path, name, where, extra):
    head = "".join(
        json.dumps({"confidence": 0.5, "correct": True, "nll": 1.0, "tokens": 1, "g": "a"}) + "\n"
        for _ in range(3000)  # past the small-input path: msgspec decodes the block
    )
    bad = DEEP if where == "alone" else '{"confidence": 0.5, "correct": true, "x": ' + DEEP
    path = tmp_path / "deep.jsonl"
    path.write_text(head + bad + "\n", encoding="utf-8")
    line = one_error_line(run(command(name, path, *extra)))
    assert line == f"Error: {path}:3001: JSON nested too deeply"


@pytest.mark.parametrize("fmt", ["lm-eval", "logprobs"])
def test_deep_nesting_in_other_formats(tmp_path, fmt):
    if fmt == "lm-eval":
        first = MC_SAMPLES.read_text(encoding="utf-8").splitlines()[0]
        name = "calibrate"
    else:
        first = json.dumps({"logprobs": [-1.0]})
        name = "perplexity"
    path = tmp_path / f"samples_deep_{fmt}.jsonl"
    path.write_text(first + "\n" + first[:-1] + ', "deep": ' + DEEP + "\n", encoding="utf-8")
    assert one_error_line(run([name, path])).endswith(":2: JSON nested too deeply")


def test_deep_first_line_on_stdin():
    line = one_error_line(run(["calibrate", "-"], input=DEEP + "\n"))
    assert line == "Error: <stdin>:1: JSON nested too deeply"


# --------------------------------------------------------------------------- 6. line length cap


@pytest.mark.parametrize("compress", [False, True])
@pytest.mark.parametrize("name", READING)
def test_line_longer_than_the_cap(tmp_path, compress, name):
    rows = "".join(json.dumps({**r, "nll": 1.0, "tokens": 1}) + "\n" for r in cal_rows(5))
    long = '{"confidence": 0.5, "correct": true, "nll": 1, "tokens": 1, "pad": "'
    long += "x" * (3 << 20) + '"}\n'
    data = (rows + long + rows).encode()
    path = tmp_path / ("long.jsonl.gz" if compress else "long.jsonl")
    path.write_bytes(gzip.compress(data) if compress else data)
    line = one_error_line(run(command(name, path, "--max-line-mb", "1")))
    assert line == f"Error: {path}:6: line longer than 1 MiB; raise --max-line-mb"
    if name not in REPORTING:
        return
    ok = run(command(name, path, "--max-line-mb", "4", "--json"))
    assert ok.exit_code in (0, 1) and "Traceback" not in ok.stderr


def test_max_line_mb_is_validated(tmp_path):
    path = write_jsonl(tmp_path / "a.jsonl", cal_rows(5))
    result = run(["calibrate", path, "--max-line-mb", "0"])
    assert result.exit_code == 2 and "Invalid value for '--max-line-mb'" in result.stderr


class EndlessLine:
    """A stream of one line that never ends; counts the bytes handed out."""

    def __init__(self) -> None:
        self.given = 0

    def readinto(self, b) -> int:
        b[:] = b"x" * len(b)
        self.given += len(b)
        return len(b)


def test_the_cap_is_hit_without_holding_the_line():
    stream = EndlessLine()
    cap, block = 1 << 20, 1 << 16
    with pytest.raises(InputError) as err:
        for _ in blocks(stream, "endless", block, max_line_bytes=cap):
            pass
    assert str(err.value) == "endless:1: line longer than 1 MiB; raise --max-line-mb"
    assert stream.given <= cap + block  # read no further than the cap and one block


def test_a_line_of_exactly_the_cap_is_read(tmp_path):
    cap = 1 << 16
    pad = cap - len('{"confidence": 0.5, "correct": true, "p": ""}')
    line = '{"confidence": 0.5, "correct": true, "p": "' + "x" * pad + '"}'
    assert len(line) == cap
    path = tmp_path / "exact.jsonl"
    path.write_text("\n".join([line, line]) + "\n", encoding="utf-8")
    data = read_calibration([str(path)], max_line_bytes=cap, block_size=4096)
    assert data.rows == 2
    with pytest.raises(InputError, match=r":1: line longer than"):
        read_calibration([str(path)], max_line_bytes=cap - 1, block_size=4096)


# --------------------------------------------------------------------------- 7. wide encodings


@pytest.mark.parametrize(
    ("encoding", "named"),
    [("utf-16", "UTF-16"), ("utf-16-be", "UTF-16"), ("utf-32", "UTF-32"), ("utf-32-be", "UTF-32")],
)
def test_utf16_and_utf32_are_named(tmp_path, encoding, named):
    text = "".join(json.dumps(r) + "\n" for r in cal_rows(3))
    path = tmp_path / "wide.jsonl"
    raw = text.encode(encoding)
    if not encoding.endswith("-be"):
        assert raw[:2] in (b"\xff\xfe", b"\xfe\xff")
    else:
        raw = ("\ufeff" + text).encode(encoding)
    path.write_bytes(raw)
    line = one_error_line(run(["calibrate", path]))
    assert line == f"Error: {path}: {named} text (byte order mark); calibcli reads UTF-8"


def test_utf8_bom_is_still_read(tmp_path):
    path = tmp_path / "bom.jsonl"
    path.write_bytes(
        b"\xef\xbb\xbf" + b"".join(json.dumps(r).encode() + b"\n" for r in cal_rows(3))
    )
    assert json.loads(run(["calibrate", path, "--json"]).stdout)["n"] == 3


# --------------------------------------------------------------------------- 8. closed stdin


@pytest.mark.skipif(shutil.which("sh") is None, reason="needs a POSIX shell")
def test_closed_stdin_is_one_error_line():
    exe = [sys.executable, "-m", "calibcli"]
    cmd = " ".join(exe) + " calibrate - <&-"
    proc = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, env=os.environ)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == "Error: <stdin>: cannot read: standard input is closed\n"


# --------------------------------------------------------------------------- 9. many groups


@pytest.mark.parametrize(("block_size", "workers"), [(None, 1), (2048, 1), (2048, 2)])
def test_many_groups_against_plain_loops(tmp_path, block_size, workers):
    rows = []
    for i in range(6000):
        rows.append(
            {"u": f"user{(i * 7919) % 1500}", "confidence": (i % 101) / 100, "correct": i % 5 < 3}
        )
    path = write_jsonl(tmp_path / "users.jsonl", rows)
    data = read_calibration(
        [str(path)], by="u", keep_columns=True, block_size=block_size, workers=workers, bins=10
    )
    assert len(data.groups) == 1500
    assert list(data.groups) == sorted(data.groups)
    for name in ("user0", "user7", "user1499"):
        part = [r for r in rows if r["u"] == name]
        group = data.groups[name]
        assert group.rows == len(part)
        right = sorted(r["confidence"] for r in part if r["correct"])
        wrong = sorted(r["confidence"] for r in part if not r["correct"])
        assert sorted(group.columns.conf_correct.tolist()) == right
        assert sorted(group.columns.conf_wrong.tolist()) == wrong
        counts = [0] * 10
        sums = [[] for _ in range(10)]
        for r in part:
            k = min(int(r["confidence"] * 10), 9)
            if r["confidence"] < k / 10:
                k -= 1
            counts[k] += 1
            sums[k].append(r["confidence"])
        assert group.stats.count.tolist() == counts
        for k in range(10):
            assert group.stats.sum_conf[k] == pytest.approx(math.fsum(sums[k]), abs=1e-12)


def test_many_perplexity_groups_against_plain_loops(tmp_path):
    rows = [{"d": i % 700, "nll": (i % 13) * 0.25, "tokens": i % 9 + 1} for i in range(5000)]
    path = write_jsonl(tmp_path / "docs.jsonl", rows)
    data = read_perplexity([str(path)], by="d", block_size=2048, workers=2)
    assert len(data.groups) == 700
    for d in (0, 1, 699):
        part = [r for r in rows if r["d"] == d]
        group = data.groups[str(d)]
        assert group.sequences == len(part)
        assert group.total_tokens == sum(r["tokens"] for r in part)
        assert group.total_nll == pytest.approx(math.fsum(r["nll"] for r in part), abs=1e-12)


# --------------------------------------------------------------------------- 10. blank lines


def test_blank_lines_between_rows_keep_line_numbers(tmp_path):
    rows = [{"nll": 1.0, "tokens": 2, "bytes": 5} for _ in range(4000)]
    lines = [json.dumps(r) for r in rows]
    lines[3000] = json.dumps({"nll": 1.0, "tokens": 2})  # breaks the bytes pattern
    path = tmp_path / "blank.jsonl"
    path.write_text("\n\n".join(lines) + "\n\n\n", encoding="utf-8")
    line = one_error_line(run(["perplexity", path]))
    assert line.startswith(f"Error: {path}:6001: ")  # row 3001 sits on line 2 * 3000 + 1


def test_blank_lines_read_like_rows_without_them(tmp_path):
    rows = cal_rows(5000)
    plain = write_jsonl(tmp_path / "plain.jsonl", rows)
    spaced = tmp_path / "spaced.jsonl"
    spaced.write_text("\n" * 3 + "\n\n".join(json.dumps(r) for r in rows) + "\n" * 5000)
    a = read_calibration([str(plain)], keep_columns=True)
    b = read_calibration([str(spaced)], keep_columns=True, block_size=4096)
    assert b.rows == a.rows == 5000
    assert b.stats.count.tolist() == a.stats.count.tolist()


def test_blank_lines_take_the_one_call_path(tmp_path, monkeypatch):
    from calibcli.io.decode import BlockDecoder

    def refuse(*args):
        raise AssertionError("blank lines sent a block down the line-by-line path")

    rows = [json.dumps(r) for r in cal_rows(20_000)]
    path = tmp_path / "spaced.jsonl"
    path.write_text("\n\n".join(rows) + "\n", encoding="utf-8")
    monkeypatch.setattr(BlockDecoder, "_precise", refuse)
    assert read_calibration([str(path)], workers=1).rows == 20_000


def test_many_groups_keep_little_state(tmp_path):
    import tracemalloc

    rows = [{"u": i, "confidence": (i % 10) / 10, "correct": i % 2 == 0} for i in range(20_000)]
    path = write_jsonl(tmp_path / "users.jsonl", rows)
    tracemalloc.start()
    try:
        data = read_calibration([str(path)], by="u", keep_columns=True, workers=1)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(data.groups) == 20_000
    assert peak < 200 << 20  # a few hundred bytes per group, not a buffer per group


def test_only_newlines_is_no_rows(tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"\n" * 300_000)
    data = read_calibration([str(path)], block_size=4096)
    assert data.rows == 0


# --------------------------------------------------------------------------- 11. overflows


def inspect_log(path, logprobs):
    output = {"choices": [{"logprobs": {"content": [{"logprob": lp} for lp in logprobs]}}]}
    sample = {"id": 1, "epoch": 1, "scores": {"m": {"value": "C"}}, "output": output}
    log = {"version": 2, "status": "success", "eval": {"task": "t"}, "samples": [sample]}
    path.write_text(json.dumps(log, indent=1), encoding="utf-8")
    return path


@pytest.mark.parametrize("rule", ["sequence", "mean-token"])
def test_inspect_logprobs_whose_sum_overflows_are_probability_zero(tmp_path, rule):
    path = inspect_log(tmp_path / "log.json", [-1e308, -1e308])
    result = run(["calibrate", path, "--inspect-confidence", rule, "--json", "-q"])
    assert result.exit_code in (0, 1), result.stderr
    assert json.loads(result.stdout)["mean_confidence"] == 0.0


def calibrator_file(path, params_text, *, bom=False):
    text = (
        '{"schema_version": 1, "kind": "calibcli-calibrator", "method": "platt", '
        f'"params": {params_text}}}'
    )
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode())
    return path


@pytest.mark.parametrize(
    ("params", "detail"),
    [
        ('{"a": 1' + "0" * 400 + ', "b": 0}', "a platt parameter is a number beyond the range"),
        ('{"a": 1' + "0" * 5000 + ', "b": 0}', "invalid JSON (a number with too many digits)"),
    ],
)
def test_calibrator_numbers_too_large_are_one_error_line(tmp_path, params, detail):
    cal = calibrator_file(tmp_path / "cal.json", params)
    rows = write_jsonl(tmp_path / "rows.jsonl", cal_rows(5))
    for args in (["apply", cal, rows], ["calibrate", rows, "--calibrator", cal]):
        line = one_error_line(run(args))
        assert line.startswith(f"Error: {cal}: not a calibcli calibrator file: {detail}")


def test_a_calibrator_with_a_byte_order_mark_is_read(tmp_path):
    cal = calibrator_file(tmp_path / "cal.json", '{"a": 1.0, "b": 0.0}', bom=True)
    rows = write_jsonl(tmp_path / "rows.jsonl", cal_rows(5))
    result = run(["apply", cal, rows, "-q"])
    assert result.exit_code == 0, result.stderr
    assert len(result.stdout.splitlines()) == 5


# --------------------------------------------------------------------------- 12. --folds


def test_folds_has_a_stated_bound(tmp_path):
    rows = write_jsonl(tmp_path / "rows.jsonl", cal_rows(500))
    result = run(["calibrate", rows, "--recalibrate", "platt", "--folds", "101"])
    assert result.exit_code == 2 and "2<=x<=100" in result.stderr
    assert "2 to 100" in " ".join(run(["calibrate", "-h"]).stdout.split())


def test_a_group_smaller_than_folds_keeps_its_confidences(tmp_path):
    rows = [{**r, "g": "big"} for r in cal_rows(300)]
    rows += [{"confidence": 0.3, "correct": True, "g": "tiny"}]
    rows += [{"confidence": 0.6, "correct": False, "g": "tiny"}]
    path = write_jsonl(tmp_path / "groups.jsonl", rows)
    result = run(["calibrate", path, "--by", "g", "--recalibrate", "platt", "--json", "-q"])
    assert result.exit_code in (0, 1), result.stderr
    body = json.loads(result.stdout)
    tiny = body["recalibration"]["groups"]["tiny"]
    assert tiny["after"] == tiny["before"]
    assert tiny["before"]["mean_confidence"] == pytest.approx(0.45)
    big = body["recalibration"]["groups"]["big"]
    assert big["after"]["mean_confidence"] != big["before"]["mean_confidence"]
    assert (
        "--recalibrate: group 'tiny' holds fewer rows than --folds 5: confidences kept as "
        "they are, not recalibrated (lower --folds to recalibrate them)"
    ) in body["warnings"]
    assert body["groups"]["tiny"]["n"] == 2


# --------------------------------------------------------------------------- 13. --summary


def test_the_summary_is_appended_in_place(tmp_path):
    rows = write_jsonl(tmp_path / "rows.jsonl", cal_rows(50))
    summary = tmp_path / "summary.md"
    summary.write_text("# job\n", encoding="utf-8")
    inode = summary.stat().st_ino
    # the runner's shell holds the file open and appends after calibcli has run
    with open(summary, "a", encoding="utf-8") as shell:
        result = run(["calibrate", rows, "--summary", summary, "-q"])
        assert result.exit_code == 0, result.stderr
        shell.write("# after\n")
    assert summary.stat().st_ino == inode
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("# job\n### calibcli calibrate") and text.endswith("# after\n")


def test_concurrent_summaries_keep_each_other(tmp_path):
    from calibcli.cli.staging import Staged

    summary = tmp_path / "summary.md"
    summary.write_text("# job\n", encoding="utf-8")
    first, second = Staged(), Staged()
    first.add(summary, "first\n", "summary", append=True)
    second.add(summary, "second\n", "summary", append=True)
    first.commit()
    second.commit()
    assert summary.read_text(encoding="utf-8") == "# job\nfirst\nsecond\n"


def test_a_failed_run_creates_no_summary(tmp_path):
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"confidence": 1.5, "correct": True}])
    summary = tmp_path / "summary.md"
    one_error_line(run(["calibrate", bad, "--summary", summary]))
    assert not summary.exists()


# --------------------------------------------------------------------------- 14. small things


def test_write_only_output_paths_are_accepted(tmp_path, monkeypatch):
    rows = write_jsonl(tmp_path / "rows.jsonl", cal_rows(50))
    outputs = {name: tmp_path / name for name in ("report.json", "summary.md", "cal.json")}
    for path in outputs.values():
        path.write_text("")
    real_access = os.access

    def write_only(path, mode, *args, **kwargs):  # as a non-root user sees a mode 0200 file
        if str(path) in {str(p) for p in outputs.values()} and mode & os.R_OK:
            return False
        return real_access(path, mode, *args, **kwargs)

    monkeypatch.setattr(os, "access", write_only)
    calibrate = [
        "calibrate",
        rows,
        "-o",
        outputs["report.json"],
        "--summary",
        outputs["summary.md"],
    ]
    for args in (calibrate, ["fit", rows, "--method", "platt", "-o", outputs["cal.json"]]):
        result = run([*args, "-q"])
        assert result.exit_code == 0, result.stderr
    calibrator = tmp_path / "readable.json"
    calibrator.write_bytes(outputs["cal.json"].read_bytes())
    held = write_jsonl(tmp_path / "held.jsonl", cal_rows(50, offset=50))  # not fitted on
    result = run(["apply", calibrator, held, "-o", outputs["report.json"], "-q"])
    assert result.exit_code == 0, result.stderr


def lm_eval_row(ll: object) -> dict:
    row = json.loads(MC_SAMPLES.read_text(encoding="utf-8").splitlines()[0])
    row["filtered_resps"][0][0] = ll
    return row


@pytest.mark.parametrize(
    ("ll", "message"),
    [
        ("5.0", "filtered_resps[0] loglikelihood 5.0 is greater than 0, not a log-probability"),
        ("-1_000", "filtered_resps[0] loglikelihood is a string ('-1_000'), not a number as"),
        (" -1.0", "filtered_resps[0] loglikelihood is a string (' -1.0'), not a number as"),
        ("-Infinity", "filtered_resps[0] loglikelihood is a string ('-Infinity'), not a number"),
        (5.0, "filtered_resps[0] loglikelihood 5.0 is greater than 0, not a log-probability"),
    ],
)
def test_lm_eval_loglikelihoods_as_lm_eval_writes_them(tmp_path, ll, message):
    path = write_jsonl(tmp_path / MC_SAMPLES.name, [lm_eval_row(ll)])
    line = one_error_line(run(["calibrate", path]))
    assert line.startswith(f"Error: {path}:1: {message}")


@pytest.mark.parametrize("ll", ["-13.78", "-1e-05", "-0.0", "0", "-inf", -2.5])
def test_lm_eval_loglikelihoods_accepted(tmp_path, ll):
    path = write_jsonl(tmp_path / MC_SAMPLES.name, [lm_eval_row(ll)])
    result = run(["calibrate", path, "--json", "-q"])
    assert result.exit_code in (0, 1), result.stderr


def test_pipes_in_group_names_stay_inside_the_summary_table(tmp_path):
    rows = [{**r, "g": "a|b" if i % 2 else "c\nd"} for i, r in enumerate(cal_rows(200))]
    path = write_jsonl(tmp_path / "rows.jsonl", rows)
    summary = tmp_path / "summary.md"
    args = ["calibrate", path, "--by", "g", "--max-ece", "0.9", "--gate-each", "-q"]
    assert run([*args, "--summary", summary]).exit_code == 0
    table = [x for x in summary.read_text(encoding="utf-8").splitlines() if x.startswith("|")]
    gate = [x for x in table if x.startswith("| ece")]
    assert len(gate) == 3
    for line in table:  # every row has as many cells as its header: no unescaped |
        assert line.replace("\\|", "").count("|") == table[0].count("|") or "metric" not in line
    # a line break in a name is shown as its literal, not as a space that reads as another name
    assert any("a\\|b" in x for x in gate) and any("('c\\\\nd')" in x for x in gate)


def test_numbers_in_calibrator_errors_are_plain(tmp_path):
    cal = tmp_path / "iso.json"
    body = {"schema_version": 1, "kind": "calibcli-calibrator", "method": "isotonic"}
    cal.write_text(json.dumps({**body, "params": {"x": [0.1, 0.4, 0.4], "y": [0, 0.5, 1]}}))
    rows = write_jsonl(tmp_path / "rows.jsonl", cal_rows(5))
    line = one_error_line(run(["apply", cal, rows]))
    assert line.endswith("isotonic parameter 'x' must increase strictly; x[2] = 0.4")


def test_the_plot_install_hint_names_this_environment(monkeypatch):
    import builtins

    from calibcli.render import image

    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    with pytest.raises(image.PlotUnavailable) as err:
        image.image_format("x.png") and image._matplotlib()
    message = str(err.value)
    assert f"{sys.executable} -m pip install matplotlib" in message
    assert "pip install 'calibcli[plot]'" not in message


@pytest.mark.parametrize(
    ("command", "option", "text"),
    [
        ("threshold", "--plot", "accuracy-coverage curve"),
        ("threshold", "--gate-each", "--min-coverage gate"),
        ("compare", "--gate-each", "--max-increase/--max-decrease gates"),
        ("fit", "--output", "calibrator file"),
        ("fit", "--json", "calibrator file"),
        ("calibrate", "--plot", "reliability diagram"),
        ("calibrate", "FILE...", "inspect-ai .eval logs"),
    ],
)
def test_help_texts_say_what_each_command_does(command, option, text):
    from typer.main import get_command

    from calibcli.cli import app

    params = get_command(app).commands[command].params
    (param,) = [p for p in params if option in p.opts or p.human_readable_name == option]
    assert text in param.help
