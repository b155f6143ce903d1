"""An engine's ``report()`` takes and refuses the option values ``calibcli.calibrate()`` takes and
refuses, with its messages (each computed here by calling ``calibcli.calibrate`` with the same
value): a mistyped ``gate_on``, an infinite limit, a limit on a figure no gate reads (AUROC,
better high), a floor below 1, fewer than 1 populated bin and a switch that is not True or
False are refused rather than gating on something else, and ``gate_on="upper"`` without ``ci``
reads 95% intervals, as the command does. The summaries are built by the tasks an engine
schedules (file_jobs, file_task, merge_all, finish), so without Dask or Spark."""

from __future__ import annotations

import math

import numpy as np
import pytest
from harness import run, write_jsonl

import calibcli
from calibcli.engines import file_jobs, file_task, finish, merge_all
from calibcli.errors import InputError

RNG = np.random.default_rng(7)
CONFIDENCES = [round(float(c), 4) for c in RNG.uniform(0.0, 1.0, 300)]
RIGHT = [bool(r) for r in RNG.uniform(0.0, 1.0, 300) < np.array(CONFIDENCES)]


def _summary(path, **options):
    jobs = file_jobs([str(path)], "auto", None, **options)
    return finish(merge_all([file_task(job) for job in jobs]))


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    """The rows summarized with 200 Poisson resamples keyed by their ids."""
    path = tmp_path_factory.mktemp("rows") / "rows.jsonl"
    rows = [
        {"id": i, "confidence": c, "correct": r}
        for i, (c, r) in enumerate(zip(CONFIDENCES, RIGHT, strict=True))
    ]
    write_jsonl(path, rows)
    return _summary(path, id_field="id", bootstrap_samples=200)


def api_refusal(**options) -> Exception:
    with pytest.raises((InputError, TypeError)) as caught:
        calibcli.calibrate(CONFIDENCES, RIGHT, **options)
    return caught.value


# (report()'s options, calibcli.calibrate()'s keywords for the same values)
SAME_VALUES = [
    *[
        (dict(ci=0.95, limits={"ece": 0.1}, gate_on=g), dict(ci=0.95, max_ece=0.1, gate_on=g))
        for g in ("Upper", "upper ", "uper", None, 1)
    ],
    *[
        ({"limits": {"ece": x}}, {"max_ece": x})
        for x in (math.inf, -math.inf, math.nan, -0.1, "0.1", True, 10**400)
    ],
    ({"limits": {"mce": math.inf}}, {"max_mce": math.inf}),
    *[
        ({"min_populated_bins": k}, {"min_populated_bins": k})
        for k in (0, -1, 2.5, True, np.int64(0))
    ],
    *[({"floors": {"n": k}}, {"min_rows": k}) for k in (-5, 0, 2.5, False, "1000")],
    ({"strategy": "Uniform"}, {"strategy": "Uniform"}),
    ({"strategy": None}, {"strategy": None}),
    *[({"ci": x}, {"ci": x}) for x in (1.5, 0, 1, "0.95", math.nan)],
    ({"gate_on": "upper"}, {"gate_on": "upper"}),  # no limit for it to read
    ({"gate_each": True, "limits": {"ece": 0.1}}, {"gate_each": True, "max_ece": 0.1}),  # no by
    ({"gate_each": True}, {"gate_each": True}),
]


@pytest.mark.parametrize(("given", "api"), SAME_VALUES, ids=repr)
def test_a_value_the_api_refuses_is_refused_with_its_message(engine, given, api):
    want = api_refusal(**api)
    assert isinstance(want, InputError)
    with pytest.raises(InputError) as caught:
        engine.report(**given)
    assert caught.value.path == "report"
    assert caught.value.detail == want.detail


@pytest.mark.parametrize("value", ["false", "no", 0, 1, None])
def test_a_switch_is_true_or_false(engine, value):
    want = api_refusal(gate_each=value, max_ece=0.1)
    assert isinstance(want, TypeError)
    with pytest.raises(TypeError) as caught:
        engine.report(limits={"ece": 0.1}, gate_each=value)
    assert str(caught.value) == str(want).replace("calibrate()", "report()")


@pytest.mark.parametrize("key", ["auroc", "accuracy", "ECE", "max_ece", "n"])
def test_a_limit_no_gate_reads_is_refused(engine, key):
    # the API has no such keyword either (max_auroc would be "auroc <= 0.99", passing a worse
    # model); the command has no such option
    assert isinstance(api_refusal(**{f"max_{key}": 0.99}), TypeError)
    with pytest.raises(InputError) as caught:
        engine.report(limits={key: 0.99})
    assert caught.value.detail == (
        f"limits: no gate reads {key!r}: the figures with one are "
        "'ece', 'brier', 'mce', 'rmsce', 'rmsce_debiased', 'smece'"
    )


@pytest.mark.parametrize("key", ["rows", "total_tokens", "sequences"])
def test_a_floor_no_count_has_is_refused(engine, key):
    with pytest.raises(InputError) as caught:
        engine.report(floors={key: 10})
    assert caught.value.detail == f"floors: no floor gates {key!r}: the counts with one are 'n'"


@pytest.mark.parametrize(("name", "value"), [("limits", [0.1]), ("floors", 1000)])
def test_limits_and_floors_are_mappings(engine, name, value):
    with pytest.raises(InputError, match=f"^report: {name}: .* is not a mapping"):
        engine.report(**{name: value})


def test_a_mistyped_gate_on_no_longer_gates_the_estimate(engine):
    body = engine.report(ci=0.95)
    estimate, (_, upper) = body["ece"], body["ci"]["ece"]
    assert estimate < upper
    limit = (estimate + upper) / 2  # the estimate passes it, the upper end does not
    assert engine.report(limits={"ece": limit})["gate"]["passed"]
    assert not engine.report(ci=0.95, limits={"ece": limit}, gate_on="upper")["gate"]["passed"]
    for typo in ("Upper", "upper ", "uper"):
        with pytest.raises(InputError, match=r"gate_on: .* is not one of 'estimate', 'upper'"):
            engine.report(ci=0.95, limits={"ece": limit}, gate_on=typo)


def test_gate_on_upper_reads_95_percent_intervals_without_ci(engine):
    body = engine.report(limits={"ece": 0.5}, gate_on="upper")
    assert body == engine.report(ci=0.95, limits={"ece": 0.5}, gate_on="upper")
    assert body["ci_level"] == 0.95
    check = body["gate"]["checks"][0]
    assert body["gate"]["bound"] == "upper"
    assert check["value"] == check["upper"] == body["ci"]["ece"][1]


def test_limits_are_checked_in_the_command_s_order(engine):
    # as given: brier first; the command and the API check ece first (the registry's order)
    body = engine.report(limits={"smece": 1.0, "brier": 1.0, "ece": 1.0}, floors={"n": 1})
    api = calibcli.calibrate(CONFIDENCES, RIGHT, max_smece=1.0, max_brier=1.0, max_ece=1.0)
    metrics = [c["metric"] for c in body["gate"]["checks"]]
    assert metrics[:-1] == [c["metric"] for c in api.body["gate"]["checks"]]
    assert metrics == ["ece", "brier", "smece", "n"]


def test_no_populated_bins_below_one(tmp_path):
    # two populated bins: the default (3) closes the ECE gate, and 0 may not open it
    rows = [{"confidence": 0.95, "correct": True}] * 40 + [{"confidence": 0.05, "correct": False}]
    summary = _summary(write_jsonl(tmp_path / "two.jsonl", rows))
    assert not summary.report(limits={"ece": 0.5})["gate"]["passed"]
    with pytest.raises(InputError, match="min_populated_bins: 0 is not in the range x>=1"):
        summary.report(limits={"ece": 0.5}, min_populated_bins=0)


def test_a_summary_without_replicate_sums_says_what_gate_on_upper_needs(tmp_path):
    rows = [{"confidence": c, "correct": r} for c, r in zip(CONFIDENCES, RIGHT, strict=True)]
    summary = _summary(write_jsonl(tmp_path / "rows.jsonl", rows))
    with pytest.raises(ValueError, match=r'^gate_on="upper" \(its ci intervals\) needs'):
        summary.report(limits={"ece": 0.5}, gate_on="upper")


@pytest.fixture
def perplexity(tmp_path):
    rows = [{"nll": 2.0 + i / 10, "tokens": 3 + i} for i in range(5)]
    return _summary(write_jsonl(tmp_path / "p.jsonl", rows)), tmp_path / "p.jsonl"


@pytest.mark.parametrize(("floor", "option"), [("total_tokens", "tokens"), ("sequences", "rows")])
def test_perplexity_floors_are_the_command_s(perplexity, floor, option):
    summary, path = perplexity
    command = run(["perplexity", path, f"--min-{option}", "0", "-q"])
    assert command.exit_code == 2
    assert "0 is not in the range x>=1" in command.stderr
    with pytest.raises(InputError) as caught:
        summary.report(floors={floor: 0})
    assert caught.value.detail == f"min_{option}: 0 is not in the range x>=1"
    with pytest.raises(InputError, match="no floor gates 'n'"):
        summary.report(floors={"n": 10})


def test_perplexity_has_no_intervals_to_gate_on(perplexity):
    summary, _ = perplexity
    assert summary.report(limits={"perplexity": 100.0})["gate"]["passed"]
    for options in ({"ci": 0.95}, {"gate_on": "upper", "limits": {"perplexity": 100.0}}):
        with pytest.raises(InputError, match="a perplexity report has none"):
            summary.report(**options)
    with pytest.raises(InputError, match="limits: no gate reads 'ece'"):
        summary.report(limits={"ece": 0.1})
