"""Shared test configuration.

Hypothesis runs deterministically (``derandomize=True``, no example database, no deadline) with a
modest number of examples so the suite stays fast; ``HYPOTHESIS_PROFILE=thorough`` runs more.

numpy is loaded as the command line loads it, without its AVX-512 exp and log loops and with
OpenBLAS's AVX2 kernels (:func:`calibcli.system.same_digits_on_every_cpu`), so the figures
computed in this process have the digits a command prints.

Every GITHUB_* variable is cleared for the whole session (subprocesses inherit the cleared
environment), so the suite expects the same output when it runs inside GitHub Actions, which
sets GITHUB_ACTIONS, GITHUB_STEP_SUMMARY and GITHUB_OUTPUT in every step.

Exact references live in ``tests/reference.py`` and the CLI runner and input writers in
``tests/harness.py``; tests import them by module name (pytest puts ``tests/`` on sys.path).
"""

from __future__ import annotations

import os

from calibcli.system import same_digits_on_every_cpu

same_digits_on_every_cpu()  # as the command line does, before anything loads numpy

import pytest  # noqa: E402
from hypothesis import settings  # noqa: E402

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


@pytest.fixture(scope="session")
def built(tmp_path_factory):
    """calibcli's wheel and sdist built from the working tree, and a wheelhouse to install
    them and their dependencies offline (tests/release_build.py)."""
    from release_build import build_release

    return build_release(tmp_path_factory.mktemp("release"))


@pytest.fixture(scope="session")
def action_temp(built, tmp_path_factory):
    """A runner temp folder where action.yml's own install step has installed calibcli, as
    the first use of the action in a job does (tests/workflow.py)."""
    from workflow import install_action

    return install_action(tmp_path_factory.mktemp("runner_temp"), built.pip_settings())


@pytest.fixture
def fresh_inspect_reads():
    """What was read of inspect-ai logs (their heads, runs and eval_ids) is forgotten before and
    after the test: its logs, written at paths another test used, are read again."""
    from calibcli.io.inspect_log import forget_runs

    forget_runs()
    yield
    forget_runs()


def require_engine(module: str, extra: str) -> object:
    """Import an engine's Python package for its tests (``extra``: the calibcli extra that
    installs it). Where it is absent the tests skip, saying why; with
    CALIBCLI_REQUIRE_ENGINES=1 (as .ci/run sets it) its absence fails them instead, so CI
    never passes by skipping them."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        why = f"{module} is not installed (pip install 'calibcli[{extra}]'): {exc}"
        if os.environ.get("CALIBCLI_REQUIRE_ENGINES") == "1":
            pytest.fail(f"CALIBCLI_REQUIRE_ENGINES=1 and {why}", pytrace=False)
        pytest.skip(why, allow_module_level=True)


def require_program(name: str, why: str) -> str:
    """The path of a program an engine needs (Java for Spark), skipping or failing as
    :func:`require_engine` does when it is missing."""
    import shutil

    found = shutil.which(name)
    if found is None:
        message = f"{name} is not on PATH: {why}"
        if os.environ.get("CALIBCLI_REQUIRE_ENGINES") == "1":
            pytest.fail(f"CALIBCLI_REQUIRE_ENGINES=1 and {message}", pytrace=False)
        pytest.skip(message, allow_module_level=True)
    return found
