"""--bootstrap-scheme without --ci sets up no interval, so it is refused (exit 2), as --bootstrap
and --seed alone are: a scheme asked for and silently not used reads as if it were."""

from __future__ import annotations

import pytest
from harness import run, write_jsonl


@pytest.fixture
def rows(tmp_path):
    items = [{"confidence": (i + 0.5) / 40, "correct": i % 3 != 0} for i in range(40)]
    return write_jsonl(tmp_path / "r.jsonl", items)


@pytest.mark.parametrize("scheme", ["poisson", "multinomial"])
def test_a_scheme_without_ci_is_refused(rows, scheme):
    for extra in ([], ["--max-ece", "0.5"]):
        result = run(["calibrate", rows, "--bootstrap-scheme", scheme, "-q", *extra])
        assert result.exit_code == 2
        assert result.stderr.strip() == (
            "Error: --bootstrap-scheme sets up --ci intervals; give --ci LEVEL too"
        )


def test_with_ci_or_an_upper_gate_it_is_used(rows):
    assert (
        run(["calibrate", rows, "--bootstrap-scheme", "poisson", "--ci", "0.9", "-q"]).exit_code
        == 0
    )
    upper = ["--max-ece", "0.9", "--gate-on", "upper", "--bootstrap-scheme", "poisson", "-q"]
    assert run(["calibrate", rows, *upper]).exit_code == 0
