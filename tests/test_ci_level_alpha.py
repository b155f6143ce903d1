"""A --ci level below 0.5 is an alpha typed for the level (0.05 for 0.95), and is refused
wherever a level is taken: its interval is narrow (a 5% interval's ends lie near the bootstrap
median), so a gate on its upper end would pass what the 95% interval fails. The command line's
--ci (calibrate, compare), the Python API's ``ci=`` and an engine summary's ``report(ci=)``
share the check; 0.5 and above are taken as before."""

from __future__ import annotations

import numpy as np
import pytest
from harness import make_rows, run, write_jsonl

import calibcli
from calibcli.engines import file_jobs, file_task, finish, merge_all
from calibcli.errors import InputError

RNG = np.random.default_rng(11)
CONFIDENCES = [round(float(c), 4) for c in RNG.uniform(0.0, 1.0, 200)]
RIGHT = [bool(r) for r in RNG.uniform(0.0, 1.0, 200) < np.array(CONFIDENCES)]
ALPHA = (
    "0.05 would give a 5% interval: give the interval's level, e.g. 0.95 for a 95% interval, "
    "not its alpha (a level below 0.5 is refused)"
)


@pytest.fixture
def rows(tmp_path):
    return write_jsonl(tmp_path / "rows.jsonl", make_rows(200, seed=3))


@pytest.mark.parametrize(
    "gate", [[], ["--gate-on", "upper", "--max-brier", "0.5"]], ids=["no gate", "upper gate"]
)
def test_calibrate_refuses_an_alpha_for_the_level(rows, gate):
    result = run(["calibrate", rows, "--ci", "0.05", *gate])
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr == (
        f"Error: Invalid value for '--ci': {ALPHA} (see 'calibcli calibrate -h')\n"
    )


@pytest.mark.parametrize(
    ("level", "meant"), [("0.1", "0.9 for a 90%"), ("0.4999", "0.5001 for a 50.01%")]
)
def test_the_message_names_the_level_meant(rows, level, meant):
    result = run(["calibrate", rows, "--ci", level])
    assert result.exit_code == 2
    assert f"e.g. {meant} interval, not its alpha" in result.stderr


def test_compare_refuses_an_alpha_for_the_level(tmp_path):
    base = write_jsonl(tmp_path / "base.jsonl", make_rows(200, seed=3))
    new = write_jsonl(tmp_path / "new.jsonl", make_rows(200, seed=4))
    result = run(["compare", base, new, "--ci", "0.05"])
    assert result.exit_code == 2 and result.stdout == ""
    assert (
        result.stderr == f"Error: Invalid value for '--ci': {ALPHA} (see 'calibcli compare -h')\n"
    )


@pytest.mark.parametrize("level", ["0.5", "0.8", "0.95"])
def test_levels_from_one_half_are_taken(rows, level):
    result = run(["calibrate", rows, "--ci", level, "--bootstrap", "200", "--json", "-q"])
    assert result.exit_code == 0, result.stderr


def test_the_api_refuses_an_alpha_for_the_level(tmp_path):
    with pytest.raises(InputError) as caught:
        calibcli.calibrate(CONFIDENCES, RIGHT, ci=0.05, bootstrap=200)
    assert str(caught.value) == f"calibrate: ci: {ALPHA}"
    base = write_jsonl(tmp_path / "base.jsonl", make_rows(200, seed=3))
    new = write_jsonl(tmp_path / "new.jsonl", make_rows(200, seed=4))
    with pytest.raises(InputError) as caught:
        calibcli.compare(str(base), str(new), ci=0.05, bootstrap=200)
    assert str(caught.value) == f"compare: ci: {ALPHA}"
    assert calibcli.calibrate(CONFIDENCES, RIGHT, ci=0.5, bootstrap=200, seed=1) is not None


def test_an_engine_report_refuses_an_alpha_for_the_level(tmp_path):
    path = write_jsonl(tmp_path / "rows.jsonl", make_rows(200, seed=3))
    jobs = file_jobs([str(path)], "auto", None, id_field="id", bootstrap_samples=200)
    summary = finish(merge_all([file_task(job) for job in jobs]))
    with pytest.raises(InputError) as caught:
        summary.report(ci=0.05)
    assert str(caught.value).endswith(f"ci: {ALPHA}")
    assert summary.report(ci=0.95)["ci_level"] == 0.95
