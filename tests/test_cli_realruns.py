"""What real runs leave behind, read with no flags: whole lm-eval output folders (generative and
rolling tasks skipped per file), every lm-eval layout, OpenAI and vLLM logprob dumps, inspect-ai
logs, and files of several formats at once.

Every expected figure is computed here in plain Python from the raw JSON of the input (softmax of
the logged loglikelihoods, sums of the listed logprobs, byte-list lengths, the harness's own
``acc`` per row, the results files of the harness) — never from calibcli's output. The realworld
tests read real harness output kept beside the checkout in ../shared/realworld and are skipped
when that folder is absent.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
from test_cli import run, write_jsonl

HERE = Path(__file__).resolve().parent
LM_EVAL = HERE / "fixtures" / "lm_eval"
INSPECT = HERE / "fixtures" / "inspect_ai"
REALWORLD = HERE.parents[1] / "shared" / "realworld"
needs_realworld = pytest.mark.skipif(not REALWORLD.is_dir(), reason="no ../shared/realworld")
STAMP = "2026-11-29T18-50-52.260809"

# A generate_until row as lm-eval 0.4.13 writes it (the layout of the harness's
# negotiationtom_intention samples), shortened: the request's second argument holds the
# generation settings and the filtered response is the generated text.
GENERATIVE_ROW = {
    "doc_id": 0,
    "doc": {"question": "Which intent does the utterance show?", "gold_labels": "Build-Rapport"},
    "target": "Build-Rapport",
    "arguments": {
        "gen_args_0": {
            "arg_0": "<|im_start|>user\nWhich intent does the utterance show?<|im_end|>\n",
            "arg_1": {"until": ["\n"], "max_gen_toks": 48, "do_sample": False, "temperature": 0.0},
        }
    },
    "resps": [["A  "]],
    "filtered_resps": ["A  "],
    "filter": "none",
    "metrics": ["exact_match"],
    "doc_hash": "11a87dfd94b1e56aec47d22c65dc9861545046dbd6bbeb21b70e562c15c2",
    "prompt_hash": "bfdd101dd921fab62863ea3660174a17210a7e830fd3c1b7527df7f387dc",
    "target_hash": "c3b517c505241876591fc1c889b845b9a91d30259195a836f8fcf5e34c01",
    "exact_match": 0.0,
}


def cli_json(args, code=0):
    result = run([*args, "--json"])
    assert result.exit_code == code, result.stderr
    return json.loads(result.stdout), result


def jsonl_rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def max_softmax(loglikelihoods: list[float]) -> float:
    top = max(loglikelihoods)
    return 1.0 / math.fsum(math.exp(x - top) for x in loglikelihoods)


def mc_expected(rows: list[dict]) -> tuple[int, float, float]:
    """(n, accuracy, mean confidence) of multiple-choice rows: the harness's ``acc``, and the
    largest softmax probability over the first half of the responses when the row also holds
    the unconditional half (``acc_mutual_info``)."""
    confs = []
    for row in rows:
        lls = [float(r[0]) for r in row["filtered_resps"]]
        if "acc_mutual_info" in row:
            lls = lls[: len(lls) // 2]
        confs.append(max_softmax(lls))
    return len(rows), sum(r["acc"] for r in rows) / len(rows), math.fsum(confs) / len(confs)


@pytest.fixture
def run_folder(tmp_path):
    """An lm-eval output folder: the committed fixtures plus a generative task's samples."""
    folder = tmp_path / "out"
    folder.mkdir()
    for path in LM_EVAL.glob(f"*_{STAMP}.json*"):
        shutil.copy(path, folder / path.name)
    rows = [{**GENERATIVE_ROW, "doc_id": i} for i in range(3)]
    write_jsonl(folder / f"samples_toy_gen_{STAMP}.jsonl", rows)
    return folder


def samples(folder: Path) -> list[Path]:
    return sorted(folder.glob("samples_*"))


# --------------------------------------------------------------------------- lm-eval folders


def test_calibrate_a_whole_run_folder_skips_generative_and_rolling_files(run_folder):
    files = samples(run_folder)
    report, result = cli_json(["calibrate", *files])
    gen = run_folder / f"samples_toy_gen_{STAMP}.jsonl"
    wiki = run_folder / f"samples_toy_wikitext_{STAMP}.jsonl"
    mc = [p for p in files if "toy_mc_" in p.name]
    n, accuracy, confidence = mc_expected([r for p in mc for r in jsonl_rows(p)])
    assert report["format"] == "lm-eval" and "formats" not in report
    assert report["n"] == n == 88
    assert report["accuracy"] == pytest.approx(accuracy, abs=1e-12)
    assert report["mean_confidence"] == pytest.approx(confidence, rel=1e-12)
    skipped = [
        f"{gen}: generative task: no probabilities; skipped",
        f"{wiki}: loglikelihood_rolling task: no choice loglikelihoods (read it with "
        "`perplexity`); skipped",
    ]
    assert report["warnings"][:2] == skipped
    lines = result.stderr.splitlines()
    # one line for the files read (the two multiple-choice ones); the skipped are warned about
    assert [line for line in lines if line.startswith("detected format")] == [
        "detected format: lm-eval (2 files)"
    ]
    for text in skipped:
        assert lines.count(f"warning: {text}") == 1
    quiet = run(["calibrate", *files, "-q"])
    assert "detected format" not in quiet.stderr


def test_calibrate_by_task_over_a_run_folder_matches_the_harness(run_folder):
    results = json.loads(next(run_folder.glob("results_*.json")).read_text())["results"]
    report, _ = cli_json(["calibrate", *samples(run_folder), "--by", "task", "-q"])
    assert list(report["groups"]) == ["toy_mc_science", "toy_mc_trivia"]
    for task, group in report["groups"].items():
        assert group["n"] == results[task]["sample_len"]
        assert group["accuracy"] == pytest.approx(results[task]["acc,none"], abs=1e-12)


def test_perplexity_of_a_run_folder_reads_only_the_rolling_task(run_folder):
    files = samples(run_folder)
    report, result = cli_json(["perplexity", *files])
    wiki = jsonl_rows(run_folder / f"samples_toy_wikitext_{STAMP}.jsonl")
    nll = math.fsum(-float(r["bits_per_byte"][0]) for r in wiki)
    nbytes = sum(int(r["bits_per_byte"][1]) for r in wiki)
    words = sum(int(r["word_perplexity"][1]) for r in wiki)
    assert report["format"] == "lm-eval" and report["sequences"] == len(wiki) == 20
    assert report["total_bytes"] == nbytes and report["total_words"] == words
    assert report["bits_per_byte"] == pytest.approx(nll / nbytes / math.log(2), rel=1e-12)
    assert report["word_perplexity"] == pytest.approx(math.exp(nll / words), rel=1e-12)
    skipped = [w for w in report["warnings"] if w.endswith("; skipped")]
    assert len(skipped) == 3
    assert any(w.endswith("generative task: no probabilities; skipped") for w in skipped)
    assert sum("multiple-choice task: no rolling loglikelihoods" in w for w in skipped) == 2
    assert result.stderr.count("; skipped\n") == 3


def test_nothing_left_after_skipping_is_invalid_input(run_folder):
    gen = run_folder / f"samples_toy_gen_{STAMP}.jsonl"
    result = run(["calibrate", gen])
    assert result.exit_code == 2
    (line,) = result.stderr.splitlines()
    assert line == (
        f"Error: {gen}: generative task: no probabilities: no calibration rows left to read"
    )
    wiki = run_folder / f"samples_toy_mc_trivia_{STAMP}.jsonl"
    result = run(["perplexity", wiki, gen, "-q"])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"Error: {wiki}: multiple-choice task: no rolling ")
    assert "and 1 other file(s) skipped too: no perplexity rows left to read" in result.stderr


def test_a_file_mixing_row_kinds_is_an_error(tmp_path):
    mc = jsonl_rows(LM_EVAL / f"samples_toy_mc_science_{STAMP}.jsonl")[:2]
    path = write_jsonl(tmp_path / "samples_mixed.jsonl", [*mc, GENERATIVE_ROW])
    result = run(["calibrate", path])
    assert result.exit_code == 2
    assert result.stderr.startswith(
        f"Error: {path}:3: a generate_until row in a file of multiple_choice rows"
    )


def test_v040_json_array_and_mid_2024_json_named_files(tmp_path):
    rows = jsonl_rows(LM_EVAL / f"samples_toy_mc_science_{STAMP}.jsonl")
    # v0.4.0-v0.4.2: one indented JSON array, loglikelihoods as numbers
    numeric = [
        {
            **r,
            "filtered_resps": [[float(ll), greedy == "True"] for ll, greedy in r["filtered_resps"]],
        }
        for r in rows
    ]
    array = tmp_path / "samples_toy_mc_science.json"
    array.write_text(json.dumps(numeric, indent=2), encoding="utf-8")
    # mid-2024: JSON Lines under a .json name, loglikelihoods as strings
    named = tmp_path / f"samples_toy_mc_science_{STAMP}.json"
    named.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    n, accuracy, confidence = mc_expected(rows)
    for path in (array, named):
        report, result = cli_json(["calibrate", path])
        assert result.stderr.startswith(f"detected format: lm-eval ({path})\n")
        assert report["n"] == n
        assert report["accuracy"] == pytest.approx(accuracy, abs=1e-12)
        assert report["mean_confidence"] == pytest.approx(confidence, rel=1e-12)
    # an error in an array element names the line the element starts on
    numeric[1]["filtered_resps"][0][0] = "oops"
    array.write_text(json.dumps(numeric, indent=2), encoding="utf-8")
    second = array.read_text().splitlines().index("  {", 2) + 1
    result = run(["calibrate", array])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"Error: {array}:{second}: filtered_resps[0] loglikelihood")


def test_pre_v040_rows(tmp_path):
    # 2023 pre-release rows: numeric loglikelihoods, one [context, continuation] pair logged
    rows = [
        {
            "doc_id": i,
            "doc": {"q": f"question {i}"},
            "target": " yes",
            "arguments": [f"question {i}", " yes"],
            "resps": [[[a, False]], [[b, False]]],
            "filtered_resps": [[a, False], [b, False]],
            "acc": acc,
        }
        for i, (a, b, acc) in enumerate([(-1.5, -0.25, 0), (-0.5, -3.0, 1), (-2.0, -2.5, 0)])
    ]
    path = write_jsonl(tmp_path / "_boolq.jsonl", rows)
    report, _ = cli_json(["calibrate", path])
    n, accuracy, confidence = mc_expected(rows)
    assert (report["n"], report["accuracy"]) == (n, pytest.approx(accuracy, abs=1e-15))
    assert report["mean_confidence"] == pytest.approx(confidence, rel=1e-12)


def test_files_of_several_formats_report_a_formats_map(tmp_path):
    science = LM_EVAL / f"samples_toy_mc_science_{STAMP}.jsonl"
    native = [{"confidence": 0.9, "correct": True}, {"confidence": 0.3, "correct": False}]
    path = write_jsonl(tmp_path / "native.jsonl", native)
    report, result = cli_json(["calibrate", science, path])
    assert report["format"] == "mixed"
    assert report["formats"] == {str(science): "lm-eval", str(path): "jsonl"}
    assert list(report)[2:4] == ["format", "formats"]
    n, accuracy, _ = mc_expected(jsonl_rows(science))
    assert report["n"] == n + 2
    assert report["accuracy"] == pytest.approx((accuracy * n + 1) / (n + 2), abs=1e-12)
    # only the non-native file is announced
    assert [ln for ln in result.stderr.splitlines() if ln.startswith("detected")] == [
        f"detected format: lm-eval ({science})"
    ]


def test_unknown_format_is_one_short_line_naming_the_closest(tmp_path):
    good = write_jsonl(tmp_path / "a.jsonl", [{"confidence": 0.5, "correct": True}])
    bad = write_jsonl(tmp_path / "b.jsonl", [{"question": "q", "answer": "a"}])
    result = run(["calibrate", good, bad])
    assert result.exit_code == 2
    (line,) = result.stderr.splitlines()
    prefix = f"Error: {bad}:1: "
    assert line.startswith(prefix + "cannot detect the input format (keys: 'question', 'answer')")
    assert len(line) - len(prefix) <= 200
    near = write_jsonl(tmp_path / "c.jsonl", [{"doc_id": 0, "resps": [[["-1.0", "False"]]]}])
    result = run(["calibrate", near])
    (line,) = result.stderr.splitlines()
    assert line == (
        f"Error: {near}:1: cannot detect the input format: closest is lm-eval, lacking "
        "'filtered_resps'; see --format and the --*-field options"
    )


# --------------------------------------------------------------------------- OpenAI, vLLM

CHAT = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "model": "gpt-4o-mini",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "Paris \u00e9t\u00e9"},
            "logprobs": {
                "content": [
                    {"token": "Paris", "logprob": -0.25, "bytes": [80, 97, 114, 105, 115]},
                    {"token": " \u00e9", "logprob": -1.5, "bytes": [32, 195, 169]},
                    {"token": "t\u00e9", "logprob": -0.0625, "bytes": [116, 195, 169]},
                ],
                "refusal": None,
            },
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12},
}


def chat_expected(responses: list[dict]) -> tuple[float, int, int]:
    """(total NLL, tokens, bytes) over every choice of chat responses."""
    tokens = [t for r in responses for c in r["choices"] for t in c["logprobs"]["content"]]
    nll = -math.fsum(t["logprob"] for t in tokens)
    return nll, len(tokens), sum(len(t["bytes"]) for t in tokens)


def test_perplexity_of_a_pretty_printed_chat_completion(tmp_path):
    path = tmp_path / "response.json"
    path.write_text(json.dumps(CHAT, indent=2), encoding="utf-8")
    report, result = cli_json(["perplexity", path])
    nll, tokens, nbytes = chat_expected([CHAT])
    assert result.stderr.startswith(f"detected format: openai ({path})\n")
    assert report["format"] == "openai"
    assert (report["sequences"], report["total_tokens"], report["total_bytes"]) == (
        1,
        tokens,
        nbytes,
    )
    assert report["total_nll"] == pytest.approx(nll, rel=1e-15)
    assert report["perplexity"] == pytest.approx(math.exp(nll / tokens), rel=1e-12)
    assert report["bits_per_byte"] == pytest.approx(nll / nbytes / math.log(2), rel=1e-12)
    assert (report["null_logprobs"], report["sentinel_logprobs"]) == (0, 0)


def test_perplexity_of_batch_api_output_and_legacy_completions(tmp_path):
    second = json.loads(json.dumps(CHAT))
    second["choices"][0]["logprobs"]["content"][1]["logprob"] = -3.0
    lines = [
        {
            "id": f"batch_req_{i}",
            "custom_id": f"req-{i}",
            "error": None,
            "response": {"status_code": 200, "request_id": f"r{i}", "body": body},
        }
        for i, body in enumerate([CHAT, second])
    ]
    batch = write_jsonl(tmp_path / "batch_output.jsonl", lines)
    report, _ = cli_json(["perplexity", batch, "-q"])
    nll, tokens, nbytes = chat_expected([CHAT, second])
    assert (report["sequences"], report["total_tokens"], report["total_bytes"]) == (
        2,
        tokens,
        nbytes,
    )
    assert report["total_nll"] == pytest.approx(nll, rel=1e-15)
    # legacy completions with echo and max_tokens=0: the first token has no logprob (null),
    # counted, not scored; usage says the prompt is every position echoed
    legacy = {
        "object": "text_completion",
        "usage": {"prompt_tokens": 3, "completion_tokens": 0, "total_tokens": 3},
        "choices": [
            {
                "text": "a b c",
                "index": 0,
                "finish_reason": "length",
                "logprobs": {
                    "tokens": ["a", " b", " c"],
                    "token_logprobs": [None, -0.5, -2.25],
                    "top_logprobs": None,
                    "text_offset": [0, 1, 3],
                },
            }
        ],
    }
    path = write_jsonl(tmp_path / "completions.jsonl", [legacy, legacy])
    report, result = cli_json(["perplexity", path])
    assert result.stderr.startswith(f"detected format: openai ({path})\n")
    assert (report["sequences"], report["total_tokens"], report["null_logprobs"]) == (2, 4, 2)
    assert report["total_nll"] == pytest.approx(2 * (0.5 + 2.25), rel=1e-15)
    assert "total_bytes" not in report and "bits_per_byte" not in report


def test_perplexity_of_a_vllm_prompt_logprobs_dump(tmp_path):
    outputs = [
        {
            "request_id": "0",
            "prompt": "a b c d",
            "prompt_token_ids": [7, 9, 42, 5],
            "prompt_logprobs": [
                None,
                {"9": {"logprob": -1.25, "rank": 1, "decoded_token": " b"}},
                {
                    "11": {"logprob": -0.1, "rank": 1, "decoded_token": " x"},
                    "42": {"logprob": -2.3, "rank": 4, "decoded_token": " c"},
                },
                {"5": {"logprob": -0.75, "rank": 2, "decoded_token": " d"}},
            ],
            "outputs": [{"index": 0, "text": "", "token_ids": [], "logprobs": None}],
        },
        {
            "request_id": "1",
            "prompt": "x y",
            "prompt_token_ids": [3, 4],
            "prompt_logprobs": [None, {"4": {"logprob": -0.5, "rank": 1, "decoded_token": " y"}}],
            "outputs": [{"index": 0, "text": "", "token_ids": [], "logprobs": None}],
        },
    ]
    path = tmp_path / "vllm_outputs.json"
    path.write_text(json.dumps(outputs, indent=1), encoding="utf-8")
    nll, tokens, nulls = 0.0, 0, 0
    for out in outputs:
        for token, position in zip(out["prompt_token_ids"], out["prompt_logprobs"], strict=True):
            if position is None:
                nulls += 1
            else:
                nll -= position[str(token)]["logprob"]
                tokens += 1
    report, result = cli_json(["perplexity", path])
    assert result.stderr.startswith(f"detected format: vllm ({path})\n")
    assert report["format"] == "vllm"
    assert (report["sequences"], report["total_tokens"], report["null_logprobs"]) == (
        2,
        tokens,
        nulls,
    )
    assert report["total_nll"] == pytest.approx(nll, rel=1e-15)
    assert report["perplexity"] == pytest.approx(math.exp(nll / tokens), rel=1e-12)


def test_logprob_dumps_are_calibration_input_only_with_a_gold_label(tmp_path):
    # an OpenAI response answering multiple choice is read with --gold-field
    # (tests/test_formats_choices.py); without one it is refused, saying so
    path = tmp_path / "response.json"
    path.write_text(json.dumps(CHAT, indent=2), encoding="utf-8")
    result = run(["calibrate", path])
    assert result.exit_code == 2
    assert result.stderr == (
        f"Error: {path}:1: an OpenAI response is a calibration row with its gold label: pass "
        "--gold-field PATH (the field holding the right option)\n"
    )


# --------------------------------------------------------------------------- inspect-ai


def inspect_expected(scorer: str) -> tuple[int, float, float, float]:
    """(n, accuracy, mean confidence, Brier) of the .json log, from its raw samples."""
    log = json.loads((INSPECT / "toy_arithmetic.json").read_text(encoding="utf-8"))
    conf, correct = [], []
    for sample in log["samples"]:
        content = sample["output"]["choices"][0]["logprobs"]["content"]
        conf.append(math.exp(math.fsum(t["logprob"] for t in content)))
        correct.append(sample["scores"][scorer]["value"] in ("C", 1))
    n = len(conf)
    brier = math.fsum((c - y) ** 2 for c, y in zip(conf, correct, strict=True)) / n
    return n, sum(correct) / n, math.fsum(conf) / n, brier


@pytest.mark.parametrize("name", ["toy_arithmetic.eval", "toy_arithmetic.json"])
@pytest.mark.parametrize("scorer", ["match", "exact_number"])
def test_inspect_ai_logs(name, scorer):
    path = INSPECT / name
    report, result = cli_json(["calibrate", path, "--scorer", scorer])
    n, accuracy, confidence, brier = inspect_expected(scorer)
    assert result.stderr.startswith(f"detected format: inspect-ai ({path})\n")
    assert report["format"] == "inspect-ai" and report["n"] == n == 20
    assert report["accuracy"] == pytest.approx(accuracy, abs=1e-12)
    assert report["mean_confidence"] == pytest.approx(confidence, rel=1e-12)
    assert report["brier"] == pytest.approx(brier, rel=1e-12)


def test_inspect_ai_needs_a_scorer_when_there_are_several():
    path = INSPECT / "toy_arithmetic.eval"
    result = run(["calibrate", path])
    assert result.exit_code == 2
    (line,) = result.stderr.splitlines()
    assert line == (
        f"Error: {path}:samples/1_epoch_1.json: the samples have 2 scorers (match, "
        "exact_number): choose one with --scorer NAME"
    )
    result = run(["calibrate", path, "--scorer", "nope"])
    assert result.exit_code == 2
    assert "no scorer 'nope' in 'scores' (scorers: match, exact_number)" in result.stderr


def test_inspect_ai_in_the_other_calibration_commands(tmp_path):
    path = INSPECT / "toy_arithmetic.json"
    n, _, _, _ = inspect_expected("match")
    report, _ = cli_json(["reliability", path, "--scorer", "match", "-q"])
    assert sum(report["reliability"]["count"]) == n
    calibrator = tmp_path / "cal.json"
    result = run(["fit", path, "--scorer", "match", "--method", "platt", "-q", "-o", calibrator])
    assert result.exit_code == 0, result.stderr
    assert json.loads(calibrator.read_text())["fitted_on"]["format"] == "inspect-ai"
    assert run(["perplexity", path]).exit_code == 2


def test_inspect_ai_threshold():
    pytest.importorskip("calibcli.metrics.selective")
    path = INSPECT / "toy_arithmetic.json"
    report, _ = cli_json(["threshold", path, "--scorer", "match", "--target-accuracy", "0.5", "-q"])
    assert report["format"] == "inspect-ai"


# --------------------------------------------------------------------------- realworld


def realworld_runs(folder: Path) -> list[tuple[str, dict]]:
    """(timestamp, results) of every results file of a folder."""
    return [
        (p.name.removeprefix("results_").removesuffix(".json"), json.loads(p.read_text()))
        for p in sorted(folder.glob("results_*.json"))
    ]


@needs_realworld
@pytest.mark.parametrize(
    "name",
    [
        "lmeval-pr1974-llama3-8b-bias",
        "lmeval-pr1974-llama3-8b-stereotype",
        "lmeval-pr3936-qwen3-8b-negotiationtom",
    ],
)
def test_realworld_run_folders_with_no_flags(name):
    folder = REALWORLD / name
    # every samples file of the folder at once: with --all-runs pooled over every run's
    # multiple-choice tasks; by default each task's newest run only
    rows, generative = 0, []
    correct = 0.0
    newest: dict[str, tuple[int, float]] = {}  # task -> (rows, correct) of its latest run
    for stamp, results in realworld_runs(folder):  # in time order
        for task, figures in results["results"].items():
            found = list(folder.glob(f"samples_{task}_{stamp}.json*"))
            if not found:
                continue  # a group's aggregate
            if "acc,none" not in figures:
                generative.append(found[0])
                continue
            size = len(found[0].read_text(encoding="utf-8").splitlines())
            rows += size
            correct += figures["acc,none"] * size
            newest[task] = (size, figures["acc,none"] * size)
    files = sorted(folder.glob("samples_*"))
    report, _ = cli_json(["calibrate", *files, "--all-runs"])
    assert report["format"] == "lm-eval"
    assert report["n"] == rows
    assert report["accuracy"] == pytest.approx(correct / rows, abs=1e-12)
    skipped = [w for w in report["warnings"] if w.endswith("; skipped")]
    assert sorted(skipped) == sorted(
        f"{p}: generative task: no probabilities; skipped" for p in generative
    )
    report, _ = cli_json(["calibrate", *files])
    n = sum(size for size, _ in newest.values())
    assert report["n"] == n
    assert report["accuracy"] == pytest.approx(sum(c for _, c in newest.values()) / n, abs=1e-12)
    reruns = [w for w in report["warnings"] if w.startswith("re-runs of")]
    assert len(reruns) == 1 and "--all-runs" in reruns[0]
    # one run at a time, by task: each task's accuracy is the harness's
    for stamp, results in realworld_runs(folder):
        files = sorted(folder.glob(f"samples_*_{stamp}.json*"))
        report, _ = cli_json(["calibrate", *files, "--by", "task", "-q"])
        for task, group in report["groups"].items():
            assert group["accuracy"] == pytest.approx(
                results["results"][task]["acc,none"], abs=1e-12
            )


@needs_realworld
def test_realworld_pre_v040_folder_with_no_flags():
    folder = REALWORLD / "lmeval-2023-bigrefactor-output"
    files = sorted(folder.glob("*.jsonl"))
    report, _ = cli_json(["calibrate", *files])
    mc, generative = [], []
    for path in files:
        rows = jsonl_rows(path)
        if rows and isinstance(rows[0]["filtered_resps"][0], list):
            mc += rows
        elif rows:
            generative.append(path)
    n, accuracy, confidence = mc_expected(mc)
    assert (report["n"], report["format"]) == (n, "lm-eval")
    assert report["accuracy"] == pytest.approx(accuracy, abs=1e-12)
    assert report["mean_confidence"] == pytest.approx(confidence, rel=1e-12)
    assert [w for w in report["warnings"] if w.endswith("; skipped")] == [
        f"{p}: generative task: no probabilities; skipped" for p in generative
    ]
    winogrande, _ = cli_json(["calibrate", folder / "_winogrande.jsonl", "-q"])
    reported = json.loads((folder / "w.json").read_text())["results"]["winogrande"]["acc,none"]
    assert winogrande["accuracy"] == reported


@pytest.mark.parametrize("workers", [1, 2])
def test_skipping_and_detection_with_worker_processes(run_folder, workers):
    from calibcli.io import read_calibration

    files = [str(p) for p in samples(run_folder)]
    data = read_calibration(files, workers=workers, block_size=4096, by="task")
    mc = [r for p in samples(run_folder) if "toy_mc_" in p.name for r in jsonl_rows(p)]
    n, accuracy, _ = mc_expected(mc)
    assert data.rows == n and data.fmt == "lm-eval"
    assert data.stats.total_accuracy == pytest.approx(accuracy, abs=1e-12)
    assert len(data.warnings) == 2 and sorted(data.groups) == ["toy_mc_science", "toy_mc_trivia"]
    assert data.formats == dict.fromkeys(files, "lm-eval")


def test_a_results_file_in_the_folder_is_skipped_with_a_warning(tmp_path):
    """`calibcli calibrate out/*`: the harness's results_*.json (aggregate figures, pretty
    printed) sits beside the samples files; it is skipped, not an error. Alone, nothing is left
    to read: exit 2."""
    shutil.copy(next(LM_EVAL.glob("samples_toy_mc_science_*.jsonl")), tmp_path)
    results = tmp_path / "results_2026-11-29T18-50-52.260809.json"
    results.write_text(
        json.dumps({"results": {"toy_mc_science": {"acc,none": 0.6875}}, "configs": {}}, indent=2)
    )
    files = sorted(str(p) for p in tmp_path.iterdir())
    result = run(["calibrate", *files, "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["n"] == 48 and report["accuracy"] == 33 / 48
    assert f"{results}: lm-eval results file" in result.stderr
    assert any(w.startswith(f"{results}: lm-eval results file") for w in report["warnings"])
    alone = run(["calibrate", str(results)])
    assert alone.exit_code == 2 and alone.stderr.count("\n") == 1
    assert "no calibration rows left to read" in alone.stderr


@pytest.mark.parametrize("rule", ["first-token", "mean-token"])
def test_inspect_ai_confidence_rules(rule):
    """--inspect-confidence: the first token's probability, or the geometric mean probability
    per token of the output, computed here from the raw .json log."""
    log = json.loads((INSPECT / "toy_arithmetic.json").read_text(encoding="utf-8"))
    conf, correct = [], []
    for sample in log["samples"]:
        logprobs = [t["logprob"] for t in sample["output"]["choices"][0]["logprobs"]["content"]]
        first, mean = math.exp(logprobs[0]), math.exp(math.fsum(logprobs) / len(logprobs))
        conf.append(first if rule == "first-token" else mean)
        correct.append(sample["scores"]["match"]["value"] in ("C", 1))
    brier = math.fsum((c - y) ** 2 for c, y in zip(conf, correct, strict=True)) / len(conf)
    path = INSPECT / "toy_arithmetic.eval"
    report, _ = cli_json(["calibrate", path, "--scorer", "match", "--inspect-confidence", rule])
    assert report["mean_confidence"] == pytest.approx(math.fsum(conf) / len(conf), rel=1e-12)
    assert report["brier"] == pytest.approx(brier, rel=1e-12)


@needs_realworld
def test_compare_two_real_runs_given_as_folders(tmp_path):
    """Two runs of the same suite, each a folder of its samples files: compare matches the
    rows by (task, doc_id), leaves the generative task out, and each side's accuracy, pooled
    and per task, is the harness's own for that run."""
    folder = REALWORLD / "lmeval-pr3936-qwen3-8b-negotiationtom"
    runs = dict(realworld_runs(folder))
    first, last = sorted(runs)[0], sorted(runs)[-1]
    sides = []
    for stamp in (first, last):
        side = tmp_path / stamp
        side.mkdir()
        for sample in folder.glob(f"samples_*_{stamp}.jsonl"):
            shutil.copy(sample, side / sample.name)
        sides.append(side)
    result = run(["compare", *sides, "--by", "task", "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    body = json.loads(result.stdout)
    scored = {
        task: r["acc,none"]
        for task, r in runs[first]["results"].items()
        if "acc,none" in r and task != "negotiationtom"
    }
    n = {task: runs[first]["n-samples"][task]["effective"] for task in scored}
    assert body["matched"] == sum(n.values()) and not body["unmatched_base"]
    assert sorted(body["groups"]) == sorted(scored)
    for stamp, side in ((first, "base"), (last, "new")):
        results = runs[stamp]["results"]
        pooled = body["figures"]["accuracy"][side]
        assert math.isclose(pooled, results["negotiationtom"]["acc,none"], rel_tol=1e-12)
        for task in scored:
            got = body["groups"][task]["figures"]["accuracy"][side]
            assert math.isclose(got, results[task]["acc,none"], rel_tol=1e-12), (stamp, task)
