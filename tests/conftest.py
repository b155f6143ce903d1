"""Shared test configuration.

Hypothesis runs deterministically (``derandomize=True``, no example database, no deadline) with a
modest number of examples so the suite stays fast; ``HYPOTHESIS_PROFILE=thorough`` runs more.

Exact references live in ``tests/reference.py`` and the CLI runner and input writers in
``tests/harness.py``; tests import them by module name (pytest puts ``tests/`` on sys.path).
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile(
    "calibcli", derandomize=True, max_examples=60, deadline=None, database=None
)
settings.register_profile("thorough", parent=settings.get_profile("calibcli"), max_examples=1000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "calibcli"))
