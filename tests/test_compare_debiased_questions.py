"""``compare``'s gate on the debiased RMSCE counts questions on runs that repeat them, as
``calibrate``'s does: three identical epochs of the committed inspect-ai log put 3, 6, 9, ...
rows in each bin, and no bin of one question has variance to subtract, so the gate fails
closed as it does on the same log of one epoch. The reference is the log's 20 samples
counted by hand to bins (0, 1, 2, 3, 3, 4, 5, 1, 1, 0): on one epoch 3 of 20 rows lie in
bins of one row; on three, 9 of 60 rows lie in bins of fewer than 2 questions (fewer than 6
rows)."""

from __future__ import annotations

import json

import pytest
from harness import run
from test_epochs import epochs_log

GATE = ("--max-increase", "rmsce_debiased=0.5", "--gate-on", "estimate", "--scorer", "match")


def compare(base, new):
    result = run(["compare", base, new, *GATE, "--json"])
    assert result.exit_code in (0, 1), result.stderr
    return result.exit_code, json.loads(result.stdout)


def closed(report):
    return {c["metric"]: c.get("reason") for c in report["gate"]["checks"] if not c["passed"]}


@pytest.mark.parametrize("epochs", [1, 3])
def test_identical_epochs_fail_closed_as_one_epoch_does(tmp_path, epochs):
    base = epochs_log(tmp_path, "base.json", epochs=epochs)
    new = epochs_log(tmp_path, "new.json", flip=(1, 2, 3), epochs=epochs)
    code, report = compare(base, new)
    assert code == 1
    reasons = closed(report)
    if epochs == 1:
        want = "3 of 20 rows on BASE lie in bins of one row"
    else:
        want = (
            "9 of 60 rows on BASE lie in bins of fewer than 2 questions (fewer than 6 rows: "
            "a run scored each question up to 3 times)"
        )
    assert want in reasons["rmsce_debiased_increase"], reasons
