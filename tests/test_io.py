"""calibcli.io: sources (files, stdin, gzip), tolerated layout, and every invalid-input message.

Expected figures are computed in the test from the rows written (plain Python), never from the
reader's own output.
"""

from __future__ import annotations

import gzip
import io
import json
import math
import sys
from types import SimpleNamespace

import pytest
import reference

from calibcli.io import (
    CalibrationData,
    InputError,
    PerplexityData,
    read_calibration,
    read_perplexity,
)

ROWS = [(0.05, False), (0.15, True), (0.31, False), (0.5, True), (0.77, True), (1.0, True)]


@pytest.fixture(autouse=True, params=["typed", "json.loads"])
def decoding(request, monkeypatch):
    """Run every test through both native decoders: msgspec blocks, and the json.loads path that
    small inputs take."""
    import calibcli.io.decode

    small = 0 if request.param == "typed" else 1 << 30
    monkeypatch.setattr(calibcli.io.decode, "SMALL_BLOCK", small)
    return request.param


def calib_lines(rows=ROWS, conf="confidence", corr="correct") -> list[str]:
    return [json.dumps({conf: c, corr: y}) for c, y in rows]


def write(path, lines, *, newline="\n", end=True) -> str:
    text = newline.join(lines) + (newline if end else "")
    path.write_bytes(text.encode())
    return str(path)


def assert_matches(data: CalibrationData, rows, bins=10):
    counts, right = reference.counts([c for c, _ in rows], [y for _, y in rows], bins)
    assert data.rows == len(rows) == data.stats.n
    assert data.stats.count.tolist() == counts
    assert data.stats.sum_correct.tolist() == right
    assert math.fsum(data.stats.sum_conf) == pytest.approx(math.fsum(c for c, _ in rows), abs=1e-12)


def fake_stdin(monkeypatch, data: bytes) -> None:
    monkeypatch.setattr(sys, "stdin", SimpleNamespace(buffer=io.BytesIO(data)))


# --------------------------------------------------------------------------- valid input


def test_plain_file(tmp_path):
    data = read_calibration([write(tmp_path / "p.jsonl", calib_lines())])
    assert_matches(data, ROWS)
    assert data.fmt == "jsonl"
    assert data.columns is None and data.per_source is None and data.groups is None


def test_crlf_blank_lines_extra_keys_and_no_final_newline(tmp_path):
    lines = []
    for i, (c, y) in enumerate(ROWS):
        row = {"id": f"q{i}", "confidence": c, "meta": {"a": [1, 2]}, "correct": y}
        lines.append(json.dumps(row))
        lines.append("   ")
    lines.insert(0, "")
    path = write(tmp_path / "p.jsonl", lines, newline="\r\n", end=False)
    assert_matches(read_calibration([path]), ROWS)


def test_utf8_bom_at_start_is_ignored(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + "\n".join(calib_lines()).encode())
    assert_matches(read_calibration([str(path)]), ROWS)


def test_correct_as_integers_and_confidence_as_integer(tmp_path):
    lines = ['{"confidence": 1, "correct": 1}', '{"confidence": 0, "correct": 0}']
    assert_matches(read_calibration([write(tmp_path / "p.jsonl", lines)]), [(1.0, 1), (0.0, 0)])


def test_renamed_fields(tmp_path):
    path = write(tmp_path / "p.jsonl", calib_lines(conf="p(yes)", corr="is right"))
    data = read_calibration([path], confidence_field="p(yes)", correct_field="is right")
    assert_matches(data, ROWS)
    with pytest.raises(InputError, match=r'p.jsonl:1: missing field "confidence"'):
        read_calibration([path], fmt="jsonl")
    with pytest.raises(InputError, match=r"p.jsonl:1: cannot detect the input format"):
        read_calibration([path])


def test_gzip_file(tmp_path):
    path = tmp_path / "p.jsonl.gz"
    path.write_bytes(gzip.compress("\n".join(calib_lines()).encode()))
    assert_matches(read_calibration([str(path)]), ROWS)


def test_gzip_detected_by_content_without_suffix(tmp_path):
    path = tmp_path / "p.data"
    path.write_bytes(gzip.compress("\n".join(calib_lines()).encode()))
    assert_matches(read_calibration([str(path)]), ROWS)


def test_stdin(monkeypatch):
    fake_stdin(monkeypatch, "\n".join(calib_lines()).encode())
    assert_matches(read_calibration(["-"]), ROWS)


def test_gzip_on_stdin(monkeypatch):
    fake_stdin(monkeypatch, gzip.compress("\n".join(calib_lines()).encode()))
    assert_matches(read_calibration(["-"]), ROWS)


def test_several_sources_pool_and_per_source(tmp_path, monkeypatch):
    a = write(tmp_path / "a.jsonl", calib_lines(ROWS[:2]))
    b = write(tmp_path / "b.jsonl", calib_lines(ROWS[2:]))
    fake_stdin(monkeypatch, "\n".join(calib_lines(ROWS[:1])).encode())
    data = read_calibration([a, "-", b], per_source=True, keep_columns=True)
    assert_matches(data, ROWS + ROWS[:1])
    assert list(data.per_source) == [a, "-", b]
    assert_matches(data.per_source[a], ROWS[:2])
    assert_matches(data.per_source["-"], ROWS[:1])
    assert_matches(data.per_source[b], ROWS[2:])
    # the parts hold statistics only: every confidence is kept once, in the pooled columns
    assert all(part.columns is None for part in data.per_source.values())
    assert data.columns.n == len(ROWS) + 1


def test_keep_columns_split_by_correctness(tmp_path):
    data = read_calibration([write(tmp_path / "p.jsonl", calib_lines())], keep_columns=True)
    assert sorted(data.columns.conf_correct.tolist()) == sorted(c for c, y in ROWS if y)
    assert sorted(data.columns.conf_wrong.tolist()) == sorted(c for c, y in ROWS if not y)
    assert data.columns.conf_correct.dtype.name == "float64"


def test_bins_option(tmp_path):
    data = read_calibration([write(tmp_path / "p.jsonl", calib_lines())], bins=3)
    assert_matches(data, ROWS, bins=3)


def test_empty_input_is_empty_native(tmp_path, monkeypatch):
    empty = tmp_path / "e.jsonl"
    empty.write_bytes(b"\n \r\n")
    data = read_calibration([str(empty)], keep_columns=True)
    assert data.rows == 0 and data.stats.n == 0 and data.fmt == "jsonl"
    assert data.columns.n == 0
    fake_stdin(monkeypatch, b"")
    ppl = read_perplexity(["-"])
    assert (ppl.sequences, ppl.total_nll, ppl.total_tokens, ppl.fmt) == (0, 0.0, 0, "jsonl")


def test_group_by_dotted_field(tmp_path):
    lines = [
        json.dumps({"confidence": c, "correct": y, "doc": {"subject": s}})
        for (c, y), s in zip(ROWS, "bbaabb", strict=True)
    ]
    data = read_calibration([write(tmp_path / "p.jsonl", lines)], by="doc.subject")
    assert list(data.groups) == ["a", "b"]
    assert_matches(data.groups["a"], ROWS[2:4])
    assert_matches(data.groups["b"], ROWS[:2] + ROWS[4:])
    assert_matches(data, ROWS)


def test_group_by_non_string_values(tmp_path):
    lines = [
        json.dumps({"confidence": c, "correct": y, "shot": k})
        for (c, y), k in zip(ROWS, [0, 5, 0, 5, True, None], strict=True)
    ]
    data = read_calibration([write(tmp_path / "p.jsonl", lines)], by="shot")
    assert list(data.groups) == ["0", "5", "null", "true"]
    assert data.groups["0"].rows == 2


# ----------------------------------------------------------------------- invalid calibration input

GOOD = '{"confidence": 0.5, "correct": true}'


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ('{"confidence": 1.5, "correct": true}', "confidence 1.5 is outside [0, 1]"),
        ('{"confidence": -0.25, "correct": true}', "confidence -0.25 is outside [0, 1]"),
        ("[0.5, true]", "line is not a JSON object"),
        ('"text"', "line is not a JSON object"),
        ("not json", "line is not a JSON object (Expecting value at column 1)"),
        ('{"confidence": 0.5, "correct": true', "line is not a JSON object ("),
        ('{"confidence": 0.5} {"correct": 1}', "line is not a JSON object (Extra data"),
        ('{"confidence": 0.5}', 'missing field "correct"'),
        ('{"correct": 1}', 'missing field "confidence"'),
        ('{"confidence": "0.5", "correct": true}', 'confidence "0.5" is not a number'),
        ('{"confidence": true, "correct": true}', "confidence true is not a number"),
        ('{"confidence": null, "correct": true}', "confidence null is not a number"),
        ('{"confidence": NaN, "correct": true}', "confidence NaN is not a number"),
        ('{"confidence": Infinity, "correct": true}', "confidence Infinity is outside [0, 1]"),
        ('{"confidence": 1e999, "correct": true}', "confidence Infinity is outside [0, 1]"),
        ('{"confidence": 0.5, "correct": 2}', "correct 2 is not true/false/0/1"),
        ('{"confidence": 0.5, "correct": 1.0}', "correct 1.0 is not true/false/0/1"),
        ('{"confidence": 0.5, "correct": "yes"}', 'correct "yes" is not true/false/0/1'),
        ('{"confidence": 0.5, "correct": null}', "correct null is not true/false/0/1"),
        ('{"confidence": 0.5, "correct": 10000000000000000000000}', "is not true/false/0/1"),
    ],
)
def test_invalid_calibration_line(tmp_path, bad, message):
    path = write(tmp_path / "preds.jsonl", [GOOD, "", GOOD, bad, GOOD])
    with pytest.raises(InputError) as info:
        read_calibration([path])
    text = str(info.value)
    assert text.startswith(f"{path}:4: ")
    assert message in text
    assert "\n" not in text
    assert info.value.line == 4 and info.value.path == path


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ('{"confidence": 1.5, "correct": true}', "confidence 1.5 is outside [0, 1]"),
        ('{"confidence": -0.25, "correct": 0}', "confidence -0.25 is outside [0, 1]"),
        ('{"confidence": 1.0000000000000002, "correct": 1}', "is outside [0, 1]"),
    ],
)
def test_out_of_range_confidence_in_a_block_without_blank_lines(tmp_path, bad, message):
    # No blank line: the whole block decodes in one call and the range is checked on the column.
    lines = [GOOD] * 300 + [bad] + [GOOD] * 5
    path = write(tmp_path / "preds.jsonl", lines)
    with pytest.raises(InputError) as info:
        read_calibration([path])
    assert str(info.value).startswith(f"{path}:301: ")
    assert message in str(info.value)


def test_range_edges_and_negative_zero_are_valid(tmp_path):
    rows = [(0.0, False), (-0.0, True), (1.0, True), (1, False), (0, True)]
    lines = [json.dumps({"confidence": c, "correct": y}) for c, y in rows]
    assert_matches(read_calibration([write(tmp_path / "p.jsonl", lines)]), rows)


def test_invalid_utf8(tmp_path):
    # (invalid bytes inside an ignored string value are skipped unread, like the rest of it)
    path = tmp_path / "p.jsonl"
    path.write_bytes(GOOD.encode() + b'\n{"confidence": 0.5, "correct": \xff}\n')
    with pytest.raises(InputError, match=r"p.jsonl:2: line is not valid UTF-8"):
        read_calibration([str(path)])


def test_stdin_error_names_stdin(monkeypatch):
    fake_stdin(monkeypatch, f"{GOOD}\n{GOOD}\n{{}}\n".encode())
    with pytest.raises(InputError, match=r'^<stdin>:3: missing field "confidence"$'):
        read_calibration(["-"])


def test_error_in_second_source_names_it(tmp_path):
    a = write(tmp_path / "a.jsonl", [GOOD] * 3)
    b = write(tmp_path / "b.jsonl", [GOOD, '{"confidence": 2, "correct": 0}'])
    with pytest.raises(InputError, match=r"b.jsonl:2: confidence 2 is outside \[0, 1\]"):
        read_calibration([a, b])


def test_error_inside_gzip_counts_decompressed_lines(tmp_path):
    path = tmp_path / "p.jsonl.gz"
    path.write_bytes(gzip.compress(("\n".join([GOOD] * 9 + ["{}"]) + "\n").encode()))
    with pytest.raises(InputError, match=r"p.jsonl.gz:10: missing field"):
        read_calibration([str(path)])


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("missing.jsonl", None, "missing.jsonl: No such file or directory"),
        ("bad.jsonl.gz", b"\x1f\x8bnot gzip data at all", "bad.jsonl.gz: cannot decompress:"),
    ],
)
def test_unreadable_sources(tmp_path, name, content, message):
    path = tmp_path / name
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(InputError) as info:
        read_calibration([str(path)])
    assert str(info.value).startswith(str(tmp_path / message))
    assert info.value.line is None


def test_truncated_gzip(tmp_path):
    path = tmp_path / "t.jsonl.gz"
    path.write_bytes(gzip.compress(("\n".join([GOOD] * 2000)).encode())[:-20])
    with pytest.raises(InputError, match=r"t.jsonl.gz: cannot decompress: "):
        read_calibration([str(path)])


def test_a_directory_without_input_files_is_refused(tmp_path):
    # a folder stands for the input files inside it (tests/test_lm_eval_names.py)
    with pytest.raises(InputError, match=r": a folder with no input files \(.jsonl, "):
        read_calibration([str(tmp_path)])


def test_bad_options():
    with pytest.raises(ValueError, match="unknown format"):
        read_calibration([], fmt="csv")
    with pytest.raises(ValueError, match="unknown mc_norm"):
        read_calibration([], mc_norm="words")
    with pytest.raises(ValueError):
        read_calibration([], bins=0)


# --------------------------------------------------------------------------- perplexity


def test_perplexity_totals(tmp_path):
    rows = [(2.5, 3), (0.0, 0), (10.25, 7), (1e-3, 1)]
    lines = [json.dumps({"nll": n, "tokens": t, "id": i}) for i, (n, t) in enumerate(rows)]
    data = read_perplexity([write(tmp_path / "p.jsonl", lines, newline="\r\n")])
    assert isinstance(data, PerplexityData)
    assert data.sequences == 4
    assert data.total_tokens == 11
    assert data.total_nll == math.fsum(n for n, _ in rows)
    assert data.total_bytes is None and data.total_words is None
    assert (data.null_logprobs, data.sentinel_logprobs, data.fmt) == (0, 0, "jsonl")


def test_perplexity_bytes_and_words_and_renamed_fields(tmp_path):
    lines = [
        '{"loss": 2.0, "n": 3, "b": 10, "w": 2}',
        '{"loss": 1.0, "n": 1, "b": 5, "w": 1}',
    ]
    data = read_perplexity(
        [write(tmp_path / "p.jsonl", lines)],
        nll_field="loss",
        tokens_field="n",
        bytes_field="b",
        words_field="w",
    )
    totals = (data.total_nll, data.total_tokens, data.total_bytes, data.total_words)
    assert totals == (3.0, 4, 15, 3)


@pytest.mark.parametrize("literal", ["Infinity", "1e999"])
def test_perplexity_infinite_nll_is_valid(tmp_path, literal):
    lines = ['{"nll": 1.0, "tokens": 2}', f'{{"nll": {literal}, "tokens": 2}}']
    data = read_perplexity([write(tmp_path / "p.jsonl", lines)])
    assert data.total_nll == math.inf and data.total_tokens == 4 and data.sequences == 2


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ('{"nll": NaN, "tokens": 3}', "nll NaN is not a number"),
        ('{"nll": -1.5, "tokens": 3}', "nll -1.5 is negative"),
        ('{"nll": -Infinity, "tokens": 3}', "nll -Infinity is negative"),
        ('{"nll": "1.5", "tokens": 3}', 'nll "1.5" is not a number'),
        ('{"nll": false, "tokens": 3}', "nll false is not a number"),
        ('{"nll": 1.5, "tokens": 2.5}', "tokens 2.5 is not a non-negative integer"),
        ('{"nll": 1.5, "tokens": -1}', "tokens -1 is not a non-negative integer"),
        ('{"nll": 1.5, "tokens": true}', "tokens true is not a non-negative integer"),
        ('{"nll": 1.5, "tokens": 0}', "nll 1.5 > 0 with 0 tokens"),
        ('{"nll": 1.5}', 'missing field "tokens"'),
        ('{"tokens": 2}', 'missing field "nll"'),
        ('{"nll": 1.5, "tokens": 2, "bytes": -3}', "bytes -3 is not a non-negative integer"),
        ("[]", "line is not a JSON object"),
    ],
)
def test_invalid_perplexity_line(tmp_path, bad, message):
    good = '{"nll": 1.0, "tokens": 2}'
    path = write(tmp_path / "ppl.jsonl", [good, good, bad])
    with pytest.raises(InputError) as info:
        read_perplexity([path])
    assert str(info.value).startswith(f"{path}:3: ")
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ('{"nll": -0.5, "tokens": 3}', "nll -0.5 is negative"),
        ('{"nll": 1.5, "tokens": -2}', "tokens -2 is not a non-negative integer"),
        (f'{{"nll": 1.5, "tokens": {(1 << 62) + 1}}}', f"tokens {(1 << 62) + 1} is too large"),
        (f'{{"nll": 1.5, "tokens": {1 << 63}}}', f"tokens {1 << 63} is too large"),
        (f'{{"nll": 1.5, "tokens": {1 << 70}}}', f"tokens {1 << 70} is too large"),
    ],
)
def test_out_of_range_perplexity_values_deep_in_a_block(tmp_path, bad, message):
    good = '{"nll": 1.0, "tokens": 2}'
    path = write(tmp_path / "ppl.jsonl", [good] * 200 + [bad] + [good] * 3)
    with pytest.raises(InputError) as info:
        read_perplexity([path])
    assert str(info.value).startswith(f"{path}:201: ")
    assert message in str(info.value)


def test_perplexity_largest_token_count_is_valid(tmp_path):
    lines = ['{"nll": 1.0, "tokens": 2}', f'{{"nll": 0.5, "tokens": {1 << 62}}}']
    data = read_perplexity([write(tmp_path / "ppl.jsonl", lines)])
    assert data.total_tokens == 2 + (1 << 62)
    assert data.total_nll == 1.5


def test_perplexity_zero_nll_with_zero_tokens_is_valid(tmp_path):
    data = read_perplexity([write(tmp_path / "p.jsonl", ['{"nll": 0, "tokens": 0}'])])
    assert (data.sequences, data.total_nll, data.total_tokens) == (1, 0.0, 0)


def test_perplexity_bytes_on_some_rows_only(tmp_path):
    first_has = ['{"nll": 1, "tokens": 2, "bytes": 4}', '{"nll": 1, "tokens": 2}']
    with pytest.raises(InputError, match=r'p.jsonl:2: missing field "bytes" \(earlier rows'):
        read_perplexity([write(tmp_path / "p.jsonl", first_has)])
    first_lacks = ['{"nll": 1, "tokens": 2}', "", '{"nll": 1, "tokens": 2, "words": 4}']
    with pytest.raises(InputError, match=r'q.jsonl:3: field "words" is given here but not'):
        read_perplexity([write(tmp_path / "q.jsonl", first_lacks)])


def test_perplexity_group_by(tmp_path):
    lines = [
        '{"nll": 1.0, "tokens": 2, "src": "a"}',
        '{"nll": 2.0, "tokens": 3, "src": "b"}',
        '{"nll": 4.0, "tokens": 5, "src": "a"}',
    ]
    data = read_perplexity([write(tmp_path / "p.jsonl", lines)], by="src")
    assert list(data.groups) == ["a", "b"]
    assert (data.groups["a"].total_nll, data.groups["a"].total_tokens) == (5.0, 7)
    assert (data.groups["b"].sequences, data.groups["b"].total_tokens) == (1, 3)
    assert (data.total_nll, data.total_tokens, data.sequences) == (7.0, 10, 3)


# --------------------------------------------------------------------------- other formats


def mc_row(doc_id, lls, acc, **extra):
    row = {
        "doc_id": doc_id,
        "filtered_resps": [[str(x), "False"] for x in lls],
        "acc": acc,
        "brier_score": "[0.1 0.2]",
    }
    row.update(extra)
    return json.dumps(row)


def test_lm_eval_multiple_choice_detected_and_grouped_by_task(tmp_path):
    arc = tmp_path / "samples_arc_easy_2024-06-01T12-30-05.123456.jsonl"
    hs = tmp_path / "samples_hellaswag_2024-06-01T12-30-05.jsonl"
    arc_rows = [([-1.0, -2.0, -3.5], 1), ([-0.5, -0.25], 0)]
    hs_rows = [([-4.0, -4.0, -9.0, -1.0], 1)]
    write(arc, [mc_row(i, lls, acc) for i, (lls, acc) in enumerate(arc_rows)])
    write(hs, [mc_row(0, lls, acc) for lls, acc in hs_rows])
    data = read_calibration([str(arc), str(hs)], by="task", keep_columns=True)
    assert data.fmt == "lm-eval"
    assert list(data.groups) == ["arc_easy", "hellaswag"]
    expected = [(reference.top_softmax(lls), acc) for lls, acc in arc_rows + hs_rows]
    assert_matches(data, expected)
    assert_matches(data.groups["arc_easy"], expected[:2])
    assert_matches(data.groups["hellaswag"], expected[2:])
    assert sorted(data.columns.conf_wrong.tolist()) == [
        pytest.approx(reference.top_softmax([-0.5, -0.25]))
    ]


def test_lm_eval_bad_row_names_file_and_line(tmp_path):
    path = tmp_path / "samples_arc_2024-06-01T12-30-05.jsonl"
    one_choice = json.dumps({"doc_id": 1, "filtered_resps": [["-1", "False"]], "acc": 1})
    write(path, [mc_row(0, [-1, -2], 1), one_choice, mc_row(2, [-1, -2], 0)])
    with pytest.raises(InputError, match=rf"^{path}:2: a loglikelihood row in a file of multiple"):
        read_calibration([str(path)])


def test_lm_eval_rolling_rows_for_perplexity(tmp_path):
    rows = [(-10.5, 3, 12), (-20.25, 5, 30)]
    lines = [
        json.dumps(
            {
                "doc_id": i,
                "filtered_resps": [str(ll)],
                "word_perplexity": [ll, w],
                "byte_perplexity": [ll, b],
                "bits_per_byte": [ll, b],
            }
        )
        for i, (ll, w, b) in enumerate(rows)
    ]
    data = read_perplexity([write(tmp_path / "samples_wiki_2024-06-01T12-30-05.jsonl", lines)])
    assert data.fmt == "lm-eval"
    assert (data.sequences, data.total_nll) == (2, 30.75)
    assert (data.total_tokens, data.total_words, data.total_bytes) == (None, 8, 42)


def test_logprobs_rows(tmp_path):
    lines = [
        json.dumps({"logprobs": [None, -0.5, -1.25], "src": "a"}),
        json.dumps({"logprobs": [None, -10000.0, -0.25, -0.0], "src": "b"}),
    ]
    path = write(tmp_path / "lp.jsonl", lines)
    data = read_perplexity([path], by="src")
    assert data.fmt == "logprobs"
    assert (data.sequences, data.total_tokens) == (2, 5)
    assert data.total_nll == 0.5 + 1.25 + 10000.0 + 0.25
    assert (data.null_logprobs, data.sentinel_logprobs) == (2, 1)
    assert (data.groups["a"].null_logprobs, data.groups["b"].sentinel_logprobs) == (1, 1)
    assert data.groups["a"].total_tokens == 2


def test_logprobs_bad_value_and_renamed_field(tmp_path):
    lines = [json.dumps({"lp": [-0.5]}), json.dumps({"lp": [-0.5, 0.25]})]
    path = write(tmp_path / "lp.jsonl", lines)
    with pytest.raises(InputError, match=r"lp.jsonl:2: lp\[1\] = 0.25 is greater than 0"):
        read_perplexity([path], logprobs_field="lp")


def test_logprobs_input_refused_by_calibration(tmp_path):
    path = write(tmp_path / "lp.jsonl", ["", json.dumps({"logprobs": [-0.5]})])
    with pytest.raises(InputError, match=r"lp.jsonl:2: logprobs rows hold per-token logprobs"):
        read_calibration([path])
    with pytest.raises(ValueError, match="logprobs"):
        read_calibration([path], fmt="logprobs")


def test_explicit_format_skips_detection(tmp_path):
    path = write(tmp_path / "p.jsonl", calib_lines())
    with pytest.raises(InputError, match=r"p.jsonl:1: 'filtered_resps' is null"):
        read_calibration([path], fmt="lm-eval")


def test_detection_uses_first_row_of_all_sources(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    lp = write(tmp_path / "lp.jsonl", [json.dumps({"logprobs": [-1.0, -2.0]})])
    data = read_perplexity([str(empty), lp])
    assert (data.fmt, data.total_nll, data.total_tokens) == ("logprobs", 3.0, 2)


def test_detection_after_many_blank_lines(tmp_path):
    path = tmp_path / "lp.jsonl"
    path.write_text("\n" * 20_000 + json.dumps({"logprobs": [-1.0, None]}) + "\n")
    data = read_perplexity([str(path)])
    assert (data.fmt, data.total_tokens, data.null_logprobs) == ("logprobs", 1, 1)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\r\n" * 9_999 + '{"confidence": 0.5, "correct": 5}\n')
    with pytest.raises(InputError, match=r"bad.jsonl:10000: correct 5 is not"):
        read_calibration([str(bad)])


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_only_on_a_terminal_for_files(tmp_path, monkeypatch):
    import calibcli.cli.progress as progress

    monkeypatch.setattr(progress, "PROGRESS_MIN_BYTES", 1)
    write(tmp_path / "p.jsonl", calib_lines())
    monkeypatch.chdir(tmp_path)  # the bar shows the path as given: short enough for any width
    path = "p.jsonl"
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert_matches(read_calibration([path], progress=progress.progress_bar), ROWS)
    assert "p.jsonl" in terminal.getvalue()

    def no_bar(*args, **kwargs):
        raise AssertionError("no progress bar expected")

    monkeypatch.setattr(progress, "ProgressBar", no_bar)
    fake_stdin(monkeypatch, "\n".join(calib_lines()).encode())
    assert_matches(read_calibration(["-"], progress=progress.progress_bar), ROWS)  # never for stdin
    assert_matches(read_calibration([path], progress=None), ROWS)
    monkeypatch.setattr(sys, "stderr", io.StringIO())  # not a terminal
    assert_matches(read_calibration([path], progress=progress.progress_bar), ROWS)


def test_two_objects_on_a_line_next_to_a_blank_line(tmp_path):
    # the blank line and the doubled line would balance a plain row count
    lines = [GOOD, "", GOOD, f"{GOOD} {GOOD}", GOOD]
    with pytest.raises(InputError, match=r"p.jsonl:4: line is not a JSON object \(Extra data"):
        read_calibration([write(tmp_path / "p.jsonl", lines)])
    split = [GOOD, '{"confidence": 0.5,', ' "correct": true}', f"{GOOD}{GOOD}"]
    with pytest.raises(InputError, match=r"q.jsonl:2: line is not a JSON object"):
        read_calibration([write(tmp_path / "q.jsonl", split)])


def test_indented_lines_are_valid(tmp_path):
    lines = ["  " + line for line in calib_lines()]
    assert_matches(read_calibration([write(tmp_path / "p.jsonl", lines)]), ROWS)


def test_group_names_are_never_shortened(tmp_path):
    big = [10**45 + 1, 10**45 + 2]
    lines = [json.dumps({"confidence": 0.5, "correct": True, "k": k}) for k in big]
    data = read_calibration([write(tmp_path / "p.jsonl", lines)], by="k")
    assert list(data.groups) == [str(k) for k in big]


def test_missing_stdin(monkeypatch):
    monkeypatch.setattr(sys, "stdin", None)
    with pytest.raises(InputError, match=r"^<stdin>: cannot read: "):
        read_calibration(["-"])
