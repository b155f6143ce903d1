"""Row ids hashed a block at a time and rows read twice found with numpy: the hash values are
blake2b of each id's repr (written out here, not taken from calibcli), and a repeated id is
named at its first repeat in reading order, with the row it repeats."""

from __future__ import annotations

import hashlib
import json

import numpy as np
from harness import run

from calibcli.io.ids import KeyColumn, SeenIds, id_hashes, id_key


def blake(text: str) -> int:
    digest = hashlib.blake2b(text.encode("utf-8", "backslashreplace"), digest_size=8).digest()
    return int.from_bytes(digest, "little")


def test_hashes_are_blake2b_of_each_ids_text():
    keys = [("task", "mc", "number", 5), ("number", 1), ("string", "1"), ("literal", None)]
    texts = ["('task', 'mc', 'number', 5)", "('number', 1)", "('string', '1')", "('literal', None)"]
    assert id_hashes(keys).tolist() == [blake(t) for t in texts]


def test_a_key_column_hashes_as_its_tuples_would():
    def other(value):
        return ("task", "t\x00'", *id_key(value))

    head = "('task', \"t\\x00'\", "  # the task's repr, in double quotes for its "'"
    for values, texts in [
        ([0, 12, -3], ["'number', 0", "'number', 12", "'number', -3"]),
        # a whole float is keyed as its integer (1e300 is one: its exact digits)
        ([0.5, 1e300, 7], ["'number', 0.5", f"'number', {int(1e300)}", "'number', 7"]),
        (["a", "é\ud800"], ["'string', 'a'", "'string', 'é\\ud800'"]),
        (
            [1, "1", True, 2.0],
            ["'number', 1", "'string', '1'", "'literal', True", "'number', 2"],
        ),
    ]:
        column = KeyColumn(("task", "t\x00'"), values, other)
        assert column.hashes().tolist() == [blake(f"{head}{text})") for text in texts]
        assert column[0] == other(values[0])


def test_the_first_repeat_in_reading_order_is_found():
    seen = SeenIds()
    first = np.array([10, 20, 30], np.uint64)
    assert seen.first_repeat(first) is None
    seen.record("a", first, np.array([1, 2, 3], np.int64))
    for i in range(40):  # enough batches to merge runs
        batch = np.arange(100 + 10 * i, 110 + 10 * i, dtype=np.uint64)
        assert seen.first_repeat(batch) is None
        seen.record("b", batch, np.arange(10, dtype=np.int64))
    assert seen.first_repeat(np.array([7, 8, 8, 20], np.uint64)) == 2
    assert seen.first_repeat(np.array([7, 30, 9, 7], np.uint64)) == 1
    assert seen.where(30) == ("a", 3)
    assert seen.where(255) == ("b", 5)
    assert seen.where(7, ("c", np.array([7, 8], np.uint64), np.array([-1, 4]), None)) == ("c", None)


def test_first_repeats_of_random_hashes_match_a_set_of_those_read():
    # hashes over the whole 64 bits, some sharing their top bits with one read before but
    # differing below (the bit of their prefix is set, yet they are new)
    rng = np.random.default_rng(4)
    seen, read = SeenIds(), set()
    for _ in range(60):
        batch = rng.integers(0, 2**64 - 1, 300, dtype=np.uint64, endpoint=True)
        if read:
            old = np.array(sorted(read), np.uint64)
            near = old[rng.integers(0, old.shape[0], 40)] ^ rng.integers(1, 2**20, 40, np.uint64)
            batch[rng.integers(0, 300, 40)] = near
            if rng.random() < 0.5:
                batch[rng.integers(0, 300)] = old[rng.integers(0, old.shape[0])]
        if rng.random() < 0.2:
            batch[rng.integers(150, 300)] = batch[rng.integers(0, 150)]
        want, earlier = None, set(read)
        for i, h in enumerate(batch.tolist()):
            if h in earlier:
                want = i
                break
            earlier.add(h)
        assert seen.first_repeat(batch) == want
        if want is None:
            seen.record("x", batch, np.arange(300, dtype=np.int64))
            read.update(batch.tolist())


def choice_row(doc_id, lls=("-1.5", "-0.25", "-3.0", "-2.0"), acc=1.0):
    return json.dumps(
        {
            "doc_id": doc_id,
            "arguments": {f"gen_args_{k}": {"arg_0": "Q", "arg_1": f" c{k}"} for k in range(4)},
            "filtered_resps": [[x, "False"] for x in lls],
            "acc": acc,
            "doc": {"padding": "x" * 200},
        }
    )


def test_a_repeated_doc_id_far_into_a_large_file_is_named(tmp_path):
    # more than one 64 KB block of rows, so the typed block path reads them
    lines = [choice_row(i) for i in range(3000)]
    lines[2500] = choice_row(17)
    path = tmp_path / "samples_mc_2026-01-01T00-00-00.jsonl"
    path.write_text("\n".join(lines) + "\n")
    result = run(["calibrate", str(path), "-q"])
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        f"Error: {path}:2501: the row of id mc/17 was read before, at {path}:18: re-runs of a "
        "task, or the same rows in two files, would count twice (pass --all-runs to pool them "
        "on purpose)"
    )
    lines[2500] = choice_row(3000)
    path.write_text("\n".join(lines) + "\n")
    assert run(["calibrate", str(path), "-q"]).exit_code == 0


def test_a_repeat_found_by_a_worker_names_both_rows_by_their_lines_in_the_file(tmp_path):
    # with two processes the second reads the file's second half and numbers its lines from
    # the half's start: both rows named must still be the file's own line numbers
    lines = [choice_row(i) for i in range(3000)]
    lines[2500] = choice_row(2000)
    path = tmp_path / "samples_mc_2026-01-01T00-00-00.jsonl"
    path.write_text("\n".join(lines) + "\n")
    for workers in ("1", "2"):
        result = run(["calibrate", str(path), "-q", "--workers", workers])
        assert result.exit_code == 2
        assert result.stderr.strip() == (
            f"Error: {path}:2501: the row of id mc/2000 was read before, at {path}:2001: "
            "re-runs of a task, or the same rows in two files, would count twice (pass "
            "--all-runs to pool them on purpose)"
        )
