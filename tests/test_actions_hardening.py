"""Under GitHub Actions, text from the data never runs as a workflow command; the automatic job
summary that cannot be written is a warning; the action keeps one venv per Python and takes its
baseline input as it takes files.

What the runner does with a step's output is reimplemented here from the runner's source
(actions/runner, src/Runner.Worker/ActionCommandManager.cs and ActionCommand.cs), independently
of calibcli: it reads both streams line by line (split at CR and LF), parses ``::name ...::data``
after leading whitespace, else the older ``##[name ...]data`` anywhere in the line, and between
``::stop-commands::TOKEN`` and a command named TOKEN runs nothing.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from harness import run, write_jsonl
from workflow import Context, Runner, load_action, runner_env

from calibcli.cli import github
from calibcli.render.digits import group_cell

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_data"

# The commands the runner knows (its registered command extensions and stop-commands).
REGISTERED = {
    "stop-commands",
    "error",
    "warning",
    "notice",
    "debug",
    "group",
    "endgroup",
    "echo",
    "add-mask",
    "set-output",
    "save-state",
    "set-env",
    "add-path",
    "add-matcher",
    "remove-matcher",
}


def _parse(line, registered):
    """(name and properties, data) of the command the runner reads in ``line``, or None."""
    trimmed = line.lstrip()
    if trimmed.startswith("::"):
        end = trimmed.find("::", 2)
        if end >= 0 and trimmed[2:end].split(" ")[0] in registered:
            return trimmed[2:end], trimmed[end + 2 :]
    start = line.find("##[")
    if start >= 0:
        close = line.find("]", start)
        if close >= 0 and line[start + 3 : close].split(" ")[0] in registered:
            return line[start + 3 : close], line[close + 1 :]
    return None


def runner_reads(text):
    """The commands the runner runs for ``text`` (what calibcli printed, in order), as
    ``(name and properties, data)``, and the lines it shows as text; stop and resume are not
    listed."""
    registered, token, ran, shown = set(REGISTERED), None, [], []
    for line in re.split(r"\r\n|\r|\n", text):
        found = _parse(line, registered) if line else None
        if found is None:
            shown.append(line)
        elif token is not None:
            if found[0].split(" ")[0].lower() == token.lower():
                registered.discard(token)
                token = None
            else:
                shown.append(line)
        elif found[0] == "stop-commands":
            token = found[1]
            registered.add(token)
        else:
            ran.append(found)
    return ran, shown


def calibcli(args, env_extra, tmp_path):
    """calibcli in a process of its own, stdout and stderr in one pipe in the order written,
    as the runner receives them; (exit code, text, stdout alone)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_"))}
    env.update(env_extra)
    merged = subprocess.run(
        [sys.executable, "-m", "calibcli", *map(str, args)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=300,
    )
    alone = subprocess.run(
        [sys.executable, "-m", "calibcli", *map(str, args)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return merged.returncode, merged.stdout, alone.stdout


HOSTILE = ["::stop-commands::pause42", "::error::fake", "  ##[warning]fake", "plain"]


def grouped_rows(names, n=400):
    return [
        {
            "id": i,
            "confidence": 0.05 + 0.9 * ((i * 37) % 100) / 99,
            "correct": (i * 53) % 100 < 5 + 90 * ((i * 37) % 100) / 99,
            "g": names[i % len(names)],
        }
        for i in range(n)
    ]


# --------------------------------------------------------------------------- names from the data


def test_runner_model_reads_what_the_reviewer_saw():
    """The model of the runner itself: a group row starting ``::stop-commands::pause42`` hides
    every later command, calibcli's gate annotation among them."""
    text = "::stop-commands::pause42  150  0.59\n::error title=calibcli gate::ece = 0.03\n"
    assert runner_reads(text)[0] == []
    assert runner_reads("x ##[error]boom\n")[0] == [("error", "boom")]
    assert runner_reads("\t::warning ::w\n")[0] == [("warning ", "w")]
    assert runner_reads("a ::error::not at the start\n")[0] == []


@pytest.mark.parametrize(
    "command, extra",
    [
        ("calibrate", ["--max-ece", "0.0001"]),
        ("reliability", []),
        ("threshold", ["--target-accuracy", "0.8"]),
    ],
)
def test_group_names_never_run_and_the_gate_annotation_survives(tmp_path, command, extra):
    write_jsonl(tmp_path / "p.jsonl", grouped_rows(HOSTILE))
    env = {"GITHUB_ACTIONS": "true"}
    args = [command, "p.jsonl", "--by", "g", "--no-summary", *extra]
    code, text, stdout = calibcli(args, env, tmp_path)
    ran, shown = runner_reads(text)
    # only calibcli's own annotations run, each as it was printed: warnings, the gate's errors
    own = [line for line in text.splitlines() if line.startswith(("::warning ::", "::error "))]
    assert [f"::{info}::{data}" for info, data in ran] == own
    assert {info for info, _ in ran} <= {"warning ", "error title=calibcli gate"}
    if command == "calibrate":
        assert code == 1
        assert any(line.startswith("::error title=calibcli gate::ece = ") for line in own), text
    # every group's row is shown as text, as the table printed it (a name with a space at an
    # end as its literal)
    for name in map(group_cell, HOSTILE):
        assert any(line.startswith(name) for line in shown), name
    lines = stdout.splitlines()
    assert all(any(line.startswith(group_cell(n)) for line in lines) for n in HOSTILE)


def test_compare_and_perplexity_groups_never_run(tmp_path):
    rows = grouped_rows(HOSTILE)
    write_jsonl(tmp_path / "a.jsonl", rows)
    write_jsonl(tmp_path / "b.jsonl", [{**r, "confidence": r["confidence"] * 0.9} for r in rows])
    docs = [{"id": i, "nll": 100.0 + i, "tokens": 50, "g": HOSTILE[i % 4]} for i in range(40)]
    write_jsonl(tmp_path / "ppl.jsonl", docs)
    env = {"GITHUB_ACTIONS": "true"}
    for args in (
        ["compare", "a.jsonl", "b.jsonl", "--by", "g", "--max-increase", "ece=0"],
        ["perplexity", "ppl.jsonl", "--by", "g", "--max-perplexity", "2"],
    ):
        code, text, _ = calibcli([*args, "--no-summary"], env, tmp_path)
        ran, _ = runner_reads(text)
        assert code in (0, 1), text
        own = [line for line in text.splitlines() if line.startswith(("::warning ::", "::error "))]
        assert [f"::{info}::{data}" for info, data in ran] == own
        assert {info for info, _ in ran} <= {"warning ", "error title=calibcli gate"}, ran
    # a perplexity of 2 is exceeded here: every document's is exp(nll / 50) >= exp(2) = 7.39
    assert code == 1
    assert any(d.startswith("perplexity = ") for i, d in ran if i.startswith("error"))


def test_error_lines_quoting_the_data_never_run(tmp_path):
    write_jsonl(tmp_path / "bad.jsonl", [{"confidence": 0.5, "correct": "##[error]fake"}])
    code, text, _ = calibcli(["calibrate", "bad.jsonl"], {"GITHUB_ACTIONS": "true"}, tmp_path)
    assert code == 2
    ran, shown = runner_reads(text)
    # one annotation, calibcli's, at the file and line; the Error line shown as it was
    assert len(ran) == 1 and ran[0][0] == "error file=bad.jsonl,line=1"
    assert text.splitlines()[-1].startswith("::error file=bad.jsonl,line=1::")
    assert any(line.startswith('Error: bad.jsonl:1: correct "##[error]fake"') for line in shown)


def test_json_output_is_the_same_document_and_runs_nothing(tmp_path):
    write_jsonl(tmp_path / "p.jsonl", grouped_rows(["##[error]fake", "#", "##", "ok"]))
    args = ["calibrate", "p.jsonl", "--by", "g", "--json", "--no-summary", "-q"]
    env = {"GITHUB_ACTIONS": "true"}
    for more in ([], ["-o", "r.json"]):  # streamed, and written whole beside a report file
        code, text, stdout = calibcli([*args, *more], env, tmp_path)
        assert code == 0, text
        assert {info for info, _ in runner_reads(text)[0]} <= {"warning "}
        assert stdout.count("\n") == 1 and "##[" not in stdout
        outside = calibcli([*args, *more], {}, tmp_path)[2]
        assert json.loads(stdout) == json.loads(outside)
        assert set(json.loads(stdout)["groups"]) == {"##[error]fake", "#", "##", "ok"}
    assert json.loads((tmp_path / "r.json").read_text()) == json.loads(stdout)


def test_json_pieces_split_inside_the_marker(monkeypatch):
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    pieces = ['{"a#', "#", "#", '[x": "##', '[", "b": "#"}\n']
    text = "".join(pieces)
    guarded = "".join(github.json_guarded(iter(pieces)))
    assert guarded == '{"a#' + "##\\u005b" + 'x": "##\\u005b", "b": "#"}\n'
    assert json.loads(guarded) == json.loads(text)
    monkeypatch.delenv("GITHUB_ACTIONS")
    assert "".join(github.json_guarded(iter(pieces))) == text


def test_output_unchanged_outside_actions_and_without_hostile_lines(tmp_path):
    write_jsonl(tmp_path / "p.jsonl", grouped_rows(HOSTILE))
    write_jsonl(tmp_path / "q.jsonl", grouped_rows(["a::b", "x ::error::y", "plain"]))
    base = ["calibrate", "--by", "g", "--no-summary", "-q"]
    # outside Actions, no wrapping whatever the names
    _, _, outside = calibcli([base[0], "p.jsonl", *base[1:]], {}, tmp_path)
    assert not re.search(r"^::stop-commands::[0-9a-f]{32}$", outside, re.M)
    assert outside.splitlines()[0].startswith("Calibration")
    # under Actions, names no line starts a command with: byte for byte what is printed outside
    inside = calibcli([base[0], "q.jsonl", *base[1:]], {"GITHUB_ACTIONS": "true"}, tmp_path)[2]
    assert inside == calibcli([base[0], "q.jsonl", *base[1:]], {}, tmp_path)[2]
    # and with hostile names, what is printed outside between a stop and its resume
    inside = calibcli([base[0], "p.jsonl", *base[1:]], {"GITHUB_ACTIONS": "true"}, tmp_path)[2]
    first, *middle, last = inside.splitlines(keepends=True)
    token = re.fullmatch(r"::stop-commands::([0-9a-f]{32})\n", first).group(1)
    assert last == f"::{token}::\n" and "".join(middle) == outside


def test_guarded_wraps_only_lines_the_runner_would_read(monkeypatch):
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    for text in (
        "  ::error::x\n",
        "ok\r::warning::x\n",
        "a ##[error]x\n",
        "\u3000::debug::x\n",
    ):
        wrapped = github.guarded(text)
        assert wrapped != text and runner_reads(wrapped)[0] == [], text
    for text in ("a ::error::x\n", "a\u2028::error::x\n", "# [x]\n", "plain\n"):
        assert github.guarded(text) == text, text
    two = {github.guarded("::x::\n").splitlines()[0] for _ in range(2)}
    assert len(two) == 2  # a fresh token each time
    monkeypatch.delenv("GITHUB_ACTIONS")
    assert github.guarded("  ::error::x\n") == "  ::error::x\n"  # outside Actions


def test_unwritable_step_outputs_warning_naming_hostile_text_never_runs(tmp_path):
    write_jsonl(tmp_path / "p.jsonl", grouped_rows(["plain"]))
    env = {"GITHUB_ACTIONS": "true", "GITHUB_OUTPUT": str(tmp_path / "##[error]x" / "out")}
    code, text, _ = calibcli(["calibrate", "p.jsonl", "--no-summary", "-q"], env, tmp_path)
    assert code == 0
    ran, _ = runner_reads(text)
    assert ran and {info for info, _ in ran} == {"warning "}
    assert any("cannot write the step outputs" in d for _, d in ran)


# --------------------------------------------------------------------------- the automatic summary


def test_unwritable_automatic_summary_is_a_warning(tmp_path):
    preds = SAMPLE / "well_calibrated.jsonl"
    env = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(tmp_path / "no" / "x.md")}
    result = run(["calibrate", preds, "-q", "--max-ece", "0.5"], env=env)
    assert result.exit_code == 0, result.stderr
    warning = f"{tmp_path / 'no' / 'x.md'}: cannot write the summary: folder {tmp_path / 'no'}"
    assert result.stderr.startswith(f"warning: {warning} does not exist; the job summary")
    assert f"::warning ::{warning} does not exist" in result.stderr
    assert result.stdout.startswith("Calibration")
    # the gate's verdict stands
    failed = run(["calibrate", preds, "-q", "--max-ece", "0.0001"], env=env)
    assert failed.exit_code == 1
    # an explicit --summary that cannot be written stays an error
    explicit = run(["calibrate", preds, "-q", "--summary", tmp_path / "no" / "y.md"], env=env)
    assert explicit.exit_code == 2
    assert explicit.stderr.startswith("Error: ")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_automatic_summary_failing_at_the_write_is_a_warning(tmp_path):
    preds = SAMPLE / "well_calibrated.jsonl"
    env = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": "/dev/full"}
    result = run(["calibrate", preds, "-q", "-o", tmp_path / "r.json"], env=env)
    assert result.exit_code == 0, result.stderr
    assert "warning: /dev/full: cannot write the summary: No space left" in result.stderr
    assert (tmp_path / "r.json").exists()  # the rest was written
    explicit = run(["calibrate", preds, "-q", "--summary", "/dev/full"])
    assert explicit.exit_code == 2


def test_automatic_summary_still_written(tmp_path):
    summary = tmp_path / "step.md"
    summary.write_text("earlier\n")
    env = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)}
    result = run(["calibrate", SAMPLE / "well_calibrated.jsonl", "-q"], env=env)
    assert result.exit_code == 0
    assert summary.read_text().startswith("earlier\n### calibcli calibrate")


# --------------------------------------------------------------------------- action.yml


def _fake_python(folder, tag, log):
    """A stand-in for a Python: ``-c`` prints its version and executable, ``-m venv DIR``
    makes a venv whose calibcli says which Python made it (and notes it in ``log``)."""
    path = folder / f"python{tag}"
    path.write_text(
        "#!/bin/bash\n"
        f'if [ "$1" = -c ]; then echo "{tag}.0 (fake) {path}"; exit 0; fi\n'
        'if [ "$1" = -m ] && [ "$2" = venv ]; then\n'
        f'  echo "$3" >> {log}\n'
        '  mkdir -p "$3/bin"\n'
        f'  printf \'#!/bin/bash\\necho "calibcli on {tag}"\\n\' > "$3/bin/calibcli"\n'
        "  printf '#!/bin/bash\\ntrue\\n' > \"$3/bin/python\"\n"
        '  chmod +x "$3/bin/calibcli" "$3/bin/python"\n'
        "fi\n"
    )
    path.chmod(0o755)
    return path


def test_each_python_gets_its_own_venv(tmp_path):
    log = tmp_path / "venvs.log"
    pythons = {v: _fake_python(tmp_path, v, log) for v in ("3.11", "3.12")}

    def setup(uses, with_, workspace):
        return {"python-path": str(pythons[with_["python-version"]])}

    temp = tmp_path / "runner_temp"
    temp.mkdir()
    runner = Runner(temp, runner_env(temp), setup, "")
    steps = load_action()["runs"]["steps"][:2]
    said = []
    for version in ("3.11", "3.12", "3.11"):
        done = runner.run_steps(steps, Context(inputs={"python-version": version}), {})
        assert done[1].code == 0, done[1].stderr
        said.append((done[1].stdout.strip(), done[1].outputs["bin"]))
    assert [s for s, _ in said] == ["calibcli on 3.11", "calibcli on 3.12", "calibcli on 3.11"]
    assert said[0][1] != said[1][1] and said[0][1] == said[2][1]
    assert len(log.read_text().splitlines()) == 2  # the third use found its venv


def _run_step(tmp_path, **inputs):
    """The action's run step with a calibcli that prints its arguments, one a line."""
    fake = tmp_path / "bin"
    fake.mkdir(exist_ok=True)
    (fake / "calibcli").write_text('#!/bin/bash\nprintf "%s\\n" "$@"\n')
    (fake / "calibcli").chmod(0o755)
    action = load_action()
    values = {name: str(spec.get("default", "")) for name, spec in action["inputs"].items()}
    values.update(inputs)
    (step,) = [s for s in action["runs"]["steps"] if s.get("id") == "calibcli"]
    context = Context(inputs=values, steps={"install": {"bin": str(fake)}})
    runner = Runner(tmp_path, runner_env(tmp_path / "temp"), None, "")
    (done,) = runner.run_steps([step], context, {})
    return done


def test_baseline_is_taken_as_files_are(tmp_path):
    (tmp_path / "eval").mkdir()
    for name in ("base.jsonl", "new.jsonl"):
        (tmp_path / "eval" / name).write_text("")
    block = _run_step(
        tmp_path, command="compare", baseline="eval/base.jsonl\n", files="eval/new.jsonl\n"
    )  # `baseline: |` and `files: |`, as YAML blocks end
    assert block.code == 0, block.stderr
    assert block.stdout.splitlines() == ["compare", "eval/base.jsonl", "eval/new.jsonl"]
    # a pattern reaches calibcli as written: it expands it as it expands a quoted one
    globbed = _run_step(
        tmp_path, command="compare", baseline=" eval/b*.jsonl ", files="eval/new.jsonl"
    )
    assert globbed.stdout.splitlines() == ["compare", "eval/b*.jsonl", "eval/new.jsonl"]
    two = _run_step(tmp_path, command="compare", baseline="eval/*.jsonl", files="eval/new.jsonl")
    assert two.code == 2
    assert two.commands == [
        "::error title=calibcli::the baseline input names 2 files; compare takes one (BASE)"
    ]
    blank = _run_step(tmp_path, files="eval/new.jsonl", baseline="\n")  # calibrate: no baseline
    assert blank.code == 0 and blank.stdout.splitlines() == ["calibrate", "eval/new.jsonl"]


def test_an_explicit_summary_after_an_automatic_one_in_one_process_is_still_explicit(tmp_path):
    """The automatic summary's path is this run's: a later run in the same process naming the
    same path with --summary writes it as asked, and fails (exit 2) where it cannot."""
    from harness import run as invoke

    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"confidence": 0.9, "correct": true}\n{"confidence": 0.2, "correct": false}\n')
    folder = tmp_path / "gone"
    folder.mkdir()
    target = folder / "summary.md"
    env = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(target)}
    assert invoke(["calibrate", rows, "-q"], env=env).exit_code == 0
    assert target.exists()
    folder.joinpath("summary.md").unlink()
    folder.rmdir()
    explicit = invoke(["calibrate", rows, "-q", "--summary", target], env={"GITHUB_ACTIONS": ""})
    assert explicit.exit_code == 2, explicit.stderr
