"""The repository's address: set once in pyproject.toml, repeated where an address must be whole.

pyproject.toml's ``[project.urls] Repository`` is the one source. The README (images and links
a package index can show), CHANGELOG.md, action.yml and the docs repeat it because an index,
``uses: OWNER/calibcli@v1`` and ``pipx install git+https://...`` need it written out.

    python docs/set_repository.py                                   # list the mentions
    python docs/set_repository.py https://github.com/OWNER/calibcli # move every mention there

tests/test_release.py fails while any mention disagrees with pyproject.toml.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = ROOT / "pyproject.toml"
# the Repository line of [project.urls]; read with a pattern, as tomllib needs Python 3.11
REPOSITORY_LINE = re.compile(r'^Repository = "https://github\.com/([\w.-]+)/([\w.-]+)"$', re.M)
# every way the files name a GitHub repository called calibcli: web and raw addresses, git+
# URLs, and an action's `uses: OWNER/calibcli@REF`
MENTION = re.compile(
    r"(?:github\.com/|raw\.githubusercontent\.com/|uses:\s*)([\w.-]+)/(calibcli)(?=[/@.\s\"')#]|$)"
)


def repository() -> str:
    """``OWNER/NAME`` of the repository, from pyproject.toml."""
    found = REPOSITORY_LINE.search(PYPROJECT.read_text(encoding="utf-8"))
    if found is None:
        raise SystemExit('pyproject.toml has no Repository = "https://github.com/OWNER/NAME" line')
    return f"{found.group(1)}/{found.group(2)}"


def tracked_files() -> list[Path]:
    """The project's text files: tracked or new, never ignored ones."""
    names = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    files = []
    for name in names:
        path = ROOT / name
        if not path.is_file() or name.startswith("tests/fixtures/"):
            continue
        try:
            path.read_text(encoding="utf-8")
        except UnicodeDecodeError:  # images, gzip and zip fixtures
            continue
        files.append(path)
    return files


def mentions() -> list[tuple[Path, int, str]]:
    """(file, line, OWNER/NAME) for every mention of a calibcli repository."""
    found = []
    for path in tracked_files():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for match in MENTION.finditer(line):
                if match.group(1) == "OWNER":  # how this file and the docs write "any owner"
                    continue
                found.append((path, number, f"{match.group(1)}/{match.group(2)}"))
    return found


def move(new_url: str) -> int:
    match = re.fullmatch(r"https://github\.com/([\w.-]+)/(calibcli)/?", new_url)
    if match is None:
        print("give the address as https://github.com/OWNER/calibcli", file=sys.stderr)
        return 2
    old, new = repository(), f"{match.group(1)}/{match.group(2)}"
    for path in {p for p, _, _ in mentions()} | {PYPROJECT}:
        text = path.read_text(encoding="utf-8")
        moved = MENTION.sub(
            lambda m: (
                m.group(0) if m.group(1) == "OWNER" else m.group(0)[: m.start(1) - m.start(0)] + new
            ),
            text,
        )
        if moved != text:
            path.write_text(moved, encoding="utf-8")
    print(f"{old} -> {new}")
    return 0


def main(argv: list[str]) -> int:
    if argv:
        return move(argv[0])
    expected = repository()
    stray = 0
    for path, number, name in mentions():
        mark = "" if name == expected else f"   <- not {expected}"
        stray += bool(mark)
        print(f"{path.relative_to(ROOT)}:{number}: {name}{mark}")
    return 1 if stray else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
