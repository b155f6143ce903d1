"""An engine's ``report()`` is, byte for byte, what ``calibcli calibrate`` prints for the
summary file the engine writes, and (with the table of distinct confidences) for one pass over
the rows, when the driver imports calibcli before numpy, as the README asks. A driver that
loaded numpy first, as a script does that imports pandas or starts a Spark session first, has
(on a CPU with AVX-512) numpy's own exp and log loops, which the command line leaves out: it is
warned once, as the Python functions warn, and its log loss and smooth ECE may differ in the
last digit. The drivers run in fresh interpreters, without the variables this test process set
before loading numpy; the references are the command line's runs. Skipped without dask (or
pyspark and Java), except under CALIBCLI_REQUIRE_ENGINES=1."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import require_engine, require_program
from engine_checks import cli_json

from calibcli.system import DIGITS

FIGURES = ("n", "ece", "mce", "rmsce", "brier", "nll", "smece", "smece_bandwidth", "auroc")

DASK_DRIVER = """
import json, sys, warnings
FIRST
import numpy
import dask
import dask.dataframe as dd
import pandas as pd
from calibcli.dask import summarize, summarize_files
from calibcli.system import numpy_has_avx512_loops

path, out = sys.argv[1], sys.argv[2]
frame = pd.DataFrame([json.loads(line) for line in open(path)])  # every float parsed exactly
lazy = (
    summarize_files([path], blocksize=20_000, by="task"),
    summarize(dd.from_pandas(frame, npartitions=4, sort=False), by="task"),
)
results = dask.compute(*lazy, scheduler="sync")
for i, result in enumerate(results):
    result.write(f"{out}/{i}.cbs")
with warnings.catch_warnings(record=True) as said:
    warnings.simplefilter("always")
    reports = [result.report() for result in results]
said = [str(w.message) for w in said if issubclass(w.category, RuntimeWarning)]
with open(f"{out}/reports.json", "w") as f:
    json.dump({"avx512": numpy_has_avx512_loops(), "reports": reports, "said": said}, f)
"""

SPARK_DRIVER = """
import json, sys, warnings
FIRST
from pyspark.sql import SparkSession

spark = (
    SparkSession.builder.master("local[1]")
    .config("spark.ui.enabled", "false")
    .config("spark.ui.showConsoleProgress", "false")
    .config("spark.driver.host", "127.0.0.1")
    .config("spark.driver.bindAddress", "127.0.0.1")
    .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
    .getOrCreate()
)  # the session loads numpy, before calibcli
try:
    from calibcli.spark import summarize, summarize_files
    from calibcli.system import numpy_has_avx512_loops

    path, out = sys.argv[1], sys.argv[2]
    rows = [json.loads(line) for line in open(path)]
    results = (
        summarize_files(spark, [path], blocksize=20_000, by="task"),
        summarize(spark.createDataFrame(rows).repartition(3), by="task"),
    )
    for i, result in enumerate(results):
        result.write(f"{out}/{i}.cbs")
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        reports = [result.report() for result in results]
    said = [str(w.message) for w in said if issubclass(w.category, RuntimeWarning)]
    with open(f"{out}/reports.json", "w") as f:
        json.dump({"avx512": numpy_has_avx512_loops(), "reports": reports, "said": said}, f)
finally:
    spark.stop()
"""


@pytest.fixture(scope="module")
def rows(tmp_path_factory) -> Path:
    """3,000 rows of four tasks, every confidence a full double (about one log in 300 and one
    exp in 12 differ in the last bit between numpy's AVX-512 loops and the C library's)."""
    rng = np.random.default_rng(11)
    conf = rng.beta(4.0, 1.5, 3000)
    correct = rng.random(3000) < conf * 0.9
    tasks = rng.choice(list("abcd"), 3000)
    path = tmp_path_factory.mktemp("rows") / "rows.jsonl"
    with path.open("w") as f:
        for i, (c, y, t) in enumerate(
            zip(conf.tolist(), correct.tolist(), tasks.tolist(), strict=True)
        ):
            f.write(json.dumps({"id": f"r{i}", "confidence": c, "correct": y, "task": t}) + "\n")
    return path


@pytest.fixture(scope="module")
def one_pass(rows) -> dict:
    return cli_json("calibrate", str(rows), "--by", "task")


FIRST_LINES = {
    "calibcli": "import calibcli  # first: numpy loads as the command line loads it",
    "numpy": "import numpy  # first, as pandas, dask.dataframe or a Spark session load it",
}


def drive(script: str, rows: Path, out: Path, first: str) -> dict:
    """Run a driver script in a fresh interpreter as a user's script runs, ``first`` (calibcli
    or numpy) imported first, with no variable of this process asking numpy to leave its
    AVX-512 loops out."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("NPY_DISABLE_CPU_FEATURES", "OPENBLAS_CORETYPE")
    }
    env["PYSPARK_PYTHON"] = env["PYSPARK_DRIVER_PYTHON"] = sys.executable
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    done = subprocess.run(
        [sys.executable, "-c", script.replace("FIRST", FIRST_LINES[first]), str(rows), str(out)],
        capture_output=True,
        text=True,
        env=env,
        cwd=out,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads((out / "reports.json").read_text())


def figures(report: dict) -> dict:
    """The report's figures, pooled and per group."""
    shown = {k: report[k] for k in FIGURES}
    groups = report["groups"]
    shown["groups"] = {g: {k: groups[g][k] for k in FIGURES} for g in sorted(groups)}
    return shown


def close(a: Any, b: Any) -> bool:
    """Equal figures, floats to 1e-14 relative (a last digit or two)."""
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(close(a[k], b[k]) for k in a)
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-14, abs_tol=0.0)
    return a == b


def assert_the_cli_figures(driven: dict, out: Path, one_pass: dict, first: str) -> None:
    loops = f"driver's numpy with AVX-512 loops: {driven['avx512']}"
    other_digits = first == "numpy" and driven["avx512"]
    # said once a process, whatever the reports made
    assert driven["said"] == ([DIGITS] if other_digits else []), loops
    for i, report in enumerate(driven["reports"]):
        written = cli_json("calibrate", str(out / f"{i}.cbs"))
        if not other_digits:  # the whole report, as `calibcli calibrate FILE.cbs --json` prints
            assert json.dumps(report) == json.dumps(written), loops
            assert json.dumps(figures(report)) == json.dumps(figures(one_pass)), loops
        else:
            assert close(report, written), loops
            assert close(figures(report), figures(one_pass)), loops


@pytest.mark.parametrize("first", ["calibcli", "numpy"])
def test_dask_report_is_the_cli_report(rows, one_pass, tmp_path, first):
    require_engine("dask.dataframe", "dask")
    driven = drive(DASK_DRIVER, rows, tmp_path, first)
    assert_the_cli_figures(driven, tmp_path, one_pass, first)


@pytest.mark.parametrize("first", ["calibcli", "numpy"])
def test_spark_report_is_the_cli_report(rows, one_pass, tmp_path, first):
    require_program("java", "Spark runs on a JVM (Java 17)")
    require_engine("pyspark", "spark")
    driven = drive(SPARK_DRIVER, rows, tmp_path, first)
    assert_the_cli_figures(driven, tmp_path, one_pass, first)
