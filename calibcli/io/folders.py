"""Folder and pattern arguments: a directory given as an input stands for the run files inside
it, and a quoted pattern (``'runA/samples_*.jsonl'``) for the files it matches.

An evaluation run leaves a folder of files (lm-eval writes one samples file per task and a
results file beside them), so ``calibcli calibrate out/`` reads the folder's files of the kinds
calibcli reads, in name order, which does not depend on the file system. Files are not searched
for in subfolders: a folder of several models' runs is given one model folder at a time, and a
subfolder holding files of those kinds is named in a warning, its files not read; a folder
holding none itself is refused, naming the subfolders that hold some (lm-eval's
``--output_path out`` writes each model's files into ``out/<org>__<model>/``) and how to give
them (``'out/*/'``). What a
file holds decides as for any file given: a results file is skipped with a warning, re-runs of
a task are left out but the newest. The manifests inspect-ai's eval_set writes beside its logs
(``logs.json``, ``eval-set.json``) are left out with a warning: they hold the logs' headers, no
samples, and the logs are read from their own files. A HELM run folder (one holding a
``per_instance_stats.json`` or a ``run_spec.json``) is read for its ``per_instance_stats.json``:
the files HELM writes beside it (``run_spec.json``, ``stats.json``, ``scenario_state.json``,
..., :data:`calibcli.io.helm_adapter.SIDE_FILES`) hold no per-instance figures and are left
out, as a run folder is given whole.

A pattern lets one argument stand for several files where a command takes one per side
(``compare 'runA/*.jsonl' 'runB/*.jsonl'``) and where no shell expands it. It is expanded only
when no file has that very name, in name order; one that matches nothing is an error. ``**``
matches any number of subfolders (``'runs/**/*.jsonl'``), as Python's recursive glob and the
shells' ``globstar`` read it; a pattern holding ``**`` stands for the files it matches, not for
the folders (which would bring their files twice).
"""

from __future__ import annotations

import glob
import os
import shlex

from calibcli.errors import InputError, shown_name
from calibcli.io.compression import SUFFIXES as COMPRESSED
from calibcli.io.compression import without_suffix

#: The endings of the files a folder contributes, in any case (with or without a compression
#: suffix, :data:`calibcli.io.compression.SUFFIXES`). ``.ndjson`` is JSON Lines by another name.
SUFFIXES = (
    ".jsonl",
    ".ndjson",
    ".json",
    ".eval",
    ".parquet",
    ".arrow",
    ".feather",
    ".csv",
    ".tsv",
    ".cbs",
)


def is_input_file(name: str) -> bool:
    """Whether a file of this name, inside a folder given as an input, is read: a name
    written in capitals (``ROWS.JSONL``, as some systems write them) is read as any other,
    since a file given by name is read whatever its case."""
    if name.startswith("."):
        return False
    return without_suffix(name.lower()).endswith(SUFFIXES)


HIDDEN_SHOWN = 3
"""Hidden files named in a folder's warning; the rest are counted."""


def hidden_files(sources: list[str]) -> list[str]:
    """A warning for each folder among ``sources`` (or matched by their patterns) holding
    hidden files of the kinds read (``.x.jsonl``): they are left out, as editors' and file
    systems' own files are not rows, but a run's file named so by mistake is said, not
    dropped without a word. macOS's ``._x.jsonl`` (a copied file's metadata) is not said.
    An inspect-ai eval-set manifest the folder holds, left out too, is said the same way."""
    said = []
    for source in _folders(sources):
        try:
            names = sorted(os.listdir(source))
        except OSError:
            continue  # expand() reports the folder
        hidden = [
            n
            for n in names
            if n.startswith(".")
            and not n.startswith("._")  # macOS's metadata beside a file copied from it
            and is_input_file(n[1:])
            and os.path.isfile(os.path.join(source, n))
        ]
        if hidden:
            shown = ", ".join(hidden[:HIDDEN_SHOWN])
            more = f" and {len(hidden) - HIDDEN_SHOWN} more" if len(hidden) > HIDDEN_SHOWN else ""
            files = "file" if len(hidden) == 1 else "files"
            said.append(
                f"{shown_name(source)}: {len(hidden)} hidden {files} left out ({shown}{more}): "
                "a folder does not read names that start with a dot; name a file to read it"
            )
        for name in names:
            manifest = _manifest(os.path.join(source, name))
            if manifest is not None:
                said.append(f"{shown_name(os.path.join(source, name))}: {manifest}")
    return said


HELM_WITHOUT_STATS = (
    "a HELM run folder without its per_instance_stats.json: its run_spec.json, stats.json and "
    "the other files HELM writes beside it hold no per-instance figures"
)

SUBFOLDERS_WALKED = 256
"""Folders looked through below one folder given, for the input files its subfolders hold."""


def unread_subfolders(sources: list[str], expanded: list[str] | None = None) -> list[str]:
    """A warning for each folder among ``sources`` (or matched by their patterns) whose
    subfolders hold input files (:func:`_subfolders_said`); ``expanded`` is what
    :func:`expand` made of ``sources`` when the caller has it, so folders are listed once. The
    readers say these after what the files read say, since they are about files not read at
    all."""
    said = []
    read = _read_paths(sources) if expanded is None else _real_paths(expanded)
    for source in _folders(sources):
        try:
            names = sorted(os.listdir(source))
        except OSError:
            continue  # expand() reports the folder
        found = _subfolders_said(source, names, read)
        if found is not None:
            said.append(found)
    return said


def _read_paths(sources: list[str]) -> set[str]:
    """The real paths of the files ``sources`` read (a subfolder's files given by name too);
    empty when :func:`expand` refuses them, as the reader then reports."""
    try:
        return _real_paths(expand(list(sources)))
    except (InputError, OSError):
        return set()


def _real_paths(files: list[str]) -> set[str]:
    return {os.path.realpath(p) for p in files if p != "-"}


def _subfolders_said(source: str, names: list[str], read: set[str]) -> str | None:
    """A warning naming the subfolders of ``source`` (``names``: its entries, sorted) that
    hold input files not among those ``read`` (real paths), at any depth: a folder is read
    one level deep, so a run's files moved into a subfolder are not read, and a gate would
    pass on the others alone. None when no subfolder holds one, and for a folder holding no
    input file itself, which :func:`expand` refuses, naming such subfolders
    (:func:`_held_below`). Hidden subfolders are not looked into, as hidden files are not
    read; at most :data:`SUBFOLDERS_WALKED` folders are, the counts then being lower bounds."""
    if not _input_names(source, names):
        return None
    found: list[tuple[str, int]] = []
    budget = SUBFOLDERS_WALKED
    for name in names:
        path = os.path.join(source, name)
        if budget <= 0 or name.startswith(".") or not os.path.isdir(path):
            continue
        count = 0
        for top, dirs, files in os.walk(path):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            count += sum(
                1
                for f in _input_names(top, files)
                if os.path.realpath(os.path.join(top, f)) not in read
            )
            budget -= 1
            if budget <= 0:
                break
        if count:
            found.append((shown_name(name) + "/", count))
    if not found:
        return None
    total = sum(count for _, count in found)
    several = total > 1 or budget <= 0
    files = f"{total}{' or more' if budget <= 0 else ''} input file{'s' if several else ''}"
    deep = "folders are read one level deep"
    if len(found) == 1:
        verb = "are" if several else "is"
        return (
            f"{shown_name(source)}: subfolder {found[0][0]} holds {files} that {verb} not read "
            f"({deep}; name it to read it)"
        )
    shown = ", ".join(name for name, _ in found[:HIDDEN_SHOWN])
    more = f" and {len(found) - HIDDEN_SHOWN} more" if len(found) > HIDDEN_SHOWN else ""
    return (
        f"{shown_name(source)}: {len(found)} subfolders hold {files} that are not read "
        f"({shown}{more}; {deep}; name them to read them)"
    )


def _input_names(folder: str, names: list[str]) -> list[str]:
    """The names among ``names`` (entries of ``folder``) of the files a folder given as an
    input would read: its input files, a HELM run folder's side files left out
    (:func:`~calibcli.io.helm_adapter.side_files`)."""
    from calibcli.io.helm_adapter import side_files

    found = [n for n in names if is_input_file(n) and os.path.isfile(os.path.join(folder, n))]
    side = side_files(folder, found)
    return [n for n in found if n not in side]


def _manifest(path: str) -> str | None:
    """Why a folder's file is left out as an inspect-ai eval-set manifest, or None."""
    from calibcli.io.inspect_log import folder_manifest

    return folder_manifest(path)


def _matches(pattern: str) -> list[str]:
    """The paths a pattern matches, sorted by name (``**``: any depth, files only)."""
    matched = sorted(glob.glob(pattern, recursive=True))
    if "**" in pattern:
        matched = [m for m in matched if not os.path.isdir(m)]
    return matched


def _folders(sources: list[str]) -> list[str]:
    """The folders among the sources, and among the paths their patterns match (as
    :func:`expand` reads them)."""
    out = []
    for source in sources:
        if source != "-" and not os.path.exists(source) and any(c in source for c in "*?["):
            out += [m for m in _matches(source) if os.path.isdir(m)]
        elif source != "-" and os.path.isdir(source):
            out.append(source)
    return out


def expand(sources: list[str]) -> list[str]:
    """The sources with each directory replaced by its input files and each pattern by the
    paths it matches, sorted by name; InputError for a directory holding none or a pattern
    matching nothing."""
    out: list[str] = []
    for source in sources:
        if source != "-" and not os.path.exists(source) and any(c in source for c in "*?["):
            matched = _matches(source)
            if not matched:
                raise InputError(source, None, "no file matches this pattern")
            out.extend(expand(matched))
            continue
        if source == "-" or not os.path.isdir(source):
            out.append(source)
            continue
        try:
            names = sorted(os.listdir(source))
        except OSError as e:
            raise InputError(source, None, e.strerror or str(e)) from None
        present = [n for n in names if is_input_file(n) and os.path.isfile(os.path.join(source, n))]
        files = [os.path.join(source, name) for name in _input_names(source, present)]
        kept = [f for f in files if _manifest(f) is None]
        if files and not kept:
            raise InputError(
                source, None, "a folder holding inspect-ai eval-set manifests and no logs"
            )
        files = kept
        if not files and present:
            raise InputError(source, None, HELM_WITHOUT_STATS)
        if not files:
            endings = ", ".join(SUFFIXES)
            packed = ", ".join(COMPRESSED)
            below = _held_below(source, names)
            raise InputError(
                source,
                None,
                f"a folder with no input files ({endings}, or those {packed})"
                if below is None
                else f"a folder with no input files of its own: {below}",
            )
        out.extend(files)
    return out


def _held_below(source: str, names: list[str]) -> str | None:
    """What a folder holding no input file itself (``names``: its entries, sorted) says of its
    subfolders that hold some, and how to give them; None when none does. Only the immediate
    subfolders are looked into, and only their own files counted: those are what giving a
    subfolder reads (a folder is read one level deep). Hidden subfolders are not looked into,
    as hidden files are not read; at most :data:`SUBFOLDERS_WALKED` are, the counts then
    being lower bounds. ``'out/*/'`` is offered when every subfolder it would match holds
    input files, since one holding none is refused."""
    found: list[tuple[str, int]] = []
    looked, every, cut = 0, True, False
    for name in names:
        path = os.path.join(source, name)
        if name.startswith(".") or not os.path.isdir(path):
            continue
        if looked >= SUBFOLDERS_WALKED:
            every, cut = False, True
            break
        looked += 1
        try:
            inner = os.listdir(path)
        except OSError:
            inner = []
        count = len(_input_names(path, inner))
        if count:
            found.append((name, count))
        else:
            every = False
    if not found:
        return None
    total = sum(count for _, count in found)
    files = f"{total}{' or more' if cut else ''} input file{'s' if total > 1 or cut else ''}"
    deep = "folders are read one level deep"
    if len(found) == 1 and not cut:
        name = found[0][0]
        return (
            f"subfolder {shown_name(name)}/ holds {files} ({deep}; name it to read it: "
            f"{_as_given(os.path.join(source, name))})"
        )
    shown = ", ".join(shown_name(name) + "/" for name, _ in found[:HIDDEN_SHOWN])
    more = f" and {len(found) - HIDDEN_SHOWN} more" if len(found) > HIDDEN_SHOWN else ""
    if every:
        how = f": {_as_given(os.path.join(glob.escape(source), '*', ''))}"
    elif len(found) <= HIDDEN_SHOWN and not cut:
        how = ": " + " ".join(_as_given(os.path.join(source, name)) for name, _ in found)
    else:
        how = ""
    return (
        f"{len(found)}{' or more' if cut else ''} subfolders hold {files} "
        f"({shown}{more}; {deep}; name them to read them{how})"
    )


def _as_given(path: str) -> str:
    """A path or pattern as a command line gives it: quoted for the shell when it has to be
    (a quoted pattern is expanded by calibcli, in name order), or as messages show a name
    that one line cannot hold as it is (:func:`calibcli.errors.shown_name`)."""
    shown = shown_name(path)
    return shown if shown != path else shlex.quote(path)


def named_files(sources: list[str]) -> list[str]:
    """The files the sources stand for, as :func:`expand` finds them, each source on its own:
    one that stands for none (a pattern matching nothing, an empty or unreadable folder)
    stands for itself, and reading it says what is wrong."""
    out: list[str] = []
    for source in sources:
        try:
            out.extend(expand([source]))
        except InputError:
            out.append(source)
    return out
