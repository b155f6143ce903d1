"""calibcli.dask's summaries judged as the command line judges one reading of all the inputs
(Dask's synchronous scheduler): two models' files fail every gate, the same rows in two files
in another order are refused (pooled with ``all_runs``), pieces of a ``--part`` file missing
fail every gate, an empty file is said, and a DataFrame's repeated or null ids are refused
whatever its partitions. Expected counts and messages come from how the inputs are written.
Skipped without dask, except under CALIBCLI_REQUIRE_ENGINES=1."""

from __future__ import annotations

import json

import pytest
from conftest import require_engine
from harness import run, write_jsonl
from test_pooled_model_folders import model_folders

require_engine("dask.dataframe", "dask")

import dask  # noqa: E402
import dask.dataframe as dd  # noqa: E402

from calibcli.dask import summarize, summarize_files  # noqa: E402
from calibcli.errors import InputError  # noqa: E402

GATE = {"ece": 1.0}  # passes on any rows: only a closed gate fails it


def computed(lazy):
    (result,) = dask.compute(lazy, scheduler="synchronous")
    return result


def rows(n, seed=0):
    import numpy as np

    rng = np.random.default_rng(seed)
    conf = rng.uniform(size=n)
    return [
        {"id": f"i{i}", "confidence": float(c), "correct": bool(y)}
        for i, (c, y) in enumerate(zip(conf, rng.uniform(size=n) < conf, strict=True))
    ]


def test_two_models_folders_fail_every_gate(tmp_path):
    a, b = model_folders(tmp_path, "org__mA", "org__mB")
    report = computed(summarize_files([str(a), str(b)])).report(limits=GATE)
    assert not report["gate"]["passed"]
    assert report["warnings"][0].startswith("rows of 2 models are pooled: 'org/mA' (")
    # one model's rows pass, and so do the models kept apart when each group is gated; the
    # pooled figures alone, which mix the models' groups, fail closed
    assert computed(summarize_files([str(a)])).report(limits=GATE)["gate"]["passed"]
    apart = computed(summarize_files([str(a), str(b)], by="model"))
    assert apart.report(limits=GATE, gate_each=True)["gate"]["passed"]
    pooled = apart.report(limits=GATE)
    assert not pooled["gate"]["passed"]
    assert "pool several models' rows" in pooled["gate"]["checks"][0]["reason"]


def test_the_rows_of_a_file_in_another_order_are_refused(tmp_path):
    written = rows(100)
    first, again = tmp_path / "h.jsonl", tmp_path / "h_reversed.jsonl"
    write_jsonl(first, written)
    write_jsonl(again, written[::-1])
    with pytest.raises(InputError, match=r"h_reversed\.jsonl: holds the rows of .*h\.jsonl"):
        computed(summarize_files([str(first), str(again)]))
    pooled = computed(summarize_files([str(first), str(again)], all_runs=True))
    assert pooled.n == 200


def test_missing_pieces_of_a_part_file_fail_every_gate(tmp_path):
    whole = tmp_path / "d.jsonl"
    write_jsonl(whole, rows(3000))
    pieces = []
    for k in (1, 2, 3):
        pieces.append(tmp_path / f"p{k}.cbs")
        result = run(["summarize", whole, "--part", f"{k}/3", "-o", pieces[-1]])
        assert result.exit_code == 0, result.stderr
    report = computed(summarize_files([str(pieces[0]), str(pieces[2])])).report(limits=GATE)
    assert not report["gate"]["passed"]
    partial = [w for w in report["warnings"] if w.startswith("the parts of ")]
    # said once, of the pieces merged here: not each piece's own say of the others missing
    assert len(partial) == 1 and "cover 2 of its 3 pieces (--part 2/3 missing" in partial[0]
    every = computed(summarize_files([str(p) for p in pieces])).report(limits=GATE)
    assert every["n"] == 3000 and every["gate"]["passed"]
    assert not [w for w in every["warnings"] if w.startswith("the parts of ")]


def test_an_empty_file_beside_others_is_said(tmp_path):
    full, empty = tmp_path / "full.jsonl", tmp_path / "empty.jsonl"
    write_jsonl(full, rows(100))
    empty.write_text("")
    report = computed(summarize_files([str(full), str(empty)])).report(limits=GATE)
    assert report["n"] == 100
    assert f"{empty}: holds no rows: the figures are the other files'" in report["warnings"]


@pytest.mark.parametrize("partitions", [1, 3])
def test_a_repeated_id_is_refused_whatever_the_partitions(partitions):
    import pandas as pd

    written = rows(300)
    written[250]["id"] = "i10"  # row 251 (row 51 of the third of three partitions of 100)
    ddf = dd.from_pandas(pd.DataFrame(written), npartitions=partitions, sort=False)
    with pytest.raises(InputError) as found:
        computed(summarize(ddf, key="id"))
    text = str(found.value)
    if partitions == 1:
        assert (
            "column 'id': 1 bad value; the first is 'i10' (row 251 of partition 0): the id of "
            "the row at row 11 of partition 0 too" in text
        )
    else:
        assert (
            "column 'id': the row at row 51 of partition 2 has the id of the row at row 11 of "
            "partition 0" in text
        )
    assert text.count("dask-dataframe") == 1  # the DataFrame named once


def test_a_null_id_is_refused():
    import pandas as pd

    written = rows(300)
    written[30]["id"] = None
    ddf = dd.from_pandas(pd.DataFrame(written), npartitions=1, sort=False)
    with pytest.raises(InputError, match=r"column 'id': 1 bad value; the first is null \(row 31"):
        computed(summarize(ddf, key="id"))
    # without key= the ids are not read
    assert computed(summarize(ddf)).n == 300


def test_report_of_the_written_part_is_the_summary_s(tmp_path):
    a, b = model_folders(tmp_path, "org__mA", "org__mB")
    computed(summarize_files([str(a), str(b)])).write(tmp_path / "ab.cbs")
    result = run(["calibrate", tmp_path / "ab.cbs", "--json", "--max-ece", "1"])
    assert result.exit_code == 1, result.stderr
    assert json.loads(result.stdout)["warnings"][0].startswith("rows of 2 models are pooled")
