"""The shape of the package, checked: imports run one way between the stages, other packages
enter a stage through its ``__init__``, no module grows past 600 lines, and ``import calibcli``
and ``calibcli --help`` load none of the reading, reporting or numerical machinery."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "calibcli"

# Each stage and what it may import (beside itself). errors and system sit below every stage.
BELOW = {"errors", "system"}
ALLOWED = {
    "cli": {"api", "reports", "render", "io", "summaries"} | BELOW,
    "api": {"io", "summaries", "reports", "render"} | BELOW,
    # the engine integrations: thin layers over the summaries, which nothing else imports
    "spark": {"engines", "io", "summaries", "reports", "render"} | BELOW,
    "dask": {"engines", "io", "summaries", "reports", "render"} | BELOW,
    "engines": {"io", "summaries", "reports"} | BELOW,
    "reports": {"summaries", "metrics"} | BELOW,
    "io": {"formats", "summaries"} | BELOW,
    "summaries": {"metrics"} | BELOW,
    "render": {"reports"},
    "metrics": {"errors"},
    "formats": {"errors"},
    "errors": set(),
    "system": set(),
}
TOP = {"__init__", "__main__"}  # the top-level package: __main__ runs the cli
MAX_LINES = 600


def stage(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return parts[0]


def modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def type_checking_lines(tree: ast.AST) -> set[int]:
    """Lines inside ``if TYPE_CHECKING:`` blocks (annotations only, never run)."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING":
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def imports(path: Path) -> list[tuple[int, str]]:
    """(line, dotted module) of every calibcli import the module runs."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = type_checking_lines(tree)
    found = []
    for node in ast.walk(tree):
        if node.lineno in skip if hasattr(node, "lineno") else False:
            continue
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("calibcli")]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "calibcli":
                found += [(node.lineno, f"calibcli.{a.name}") for a in node.names]
            elif node.module.startswith("calibcli."):
                found.append((node.lineno, node.module))
    return found


def test_every_module_is_in_a_known_stage():
    for path in modules():
        name = stage(path)
        assert name in ALLOWED or name in TOP, f"{path}: unknown stage {name!r}"


def test_imports_run_one_way_and_enter_a_stage_through_its_init():
    problems = []
    for path in modules():
        here = stage(path)
        if here in TOP:
            continue
        for line, module in imports(path):
            parts = module.split(".")
            there = parts[1]
            where = f"{path.relative_to(PACKAGE.parent)}:{line}"
            if there == here or there in TOP or there == "__version__":
                continue
            if there not in ALLOWED[here]:
                problems.append(f"{where}: {here} imports {module} ({there} is not below {here})")
            elif len(parts) > 2 and there not in BELOW:
                problems.append(f"{where}: {module}: enter {there} through calibcli.{there}")
    assert not problems, "\n".join(problems)


def test_no_module_over_600_lines():
    long = [
        f"{p.relative_to(PACKAGE.parent)}: {n} lines"
        for p in modules()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    ]
    assert not long, "\n".join(long)


def loaded_after(code: str) -> set[str]:
    script = code + "\nimport sys\nprint('\\n'.join(sorted(sys.modules)))\n"
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout
    return set(out.split())


HEAVY = ("numpy", "msgspec", "rich.table", "matplotlib", "pyspark", "dask", "pyarrow")
MACHINERY = ("calibcli.io.", "calibcli.reports.", "calibcli.summaries.", "calibcli.metrics")
# pure-data registries that --help reads to build the option choices
REGISTRIES = {
    "calibcli.reports.figures",
    "calibcli.formats.registry",
    "calibcli.metrics",
    "calibcli.metrics.methods",
    "calibcli.reports.options",  # the options' value checks, shared with the Python API
}


@pytest.mark.parametrize(
    "code",
    [
        "import calibcli",
        "from calibcli.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass",
    ],
    ids=["import", "help"],
)
def test_import_and_help_load_no_machinery(code):
    loaded = loaded_after(code)
    heavy = sorted(m for m in loaded if m.split(".")[0] in HEAVY or m in HEAVY)
    assert not heavy
    machinery = sorted(m for m in loaded if m.startswith(MACHINERY) and m not in REGISTRIES)
    assert not machinery


@pytest.mark.parametrize(
    "code",
    [
        "import calibcli",
        "import calibcli.api",
        "import calibcli\nassert 'calibrate' in dir(calibcli)",
    ],
    ids=["calibcli", "calibcli.api", "dir"],
)
def test_the_python_api_loads_on_first_use(code):
    loaded = loaded_after(code)
    assert not sorted(m for m in loaded if m.split(".")[0] in (*HEAVY, "rich"))
    assert not sorted(m for m in loaded if m.startswith((*MACHINERY, "calibcli.render")))
    assert not sorted(m for m in loaded if m.startswith("calibcli.api."))
    if code == "import calibcli":
        assert "calibcli.api" not in loaded


def test_the_python_api_is_calibcli_api():
    import calibcli
    import calibcli.api

    for name in calibcli.API:
        assert getattr(calibcli, name) is getattr(calibcli.api, name)
