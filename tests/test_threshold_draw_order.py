"""threshold's one answer per question is drawn from the rows as a multiset and the seed, never
from their order: the same rows in other files, another file order, another line order, or an
inspect-ai log's samples listed (or its .eval members stored) otherwise give a byte-identical
report and the same --min-coverage verdict. The draw stays uniform over a question's answers and
independent across questions: counted over many seeds and held against the chi-square law
(the survival function of an even number of degrees of freedom, in closed form here), and
against the documented rule written out with Python integers."""

from __future__ import annotations

import json
import math
import random
import zipfile

import numpy as np
import pytest
from harness import run, write_jsonl
from hypothesis import given
from hypothesis import strategies as st
from test_epochs import INSPECT

from calibcli.metrics import PredictionColumns, one_per_question

NATIVE = ("--all-runs", "--id-field", "id", "--target-accuracy", "0.75", "--min-coverage", "0.3")
INSPECTED = ("--scorer", "match", "--target-accuracy", "0.7", "--delta", "0.2")
INSPECTED += ("--min-coverage", "0.2")


def report(args):
    """The command's exit code and stdout (its JSON report), byte for byte."""
    result = run(["threshold", *map(str, args), "--json"])
    assert result.exit_code in (0, 1), result.stderr
    return result.exit_code, result.stdout


def two_runs(questions=60, seed=11):
    """Two runs of the same questions (ids q0..), each answering every question once, with
    answers of their own: confidences uniform in [0.5, 1), right with that probability."""
    rng = random.Random(seed)
    runs = []
    for _ in range(2):
        rows = []
        for i in range(questions):
            c = 0.5 + 0.5 * rng.random()
            rows.append({"id": f"q{i}", "confidence": c, "correct": rng.random() < c})
        runs.append(rows)
    return runs


def test_file_order_and_line_order_give_one_report(tmp_path, monkeypatch):
    first, second = two_runs()
    # the same file names in every directory, so the warnings naming them read alike
    orders = {"as_given": (first, second), "swapped": (second, first)}
    for name, (a, b) in orders.items():
        (tmp_path / name).mkdir()
        write_jsonl(tmp_path / name / "a.jsonl", a)
        write_jsonl(tmp_path / name / "b.jsonl", b)
    reports = []
    for name in orders:
        monkeypatch.chdir(tmp_path / name)
        reports.append(report(["a.jsonl", "b.jsonl", *NATIVE]))
    pooled = first + second
    for k in range(6):
        (tmp_path / f"shuffled{k}").mkdir()
        rows = pooled[:]
        random.Random(k).shuffle(rows)
        write_jsonl(tmp_path / f"shuffled{k}" / "runs.jsonl", rows)
    write_jsonl(tmp_path / "runs.jsonl", pooled)
    lines = []
    for where in ["", *(f"shuffled{k}" for k in range(6))]:
        monkeypatch.chdir(tmp_path / where)
        lines.append(report(["runs.jsonl", *NATIVE]))
    assert reports[0] == reports[1]
    assert all(r == lines[0] for r in lines), [r[0] for r in lines]
    body = json.loads(reports[0][1])
    assert body["guaranteed"]["one_per_question"] == {"questions": 60, "rows": 120, "seed": 0}


def epochs_samples(epochs=3, copies=3, seed=5):
    """The committed inspect-ai log's samples, each asked ``copies`` times under new ids
    (sample i's copy k has id i + 100 k), answered ``epochs`` times with answers of their own:
    the last token's log probability drawn per answer, and the score right with that
    probability. Returns the log without samples and the samples."""
    log = json.loads((INSPECT / "toy_arithmetic.json").read_text())
    log["eval"]["config"]["epochs"] = epochs
    rng = random.Random(seed)
    samples = []
    for k in range(copies):
        for s in log["samples"]:
            for e in range(1, epochs + 1):
                lp = -rng.uniform(0.0, 1.2)
                choice = json.loads(json.dumps(s["output"]["choices"][0]))
                choice["logprobs"]["content"][-1]["logprob"] = lp
                output = {**s["output"], "choices": [choice]}
                right = rng.random() < math.exp(lp)
                scores = {
                    **s["scores"],
                    "match": {**s["scores"]["match"], "value": "CI"[not right]},
                }
                samples.append(
                    {**s, "id": s["id"] + 100 * k, "epoch": e, "output": output, "scores": scores}
                )
    del log["samples"]
    return log, samples


def write_eval(path, log, samples):
    """An .eval archive of ``log`` whose sample members are stored in the order given."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        start = {k: log[k] for k in ("version", "eval", "plan") if k in log}
        z.writestr("_journal/start.json", json.dumps(start))
        for s in samples:
            z.writestr(f"samples/{s['id']}_epoch_{s['epoch']}.json", json.dumps(s))
        z.writestr("header.json", json.dumps(log))
    return path


@pytest.mark.parametrize("suffix", [".json", ".eval"])
def test_an_inspect_log_s_sample_order_gives_one_report(tmp_path, monkeypatch, suffix):
    log, samples = epochs_samples()
    orders = {"listed": samples, "reversed": samples[::-1]}
    for k in range(3):
        shuffled = samples[:]
        random.Random(k).shuffle(shuffled)
        orders[f"shuffled{k}"] = shuffled
    reports = {}
    for name, listed in orders.items():
        (tmp_path / name).mkdir()
        path = tmp_path / name / f"epochs{suffix}"
        if suffix == ".json":
            path.write_text(json.dumps({**log, "samples": listed}))
        else:
            write_eval(path, log, listed)
        monkeypatch.chdir(tmp_path / name)
        reports[name] = report([path.name, *INSPECTED])
    assert len(set(reports.values())) == 1, {k: r[0] for k, r in reports.items()}
    body = json.loads(reports["listed"][1])
    assert body["guaranteed"]["one_per_question"] == {"questions": 60, "rows": 180, "seed": 0}


def test_a_json_log_and_its_eval_archive_give_one_threshold(tmp_path):
    log, samples = epochs_samples()
    listed = tmp_path / "epochs.json"
    listed.write_text(json.dumps({**log, "samples": samples}))
    shuffled = samples[:]
    random.Random(3).shuffle(shuffled)
    stored = write_eval(tmp_path / "epochs.eval", log, shuffled)
    (code, text), (code_eval, text_eval) = (
        report([listed, *INSPECTED]),
        report([stored, *INSPECTED]),
    )
    # the warnings name the file; every figure and the verdict are the same
    body, body_eval = json.loads(text), json.loads(text_eval)
    assert code == code_eval
    assert {k: v for k, v in body.items() if k != "warnings"} == {
        k: v for k, v in body_eval.items() if k != "warnings"
    }


# --------------------------------------------------------------------------- the draw itself


def chi2_survival_even(x, df):
    """P(X >= x) for X chi-square with an even number ``df`` of degrees of freedom:
    exp(-x/2) · Σ_{i < df/2} (x/2)^i / i!."""
    half = x / 2
    return math.exp(-half) * sum(half**i / math.factorial(i) for i in range(df // 2))


def kept(right, wrong, conf_right, conf_wrong, seed):
    """The (key, right, confidence) answers ``one_per_question`` keeps, sorted."""
    right, wrong = np.array(right, np.uint64), np.array(wrong, np.uint64)
    columns = PredictionColumns(np.array(conf_right, float), np.array(conf_wrong, float))
    r, w = one_per_question(right, wrong, seed=seed, columns=columns)
    out = [(int(k), True, float(c)) for k, c in zip(right[r], columns.conf_correct[r], strict=True)]
    out += [(int(k), False, float(c)) for k, c in zip(wrong[w], columns.conf_wrong[w], strict=True)]
    return sorted(out)


def test_each_answer_of_a_question_is_kept_one_time_in_k():
    # question 7 of three answers (two wrong, one right), question 9 of three right ones: over
    # 3,000 seeds each answer is kept about 1,000 times, and the pairs of picks of the two
    # questions (9 cells) are uniform too, as independent draws give
    right = np.array([7, 9, 9, 9], np.uint64)
    wrong = np.array([7, 7], np.uint64)
    conf_right, conf_wrong = [0.9, 0.6, 0.7, 0.8], [0.2, 0.5]
    answers = {
        7: [(False, 0.2), (False, 0.5), (True, 0.9)],
        9: [(True, c) for c in (0.6, 0.7, 0.8)],
    }
    seeds = 3000
    counts = np.zeros((3, 3))
    for seed in range(seeds):
        got = kept(right, wrong, conf_right, conf_wrong, seed)
        assert [k for k, _, _ in got] == [7, 9]  # one answer of each question
        pick = [answers[k].index((ok, c)) for k, ok, c in got]
        counts[pick[0], pick[1]] += 1
    for margin in (counts.sum(axis=1), counts.sum(axis=0)):
        statistic = float(((margin - seeds / 3) ** 2 / (seeds / 3)).sum())
        assert chi2_survival_even(statistic, 2) > 1e-4, margin
    statistic = float(((counts - seeds / 9) ** 2 / (seeds / 9)).sum())
    assert chi2_survival_even(statistic, 8) > 1e-4, counts


def reference(right, wrong, conf_right, conf_wrong, seed):
    """The documented rule with Python integers: each question's answers listed wrong first,
    then right, each by increasing confidence; keep number h mod k,
    h = mix(key ^ mix(seed ^ 0x6F6E652D70657271))."""
    mask = (1 << 64) - 1

    def mix(z):
        z ^= z >> 30
        z = (z * 0xBF58476D1CE4E5B9) & mask
        z ^= z >> 27
        z = (z * 0x94D049BB133111EB) & mask
        return z ^ (z >> 31)

    questions = {}
    for k, c in zip(wrong, conf_wrong, strict=True):
        questions.setdefault(k, []).append((0, c))
    for k, c in zip(right, conf_right, strict=True):
        questions.setdefault(k, []).append((1, c))
    salt = mix(seed ^ 0x6F6E652D70657271)
    out = []
    for k, answers in questions.items():
        answers.sort()
        ok, c = answers[mix(k ^ salt) % len(answers)]
        out.append((k, bool(ok), c))
    return sorted(out)


answers = st.lists(
    st.tuples(
        st.integers(0, 5) | st.integers(0, 2**64 - 1),
        st.booleans(),
        st.sampled_from([0.1, 0.4, 0.4, 0.8, 1.0]),  # ties within a question
    ),
    max_size=40,
)


@given(rows=answers, seed=st.integers(0, 2**64 - 1), shuffle=st.randoms(use_true_random=False))
def test_the_draw_is_the_documented_rule_in_any_order(rows, seed, shuffle):
    def split(rows):
        right = [(k, c) for k, ok, c in rows if ok]
        wrong = [(k, c) for k, ok, c in rows if not ok]
        return (
            [k for k, _ in right],
            [k for k, _ in wrong],
            [c for _, c in right],
            [c for _, c in wrong],
        )

    expected = reference(*split(rows), seed)
    assert kept(*split(rows), seed) == expected
    shuffle.shuffle(rows)
    assert kept(*split(rows), seed) == expected


def test_signed_keys_are_read_by_their_bits():
    right, wrong = np.array([-1, 3], np.int64), np.array([-1], np.int64)
    as_unsigned = [np.array([2**64 - 1, 3], np.uint64), np.array([2**64 - 1], np.uint64)]
    for seed in range(20):
        signed = one_per_question(right, wrong, seed=seed)
        unsigned = one_per_question(*as_unsigned, seed=seed)
        assert all(np.array_equal(a, b) for a, b in zip(signed, unsigned, strict=True))


def test_columns_of_other_rows_are_refused():
    with pytest.raises(ValueError, match="columns hold 1 right and 0 wrong rows, not 2 and 0"):
        one_per_question([1, 2], [], columns=PredictionColumns(np.array([0.5]), np.zeros(0)))
