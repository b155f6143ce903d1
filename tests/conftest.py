"""Shared test configuration.

Hypothesis runs deterministically (``derandomize=True``, no example database, no deadline) with a
modest number of examples so the suite stays fast; ``HYPOTHESIS_PROFILE=thorough`` runs more.

Every GITHUB_* variable is cleared for the whole session (subprocesses inherit the cleared
environment), so the suite expects the same output when it runs inside GitHub Actions, which
sets GITHUB_ACTIONS, GITHUB_STEP_SUMMARY and GITHUB_OUTPUT in every step.

Exact references live in ``tests/reference.py`` and the CLI runner and input writers in
``tests/harness.py``; tests import them by module name (pytest puts ``tests/`` on sys.path).
"""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

settings.register_profile(
    "calibcli", derandomize=True, max_examples=60, deadline=None, database=None
)
settings.register_profile("thorough", parent=settings.get_profile("calibcli"), max_examples=1000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "calibcli"))


@pytest.fixture(scope="session", autouse=True)
def _outside_github_actions():
    # session scope: set before any module-scoped fixture runs a command (test_readme's runs)
    with pytest.MonkeyPatch.context() as patch:
        for name in [n for n in os.environ if n.startswith("GITHUB_")]:
            patch.delenv(name)
        yield
