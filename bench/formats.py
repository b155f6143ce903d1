"""calibcli's reading of lm-eval ``--log_samples`` rows and inspect-ai ``.json`` logs, beside
what a user would write instead (``make bench-formats``).

* lm-eval: 1M generated 4-choice rows (loglikelihoods logged as strings, as v0.4.3+ writes
  them) read by ``calibcli calibrate``, beside the naive loop (``json.loads`` per line, the
  fields pulled out in plain Python, the same ECE); and a loglikelihood_rolling set read by
  ``calibcli perplexity`` beside its naive loop. Whole processes, interleaved rounds, the median
  CPU seconds (user + system, ``os.wait4``); both sides' figures are checked to agree first.
* inspect-ai: a generated ``.json`` log of ~150 MB read by ``calibcli calibrate``: peak RSS over
  the file size and CPU seconds, for this checkout and for an earlier commit checked out with
  ``--before PATH`` (a ``git worktree`` of it), interleaved.

Every timed command is started by bench/run.py's small launcher process (``run_once``): a
child's ``ru_maxrss`` counts the process it was forked from, so forking the commands from this
one, which generated the inputs, would inflate their peak RSS.

The result replaces the section between ``<!-- formats:start -->`` and ``<!-- formats:end -->``
of BENCHMARKS.md (appended when missing).

    python bench/formats.py                       # 1M rows, 3 rounds
    python bench/formats.py --rows 200k --before /tmp/fmt-old
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))

from run import label, parse_size, run_once  # noqa: E402
from sections import write_section  # noqa: E402

START, END = "<!-- formats:start -->", "<!-- formats:end -->"

# The targets shown beside the figures: calibcli's CPU over the naive loop's on the
# lm-eval rows, the inspect-ai log's peak RSS over its file size, and the speed-up on that log
# over the --before checkout.
LM_EVAL_RATIO, INSPECT_RSS, INSPECT_SPEEDUP = 0.5, 1.5, 3.0


def verdict(ok: bool) -> str:
    return "met" if ok else "**missed**"


_CONTEXT = "Question: Which of these is the most likely outcome of the experiment?\nAnswer:"
_CHOICES = (" The sample melts.", " It stays the same.", " The mass doubles.", " It dissolves.")


def lm_eval_choice_rows(path: Path, rows: int, seed: int = 0) -> Path:
    """``rows`` 4-choice samples rows as lm-eval v0.4.3+ logs them (loglikelihoods as strings)."""
    rng = np.random.default_rng(seed)
    with open(path, "w") as f:
        for start in range(0, rows, 50_000):
            n = min(50_000, rows - start)
            lls = -rng.gamma(2.0, 2.0, (n, 4))
            gold = rng.integers(0, 4, n)
            lines = []
            for i, (row, g) in enumerate(zip(lls.tolist(), gold.tolist(), strict=True)):
                best = max(range(4), key=row.__getitem__)
                args = {
                    f"gen_args_{k}": {"arg_0": _CONTEXT, "arg_1": _CHOICES[k]} for k in range(4)
                }
                resps = [[repr(x), "False"] for x in row]
                lines.append(
                    json.dumps(
                        {
                            "doc_id": start + i,
                            "doc": {"question": "q", "choices": list(_CHOICES), "label": g},
                            "target": str(g),
                            "arguments": args,
                            "resps": [[r] for r in resps],
                            "filtered_resps": resps,
                            "filter": "none",
                            "metrics": ["acc", "acc_norm"],
                            "doc_hash": "0" * 64,
                            "prompt_hash": "1" * 64,
                            "target_hash": "2" * 64,
                            "acc": float(best == g),
                            "acc_norm": float(best == g),
                        }
                    )
                )
            f.write("\n".join(lines) + "\n")
    return path


def lm_eval_rolling_rows(path: Path, rows: int, seed: int = 1) -> Path:
    """``rows`` loglikelihood_rolling samples rows (wikitext's three metrics)."""
    rng = np.random.default_rng(seed)
    with open(path, "w") as f:
        for start in range(0, rows, 50_000):
            n = min(50_000, rows - start)
            words = rng.integers(20, 400, n)
            nbytes = words * 6 + rng.integers(0, 50, n)
            lls = -(nbytes * rng.uniform(0.4, 1.2, n))
            lines = []
            for i, (ll, w, b) in enumerate(
                zip(lls.tolist(), words.tolist(), nbytes.tolist(), strict=True)
            ):
                lines.append(
                    json.dumps(
                        {
                            "doc_id": start + i,
                            "doc": {"page": "text"},
                            "target": "text",
                            "arguments": {"gen_args_0": {"arg_0": "text"}},
                            "resps": [[repr(ll)]],
                            "filtered_resps": [repr(ll)],
                            "filter": "none",
                            "metrics": ["word_perplexity", "byte_perplexity", "bits_per_byte"],
                            "word_perplexity": [ll, w],
                            "byte_perplexity": [ll, b],
                            "bits_per_byte": [ll, b],
                        }
                    )
                )
            f.write("\n".join(lines) + "\n")
    return path


def inspect_log(path: Path, samples: int, seed: int = 2) -> Path:
    """An inspect-ai ``.json`` log of ``samples`` multiple-choice samples, each with its
    messages, events and the output's token logprobs (about 3 KB a sample)."""
    rng = np.random.default_rng(seed)
    letters = "ABCD"
    with open(path, "w") as f:
        f.write('{"version": 2, "status": "success", "eval": {"task": "toy_mc", "model": "m"},\n')
        f.write('"results": {"scores": []}, "samples": [\n')
        for i in range(samples):
            pick = int(rng.integers(0, 4))
            target = letters[int(rng.integers(0, 4))]
            lp = float(-rng.gamma(1.0, 0.5))
            tokens = [
                {"token": t, "logprob": float(-rng.gamma(1.0, 0.01)), "bytes": list(t.encode())}
                for t in ("ANSWER", ":", " ")
            ] + [{"token": letters[pick], "logprob": lp, "bytes": [ord(letters[pick])]}]
            for t in tokens:
                t["top_logprobs"] = [{"token": "x", "logprob": -9.5, "bytes": [120]}]
            question = f"Question {i}: which option holds? " + "lorem ipsum " * 20
            sample = {
                "id": i + 1,
                "epoch": 1,
                "input": question,
                "choices": ["one", "two", "three", "four"],
                "target": target,
                "messages": [
                    {"id": f"u{i}", "content": question, "source": "input", "role": "user"},
                    {"id": f"a{i}", "content": f"ANSWER: {letters[pick]}", "role": "assistant"},
                ],
                "output": {
                    "model": "m",
                    "choices": [
                        {
                            "message": {"content": f"ANSWER: {letters[pick]}", "role": "assistant"},
                            "stop_reason": "stop",
                            "logprobs": {"content": tokens},
                        }
                    ],
                    "completion": f"ANSWER: {letters[pick]}",
                    "usage": {"input_tokens": 60, "output_tokens": 4, "total_tokens": 64},
                },
                "scores": {
                    "choice": {
                        "value": "C" if letters[pick] == target else "I",
                        "answer": letters[pick],
                        "explanation": "ANSWER: " + letters[pick],
                    }
                },
                "metadata": {"subject": f"s{i % 7}"},
                "store": {},
                "events": [
                    {"event": "sample_init", "timestamp": "2026-12-01T00:00:00+00:00"},
                    {"event": "model", "input": [question], "output": "ANSWER: " + letters[pick]},
                ],
                "model_usage": {"m": {"input_tokens": 60, "output_tokens": 4}},
                "uuid": f"{i:022d}",
            }
            f.write(json.dumps(sample, indent=2) + (",\n" if i + 1 < samples else "\n"))
        f.write("]}\n")
    return path


# The naive loops: json.loads per line and the fields pulled out in plain Python, printing the
# figures calibcli reports so that both sides are checked to agree.
NAIVE_CHOICES = r"""
import json, math, sys
bins, n = 10, 0
count, conf_sum, corr_sum = [0] * bins, [0.0] * bins, [0] * bins
with open(sys.argv[1], "rb") as f:
    for line in f:
        row = json.loads(line)
        lls = [float(r[0]) for r in row["filtered_resps"]]
        top = max(lls)
        c = 1.0 / math.fsum(math.exp(x - top) for x in lls)
        y = row["acc"] == 1
        b = min(int(c * bins), bins - 1)
        count[b] += 1; conf_sum[b] += c; corr_sum[b] += y; n += 1
ece = sum(abs(corr_sum[b] - conf_sum[b]) for b in range(bins) if count[b]) / n
print(json.dumps({"n": n, "ece": ece}))
"""

NAIVE_ROLLING = r"""
import json, math, sys
n, nll, nbytes = 0, 0.0, 0
with open(sys.argv[1], "rb") as f:
    for line in f:
        row = json.loads(line)
        ll, count = row["byte_perplexity"]
        nll -= ll; nbytes += count; n += 1
print(json.dumps({"n": n, "bits_per_byte": nll / nbytes / math.log(2)}))
"""


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """CPU seconds (user + system) and peak RSS in MB of one run, through bench/run.py's
    launcher process, so that the peak RSS is the command's alone."""
    _, cpu, rss = run_once(argv, env)
    return cpu, rss


def output(argv: list[str], env: dict[str, str]) -> str:
    """The command's output (an untimed run, for the agreement check)."""
    done = subprocess.run(argv, capture_output=True, env=env)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}:\n{done.stderr.decode()}")
    return done.stdout.decode()


def compile_bytecode(checkout: Path) -> None:
    """Write this checkout's bytecode, as installing a wheel does: with PYTHONDONTWRITEBYTECODE
    set (as on this workplace) an editable checkout would otherwise compile its modules again in
    every timed process, a cost no installed calibcli pays and the naive loop (stdlib only)
    never does. A ``--before`` checkout is left as it is: compile it beforehand to compare."""
    python = checkout / ".venv" / "bin" / "python"
    subprocess.run([str(python), "-m", "compileall", "-q", str(checkout / "calibcli")], check=True)


def calibcli_at(checkout: Path) -> list[str]:
    """The calibcli command of a checkout with its own ``.venv`` (``make install``): its entry
    point, not ``python -m``, which would import calibcli from the working directory."""
    return [str(checkout / ".venv" / "bin" / "calibcli")]


def interleaved(
    sides: dict[str, list[str]], rounds: int, env: dict[str, str]
) -> dict[str, list[tuple]]:
    """Each side run once per round, in turn: (CPU s, peak RSS MB) per run."""
    runs: dict[str, list[tuple]] = {name: [] for name in sides}
    for r in range(rounds):
        for name, argv in sides.items():
            runs[name].append(timed(argv, env))
            cpu, rss = runs[name][-1]
            print(f"  round {r + 1} {name:<9} cpu {cpu:7.2f} s  {rss:6.0f} MB", file=sys.stderr)
    return runs


def median_cpu(runs: list[tuple]) -> float:
    return statistics.median(r[0] for r in runs)


def _agree(a: str, b: str, keys: tuple[str, ...]) -> None:
    """Both sides' figures (the first JSON object of each output) agree to 1e-9."""
    x = json.loads(a[a.index("{") :].split("\n")[0])
    y = json.loads(b[b.index("{") :].split("\n")[0])
    for key in keys:
        if not math.isclose(x[key], y[key], rel_tol=1e-9, abs_tol=1e-12):
            raise SystemExit(f"the two sides disagree on {key}: {x[key]} vs {y[key]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", default="1M", help="lm-eval multiple-choice rows (1M)")
    parser.add_argument("--rolling", default="500k", help="loglikelihood_rolling rows (500k)")
    parser.add_argument("--samples", type=int, default=40_000, help="inspect-ai log samples")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--before", type=Path, help="a checkout of an earlier commit (.venv)")
    parser.add_argument("--data", type=Path, help="folder for the generated inputs")
    parser.add_argument("--output", type=Path, default=ROOT / "BENCHMARKS.md")
    args = parser.parse_args()
    rows, rolling = parse_size(args.rows), parse_size(args.rolling)
    tmp = tempfile.TemporaryDirectory(dir=args.data)
    folder = Path(tmp.name)
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    now = calibcli_at(ROOT)
    before = calibcli_at(args.before) if args.before else None
    compile_bytecode(ROOT)
    one = ["--workers", "1"]
    lines = [
        START,
        "## lm-eval samples rows and inspect-ai logs (`make bench-formats`)",
        "",
        "Whole processes in interleaved rounds, median CPU seconds (user + system, `os.wait4`) "
        f"of {args.rounds} rounds; each pair's figures checked to agree first. calibcli reads "
        "with `--workers 1` (one process, as the naive loop), its bytecode compiled first as an "
        "installed wheel's is. Each command is started by bench/run.py's launcher process, so "
        "its peak RSS is its own.",
        "",
        "| input | calibcli | naive loop | ratio | target |" + (" before |" if before else ""),
        "|---|---|---|---|---|" + ("---|" if before else ""),
    ]
    cases = [
        (
            f"{label(rows)} 4-choice rows, `calibrate`",
            lm_eval_choice_rows(folder / "samples_mc_2026-01-01T00-00-00.jsonl", rows),
            "calibrate",
            NAIVE_CHOICES,
            ("n", "ece"),
        ),
        (
            f"{label(rolling)} loglikelihood_rolling rows, `perplexity`",
            lm_eval_rolling_rows(folder / "samples_roll_2026-01-01T00-00-00.jsonl", rolling),
            "perplexity",
            NAIVE_ROLLING,
            ("bits_per_byte",),
        ),
    ]
    for title, path, command, naive, keys in cases:
        sides = {
            "calibcli": [*now, command, "--json", *one, str(path)],
            "naive": [sys.executable, "-c", naive, str(path)],
        }
        if before:
            sides["before"] = [*before, command, "--json", *one, str(path)]
        _agree(output(sides["calibcli"], env), output(sides["naive"], env), keys)
        runs = interleaved(sides, args.rounds, env)
        cpu = {name: median_cpu(r) for name, r in runs.items()}
        ratio = cpu["calibcli"] / cpu["naive"]
        row = (
            f"| {title} | {cpu['calibcli']:.2f} s | {cpu['naive']:.2f} s | {ratio:.2f}× | "
            f"≤ {LM_EVAL_RATIO}×: {verdict(ratio <= LM_EVAL_RATIO)} |"
        )
        if before:
            row += f" {cpu['before']:.2f} s ({cpu['before'] / cpu['naive']:.2f}×) |"
        lines.append(row)
        print(row, flush=True)
        path.unlink()
    log = inspect_log(folder / "inspect.json", args.samples)
    size = log.stat().st_size / (1 << 20)
    sides = {"calibcli": [*now, "calibrate", "--json", str(log)]}
    if before:
        sides["before"] = [*before, "calibrate", "--json", str(log)]
    if before:
        _agree(output(sides["calibcli"], env), output(sides["before"], env), ("n", "ece", "brier"))
    runs = interleaved(sides, args.rounds, env)
    lines += [
        "",
        f"inspect-ai `.json` log, {args.samples:,} samples ({size:.0f} MB), `calibrate`:",
        "",
        "| | CPU | peak RSS | RSS / file size |",
        "|---|---|---|---|",
    ]
    for name, r in runs.items():
        rss = statistics.median(x[1] for x in r)
        lines.append(f"| {name} | {median_cpu(r):.2f} s | {rss:.0f} MB | {rss / size:.2f}× |")
        print(lines[-1], flush=True)
    rss = statistics.median(x[1] for x in runs["calibcli"]) / size
    lines += ["", f"Targets: peak RSS ≤ {INSPECT_RSS}× the file size: {rss:.2f}×, "]
    lines[-1] += verdict(rss <= INSPECT_RSS)
    if before:
        speedup = median_cpu(runs["before"]) / median_cpu(runs["calibcli"])
        lines[-1] += (
            f"; ≥ {INSPECT_SPEEDUP}× faster than before: {speedup:.2f}×, "
            f"{verdict(speedup >= INSPECT_SPEEDUP)}"
        )
    lines[-1] += "."
    lines.append(END)
    tmp.cleanup()
    write_section(args.output, "\n".join(lines) + "\n", START, END)


if __name__ == "__main__":
    main()
