"""A run appended to its file again: native rows that carry the file's first row's id after
it are refused (exit 2, both lines named, nothing written), whatever process or range reads
them; --all-runs pools them and --id-field checks every id instead."""

from __future__ import annotations

import csv
import gzip
import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from calibcli.errors import InputError
from calibcli.io.first_id import FirstId
from tests.harness import pack, run

TAIL = (
    "a run appended to its file again would count twice (pass --all-runs to pool the rows on "
    "purpose, or --id-field to name the field that identifies a row)"
)


def rows_of(n, seed=3, first=0, ids=None):
    rng = random.Random(seed)
    out = []
    for i in range(n):
        c = rng.random()
        ident = (ids or (lambda k: f"q{k}"))(first + i)
        out.append({"id": ident, "confidence": c, "correct": rng.random() < c})
    return out


def text_of(rows, **dumps):
    return "".join(json.dumps(r, **dumps) + "\n" for r in rows)


def message(name, line, shown, first_line=1):
    return (
        f"Error: {name}:{line}: the row of id {shown} repeats the id of the file's first row "
        f"(line {first_line}): {TAIL}"
    )


def refused(result, name, line, shown, first_line=1):
    assert result.exit_code == 2, result.output
    assert result.stderr.strip().splitlines()[-1] == message(name, line, shown, first_line)


def test_an_appended_run_is_refused_naming_both_lines(tmp_path):
    run_rows = rows_of(50)
    path = tmp_path / "preds.jsonl"
    path.write_text(text_of(run_rows) + text_of(run_rows))
    out = tmp_path / "report.json"
    for command in (["calibrate"], ["reliability"], ["threshold", "--target-accuracy", "0.6"]):
        result = run([*command, path, "-o", out])
        refused(result, str(path), 51, "'q0'")
        assert not out.exists()


def test_a_run_that_does_not_repeat_the_first_id_is_read(tmp_path):
    path = tmp_path / "preds.jsonl"
    # 100 rows whose ids are all distinct, the first one's text inside later ones ("q1" in
    # "q10"): a string id's needle ends at its closing quote
    path.write_text(text_of(rows_of(100, first=1)))
    result = run(["calibrate", path, "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["n"] == 100


def test_a_number_id_is_not_matched_inside_a_longer_number(tmp_path):
    path = tmp_path / "preds.jsonl"
    rows = rows_of(300, first=1, ids=lambda k: k)  # ids 1..300: "id": 1 opens "id": 10, 100...
    path.write_text(text_of(rows))
    assert run(["calibrate", path, "-q"]).exit_code == 0
    path.write_text(text_of(rows) + text_of(rows[:1]))
    refused(run(["calibrate", path, "-q"]), str(path), 301, "1")


def test_the_same_value_of_another_type_is_another_id(tmp_path):
    path = tmp_path / "preds.jsonl"
    rows = rows_of(3, ids=lambda k: k)  # ids 0, 1, 2
    later = [{**rows[1], "id": "0"}, {**rows[2], "id": 0.5}, {**rows[2], "id": False}]
    path.write_text(text_of(rows + later))
    assert run(["calibrate", path, "-q"]).exit_code == 0
    path.write_text(text_of(rows + rows[:1]))
    refused(run(["calibrate", path, "-q"]), str(path), 4, "0")
    # 0.0 is not the first row's id written alike, so the watch lets it pass; --id-field
    # takes equal numbers as one id and refuses it
    path.write_text(text_of([*rows, {**rows[1], "id": 0.0}]))
    assert run(["calibrate", path, "-q"]).exit_code == 0
    assert run(["calibrate", path, "-q", "--id-field", "id"]).exit_code == 2


def test_the_id_is_matched_whatever_the_spacing_of_later_rows_once_found(tmp_path):
    """The needle is the first row's own spelling; the check parses the lines holding it, so
    an id nested in another field is no repeat."""
    path = tmp_path / "preds.jsonl"
    first = '{"id":"a","confidence":0.5,"correct":true}\n'
    nested = '{"id":"b","meta":{"id":"a"},"confidence":0.5,"correct":true}\n'
    again = '{"confidence":0.25,"id":"a","correct":false}\n'
    path.write_text(first + nested)
    assert run(["calibrate", path, "-q"]).exit_code == 0
    path.write_text(first + nested + again)
    refused(run(["calibrate", path, "-q"]), str(path), 3, "'a'")


def test_escaped_and_plain_spellings_of_a_string_id(tmp_path):
    path = tmp_path / "preds.jsonl"
    rows = rows_of(3, ids=lambda k: ["é", "x", "y"][k])
    path.write_text(text_of(rows + rows[:1]))  # json.dumps escapes: "\u00e9"
    refused(run(["calibrate", path, "-q"]), str(path), 4, "'é'")
    path.write_text(text_of(rows + rows[:1], ensure_ascii=False))
    refused(run(["calibrate", path, "-q"]), str(path), 4, "'é'")


def test_rows_without_a_scalar_first_id_are_not_watched(tmp_path):
    path = tmp_path / "preds.jsonl"
    for first_id in (None, True, {"k": 1}, [1]):
        rows = [{"id": first_id, "confidence": 0.5, "correct": True}] * 2
        path.write_text(text_of(rows))
        assert run(["calibrate", path, "-q"]).exit_code == 0, first_id
    rows = [{"confidence": 0.5, "correct": True}, {"id": 1, "confidence": 0.5, "correct": True}]
    path.write_text(text_of(rows + rows))
    assert run(["calibrate", path, "-q"]).exit_code == 0


def test_all_runs_pools_and_id_field_checks_every_id(tmp_path):
    run_rows = rows_of(40)
    path = tmp_path / "preds.jsonl"
    path.write_text(text_of(run_rows) + text_of(run_rows))
    result = run(["calibrate", path, "--all-runs", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["n"] == 80
    # --id-field takes over: a repeat of any id, in the wording of that check
    path.write_text(text_of(run_rows + run_rows[5:6]))
    assert run(["calibrate", path, "-q"]).exit_code == 0  # q5 repeats: not the first row's
    result = run(["calibrate", path, "-q", "--id-field", "id"])
    assert result.exit_code == 2
    assert "the row of id 'q5' was read before" in result.stderr


def test_read_by_group_ids_are_numbered_within_each_group(tmp_path):
    """A file of several subjects, each numbered from 0: with --by the ids are taken for each
    group's own, and only a row of the first row's group repeats it."""
    rows = []
    for subject in ("law", "math"):
        rows += [{**r, "subject": subject} for r in rows_of(20, ids=lambda k: k)]
    path = tmp_path / "subjects.jsonl"
    path.write_text(text_of(rows))
    refused(run(["calibrate", path, "-q"]), str(path), 21, "0")
    for args in (["--by", "subject"], ["--all-runs"]):
        result = run(["calibrate", path, "--json", *args])
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["n"] == 40
    path.write_text(text_of(rows + rows))  # the run appended again
    refused(run(["calibrate", path, "-q", "--by", "subject"]), str(path), 41, "0")
    table = tmp_path / "subjects.csv"
    with table.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", "subject", "confidence", "correct"])
        for r in rows + rows:
            w.writerow([r["id"], r["subject"], r["confidence"], int(r["correct"])])
    refused(run(["calibrate", table, "-q", "--by", "subject"]), str(table), 42, "0", 2)


def test_files_are_watched_each_on_its_own(tmp_path):
    """Rows of two files may share ids (two tasks, each numbered from 0): the watch is of each
    file's own first row."""
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text(text_of(rows_of(20, seed=1)))
    b.write_text(text_of(rows_of(20, seed=2)))
    result = run(["calibrate", a, b, "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["n"] == 40


def test_perplexity_rows_are_watched(tmp_path):
    rows = [{"id": f"d{i}", "nll": 10.0 + i, "tokens": 5} for i in range(10)]
    path = tmp_path / "ppl.jsonl"
    path.write_text(text_of(rows + rows))
    refused(run(["perplexity", path, "-q"]), str(path), 11, "'d0'")


@pytest.mark.parametrize(
    "row",
    [
        {"logprobs": [-0.5, -1.0, -0.25]},
        {"nll_sum": 3.0, "n_tokens": 4},
        {"sum_logprob": -3.0, "num_tokens": 4},
    ],
)
def test_other_rows_without_ids_of_their_own_are_watched(tmp_path, row):
    rows = [{"id": f"d{i}", **row} for i in range(6)]
    path = tmp_path / "ppl.jsonl"
    path.write_text(text_of(rows + rows))
    refused(run(["perplexity", path, "-q"]), str(path), 7, "'d0'")
    assert run(["perplexity", path, "-q", "--all-runs"]).exit_code == 0


def test_formats_with_ids_of_their_own_keep_their_own_check(tmp_path):
    """lm-eval rows are identified by their task and doc_id: two files of one task are
    refused by that check, and a row's own "id" field is no id of theirs."""
    row = {
        "doc_id": 0,
        "id": "x",
        "target": 0,
        "arguments": [["q", " A"], ["q", " B"]],
        "resps": [[["-0.5", "False"]], [["-1.5", "False"]]],
        "filtered_resps": [["-0.5", "False"], ["-1.5", "False"]],
        "acc": 1.0,
    }
    path = tmp_path / "samples_toy_2024-01-01T00-00-00.jsonl"
    path.write_text(text_of([row, {**row, "doc_id": 1}]))
    result = run(["calibrate", path, "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["n"] == 2


def test_stdin_and_compressed_streams(tmp_path):
    text = text_of(rows_of(30)) * 2
    result = run(["calibrate", "-", "-q"], input=text)
    refused(result, "<stdin>", 31, "'q0'")
    for suffix in (".gz", ".zst", ".xz", ".bz2"):
        path = tmp_path / f"preds.jsonl{suffix}"
        path.write_bytes(pack(suffix, text.encode()))
        refused(run(["calibrate", path, "-q"]), str(path), 31, "'q0'")


def test_whole_documents_compare_each_row(tmp_path):
    run_rows = rows_of(25)
    array = tmp_path / "preds.json"
    array.write_text(json.dumps(run_rows + run_rows, indent=1))
    result = run(["calibrate", array, "-q"])
    assert result.exit_code == 2
    assert "the row of id 'q0' repeats the id of the file's first row" in result.stderr
    table = tmp_path / "preds.csv"
    with table.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", "confidence", "correct"])
        for r in run_rows + run_rows:
            w.writerow([r["id"], r["confidence"], int(r["correct"])])
    refused(run(["calibrate", table, "-q"]), str(table), 27, "'q0'", first_line=2)
    result = run(["calibrate", table, "-q", "--all-runs"])
    assert result.exit_code == 0


def test_a_parquet_table_names_rows(tmp_path):
    pa = pytest.importorskip("pyarrow", reason="pyarrow is not installed (calibcli[parquet])")
    pq = pytest.importorskip("pyarrow.parquet", reason="pyarrow is not installed")
    run_rows = rows_of(25)
    path = tmp_path / "preds.parquet"
    pq.write_table(pa.Table.from_pylist(run_rows + run_rows), path)
    result = run(["calibrate", path, "-q"])
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines()[-1] == (
        f"Error: {path}: row 26: the row of id 'q0' repeats the id of the file's first row "
        f"(row 1): {TAIL}"
    )


def test_an_earlier_bad_row_is_reported_first(tmp_path):
    run_rows = rows_of(10)
    path = tmp_path / "preds.jsonl"
    bad = '{"id": "z", "confidence": 1.5, "correct": true}\n'
    path.write_text(text_of(run_rows) + bad + text_of(run_rows))
    result = run(["calibrate", path, "-q"])
    assert result.exit_code == 2
    assert result.stderr.strip().endswith(f"{path}:11: confidence 1.5 is outside [0, 1]")
    path.write_text(text_of(run_rows) + text_of(run_rows) + bad)
    refused(run(["calibrate", path, "-q"]), str(path), 11, "'q0'")


LARGE = 60_000  # rows of one run: two runs make a file read by two processes


@pytest.fixture(scope="module")
def appended(tmp_path_factory):
    """Two runs of LARGE rows each, appended: about 5 MB, plain and gzip."""
    folder = tmp_path_factory.mktemp("appended")
    text = text_of(rows_of(LARGE, ids=lambda k: k)).encode()
    plain = folder / "runs.jsonl"
    plain.write_bytes(text + text)
    packed = folder / "runs.jsonl.gz"
    packed.write_bytes(gzip.compress(text + text, 1))
    once = folder / "once.jsonl"
    once.write_bytes(text)
    return plain, packed, once


@pytest.mark.parametrize("workers", ["1", "2"])
def test_shares_of_worker_processes_are_watched(appended, workers):
    plain, packed, once = appended
    for path in (plain, packed):
        result = run(["calibrate", path, "-q", "--workers", workers])
        refused(result, str(path), LARGE + 1, "0")
    result = run(["calibrate", once, "--json", "--workers", workers])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["n"] == LARGE


def test_every_part_watches_the_files_first_row(appended, tmp_path):
    """The second half of the file is a run of its own, repeating no id of its own: its part
    is refused all the same, as the whole file is."""
    plain, _, once = appended
    result = run(["summarize", plain, "--part", "2/2", "-o", tmp_path / "2.cbs"])
    refused(result, str(plain), LARGE + 1, "0")
    assert not (tmp_path / "2.cbs").exists()
    assert run(["summarize", plain, "--part", "1/2", "-o", tmp_path / "1.cbs"]).exit_code == 0
    for k in ("1/3", "2/3", "3/3"):
        assert run(["summarize", once, "--part", k, "-o", tmp_path / "p.cbs"]).exit_code == 0


def test_an_engine_task_of_a_later_range_watches_the_files_first_row(tmp_path):
    """The Spark and Dask file tasks read a file's byte ranges one by one: a range that starts
    with a run of its own still sees that run repeat the file's first row."""
    from calibcli.engines import file_jobs, file_task

    text = text_of(rows_of(400, ids=lambda k: k))
    path = tmp_path / "runs.jsonl"
    path.write_text(text + text)
    jobs = file_jobs([str(path)], "calibration", 4000)
    assert len(jobs) > 4
    errors = [r.error for r in map(file_task, jobs) if r.error is not None]
    # one range holds line 401, where the second run starts; no other range holds a repeat
    assert [e[1:] for e in errors] == [
        (
            str(path),
            401,
            f"the row of id 0 repeats the id of the file's first row (line 1): {TAIL}",
        )
    ]
    path.write_text(text)
    assert all(r.error is None for r in map(file_task, file_jobs([str(path)], "calibration", 4000)))


def test_first_id_of_reads_the_spelling_of_the_line():
    assert FirstId.of({"id": "a"}, 1, b'{"id" :  "a"}').needle == b'"id" :  "a"'
    assert FirstId.of({"id": "é"}, 1, '{"id": "é"}'.encode()).needle == '"id": "é"'.encode()
    assert FirstId.of({"id": "é"}, 1, b'{"id": "\\u00e9"}').needle == b'"id": "\\u00e9"'
    # written in a spelling no writer uses: not watched rather than watched wrongly
    assert FirstId.of({"id": 100}, 1, b'{"id": 1e2}') is None
    assert FirstId.of({"id": "a"}, 1, b'{"id": "\\u0061"}') is None


def test_compare_unpaired_watches_each_side(tmp_path):
    """Paired, rows are matched by id and a repeated id is refused already; unpaired, each
    side is read without ids and watched."""
    run_rows = rows_of(40)
    base, new = tmp_path / "base.jsonl", tmp_path / "new.jsonl"
    base.write_text(text_of(rows_of(40, seed=9)))
    new.write_text(text_of(run_rows) + text_of(run_rows))
    result = run(["compare", base, new, "--unpaired", "-q"])
    refused(result, str(new), 41, "'q0'")
    result = run(["compare", base, new, "--unpaired", "--all-runs", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["n_new"] == 80


def test_the_api_reads_as_the_commands_read(tmp_path):
    import calibcli

    run_rows = rows_of(30)
    path = tmp_path / "preds.jsonl"
    path.write_text(text_of(run_rows) + text_of(run_rows))
    with pytest.raises(InputError) as found:
        calibcli.read_predictions(path)
    assert str(found.value) == message(str(path), 31, "'q0'").removeprefix("Error: ")
    assert len(calibcli.read_predictions(path, all_runs=True)) == 60
    with pytest.raises(TypeError, match="all_runs must be True or False"):
        calibcli.read_predictions(path, all_runs="yes")
    base = tmp_path / "base.jsonl"
    base.write_text(text_of(rows_of(30, seed=4)))
    with pytest.raises(InputError):
        calibcli.compare(base, path, unpaired=True)
    assert calibcli.compare(base, path, unpaired=True, all_runs=True)["n_new"] == 60


# --------------------------------------------------------------------------- every way of reading

SPECIALS = st.sampled_from(
    [
        "first",  # the first row's id again: a repeat
        "string",  # the string "7" for the number 7: another id
        "float",  # 7.0: another id, as --id-field tells them
        "nested",  # {"meta": {"id": 7}}: not the row's id
        "quoted",  # a string holding '"id": 7': not the row's id
        "longer",  # a number whose text opens with the first id's: 71 for 7
        "blank",  # an empty line
    ]
)


def _line(kind, i, rng, first):
    c, y = rng.random(), "true" if rng.random() < 0.5 else "false"
    ident = {
        "first": f"{first}",
        "string": f'"{first}"',
        "float": f"{first}.0",
        # a number whose text opens with the first id's: 71 for 7, 0.5 for 0
        "longer": f"{first}{i}" if first else f"0.{i}",
    }.get(kind, str(100_000 + i))
    extra = {
        "nested": f', "meta": {{"id": {first}}}',
        "quoted": f', "note": "\\"id\\": {first}"',
    }.get(kind, "")
    return f'{{"id": {ident}, "confidence": {c!r}, "correct": {y}{extra}}}'


def _repeat_lines(lines):
    """The lines of the rows after the first that carry its id, found by parsing every line:
    the reference the byte search is held to."""
    rows = [(k, json.loads(text)) for k, text in enumerate(lines, 1) if text]
    (_, first), rest = rows[0], rows[1:]
    return [
        k for k, row in rest if type(row["id"]) is type(first["id"]) and row["id"] == first["id"]
    ]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    specials=st.lists(st.tuples(st.integers(1, 3_999), SPECIALS), max_size=12),
    seed=st.integers(0, 2**16),
    first=st.sampled_from([0, 1, 7]),
    repeat_at=st.one_of(st.none(), st.integers(1, 3_999)),
)
def test_every_reading_finds_the_first_repeat_the_rows_hold(
    tmp_path_factory, specials, seed, first, repeat_at
):
    """4,000 rows (about 180 KB: blocks of 64 KiB, read by one process, two, and in two parts)
    with the first row's id, other ids written alike and blank lines put anywhere: every
    reading refuses the first row that repeats the first row's id, or none."""
    from calibcli.io import read_calibration

    rng = random.Random(seed)
    kinds = dict(specials)
    if repeat_at is not None:  # a repeat in either process's share, or part
        kinds[repeat_at] = "first"
    lines = [f'{{"id": {first}, "confidence": 0.5, "correct": true}}']
    for i in range(1, 4_000):
        kind = kinds.get(i)
        lines.append("" if kind == "blank" else _line(kind, i, rng, first))
    path = tmp_path_factory.mktemp("rows") / "rows.jsonl"
    path.write_text("\n".join(lines) + "\n")
    repeats = _repeat_lines(lines)
    expected = repeats[0] if repeats else None
    for workers in (1, 2):
        if expected is None:
            summary = read_calibration([str(path)], workers=workers, block_size=64 << 10)
            assert summary.rows == sum(1 for text in lines if text)
            continue
        with pytest.raises(InputError) as found:
            read_calibration([str(path)], workers=workers, block_size=64 << 10)
        assert (found.value.path, found.value.line) == (str(path), expected)
    errors = []
    for k in (1, 2):
        try:
            read_calibration([str(path)], workers=1, block_size=64 << 10, part=(k, 2))
        except InputError as e:
            errors.append(e.line)
    # each part refuses the first repeat among its own lines
    assert errors == [] if expected is None else errors[0] == expected
    assert set(errors) <= set(repeats)
