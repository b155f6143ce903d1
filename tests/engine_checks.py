"""What the Spark and Dask tests share: the shards data set, the CLI's reports of it, the rule
two reports must agree by, and the README's engine examples.

The reference is always the command line run on the same rows (``calibcli calibrate FILES
--json`` in a subprocess), never the integration's own output.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from make_shards import write_shards  # noqa: E402

ROWS, SHARDS = 200_000, 8

EXACT = frozenset(
    (
        "n",
        "count",
        "counts",
        "populated_bins",
        "bins_used",
        "bins",
        "auroc",
        "smece_bandwidth",
        "sum_correct",
        "correct",
        "aurc",
        "threshold",
        "accepted",
        "errors",
    )
)
"""Figures that must be bit-identical (with everything under them: a threshold section's
accepted rows and errors, the risk-coverage curve's thresholds); every other float may differ
by 1e-11 relative (a float sum added up in another order: a bootstrap interval's end, read off
replicate sums added in another order, has differed by 1.08e-12)."""


def shards(folder: Path) -> list[str]:
    return [str(p) for p in write_shards(folder, ROWS, SHARDS, seed=0)]


def cli_json(*args: str) -> dict:
    """``calibcli ARGS --json`` as the installed command line prints it."""
    return CliRun(*args).result()


class CliRun:
    """``calibcli ARGS --json`` started in the background (the engine starts meanwhile, on the
    other core); :meth:`result` waits for its report."""

    def __init__(self, *args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "calibcli", *args, "--json", "--quiet"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def result(self) -> dict:
        out, err = self.process.communicate()
        assert self.process.returncode == 0, err
        return json.loads(out)


POISSON = ("--ci", "0.95", "--bootstrap-scheme", "poisson", "--bootstrap", "200")
"""The Poisson bootstrap the engines' ``key="id", bootstrap_samples=200`` stands for."""


def cli_references(paths: list[str]) -> dict:
    """The CLI's reports of the shards, started in the background: ``{key: CliRun}`` for
    pooled rows (key None), by task and with the Poisson bootstrap keyed by id."""
    return {
        None: CliRun("calibrate", *paths),
        "task": CliRun("calibrate", *paths, "--by", "task"),
        "poisson": CliRun("calibrate", *paths, *POISSON, "--id-field", "id"),
        "threshold": CliRun("threshold", *paths, *THRESHOLD),
    }


THRESHOLD = ("--target-accuracy", "0.9")


def assert_threshold(part: Path, want: dict) -> None:
    """``calibcli threshold`` on an engine's written part gives the thresholds, AURC and curve
    it gives on the files themselves."""
    got = cli_json("threshold", str(part), *THRESHOLD)
    assert_same(got, want, files=False)


def assert_poisson(got: dict, want: dict) -> None:
    """The engine's Poisson intervals are the CLI's (those of AUROC and smooth ECE, which need
    every row's key, null)."""
    for figure, interval in want["ci"].items():
        if figure in ("auroc", "smece", "smece_bandwidth"):
            assert got["ci"][figure] == [None, None]
        else:
            assert_same({figure: got["ci"][figure]}, {figure: interval})
    assert [got[k] for k in ("ci_level", "bootstrap_samples", "seed")] == [0.95, 200, 0]


def readme_folder(folder: Path, paths: list[str]) -> Path:
    """What the README's examples read, in ``folder``: the shards under ``shards/`` and the
    first one as ``predictions.parquet``."""
    import shutil

    import pyarrow.json as pj
    import pyarrow.parquet as pq

    (folder / "shards").mkdir()
    for path in paths:
        shutil.copy(path, folder / "shards" / Path(path).name)
    pq.write_table(pj.read_json(paths[0]), folder / "predictions.parquet")
    return folder


def run_readme_example(example: str, folder: Path, capsys) -> None:
    """Run one README example in ``folder`` as printed: it prints something, and each summary
    file it writes is measured by ``calibcli calibrate`` as its ``result.report()`` says."""
    import os

    before = os.getcwd()
    os.chdir(folder)
    try:
        for old in folder.glob("*.cbs"):
            old.unlink()
        names: dict = {}
        exec(compile(example, "README.md", "exec"), names)
        written = sorted(folder.glob("*.cbs"))
        assert capsys.readouterr().out.strip() or written
        for path in written:
            assert cli_json("calibrate", str(path)) == names["result"].report()
    finally:
        os.chdir(before)


def differences(got, want, path: str = "", exact: bool = False) -> list[str]:
    """Where two reports disagree beyond the rule of :data:`EXACT`."""
    if isinstance(got, dict) and isinstance(want, dict):
        out = []
        for k in sorted(set(got) | set(want)):
            if k not in got or k not in want:
                out.append(f"{path}.{k}: only in {'want' if k not in got else 'got'}")
            else:
                out += differences(got[k], want[k], f"{path}.{k}", exact or k in EXACT)
        return out
    if isinstance(got, list) and isinstance(want, list):
        if len(got) != len(want):
            return [f"{path}: {len(got)} items != {len(want)}"]
        out = []
        for i, (a, b) in enumerate(zip(got, want, strict=True)):
            out += differences(a, b, f"{path}[{i}]", exact)
        return out
    if isinstance(got, float) and isinstance(want, float) and not exact:
        if got == want or math.isclose(got, want, rel_tol=1e-11, abs_tol=0.0):
            return []
        return [f"{path}: {got!r} != {want!r}"]
    if got != want or type(got) is not type(want):
        return [f"{path}: {got!r} != {want!r}"]
    return []


def assert_same(got: dict, want: dict, *, files: bool = True) -> None:
    """``got`` agrees with the CLI's ``want``: counts, populated bins, AUROC and the smooth ECE's
    bandwidth bit for bit, other floats to 1e-12 relative. A DataFrame has no files, so
    without ``files`` the CLI's per-file sections are not asked for."""
    if not files:
        got = {k: v for k, v in got.items() if k != "per_file"}
        want = {k: v for k, v in want.items() if k != "per_file"}
    found = differences(got, want)
    assert not found, "\n".join(found[:20])


def readme_examples(engine: str) -> list[str]:
    """The README's Python examples for ``engine`` ("spark" or "dask"): the ```py blocks of the
    section "Running on Spark or Dask" that import calibcli.<engine>. They are scripts, fenced
    ```py because a ```python block is a doctest session that tests/test_readme_python.py
    runs without an engine."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Running on Spark or Dask", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```py\n(.*?)```", section, re.S)
    return [b for b in blocks if f"calibcli.{engine}" in b]


# --------------------------------------------------------------------------- lm-eval re-runs

RUNS = Path(__file__).resolve().parent / "fixtures" / "lm_eval"
TASK = "toy_mc_trivia"
NEWER_RUN, OLDER_RUN = "2026-11-29T18-50-52.260809", "2026-11-28T09-00-00.000001"


def rerun_pair(tmp_path: Path) -> tuple[Path, Path]:
    """(older, newer) runs of one lm-eval task in one folder, the older one scoring every
    answer wrong, so pooling them or reading the older one shows in the figures."""
    source = RUNS / f"samples_{TASK}_{NEWER_RUN}.jsonl"
    folder = tmp_path / "out"
    folder.mkdir()
    newer = folder / f"samples_{TASK}_{NEWER_RUN}.jsonl"
    older = folder / f"samples_{TASK}_{OLDER_RUN}.jsonl"
    shutil.copy(source, newer)
    older.write_text(source.read_text().replace('"acc": 1.0', '"acc": 0.0'))
    return older, newer


@contextlib.contextmanager
def local_spark(
    app: str, *, memory: str, workdir: Path | None = None, configs: dict | None = None
) -> Iterator[Any]:
    """A Spark session in ``local[2]`` on loopback, whose Python workers run this interpreter
    (which has calibcli installed), started in ``workdir`` when given. On exit it is stopped,
    its JVM ended (it outlives ``stop()`` until this process exits: the tests after it get its
    memory back), and the environment restored."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    names = ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "SPARK_LOCAL_IP")
    before = {k: os.environ.get(k) for k in names}
    os.environ["PYSPARK_PYTHON"] = os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"  # loopback only, no lookup of the host's name
    here = os.getcwd()
    if workdir is not None:
        os.chdir(workdir)
    try:
        builder = (
            SparkSession.builder.master("local[2]")
            .appName(app)
            .config("spark.driver.memory", memory)
            # a short-lived JVM on two cores: the quick JIT tier and one GC thread start faster
            .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.bindAddress", "127.0.0.1")
        )
        for key, value in (configs or {}).items():
            builder = builder.config(key, value)
        session = builder.getOrCreate()
    finally:
        os.chdir(here)
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        gateway = SparkContext._gateway
        session.stop()
        if gateway is not None:
            process = getattr(gateway, "proc", None)
            gateway.shutdown()
            SparkContext._gateway = SparkContext._jvm = None
            if process is not None:
                process.stdin.close()
                process.wait(timeout=60)
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
