"""A reading option given at another value than its default that the rows of no file read use
is said, once per option, naming what the formats read take instead: a misspelt or misplaced
option (--scorer on lm-eval rows, --confidence-field on inspect-ai ones) passed unnoticed, and
a CI gate then measured something other than what was asked. It is a warning (in --json's
warnings, on stderr, and annotated): the figures are those of the rows as read, unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from harness import run, write_jsonl

from calibcli.formats.registry import BY_NAME, OPTION_TOPICS, REGISTRY, unused_options

FIXTURES = Path(__file__).parent / "fixtures"
LM_EVAL = FIXTURES / "lm_eval"
MC = LM_EVAL / "samples_toy_mc_science_2026-11-29T18-50-52.260809.jsonl"
WIKITEXT = LM_EVAL / "samples_toy_wikitext_2026-11-29T18-50-52.260809.jsonl"
INSPECT = FIXTURES / "inspect_ai" / "toy_arithmetic.eval"
OPENAI = FIXTURES / "openai_choices" / "chat_mc.jsonl"

ROWS = [{"confidence": 0.05 + 0.9 * i / 59, "correct": i % 3 != 0} for i in range(60)]
NLL_ROWS = [{"nll": 2.0 + i, "tokens": 3 + i} for i in range(4)]

LM_CONFIDENCE = "lm-eval rows take their confidence from the choices' loglikelihoods"
LM_CORRECT = "lm-eval rows take their correctness from the document's gold choice"
NOT_USED = "; the option is not used"


def not_used(warnings):
    return [w for w in warnings if w.endswith(NOT_USED)]


def body(args):
    result = run([*args, "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout), result.stderr


def same_figures(plain, given, said):
    """``given`` is ``plain`` with the warnings ``said`` added, and nothing else changed."""
    assert not_used(given["warnings"]) == said
    assert [w for w in given["warnings"] if w not in said] == plain["warnings"]
    assert {k: v for k, v in given.items() if k != "warnings"} == {
        k: v for k, v in plain.items() if k != "warnings"
    }


@pytest.mark.parametrize(
    ("command", "options", "said"),
    [
        (
            ["calibrate", LM_EVAL],
            [
                *("--scorer", "nosuch", "--inspect-confidence", "first-token"),
                *("--gold-field", "nosuch", "--choices", "X,Y"),
            ],
            [
                f"--scorer nosuch: {LM_CORRECT}{NOT_USED}",
                f"--inspect-confidence first-token: {LM_CONFIDENCE}{NOT_USED}",
                f"--gold-field nosuch: {LM_CORRECT}{NOT_USED}",
                f"--choices X,Y: {LM_CONFIDENCE}{NOT_USED}",
            ],
        ),
        (
            ["calibrate", LM_EVAL],
            ["--confidence-field", "no_conf", "--correct-field", "no_right"],
            [
                f"--confidence-field no_conf: {LM_CONFIDENCE}{NOT_USED}",
                f"--correct-field no_right: {LM_CORRECT}{NOT_USED}",
            ],
        ),
        (
            ["calibrate", INSPECT, "--scorer", "match"],
            ["--mc-norm", "bytes"],
            [
                "--mc-norm bytes: inspect-ai rows take their confidence from the output's token "
                f"logprobs (--inspect-confidence){NOT_USED}"
            ],
        ),
        (
            ["perplexity", WIKITEXT],
            ["--nll-field", "z", "--tokens-field", "t", "--logprobs-field", "lp"],
            [
                f"--{o}-field {v}: lm-eval rows take their NLL from the harness's rolling "
                f"loglikelihood{NOT_USED}"
                for o, v in (("nll", "z"), ("tokens", "t"), ("logprobs", "lp"))
            ],
        ),
        (
            ["reliability", MC],
            ["--scorer", "s"],
            [f"--scorer s: {LM_CORRECT}{NOT_USED}"],
        ),
        (
            ["threshold", MC, "--target-accuracy", "0.5"],
            ["--mc-norm", "none", "--gold-field", "g"],  # --mc-norm is read: nothing said
            [f"--gold-field g: {LM_CORRECT}{NOT_USED}"],
        ),
        (
            ["calibrate", OPENAI, "--gold-field", "answer"],
            ["--mc-norm", "bytes", "--scorer", "s"],
            [
                "--mc-norm bytes: openai rows take their confidence from the answer token's "
                f"logprobs over --choices{NOT_USED}",
                f"--scorer s: openai rows take their correctness from --gold-field{NOT_USED}",
            ],
        ),
    ],
)
def test_an_option_no_file_read_uses_is_said_and_changes_nothing(command, options, said):
    plain, _ = body(command)
    given, stderr = body([*command, *options])
    same_figures(plain, given, said)
    assert [line for line in stderr.splitlines() if line.endswith(NOT_USED)] == [
        f"warning: {w}" for w in said
    ]


def test_the_harness_counts_are_kept_beside_a_named_nll_field():
    plain, _ = body(["perplexity", WIKITEXT])
    given, _ = body(["perplexity", WIKITEXT, "--nll-field", "z"])
    assert given["total_bytes"] == plain["total_bytes"] is not None
    assert given["word_perplexity"] == plain["word_perplexity"] is not None


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (
            ["--mc-norm", "bytes"],
            "--mc-norm bytes: jsonl rows take their confidence from --confidence-field",
        ),
        (
            ["--scorer", "s"],
            "--scorer s: jsonl rows take their correctness from --correct-field",
        ),
        (
            ["--inspect-confidence", "sequence"],
            "--inspect-confidence sequence: jsonl rows take their confidence from "
            "--confidence-field",
        ),
        (
            ["--choices", "A,B"],
            "--choices A,B: jsonl rows take their confidence from --confidence-field",
        ),
    ],
)
def test_native_rows_name_their_own_fields(tmp_path, options, said):
    path = write_jsonl(tmp_path / "rows.jsonl", ROWS)
    plain, _ = body(["calibrate", path])
    given, _ = body(["calibrate", path, *options])
    same_figures(plain, given, [said + NOT_USED])


def test_a_logprobs_field_beside_native_nll_rows_is_read(tmp_path):
    # native rows read their totals, and a list at --logprobs-field beside them is checked
    # against them, so the option is used: no warning says otherwise
    path = write_jsonl(tmp_path / "nll.jsonl", NLL_ROWS)
    given, _ = body(["perplexity", path, "--logprobs-field", "lp"])
    assert not_used(given["warnings"]) == []
    assert given["total_tokens"] == 3 + 4 + 5 + 6
    rows = [{"nll": 5.0, "tokens": 2, "lp": [-2.0, -9.0]}]
    bad = write_jsonl(tmp_path / "bad.jsonl", rows)
    result = run(["perplexity", bad, "--logprobs-field", "lp"])
    assert result.exit_code == 2
    assert f"{bad}:1: nll 5.0 and the 2 lp (sum -11.0) disagree" in result.stderr


@pytest.mark.parametrize(
    ("files", "options"),
    [
        ([MC], ["--mc-norm", "bytes"]),  # read
        ([INSPECT], ["--scorer", "match", "--inspect-confidence", "sequence"]),  # read
        ([OPENAI], ["--gold-field", "answer", "--choices", "A,B,C,D"]),  # read
        ([INSPECT, "--scorer", "match"], ["--mc-norm", "none"]),  # its default: nothing to say
        ([LM_EVAL], ["--confidence-field", "confidence", "--correct-field", "correct"]),
    ],
)
def test_options_read_or_at_their_default_say_nothing(files, options):
    given, _ = body(["calibrate", *files, *options])
    assert not_used(given["warnings"]) == []


def test_files_of_two_formats_an_option_one_reads_is_used(tmp_path):
    path = write_jsonl(tmp_path / "rows.jsonl", ROWS)
    given, _ = body(["calibrate", MC, path, "--mc-norm", "bytes", "--scorer", "s"])
    assert not_used(given["warnings"]) == [
        f"--scorer s: {LM_CORRECT}; jsonl rows take their correctness from --correct-field"
        f"{NOT_USED}"
    ]


def test_compare_says_it(tmp_path):
    result = run(["compare", MC, MC, "--scorer", "s", "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    assert not_used(json.loads(result.stdout)["warnings"]) == [
        f"--scorer s: {LM_CORRECT}{NOT_USED}"
    ]


def test_summarize_says_it_and_annotates_it(tmp_path):
    out = tmp_path / "s.cbs"
    result = run(["summarize", MC, "--scorer", "s", "-o", out, "--annotations", "github"])
    assert result.exit_code == 0, result.stderr
    said = f"--scorer s: {LM_CORRECT}{NOT_USED}"
    assert f"warning: {said}" in result.stderr.splitlines()
    assert f"::warning ::{said}" in result.stderr.splitlines()


def test_calibrate_annotates_it():
    result = run(["calibrate", MC, "--scorer", "s", "--annotations", "github", "-q"])
    assert result.exit_code == 0, result.stderr
    assert f"::warning ::--scorer s: {LM_CORRECT}{NOT_USED}" in result.stderr.splitlines()


# ----- the registry the warnings derive from


def test_every_format_says_what_it_takes_for_the_topics_it_does_not_read():
    """A format that carries a kind of rows reads an option of each topic of that kind, or says
    what its rows take instead; nothing else is left to a fallback."""
    kinds = {"confidence": "calibration", "correct": "calibration", "nll": "perplexity"}
    for fmt in REGISTRY:
        for option, topic in OPTION_TOPICS.items():
            if kinds[topic] in fmt.provides and option not in fmt.reads:
                assert topic in fmt.takes, (fmt.name, option)


def test_unused_options_by_hand():
    assert unused_options({"scorer": "s"}, ["inspect-ai"]) == []
    assert unused_options({"scorer": "s"}, []) == []  # no file read: nothing to judge
    assert unused_options({"by": "task"}, ["jsonl"]) == []  # not an option of a format
    assert unused_options({"choices": ["A", "B"]}, ["helm"]) == [
        "--choices A,B: helm rows take their confidence from the max_prob statistic" + NOT_USED
    ]
    assert "choices" in BY_NAME["openai-evals"].reads and "gold_field" in BY_NAME["openai"].reads
