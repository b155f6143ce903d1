"""Which outputs are written through rather than replaced: what is not a regular file (a device,
a FIFO) and the name of an open descriptor (/dev/stdout, /dev/fd/N, /proc/self/fd/N) whatever it
is open on. A regular file is replaced wherever it is, /dev/shm (the usual RAM scratch folder)
too: appended to, a second run left two JSON documents and a picture showing the first run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from harness import run, write_jsonl

from calibcli.io import atomic

SHM = Path("/dev/shm")
needs_shm = pytest.mark.skipif(
    not (SHM.is_dir() and os.access(SHM, os.W_OK)), reason="no writable /dev/shm"
)


@pytest.fixture
def shm():
    folder = Path(tempfile.mkdtemp(dir=SHM, prefix="calibcli-test-"))
    yield folder
    shutil.rmtree(folder)


def rows_file(tmp_path, name, right):
    # 10 rows at 0.8, `right` of them right: ECE |0.8 - right/10| by hand
    rows = [{"id": i, "confidence": 0.8, "correct": i < right} for i in range(10)]
    return write_jsonl(tmp_path / name, rows)


@needs_shm
def test_a_report_under_dev_shm_is_replaced(tmp_path, shm):
    report = shm / "r.json"
    first, second = rows_file(tmp_path, "a.jsonl", 8), rows_file(tmp_path, "b.jsonl", 3)
    assert run(["calibrate", first, "-q", "-o", report]).exit_code == 0
    assert run(["calibrate", second, "-q", "-o", report]).exit_code == 0
    body = json.loads(report.read_text())  # one document: json.loads refuses two
    assert body["ece"] == pytest.approx(0.5, abs=1e-12)
    assert sorted(p.name for p in shm.iterdir()) == ["r.json"]  # no temporary file left


@needs_shm
def test_a_regular_file_under_dev_is_not_special_a_device_is(shm):
    regular = shm / "x"
    regular.write_text("")
    assert not atomic.is_special(regular)
    assert atomic.target_of(regular) == regular
    assert atomic.is_special("/dev/null")


def test_descriptor_names_are_streams():
    for name in ("/dev/stdout", "/dev/stderr", "/dev/fd/1", "/proc/self/fd/1", "/proc/1/fd/3"):
        assert atomic.names_descriptor(name), name
    for name in ("/dev/shm/r.json", "/dev/null", "/proc/self/fdinfo/1", "/tmp/fd/1"):
        assert not atomic.names_descriptor(name), name


def test_a_link_to_the_descriptors_folder_names_a_descriptor(tmp_path):
    (tmp_path / "fds").symlink_to("/dev/fd")
    (tmp_path / "out").symlink_to("/dev/stdout")
    assert atomic.names_descriptor(tmp_path / "fds" / "1")
    assert atomic.names_descriptor(tmp_path / "out")
    assert atomic.target_of(tmp_path / "out") == tmp_path / "out"


def calibcli(args, **kwargs):
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("GITHUB_ACTIONS", None)
    return subprocess.run(
        [sys.executable, "-m", "calibcli", *map(str, args)], env=env, timeout=120, **kwargs
    )


def test_dev_stdout_redirected_to_a_regular_file_is_written_through(tmp_path):
    """As documented: the report goes where stdout goes, after what the run printed there."""
    rows = rows_file(tmp_path, "a.jsonl", 8)
    log = tmp_path / "log"
    with open(log, "w") as out:
        done = calibcli(["calibrate", rows, "-q", "--json", "-o", "/dev/stdout"], stdout=out)
    assert done.returncode == 0
    decoder, text = json.JSONDecoder(), log.read_text()
    first, end = decoder.raw_decode(text)
    second, _ = decoder.raw_decode(text[end:].lstrip())
    assert first == second and first["n"] == 10


def test_dev_fd_n_on_a_regular_file_is_written_through(tmp_path):
    """A descriptor the caller opened (`3>>log`) keeps what it holds; the report is added."""
    rows = rows_file(tmp_path, "a.jsonl", 8)
    log = tmp_path / "log"
    log.write_text("earlier\n")
    fd = os.open(log, os.O_WRONLY | os.O_APPEND)
    try:
        done = calibcli(
            ["calibrate", rows, "-q", "-o", f"/dev/fd/{fd}"],
            pass_fds=(fd,),
            stdout=subprocess.DEVNULL,
        )
    finally:
        os.close(fd)
    assert done.returncode == 0
    earlier, report = log.read_text().split("\n", 1)
    assert earlier == "earlier" and json.loads(report)["n"] == 10
