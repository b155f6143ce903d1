"""Release readiness: the metadata an index shows, the repository's address written once, the
README without relative links, the changelog, the workflows, and the built wheel and sdist
installed the ways users install calibcli (pip, pipx, uv, a git URL).
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from importlib.metadata import metadata, version
from pathlib import Path

import pytest
import yaml
from release_build import ROOT, Built, build_release, fresh_venv, run
from workflow import Context, Runner, runner_env

_spec = importlib.util.spec_from_file_location("set_repository", ROOT / "docs/set_repository.py")
set_repository = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(set_repository)

SAMPLE = ROOT / "sample_data"
README = (ROOT / "README.md").read_text(encoding="utf-8")
PYTHONS = ["3.10", "3.11", "3.12", "3.13"]


def workflow(name):
    return yaml.safe_load((ROOT / ".github" / "workflows" / name).read_text(encoding="utf-8"))


# --------------------------------------------------------------------------- metadata


def test_metadata_an_index_shows():
    meta = metadata("calibcli")
    assert meta["License-Expression"] == "MIT"
    assert meta.get_all("License-File") == ["LICENSE"]
    assert (ROOT / "LICENSE").read_text().startswith("MIT License\n\nCopyright (c) ")
    assert meta["Author"] == "calibcli developers"
    assert meta["Requires-Python"] == ">=3.10"
    assert meta["Description-Content-Type"] == "text/markdown"
    classifiers = meta.get_all("Classifier")
    listed = sorted(c.rsplit(" :: ", 1)[1] for c in classifiers if re.search(r":: 3\.\d+$", c))
    assert listed == PYTHONS


def test_version_is_set_in_pyproject_only():
    # calibcli --version reads the installed metadata (test_entrypoint); no module repeats it
    pinned = re.compile(r"""__version__\s*=|version\s*=\s*["']\d""")
    for path in (ROOT / "calibcli").rglob("*.py"):
        assert not pinned.search(path.read_text(encoding="utf-8")), path
    assert re.search(r'^version = "\d+\.\d+\.\d+"$', (ROOT / "pyproject.toml").read_text(), re.M)


def test_every_repository_address_agrees():
    repository = set_repository.repository()
    assert repository == "calibcli-dev/calibcli"  # the placeholder owner, until the real one
    urls = dict(u.split(", ", 1) for u in metadata("calibcli").get_all("Project-URL"))
    assert urls["Repository"] == f"https://github.com/{repository}"
    assert all(url.startswith(urls["Repository"] + "/") for name, url in urls.items()
               if name != "Repository")  # fmt: skip
    found = set_repository.mentions()
    stray = [
        f"{p.relative_to(ROOT)}:{line}: {name}" for p, line, name in found if name != repository
    ]
    assert stray == [], "run python docs/set_repository.py to move them"
    files = {p.relative_to(ROOT).as_posix() for p, _, _ in found}
    assert {"README.md", "CHANGELOG.md", "action.yml", "pyproject.toml"} <= files


def test_set_repository_moves_every_mention(tmp_path, monkeypatch):
    for name in ("README.md", "CHANGELOG.md", "action.yml", "pyproject.toml"):
        shutil.copy(ROOT / name, tmp_path / name)
    files = [tmp_path / n for n in ("README.md", "CHANGELOG.md", "action.yml", "pyproject.toml")]
    monkeypatch.setattr(set_repository, "PYPROJECT", tmp_path / "pyproject.toml")
    monkeypatch.setattr(set_repository, "tracked_files", lambda: files)
    owner = "someone-else"  # written apart, so this file does not mention another repository
    assert set_repository.move(f"https://github.com/{owner}/calibcli") == 0
    assert set_repository.repository() == f"{owner}/calibcli"
    assert {name for _, _, name in set_repository.mentions()} == {f"{owner}/calibcli"}
    assert f"uses: {owner}/calibcli@v1" in (tmp_path / "README.md").read_text()


def test_readme_renders_on_an_index():
    """An index shows the README without the repository around it: every link and image
    must be absolute, and images come from the repository's raw files."""
    repository = set_repository.repository()
    text = re.sub(r"```.*?```", "", README, flags=re.S)  # code blocks hold no links
    targets = re.findall(r"\]\(([^)\s]+)\)", text) + re.findall(r'<img[^>]+src="([^"]+)"', text)
    relative = [t for t in targets if not t.startswith(("https://", "#"))]
    assert relative == []
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    assert images
    raw = f"https://raw.githubusercontent.com/{repository}/main/"
    for image in images:
        assert image.startswith(raw) and (ROOT / image.removeprefix(raw)).is_file(), image


def test_changelog_keeps_an_unreleased_section():
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert "[Keep a Changelog](https://keepachangelog.com/" in text
    unreleased = text.split("## [Unreleased]", 1)[1].split("\n## ", 1)[0]
    assert "### Added" in unreleased and "GitHub Action" in unreleased
    assert re.search(r"^\[Unreleased\]: https://github\.com/", text, re.M)


# --------------------------------------------------------------------------- workflows


def test_ci_workflow_tests_every_supported_python():
    ci = workflow("ci.yml")
    job = ci["jobs"]["test"]
    assert job["strategy"]["matrix"]["python-version"] == PYTHONS
    runs = [s.get("run", "") for s in job["steps"]]
    assert "make test PYTHON=python" in runs and "make lint PYTHON=python" in runs
    uses = [s["uses"].split("@")[0] for s in job["steps"] if "uses" in s]
    assert uses == ["actions/checkout", "actions/setup-python"]


def test_release_workflow_publishes_a_tag_by_trusted_publishing():
    release = workflow("release.yml")
    assert release[True]["push"]["tags"] == ["v*"]  # YAML 1.1 reads the key `on` as true
    build, publish = release["jobs"]["build"], release["jobs"]["publish"]
    assert "make dist PYTHON=python" in [s.get("run") for s in build["steps"]]
    assert publish["needs"] == "build"
    assert publish["permissions"] == {"id-token": "write"}  # only the publishing job
    assert release["permissions"] == {"contents": "read"}
    assert publish["steps"][-1] == {"uses": "pypa/gh-action-pypi-publish@release/v1"}
    assert "password" not in str(release) and "secrets." not in str(release)


@pytest.mark.skipif(sys.version_info < (3, 11), reason="the step reads pyproject with tomllib")
@pytest.mark.parametrize("tag", ["v{version}", "v9.9.9"])
def test_release_refuses_a_tag_that_is_not_the_version(tmp_path, tag):
    (step,) = [
        s
        for s in workflow("release.yml")["jobs"]["build"]["steps"]
        if "version" in str(s.get("run"))
    ]
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    shims = tmp_path / "shims"
    shims.mkdir()
    (shims / "python").symlink_to(sys.executable)
    tag = tag.format(version=version("calibcli"))
    runner = Runner(tmp_path, runner_env(tmp_path / "temp", [shims]), None, "")
    (done,) = runner.run_steps([step], Context(), {"GITHUB_REF_NAME": tag})
    if tag == "v9.9.9":
        assert done.code == 1
        assert done.commands == [
            f"::error title=release::tag v9.9.9 does not match version {version('calibcli')} "
            "in pyproject.toml"
        ]
    else:
        assert done.code == 0, done.stderr


# --------------------------------------------------------------------------- built and installed


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Built:
    return build_release(tmp_path_factory.mktemp("release"))


def check_installed(bin_dir: Path) -> None:
    """The installed calibcli runs: its version, a failed gate, a perplexity."""
    calibcli = bin_dir / "calibcli"
    assert run([calibcli, "--version"]).stdout == f"calibcli {version('calibcli')}\n"
    gate = subprocess.run(
        [calibcli, "calibrate", SAMPLE / "overconfident.jsonl", "--max-ece", "0.05", "-q"],
        capture_output=True,
        text=True,
    )
    assert gate.returncode == 1
    assert gate.stderr == "gate failed: ece = 0.264856 exceeds --max-ece 0.05\n"
    ppl = run([calibcli, "perplexity", SAMPLE / "perplexity.jsonl", "--json"]).stdout
    assert '"perplexity": 12.0251' in ppl


@pytest.mark.packaging
def test_build_makes_a_wheel_and_an_sdist_that_twine_accepts(built, tmp_path):
    tools = built.wheelhouse.parent / "tools" / "bin"
    checked = run([tools / "python", "-m", "twine", "check", "--strict", built.wheel, built.sdist])
    assert checked.stdout.count("PASSED") == 2
    with zipfile.ZipFile(built.wheel) as wheel:
        names = wheel.namelist()
        meta = next(n for n in names if n.endswith(".dist-info/METADATA"))
        text = wheel.read(meta).decode()
    assert "calibcli/cli/github.py" in names and "calibcli/__main__.py" in names
    assert not [n for n in names if n.startswith(("tests/", "sample_data/"))]
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert (
        "License-Expression: MIT" in text and "Project-URL: Repository, https://github.com/" in text
    )
    assert "](docs/" not in text  # the description an index renders has no relative link
    with tarfile.open(built.sdist) as sdist:
        members = {m.name.split("/", 1)[1] for m in sdist.getmembers() if "/" in m.name}
    assert {"LICENSE", "README.md", "CHANGELOG.md", "pyproject.toml", "action.yml"} <= members
    assert not [m for m in members if m.startswith((".venv", "dist/"))]


@pytest.mark.packaging
def test_wheel_installs_into_a_fresh_venv_and_runs(built, tmp_path):
    bin_dir = fresh_venv(tmp_path / "venv")
    run([bin_dir / "python", "-m", "pip", "install", "--quiet", built.wheel],
        env=built.offline())  # fmt: skip
    check_installed(bin_dir)
    module = run([bin_dir / "python", "-m", "calibcli", "--version"]).stdout
    assert module == f"calibcli {version('calibcli')}\n"


@pytest.mark.packaging
def test_installs_from_a_git_url_of_a_clone(built, tmp_path):
    clone = tmp_path / "clone"
    run(["git", "clone", "--quiet", built.source, clone])
    bin_dir = fresh_venv(tmp_path / "venv")
    # a new venv's own pip, as a user has it: it reads the git URL, builds and installs
    run([bin_dir / "python", "-m", "pip", "install", "--quiet", f"git+file://{clone}"],
        env=built.offline())  # fmt: skip
    check_installed(bin_dir)


@pytest.mark.packaging
@pytest.mark.skipif(shutil.which("pipx") is None, reason="pipx is not installed here")
def test_pipx_install(built, tmp_path):
    env = {
        **built.offline(),
        "PIPX_HOME": str(tmp_path / "pipx"),
        "PIPX_BIN_DIR": str(tmp_path / "bin"),
    }
    run(["pipx", "install", built.wheel], env=env)
    check_installed(tmp_path / "bin")


@pytest.mark.packaging
@pytest.mark.skipif(shutil.which("uv") is None, reason="uv is not installed here")
def test_uv_tool_install(built, tmp_path):
    env = {
        **built.offline(),
        "UV_TOOL_DIR": str(tmp_path / "tools"),
        "UV_TOOL_BIN_DIR": str(tmp_path / "bin"),
        "UV_CACHE_DIR": str(tmp_path / "cache"),
    }
    run(["uv", "tool", "install", "--offline", "--no-index", "--find-links", built.wheelhouse,
         "--python", sys.executable, built.wheel], env=env)  # fmt: skip
    check_installed(tmp_path / "bin")
