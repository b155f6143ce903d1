"""A block's --by values named at once equal each value named on its own (group_name)."""

from __future__ import annotations

import random

from calibcli.io.rows import group_name, group_names


def test_strings_named_at_once_equal_each_named_alone():
    rng = random.Random(4)
    pool = ["physics", "1", "null", "true", '"quoted', "", "NaN", "ünïcode", "a|b", "\ud800", " 1 "]
    pool += [f"task_{k}" for k in range(300)]
    values = [rng.choice(pool) for _ in range(20_000)]
    names: dict[str, str] = {}
    assert group_names(values, names) == [group_name(v) for v in values]
    assert names == {v: group_name(v) for v in set(values)}
    # the remembered names serve the next block
    assert group_names(values[:50], names) == [group_name(v) for v in values[:50]]


def test_values_of_other_types_keep_their_own_names():
    # 1 and True are one key of a set but two groups; "1" is a third; 1.0 is the number 1
    # (equal numbers are one group, as they are one id), and -0.0, 0.0 and 0 are 0
    values = ["x", 1, 1.0, True, "1", None, -0.0, 0.0, 0, False, 2.5, 1e0, 2.0**53]
    assert group_names(values, {}) == [group_name(v) for v in values]
    assert group_names(values, {})[1:5] == ["1", "1", "true", '"1"']
    assert group_names(values, {})[6:9] == ["0", "0", "0"]
    # a whole float is named by its integer at any size, as ids are keyed: 1e16 and
    # 10000000000000000 are one group
    assert group_names(values, {})[10:] == ["2.5", "1", "9007199254740992"]
    assert group_name(1e16) == group_name(10**16) == "10000000000000000"


def test_an_object_or_a_list_sends_the_block_to_the_row_by_row_path():
    assert group_names(["a", {"k": 1}], {}) is None
    assert group_names(["a", [1, 2]], {}) is None
    assert group_names([], {}) == []


def test_coded_blocks_get_the_ids_of_their_names():
    import numpy as np

    from calibcli.summaries.rows import GroupCodes, GroupIndex

    # one reader's names grow block by block; another reader shares some of them
    names_a: list[str] = ["x", "y"]
    names_b: list[str] = ["y", "z"]
    index = GroupIndex()
    first = index.of(GroupCodes(np.array([1, 0, 1]), names_a))
    assert first.tolist() == [1, 0, 1] and index.names == ["x", "y"]  # ids in code order
    assert index.of(GroupCodes(np.array([1, 0]), names_b)).tolist() == [2, 1]
    names_a.append("w")
    assert index.of(GroupCodes(np.array([2, 0]), names_a)).tolist() == [3, 0]
    assert index.of(["z", "w", "v"]).tolist() == [2, 3, 4]
    assert index.names == ["x", "y", "z", "w", "v"]
    assert list(GroupCodes(np.array([2, 0]), names_a)) == ["w", "x"]
