"""lm-eval multiple-choice rows read by the number decoder (loglikelihood strings parsed by
msgspec's lax mode): its floats against float() on many texts, its confidences against the
softmax computed here, and every value it leaves to the strict decoder or the row function
giving the same figures or the same file:line error as the row function."""

from __future__ import annotations

import json
import math
import random
import struct

import msgspec
import numpy as np
import pytest
from typer.testing import CliRunner

from calibcli.cli import app
from calibcli.formats import lm_eval_columns as typed

CONTINUATIONS = (" a", " bé", " ccc", " dddd€")


def choice_row(i: int, lls: list, acc: object = 1.0) -> dict:
    return {
        "doc_id": i,
        "doc": {"question": 'Which?\n"quoted"', "choices": list(CONTINUATIONS)},
        "arguments": {
            f"gen_args_{k}": {"arg_0": "Q?", "arg_1": CONTINUATIONS[k % 4]} for k in range(len(lls))
        },
        "filtered_resps": [[x if isinstance(x, str) else repr(x), "False"] for x in lls],
        "acc": acc,
        "acc_norm": acc,
        "acc_bytes": acc,
    }


def lines(rows: list) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def reference_confidence(lls: list[float]) -> float:
    top = max(lls)
    return 1.0 / math.fsum(math.exp(x - top) for x in lls)


def bits(x: float) -> int:
    return struct.unpack("<q", struct.pack("<d", x))[0]


def number_texts() -> list[str]:
    """Texts of negative numbers as Python writes them and as other writers might: shortest
    reprs of random doubles of every magnitude, 17 and 25 significant digits, subnormals, long
    integers and mantissas with exponents, and exact halfway points between two doubles."""
    rng = random.Random(11)
    texts = []
    for _ in range(20_000):
        x = -struct.unpack("<d", struct.pack("<Q", rng.getrandbits(63)))[0]
        if math.isfinite(x) and x:
            texts += [repr(x), f"{x:.17g}", f"{x:.25e}"]
    for _ in range(5_000):
        g = -rng.gammavariate(2.0, 2.0)
        texts += [repr(g), f"{g:.17g}", f"{g:.25g}"]
        texts.append(repr(-struct.unpack("<d", struct.pack("<Q", rng.getrandbits(52)))[0]))
        texts.append("-" + str(rng.randrange(1, 10 ** rng.randint(1, 40))))
        texts.append(f"-{rng.randrange(1, 10**20)}e{rng.randint(-330, 280)}")
        # the exact decimal halfway between g and the next double: rounds to even
        low = math.nextafter(g, -math.inf)
        texts.append(format((_exact(g) + _exact(low)) / 2, "f"))
    return [t for t in texts if float(t) != 0]


def _exact(x: float):
    from decimal import Decimal, getcontext

    getcontext().prec = 1100
    return Decimal(x)


def test_lax_mode_reads_number_texts_as_float_does():
    texts = number_texts()
    decoder = msgspec.json.Decoder(list[float], strict=False)
    got = decoder.decode(json.dumps(texts).encode())
    assert len(texts) > 90_000
    assert [bits(x) for x in got] == [bits(float(t)) for t in texts]


def test_number_columns_match_the_softmax_bit_for_bit():
    rng = random.Random(3)
    table = [
        [-rng.expovariate(0.2) * 10 ** rng.randint(-6, 2) for _ in range(rng.randint(2, 7))]
        for _ in range(3000)
    ]
    table[7][2] = 0.0
    table[8][0] = -0.0
    rows = [choice_row(i, lls, [0.0, 1.0, True, 1][i % 4]) for i, lls in enumerate(table)]
    rows[9]["filtered_resps"][1][0] = -2.5  # a JSON number
    table[9][1] = -2.5
    decoded = typed.choice_number_decoder("none").decode_lines(lines(rows))
    conf, correct = typed.choice_number_columns(decoded, "none")
    want = [reference_confidence(lls) for lls in table]
    assert [bits(x) for x in conf.tolist()] == [bits(x) for x in want]
    assert correct.tolist() == [i % 4 != 0 for i in range(3000)]


@pytest.mark.parametrize("mc_norm", ["chars", "bytes"])
def test_length_normalised_number_columns(mc_norm):
    table = [[-1.5, -2.25, -0.75, -9.0], [-3.0, -3.0, -1e-05, -40.0]]
    rows = [choice_row(i, lls) for i, lls in enumerate(table)]
    decoded = typed.choice_number_decoder(mc_norm).decode_lines(lines(rows))
    conf, _ = typed.choice_number_columns(decoded, mc_norm)
    texts = [c[1:] for c in CONTINUATIONS]  # less the target delimiter " "
    size = len if mc_norm == "chars" else (lambda t: len(t.encode()))
    want = [
        reference_confidence([x / size(t) for x, t in zip(lls, texts, strict=True)])
        for lls in table
    ]
    assert conf.tolist() == want


@pytest.mark.parametrize("text", ["-inf", "-Infinity", "-INF", "NaN", "nan", "Infinity", "0.5"])
def test_values_the_number_columns_leave(text):
    rows = [choice_row(i, [-1.0, -2.0, -3.0, -4.0]) for i in range(3)]
    rows[1]["filtered_resps"][2][0] = text
    decoded = typed.choice_number_decoder("none").decode_lines(lines(rows))
    assert typed.choice_number_columns(decoded, "none") is None


@pytest.mark.parametrize("acc", ["1", "true", None, 2, 0.5, [1]])
def test_correctness_the_number_columns_leave(acc):
    rows = [choice_row(i, [-1.0, -2.0]) for i in range(3)]
    rows[2]["acc"] = acc
    decoded = typed.choice_number_decoder("none").decode_lines(lines(rows))
    assert typed.choice_number_columns(decoded, "none") is None


@pytest.mark.parametrize(
    "resp",
    [["-1.7976931348623159e308", "False"], ["-1.0", "1"], ["-1.0", "true"], ["-1.0", True]],
)
def test_responses_the_number_decoder_refuses(resp):
    row = choice_row(0, [-1.0, -2.0])
    row["filtered_resps"][0] = resp
    with pytest.raises(msgspec.ValidationError):
        typed.choice_number_decoder("none").decode_lines(lines([row]))


def write_rows(tmp_path, rows) -> str:
    path = tmp_path / "samples_toy_2026-01-01T00-00-00.jsonl"
    path.write_bytes(lines(rows))
    return str(path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "-Infinity",
            "filtered_resps[1] loglikelihood is a string ('-Infinity'), not a number as "
            "lm-eval writes one",
        ),
        (
            "NaN",
            "filtered_resps[1] loglikelihood is a string ('NaN'), not a number as lm-eval "
            "writes one",
        ),
        ("nan", "filtered_resps[1] loglikelihood is NaN"),
        ("1e400", "filtered_resps[1] loglikelihood is +inf"),
        ("0.25", "filtered_resps[1] loglikelihood 0.25 is greater than 0, not a log-probability"),
    ],
)
def test_a_value_lax_mode_reads_is_refused_as_the_row_function_words_it(tmp_path, text, message):
    rows = [choice_row(i, [-1.0, -2.0, -3.0, -4.0]) for i in range(1500)]
    rows[700]["filtered_resps"][1][0] = text
    path = write_rows(tmp_path, rows)
    result = CliRunner().invoke(app, ["calibrate", "--json", "--workers", "1", path])
    assert result.exit_code == 2
    assert result.stderr.strip().endswith(f"{path}:701: {message}")


def test_a_string_flag_is_refused_as_the_row_function_words_it(tmp_path):
    rows = [choice_row(i, [-1.0, -2.0, -3.0, -4.0]) for i in range(1500)]
    rows[900]["acc"] = "1"
    path = write_rows(tmp_path, rows)
    result = CliRunner().invoke(app, ["calibrate", "--json", "--workers", "1", path])
    assert result.exit_code == 2
    assert result.stderr.strip().endswith(f"{path}:901: 'acc' is a string ('1'), expected 0 or 1")


@pytest.mark.parametrize(
    "edit",
    [
        lambda r: r["filtered_resps"][0].__setitem__(0, "-inf"),  # the strict decoder's
        lambda r: r["filtered_resps"][0].__setitem__(0, "-1.7976931348623159e308"),
        lambda r: r["filtered_resps"][0].__setitem__(1, True),
        lambda r: r["filtered_resps"][0].__setitem__(0, "-0"),
    ],
)
def test_values_left_to_the_strict_decoder_give_the_reference_figures(tmp_path, edit):
    rng = random.Random(5)
    table = [[-rng.expovariate(0.5) for _ in range(4)] for _ in range(2000)]
    rows = [choice_row(i, lls, float(i % 3 == 0)) for i, lls in enumerate(table)]
    for i in (3, 1200, 1999):
        edit(rows[i])
        table[i][0] = float(rows[i]["filtered_resps"][0][0])
    path = write_rows(tmp_path, rows)
    result = CliRunner().invoke(app, ["calibrate", "--json", "--workers", "1", path])
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    conf = [reference_confidence(lls) for lls in table]
    assert report["n"] == 2000
    assert report["mean_confidence"] == pytest.approx(math.fsum(conf) / 2000, rel=1e-12)
    assert report["accuracy"] == pytest.approx(667 / 2000)
    assert np.isfinite(report["ece"])


def test_an_integer_past_a_double_is_read_as_an_infinite_loglikelihood(tmp_path):
    # a JSON integer no double holds reads as infinite, as a native row's does: past -1e308 it
    # is a zero probability (the "-inf" lm-eval writes), past +1e308 it is refused as +inf
    reports = []
    for value in (-(10**400), "-inf"):
        rows = [choice_row(i, [-1.0, -2.0, -3.0, -4.0], float(i % 2)) for i in range(40)]
        rows[7]["filtered_resps"][0][0] = value
        path = write_rows(tmp_path, rows)
        result = CliRunner().invoke(app, ["calibrate", "--json", "--workers", "1", path])
        assert result.exit_code == 0, result.stderr
        reports.append(json.loads(result.stdout))
    assert reports[0] == reports[1]
    conf = [reference_confidence([-1.0, -2.0, -3.0, -4.0])] * 40
    conf[7] = reference_confidence([-2.0, -3.0, -4.0])  # the first choice has probability 0
    assert reports[0]["mean_confidence"] == pytest.approx(math.fsum(conf) / 40, rel=1e-14)

    rows[7]["filtered_resps"][0][0] = 10**400
    path = write_rows(tmp_path, rows)
    result = CliRunner().invoke(app, ["calibrate", "--json", "--workers", "1", path])
    assert result.exit_code == 2
    assert result.stderr == f"Error: {path}:8: filtered_resps[0] loglikelihood is +inf\n"
