"""Fuzzing the commands with hostile bytes, JSON lines and option values (hypothesis,
deterministic): whatever the input, the exit code is 0, 1 or 2, there is no traceback, and an
exit 2 prints exactly one line starting "Error: ".
"""

from __future__ import annotations

import json

from harness import pack
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_cli import run

COMMANDS = ("perplexity", "calibrate", "reliability", "threshold", "fit")

FIELDS = ("confidence", "correct", "nll", "tokens", "bytes", "words", "logprobs", "g", "task")

numbers = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, 1, 0.0, 1.0, 0.5, 1e308, -1e308, 5e-324, 2**62, 2**63, 2**64]),
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    numbers,
    st.text(max_size=8),
    st.sampled_from(["\ud800", "1", "null", "true", "NaN"]),  # a lone surrogate, typed lookalikes
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.sampled_from(FIELDS), inner, max_size=4),
    ),
    max_leaves=12,
)
rows = st.dictionaries(st.sampled_from(FIELDS), values, max_size=6)


def encode(value) -> str:
    """JSON with NaN/Infinity literals and lone surrogates as they come."""
    return json.dumps(value, allow_nan=True, ensure_ascii=False)


lines = st.one_of(
    rows.map(encode),
    values.map(encode),
    st.sampled_from(
        [
            "",
            "   ",
            "[" * 5000,
            '{"confidence": 0.5, "correct": true, "x": ' + "[" * 5000,
            '{"confidence": 0.5, "correct": true}{"confidence": 0.5, "correct": true}',
            '{"nll": Infinity, "tokens": 1}',
            '{"nll": NaN, "tokens": 1}',
            '{"nll": 1e999, "tokens": 0}',
            '{"logprobs": [-1e308, -1e308]}',
            '{"confidence": 1e-400, "correct": 1}',
        ]
    ),
)
valid = st.sampled_from(
    [
        '{"confidence": 0.25, "correct": true, "g": 1, "nll": 2.0, "tokens": 3}',
        '{"confidence": 0.75, "correct": false, "g": "1", "nll": 1.0, "tokens": 2}',
        '{"confidence": 0.5, "correct": 0, "g": null, "nll": 0.5, "tokens": 1}',
    ]
)
text_inputs = st.lists(st.one_of(valid, valid, lines), min_size=0, max_size=12).map(
    lambda ls: "\n".join(ls) + "\n"
)
byte_inputs = st.one_of(
    st.binary(max_size=64),
    text_inputs.map(lambda t: t.encode("utf-8", "surrogatepass")),
    text_inputs.map(lambda t: t.encode("utf-16", "surrogatepass")),
)

option_values = st.one_of(
    st.sampled_from(["0", "-1", "1", "2", "0.5", "nan", "inf", "-inf", "1e999", "", "abc"]),
    st.integers(min_value=-5, max_value=20000).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
)
OPTIONS = {
    "perplexity": ["--max-perplexity", "--by", "--workers", "--max-line-mb", "--nll-field"],
    "calibrate": ["--bins", "--max-ece", "--ci", "--min-populated-bins", "--by", "--max-line-mb"],
    "reliability": ["--bins", "--by", "--max-line-mb", "--workers"],
    "threshold": ["--target-accuracy", "--delta", "--min-coverage", "--by", "--max-line-mb"],
    "fit": ["--bins", "--by", "--max-line-mb"],
}
REQUIRED = {"threshold": ["--target-accuracy", "0.5"], "fit": ["--method", "histogram"]}


@st.composite
def invocations(draw):
    command = draw(st.sampled_from(COMMANDS))
    args = [command, *REQUIRED.get(command, [])]
    for option in draw(st.lists(st.sampled_from(OPTIONS[command]), max_size=2, unique=True)):
        value = draw(st.one_of(option_values, st.sampled_from(["g", "task", "confidence"])))
        args += [option, value]
    if draw(st.booleans()):
        args.append("--json")
    return args


def check(result) -> None:
    assert result.exit_code in (0, 1, 2), (result.exit_code, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    if result.exit_code == 2:
        lines = [x for x in result.stderr.splitlines() if x.strip()]
        errors = [x for x in lines if x.startswith("Error: ")]
        assert len(errors) == 1 and lines[-1] == errors[0], result.stderr
        # warnings may precede the error line; usage text never does
        assert not any(x.startswith(("Usage: ", "Try ")) for x in lines), result.stderr


@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(args=invocations(), data=byte_inputs, on_stdin=st.booleans())
def test_commands_never_crash(tmp_path_factory, args, data, on_stdin):
    if on_stdin:
        check(run([*args, "-"], input=data))
    else:
        path = tmp_path_factory.mktemp("fuzz") / "input.jsonl"
        path.write_bytes(data)
        check(run([*args, path]))


# --------------------------------------------------------------------------- documents


logprob = st.one_of(
    st.floats(max_value=0.0, allow_nan=False, allow_infinity=True),
    st.sampled_from([-1e308, -0.0, 0.5, float("nan"), "x", None]),
)
samples = st.fixed_dictionaries(
    {
        "id": st.one_of(st.integers(0, 3), st.text(max_size=3)),
        "epoch": st.sampled_from([1, 2, "1", None]),
        "scores": st.dictionaries(
            st.sampled_from(["m", "n"]),
            st.fixed_dictionaries({"value": st.sampled_from(["C", "I", "N", "P", 1, 0, 0.5])}),
            max_size=2,
        ),
        "output": st.fixed_dictionaries(
            {
                "choices": st.lists(
                    st.fixed_dictionaries(
                        {
                            "logprobs": st.fixed_dictionaries(
                                {
                                    "content": st.lists(
                                        st.fixed_dictionaries({"logprob": logprob}), max_size=3
                                    )
                                }
                            )
                        }
                    ),
                    max_size=1,
                )
            }
        ),
    }
)
document_rows = st.lists(
    st.one_of(valid, valid, lines, samples.map(encode)), min_size=0, max_size=8
)
MEMBER_NAMES = ("samples/{i}_epoch_1.json", "samples/\u00b2_epoch_{i}.json", "_journal/{i}.json")


@st.composite
def documents(draw):
    """(file name, bytes): the rows as JSON Lines, a JSON array, a .eval zip or an inspect-ai
    .json log, maybe gzip-compressed, maybe cut short."""
    import gzip
    import io
    import zipfile

    rows = draw(document_rows)
    kind = draw(st.sampled_from(["jsonl", "array", "eval", "log"]))
    if kind == "jsonl":
        name, data = "rows.jsonl", ("\n".join(rows) + "\n").encode("utf-8", "surrogatepass")
    elif kind == "array":
        name, data = (
            "rows.json",
            ("[\n" + ",\n".join(rows) + "\n]").encode("utf-8", "surrogatepass"),
        )
    elif kind == "log":
        head = '{"version": 2, "status": "success", "eval": {"task": "t"}, "samples": [\n'
        name, data = "log.json", (head + ",\n".join(rows) + "\n]}").encode("utf-8", "surrogatepass")
    else:
        buffer = io.BytesIO()
        method = draw(st.sampled_from([zipfile.ZIP_DEFLATED, zipfile.ZIP_STORED]))
        with zipfile.ZipFile(buffer, "w", method) as z:
            z.writestr("header.json", draw(st.sampled_from(['{"status": "success"}', "{"])))
            for i, row in enumerate(rows):
                member = draw(st.sampled_from(MEMBER_NAMES)).format(i=i + 1)
                z.writestr(member, row.encode("utf-8", "surrogatepass"))
        name, data = "log.eval", buffer.getvalue()
    if draw(st.booleans()):
        name, data = name + ".gz", gzip.compress(data)
    if data and draw(st.integers(0, 4)) == 0:  # cut short, or one byte changed
        at = draw(st.integers(0, len(data) - 1))
        data = data[:at] if draw(st.booleans()) else data[:at] + b"\xff" + data[at + 1 :]
    return name, data


CALIBRATOR = (
    '{"schema_version": 1, "kind": "calibcli-calibrator", "method": "platt", '
    '"params": {"a": 0.8, "b": -0.2}, "fitted_on": {}, "by": null, "groups": {}}'
)
DOCUMENT_COMMANDS = {
    "calibrate": ["calibrate"],
    "threshold": ["threshold", "--target-accuracy", "0.5"],
    "fit": ["fit", "--method", "platt"],
    "apply": ["apply", "{calibrator}"],
    "compare": ["compare", "--unpaired", "--bootstrap", "200"],
    "perplexity": ["perplexity"],
}


@settings(suppress_health_check=[HealthCheck.too_slow])  # examples: the profile's
@given(
    command=st.sampled_from(sorted(DOCUMENT_COMMANDS)),
    doc=documents(),
    other=documents(),
    extra=st.sampled_from([[], ["--by", "g"], ["--json"], ["--scorer", "m"]]),
)
def test_commands_never_crash_on_documents(tmp_path_factory, command, doc, other, extra):
    folder = tmp_path_factory.mktemp("doc")
    calibrator = folder / "cal.json"
    calibrator.write_text(CALIBRATOR, encoding="utf-8")
    paths = []
    for k, (name, data) in enumerate([doc, other]):
        path = folder / f"{k}-{name}"
        path.write_bytes(data)
        paths.append(path)
    args = [a.format(calibrator=calibrator) for a in DOCUMENT_COMMANDS[command]]
    inputs = paths if command == "compare" else paths[:1]
    if command in ("apply", "perplexity") and extra == ["--scorer", "m"]:
        extra = []
    check(run([*args, *inputs, *extra]))


# --------------------------------------------------------------------------- tables

cell_texts = st.one_of(
    st.sampled_from(["", "0.5", "1", "0", "true", "False", "nan", "inf", "1.5", "-1", "007"]),
    st.sampled_from(["1e999", "9" * 5000, '"', '""', '"a,b"', " 0.25", "a\nb", "\r", "\x00"]),
    st.text(max_size=6),
    numbers.map(repr),
)
headers = st.lists(st.sampled_from(FIELDS), min_size=0, max_size=5)


@st.composite
def tables(draw):
    """A CSV file's text: a header of calibcli's field names (a name twice, sometimes), then
    records of cells (quoted or not, of any count), joined by commas, tabs or semicolons."""
    delimiter = draw(st.sampled_from([",", "\t", ";"]))
    header = draw(headers)
    records = draw(st.lists(st.lists(cell_texts, max_size=6), max_size=8))

    def cell(text: str) -> str:
        return '"' + text.replace('"', '""') + '"' if draw(st.booleans()) else text

    lines = [delimiter.join(header)] + [delimiter.join(map(cell, r)) for r in records]
    return draw(st.sampled_from(["\n", "\r\n"])).join(lines) + draw(st.sampled_from(["", "\n"]))


table_inputs = st.one_of(
    st.binary(max_size=64),
    tables().map(lambda t: t.encode("utf-8", "surrogatepass")),
    tables().map(lambda t: t.encode("utf-16")),
)


@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(args=invocations(), data=table_inputs, name=st.sampled_from(["in.csv", "in.tsv"]))
def test_commands_never_crash_on_tables(tmp_path_factory, args, data, name):
    path = tmp_path_factory.mktemp("fuzz") / name
    path.write_bytes(data)
    check(run([*args, path]))


@settings(max_examples=50, suppress_health_check=[HealthCheck.too_slow])
@given(data=table_inputs)
def test_apply_never_crashes_on_tables(tmp_path_factory, data):
    folder = tmp_path_factory.mktemp("fuzz")
    calibrator = folder / "cal.json"
    made = run(
        ["fit", "--method", "platt", "-o", calibrator, "-q", "-"],
        input='{"confidence": 0.2, "correct": false}\n{"confidence": 0.8, "correct": true}\n' * 20,
    )
    assert made.exit_code == 0, made.stderr
    path = folder / "in.csv"
    path.write_bytes(data)
    check(run(["apply", calibrator, path, "-o", folder / "out.csv"]))


# --------------------------------------------------------------------------- compressed


FORMATS = ["", ".gz", ".zst", ".xz", ".bz2"]  # "": not compressed
MAGICS = [b"\x1f\x8b", b"\x28\xb5\x2f\xfd", b"\xfd7zXZ\x00", b"BZh91AY&SY", b"\x50\x2a\x4d\x18"]


@st.composite
def compressed(draw):
    """Rows or hostile bytes compressed in any format, possibly concatenated, cut anywhere,
    followed by other bytes, or a magic number before bytes that are no stream."""
    if draw(st.integers(0, 4)) == 0:
        return draw(st.sampled_from(MAGICS)) + draw(st.binary(max_size=48))
    streams = draw(
        st.lists(st.tuples(st.sampled_from(FORMATS), byte_inputs), min_size=1, max_size=3)
    )
    data = b"".join(pack(kind, payload) if kind else payload for kind, payload in streams)
    cut = draw(st.integers(0, len(data)))
    return data[: cut if draw(st.booleans()) else len(data)] + draw(st.binary(max_size=8))


@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(
    args=invocations(),
    data=compressed(),
    name=st.sampled_from(["in.jsonl", "in.jsonl.zst", "in.csv.xz", "in.json.bz2"]),
    on_stdin=st.booleans(),
)
def test_commands_never_crash_on_compressed_input(tmp_path_factory, args, data, name, on_stdin):
    if on_stdin:
        check(run([*args, "-"], input=data))
    else:
        path = tmp_path_factory.mktemp("fuzz") / name
        path.write_bytes(data)
        check(run([*args, path]))


def _table_records(path, with_text):
    """``(line, row)`` of each record, then the error as ``(message, line)``, if any."""
    from calibcli.io.delimited import Table
    from calibcli.io.documents import DocumentError

    out = []
    try:
        for line, row, _ in Table(str(path), "csv").records(with_text=with_text):
            out.append((line, row))
    except DocumentError as e:
        out.append((str(e), e.locator))
    except (OSError, EOFError, ValueError) as e:  # a compressed table that does not decompress
        out.append((type(e).__name__, str(e)))
    return out


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(data=table_inputs, block=st.sampled_from([1, 2, 7, 64, 1 << 20]))
def test_a_table_reads_the_same_in_blocks_as_line_by_line(tmp_path_factory, data, block):
    """The reading commands take a table's lines a block at a time, apply line by line: the
    same records at the same lines, and the same first error, wherever the blocks end."""
    import math
    from unittest import mock

    from calibcli.io import delimited

    path = tmp_path_factory.mktemp("fuzz") / "in.csv"
    path.write_bytes(data)
    with mock.patch.object(delimited, "_BLOCK", block):
        blocks = _table_records(path, with_text=False)
    lines = _table_records(path, with_text=True)

    def same(a, b):  # NaN cells equal themselves
        return a == b or (isinstance(a, float) and math.isnan(a) and math.isnan(b))

    assert len(blocks) == len(lines)
    for (at_a, row_a), (at_b, row_b) in zip(blocks, lines, strict=True):
        assert at_a == at_b
        if isinstance(row_a, dict):
            assert row_a.keys() == row_b.keys()
            assert all(same(row_a[k], row_b[k]) for k in row_a)
        else:
            assert row_a == row_b
