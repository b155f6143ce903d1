"""GitHub Actions: annotations, the job summary and step outputs.

Under GitHub Actions (``GITHUB_ACTIONS=true``), or with ``--annotations github``, a run adds to
its usual stderr lines, never replacing them:

- a workflow-command annotation for every error, failed gate check and warning
  (``::error file=F,line=L::detail`` for invalid input, ``::error title=calibcli::message`` for
  other usage errors, ``::error title=calibcli gate::...``, ``::warning ::...``), on stderr:
  the runner reads workflow commands from both streams, and stdout carries only the product;
- the Markdown summary appended to ``$GITHUB_STEP_SUMMARY`` when ``--summary`` is not given
  (``--no-summary`` leaves it out);
- the headline figures and the verdict appended to ``$GITHUB_OUTPUT`` (:data:`OUTPUTS`); a
  run that ends without a report (exit 2, 3, 130 or 143) writes ``passed=false`` and its figures
  as ``NaN`` (:func:`unfinished`), so that no output is left empty.

``--annotations none`` turns all three off; outside Actions nothing changes. The runner reads
every line of stdout and stderr for workflow commands, so under Actions (whatever
``--annotations`` says) text that quotes the data (a group named ``::stop-commands::x``, a
field value ``##[error]x``) is printed through :func:`guarded` or :func:`json_guarded`, and an
output file written to a stream (``-o /dev/stdout``) through :func:`stream_guarded`: shown as
text, never run, and ended before calibcli's own annotations. Every command gets
the two options from :func:`ci_options`, which calibcli.cli.app applies when a command registers.
"""

from __future__ import annotations

import functools
import inspect
import math
import os
import re
import secrets
from collections.abc import Callable, Iterable, Iterator
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer

from calibcli.errors import InputError, one_line

Annotations = Enum(
    "Annotations", [("auto", "auto"), ("github", "github"), ("none", "none")], type=str
)
AnnotationsOpt = Annotated[
    Annotations,
    typer.Option(
        "--annotations",
        help="GitHub Actions annotations of errors, failed gates and warnings, the job summary "
        "($GITHUB_STEP_SUMMARY) and step outputs ($GITHUB_OUTPUT); auto: when GITHUB_ACTIONS "
        "is true.",
    ),
]
NoSummaryOpt = Annotated[
    bool,
    typer.Option(
        "--no-summary",
        help="Under GitHub Actions, do not append the Markdown summary to $GITHUB_STEP_SUMMARY.",
    ),
]

# The step outputs each command writes to $GITHUB_OUTPUT besides ``passed`` (true|false, the
# gate's verdict; true when no gate was asked for): output name -> the report's key, a dotted
# path into the JSON report. Figures of the pooled rows; an infinite figure is written
# Infinity (or -Infinity) and an undefined one NaN, never empty: GitHub's expressions read an
# empty value as 0, so `steps.x.outputs.perplexity < 30` would pass on an infinite perplexity,
# while Infinity and NaN are numbers that fail it. A key the report does not have
# (bits_per_byte without byte counts) is left out.
OUTPUTS: dict[str, dict[str, str]] = {
    "perplexity": {
        "perplexity": "perplexity",
        "bits_per_token": "bits_per_token",
        "bits_per_byte": "bits_per_byte",
        "tokens": "total_tokens",
    },
    "calibrate": {
        "n": "n",
        "accuracy": "accuracy",
        "ece": "ece",
        "brier": "brier",
        "smece": "smece",
        "nll": "nll",
        "auroc": "auroc",
    },
    "reliability": {"n": "n", "accuracy": "accuracy", "ece": "ece", "brier": "brier"},
    "threshold": {  # the guaranteed threshold's figures on the evaluated rows (with --fit
        # realised there, not those of the rows it was chosen on)
        "threshold": "guaranteed.threshold",
        "coverage": "coverage",
        "accuracy": "guaranteed.realised.accuracy",
    },
    "compare": {
        "matched": "matched",
        "ece_difference": "figures.ece.difference",
        "brier_difference": "figures.brier.difference",
        "accuracy_difference": "figures.accuracy.difference",
        "auroc_difference": "figures.auroc.difference",
    },
}

# The commands that write step outputs: those of OUTPUTS, and fit (``command`` and ``passed``)
OUTPUT_COMMANDS = (*OUTPUTS, "fit")

UNDEFINED = "NaN"
"""An output's value when the figure is undefined, or when the run ended without a report."""

STDIN_NAMES = ("-", "<stdin>")  # what InputError.path holds for standard input

# The mode of the command running now (set by ci_options for the command's duration); None
# outside a command, where the environment decides (a usage error found while parsing).
_mode: Annotations | None = None

# Whether this invocation has written its step outputs (see :func:`starting`): a usage error
# raised inside a command reaches calibcli.cli.app's handler after the command wrote them.
_outputs_written = False


def detected() -> bool:
    """True under GitHub Actions, which sets GITHUB_ACTIONS=true in every step."""
    return os.environ.get("GITHUB_ACTIONS") == "true"


def active() -> bool:
    """Whether this run writes GitHub annotations, summary and outputs."""
    mode = _mode or Annotations.auto
    return mode is Annotations.github or (mode is Annotations.auto and detected())


# --------------------------------------------------------------------------- workflow commands


def escape_data(text: str) -> str:
    """A workflow command's message: ``%``, CR and LF escaped (the runner's rules)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A workflow command's property value: as its message, and ``:`` and ``,`` too."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def workflow_command(command: str, message: str, **properties: str | int) -> str:
    """``::command key=value,...::message``, escaped; the empty property list is ``::command ::``
    (the runner reads the space as no properties)."""
    props = ",".join(f"{k}={escape_property(str(v))}" for k, v in properties.items())
    return f"::{command} {props}::{escape_data(message)}"


# --------------------------------------------------------------------------- untrusted text

# What the runner would read as a workflow command in a line (it splits its input at CR and
# LF): ``::name ...::`` after leading whitespace, or the older ``##[name ...]`` anywhere.
_COMMAND_LIKE = re.compile(r"(?:\A|[\r\n])[^\S\r\n]*::|##\[")


def runner_reads() -> bool:
    """Whether a GitHub Actions runner reads this run's stdout and stderr for workflow
    commands: under Actions whatever --annotations says, and with --annotations github."""
    return detected() or active()


def could_be_command(text: str) -> bool:
    """Whether a line of ``text`` could start a workflow command (:data:`_COMMAND_LIKE`)."""
    return _COMMAND_LIKE.search(text) is not None


def guarded(text: str) -> str:
    """Whole lines of output as printed where a runner reads them: unchanged, or, when one of
    them could start a workflow command, between ``::stop-commands::TOKEN`` and ``::TOKEN::``
    with a fresh unguessable token, GitHub's way to show untrusted text as text. Unchanged
    outside Actions."""
    if not runner_reads() or not could_be_command(text):
        return text
    token = secrets.token_hex(16)
    ending = "" if text.endswith(("\n", "\r")) else "\n"
    return f"::stop-commands::{token}\n{text}{ending}::{token}::\n"


def json_guarded(pieces: Iterable[str]) -> Iterator[str]:
    """JSON text (in pieces, as streamed) as printed where a runner reads it: each ``##[``
    (only ever inside a string) written ``##\\u005b``, which is the same JSON value. A line of
    JSON never starts with ``::`` (it starts with a bracket, a quote or a number, after any
    indentation), so none can start a command then, and no line is added: ``--json >
    report.json`` stays a JSON document. Unchanged outside Actions."""
    if not runner_reads():
        yield from pieces
        return
    held = ""  # trailing '#'s of a piece: the next one may begin with '['
    for piece in pieces:
        text = (held + piece).replace("##[", "##\\u005b")
        kept = len(text.rstrip("#"))
        held = text[kept:]
        if kept:
            yield text[:kept]
    if held:
        yield held


# A line's leading ``::`` (after any whitespace), kept apart from the second colon
_LINE_COLONS = re.compile(r"((?:\A|[\r\n])[^\S\r\n]*):(?=:)")


def stream_guarded(data: bytes, form: str) -> bytes:
    """An output file written through to a stream or device (``/dev/stdout``, a pipe, a
    terminal), which a runner may read, as printed where one does: ``json`` as
    :func:`json_guarded` writes it (the same JSON value); ``markup`` (HTML, SVG) with each
    ``##[`` written ``##&#91;`` and a line's leading ``::`` as ``&#58;:``, character references
    that a browser reads as the same text, so the page shows and reads as before; other text
    (Markdown) as :func:`guarded` prints a table, between stop-commands lines, since its
    character references would show as written in a code span. ``binary`` (PNG, PDF) is
    written as it is: its text is drawn, not written. Unchanged outside Actions, and when no
    line could start a workflow command."""
    if form == "binary" or not runner_reads():
        return data
    text = data.decode("utf-8")
    if not could_be_command(text):
        return data
    if form == "json":
        text = "".join(json_guarded([text]))
    elif form == "markup":
        text = _LINE_COLONS.sub(r"\1&#58;", text.replace("##[", "##&#91;"))
    else:
        text = guarded(text)
    return text.encode("utf-8")


def _emit(line: str) -> None:
    typer.echo(line, err=True)


def error(message: str, cause: BaseException | None = None) -> None:
    """Annotate a usage error: an InputError points at its file and line, anything else is
    titled ``calibcli``. Nothing outside GitHub Actions."""
    if not active():
        return
    if isinstance(cause, InputError):
        _emit(input_error_command(cause))
    else:
        _emit(workflow_command("error", message, title="calibcli"))


def warned(message: str) -> None:
    """Annotate a warning said outside a report (titled as a report's are not: by its text
    alone). Nothing outside GitHub Actions."""
    if active():
        _emit(workflow_command("warning", message))


def input_error_command(exc: InputError) -> str:
    """``::error file=F,line=L::detail``. Standard input has no file to point at, and a
    locator inside a whole document (``samples/3_epoch_1.json``) is no line number: those stay
    in the message."""
    if exc.path in STDIN_NAMES:
        return workflow_command("error", str(exc))
    properties: dict[str, str | int] = {"file": _in_workspace(exc.path)}
    detail = exc.detail
    if isinstance(exc.line, int):
        properties["line"] = exc.line
    elif exc.line is not None:
        detail = f"{exc.line}: {detail}"
    return workflow_command("error", detail, **properties)


def _in_workspace(path: str) -> str:
    """An annotation attaches to a file of the pull request by its path in the repository, which
    the runner reads from $GITHUB_WORKSPACE whatever folder the step ran in: a path inside the
    workspace (absolute, or relative to the working folder, ``../eval/./preds.jsonl`` too) is
    made relative to it, normalised. Any other path is kept as given."""
    workspace = os.environ.get("GITHUB_WORKSPACE")
    if not workspace:
        return path
    try:  # abspath places a relative path from the working folder, and normalises it
        absolute = os.path.abspath(path)
        # the working folder comes back with symbolic links resolved, a workspace may hold some
        bases = dict.fromkeys((os.path.abspath(workspace), os.path.realpath(workspace)))
    except OSError:  # the working folder is gone: nothing to place the path from
        return path
    for base in bases:
        try:
            relative = os.path.relpath(absolute, base)
        except ValueError:  # another drive (Windows)
            continue
        if relative != os.curdir and relative.split(os.sep)[0] != os.pardir:
            return relative
    return path


def finished(report: Any) -> None:
    """What a finished run adds under GitHub Actions: one annotation per warning and per failed
    gate check, then the step outputs."""
    if not active():
        return
    for warning in report.warnings:
        _emit(workflow_command("warning", warning))
    for failure in report.failures:
        _emit(workflow_command("error", failure, title="calibcli gate"))
    _write_outputs(step_outputs(report))


def unfinished(command: str) -> None:
    """The step outputs of a run of ``command`` that ended without a report (bad input or
    usage, exit 2; a crash; Ctrl-C), unless it wrote them already: ``passed=false`` and every
    figure :data:`UNDEFINED`, the same keys as a report writes (``bits_per_byte`` too). Left
    empty, they would read as 0 in GitHub's expressions, so that a later step's
    ``outputs.ece < 0.05`` or ``outputs.passed != 'false'`` would pass. Nothing outside
    GitHub Actions, nor for a command that writes no outputs."""
    if _outputs_written or command not in OUTPUT_COMMANDS or not active():
        return
    figures = dict.fromkeys(OUTPUTS.get(command, {}), UNDEFINED)
    _write_outputs({"command": command, **figures, "passed": "false"})


def starting() -> None:
    """A new invocation: no step outputs written yet (a process, a test's, may run many)."""
    global _outputs_written
    _outputs_written = False


def _write_outputs(values: dict[str, str]) -> None:
    """Append ``name=value`` lines to ``$GITHUB_OUTPUT`` in one write: all of them or, when
    the file cannot be written, a warning (the verdict stands: the exit code still says it)."""
    global _outputs_written
    _outputs_written = True
    path = os.environ.get("GITHUB_OUTPUT")
    if not path:
        return
    try:
        with open(path, "a", encoding="utf-8") as f:
            f.write("".join(f"{k}={v}\n" for k, v in values.items()))
    except OSError as exc:
        message = f"cannot write the step outputs to {path}: {exc.strerror or exc}"
        typer.echo(guarded(one_line(f"warning: {message}") + "\n"), err=True, nl=False)
        _emit(workflow_command("warning", message))


def append_step_summary(path: Path, text: str) -> None:
    """Append the automatic job summary to ``$GITHUB_STEP_SUMMARY``, on a line of its own
    when an earlier step's text ends without a newline (its heading would join that line).
    Nobody asked for it, so a failed write is a warning (annotated), as for the step outputs:
    the verdict stands."""
    from calibcli.cli.staging import ends_mid_line  # staging imports this module

    try:
        start = "\n" if ends_mid_line(path) else ""
        with open(path, "a", encoding="utf-8") as f:
            f.write(start + text)
    except OSError as exc:
        _summary_unwritable(f"{path}: cannot write the summary: {exc.strerror or exc}")


def _summary_unwritable(problem: str) -> None:
    from calibcli.cli.app import warn  # app imports this module: import when needed

    warn(f"{problem}; the job summary ($GITHUB_STEP_SUMMARY) is left out, the verdict stands")


def step_outputs(report: Any) -> dict[str, str]:
    """The report's headline figures (:data:`OUTPUTS`) and ``passed``, as output values."""
    body = report.body
    infinite = body.get("non_finite") or {}  # path -> "inf" / "-inf" of a figure written null
    values: dict[str, str] = {"command": str(body.get("command", ""))}
    for name, key in OUTPUTS.get(values["command"], {}).items():
        found, value = _lookup(body, key)
        if found:
            values[name] = _output_value(value, infinite.get(key))
    values["passed"] = "true" if report.passed else "false"
    return values


def _lookup(body: dict[str, Any], key: str) -> tuple[bool, Any]:
    value: Any = body
    for part in key.split("."):
        if not isinstance(value, dict) or part not in value:
            return False, None
        value = value[part]
    return True, value


def _output_value(value: Any, infinite: str | None = None) -> str:
    """A figure as GitHub's expressions read numbers: ``Infinity``, ``-Infinity``, ``NaN``
    (undefined) for what JSON writes as null (``infinite``: its ``non_finite`` mark)."""
    if isinstance(value, float) and not math.isfinite(value):
        infinite = None if math.isnan(value) else "inf" if value > 0 else "-inf"
        value = None
    if value is None:
        return {"inf": "Infinity", "-inf": "-Infinity"}.get(infinite or "", UNDEFINED)
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value) if isinstance(value, float) else str(value)


# --------------------------------------------------------------------------- the options


def _usage_error(message: str) -> typer.Exit:
    from calibcli.cli.app import usage_error  # app imports this module: import when needed

    return usage_error(message)


# The automatic summary of the command running now ($GITHUB_STEP_SUMMARY, when --summary is not
# given), set by summary_target for the command's duration.
_step_summary: Path | None = None


def is_step_summary(path: Path | None) -> bool:
    """Whether ``path`` is the automatic job summary rather than one --summary named."""
    return path is not None and _step_summary is not None and Path(path) == _step_summary


def summary_target(summary: Path | None, no_summary: bool) -> Path | None:
    """The summary file of this run: --summary's, else $GITHUB_STEP_SUMMARY under Actions.
    The automatic one that cannot be written is left out with a warning (the run goes on and
    its verdict stands), where a --summary PATH that cannot be is an error."""
    global _step_summary  # cleared when the command ends (ci_options' wrapper)
    if summary is not None and no_summary:
        raise _usage_error("--no-summary and --summary PATH contradict each other; give one")
    if summary is None and not no_summary and active():
        found = os.environ.get("GITHUB_STEP_SUMMARY")
        if found:
            from calibcli.cli.staging import OutputError, check_writable

            try:
                check_writable(Path(found), "summary")
            except OutputError as exc:
                _summary_unwritable(str(exc))
                return None
            _step_summary = Path(found)
            return _step_summary
    return summary


def ci_options(command: Callable) -> Callable:
    """Give a command ``--annotations`` (and ``--no-summary`` when it has ``--summary``): the
    mode holds while the command runs, and the summary path is filled in under Actions."""
    signature = inspect.signature(command, eval_str=True)
    has_summary = "summary" in signature.parameters
    params = list(signature.parameters.values())
    params.append(
        inspect.Parameter(
            "annotations",
            inspect.Parameter.KEYWORD_ONLY,
            default=Annotations.auto,
            annotation=AnnotationsOpt,
        )
    )
    if has_summary:
        params.append(
            inspect.Parameter(
                "no_summary", inspect.Parameter.KEYWORD_ONLY, default=False, annotation=NoSummaryOpt
            )
        )

    @functools.wraps(command)
    def run(**kwargs: Any) -> Any:
        global _mode, _step_summary
        _mode = kwargs.pop("annotations")
        no_summary = kwargs.pop("no_summary", False)
        starting()
        try:
            if has_summary:
                kwargs["summary"] = summary_target(kwargs["summary"], no_summary)
            return command(**kwargs)
        except BaseException as exc:
            if getattr(exc, "exit_code", None) != 0:  # fit ends with Exit(0) after its report
                unfinished(command.__name__)
            raise
        finally:
            _mode = _step_summary = None

    run.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    return run
