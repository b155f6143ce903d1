"""Row ids: what identifies a row across files (compare's matching) and within one reading
(rows read twice). A native row has an id only when ``--id-field`` names one; an lm-eval row's
id is its task (from the file name) and ``doc_id``; an inspect-ai sample's its ``id``,
``epoch`` and its log's task and model (:func:`sample_scope`: inspect-ai numbers the samples of
every task 1..N, so logs of two tasks, or of two models run on one task, hold the same ids,
and two logs of one task and model are re-runs of its samples). Ids keep JSON types apart:
the number 1 and the string "1" are different ids; equal numbers are one id (1, 1.0 and 1e0);
a null or NaN id is refused."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from functools import partial
from operator import methodcaller
from typing import Any

OWN_IDS = ("lm-eval", "inspect-ai", "helm", "openai-evals")
"""The formats whose rows carry ids of their own (:func:`row_key`); other rows have an id only
when ``--id-field`` names one."""


def id_key(value: Any) -> Any:
    """A hashable id that keeps JSON types apart (1 and "1" are different ids) and folds equal
    numbers into one (5, 5.0 and 5e0 are one id, keyed as the integer 5), as compare's
    canonical bytes (:func:`~calibcli.io.keys.canonical_value`) do; a null id is refused, and
    so is a NaN id (NaN equals nothing, not even itself: no row could match it)."""
    if isinstance(value, bool):
        return ("literal", value)
    if isinstance(value, int):
        return ("number", value)
    if isinstance(value, float):
        if value != value:
            raise ValueError("is NaN, not a string or number")
        return ("number", int(value) if value.is_integer() else value)
    if isinstance(value, str):
        return ("string", value)
    if value is None:
        raise ValueError("is null, not a string or number")
    if isinstance(value, (dict, list)):
        kind = "an object" if isinstance(value, dict) else "a list"
        raise ValueError(f"is {kind}, not a string or number")
    why = getattr(value, "why", None)  # an integer of more digits than are read (LongInteger)
    if why is not None:
        raise ValueError(why())
    raise ValueError(f"is of type {type(value).__name__}, not a string or number")


def show_id(key: Any) -> str:
    """An id as the user wrote it (strings quoted, so 1 and "1" read differently)."""
    kind, value = key[0], key[-1]
    if kind == "evals":
        return show_id(key[1:3])  # the sample_id alone: the file named beside it says the model
    if kind == "string":
        return repr(value)
    if kind == "task":
        return f"{key[1]}/{show_id(key[2:])}"
    if kind == "sample":
        return f"{show_id(key[1:3])} (epoch {key[3]})"  # the file named beside it has the task
    if kind == "instance":
        shown = f"{show_id(key[1:3])} (trial {key[3]}"
        return shown + (f", {key[4]})" if key[4] else ")")
    if value is None:
        return "null"
    return str(value).lower() if isinstance(value, bool) else str(value)


def default_id_field(fmt: str) -> str:
    """The field an id error names: the registry's default id without the task or epoch."""
    from calibcli.io import default_id

    return (
        default_id(fmt)
        .removeprefix("task + ")
        .removesuffix(" + epoch")
        .removesuffix(" + train_trial_index")
    )


def row_key(
    formats: Any,
    row: dict,
    fmt: str,
    id_field: str | None,
    task: str | None,
    log_task: str | None = None,
) -> Any:
    """The id of a row: ``id_field``'s value, or the format's default id. ``task``: an lm-eval
    file's task; ``log_task``: what an inspect-ai, HELM or OpenAI evals row's id carries of its
    run (:func:`sample_scope`: a task, scenario or model), where runs of several tasks or
    models are read together (compare pairs two models' runs of one task without it)."""
    if id_field is not None:
        return id_key(formats.lookup(row, id_field))
    if fmt == "lm-eval":
        return ("task", task or "-", *id_key(formats.lookup(row, "doc_id")))
    if fmt == "inspect-ai":
        epoch = row.get("epoch", 1)
        key = ("sample", *id_key(formats.lookup(row, "id")), epoch)
        return key if log_task is None else (*key, log_task)
    if fmt == "openai-evals":
        key = ("evals", *id_key(formats.lookup(row, "sample_id")))
        return key if log_task is None else (*key, log_task)
    if fmt == "helm":
        perturbation = row.get("perturbation")
        name = perturbation.get("name") if isinstance(perturbation, dict) else None
        trial = row.get("train_trial_index", 0)
        key = ("instance", *id_key(formats.lookup(row, "instance_id")), trial, name)
        return key if log_task is None else (*key, log_task)
    if fmt == "openai" and "custom_id" in row and "response" in row:
        # a Batch API output line: its request (its own id is new each time a batch runs)
        return id_key(formats.lookup(row, "custom_id"))
    return id_key(formats.lookup(row, "id"))


def sample_scope(fmt: str | None, source: str) -> str | None:
    """What the ids of a run's rows carry besides their own id, where one run's ids are those
    of its other runs: an inspect-ai log's task, the last ``/`` part of its ``eval.task``
    (inspect-ai names a task ``inspect_evals/gpqa`` run from its package and ``gpqa`` run
    from its file, and re-runs of one task must share their ids; two packages' tasks of one
    name are then taken as one, which refuses rather than pools), with the model its run used
    (``gpqa (openai/gpt-4o)``: ``inspect eval gpqa --model a,b`` writes one log of the task
    per model, whose samples are no re-runs of each other's;
    :func:`~calibcli.io.inspect_log.log_model`); a HELM run's scenario and model
    (:func:`~calibcli.io.helm_spec.helm_scope`: HELM numbers every scenario's instances from
    ``id0``); an OpenAI evals log's model (:func:`~calibcli.io.evals_log.evals_model`: two
    models' logs of one eval share its sample ids). None for other formats, standard input,
    and a run that says none of it (its ids are then those of every such run)."""
    if source == "-":
        return None
    if fmt == "helm":
        from calibcli.io.helm_spec import helm_scope

        return helm_scope(source)
    if fmt == "openai-evals":
        from calibcli.io.evals_log import evals_model

        return evals_model(source)
    if fmt != "inspect-ai":
        return None
    from calibcli.io.inspect_log import log_model, log_task_name

    task, model = log_task_name(source), log_model(source)
    task = None if task is None else task.rpartition("/")[2] or task
    if model is None:
        return task
    return f"{task or '-'} ({model})"


SCOPED_KEYS = ("sample", "instance", "evals")
"""The kinds of id (:func:`row_key`) whose run's :func:`sample_scope` calibrate's ids carry."""


def identifier(fmt: str, id_field: str | None, source: str) -> Callable[[dict], Any] | None:
    """Row -> its id for rows of ``fmt`` read from ``source``: by ``id_field`` when given,
    else by the format's structural id (lm-eval, inspect-ai); None for native rows without an
    id field (they are never identified, so the fast path stays fast). The identifier's
    ``log_task`` is what the ids of the run's rows carry of it (:func:`sample_scope`)."""
    from calibcli import formats
    from calibcli.io.run_models import key_model

    if id_field is None and fmt not in OWN_IDS:
        return None
    task = formats.task_from_filename(source) if source != "-" else None
    model = key_model(source) if source != "-" and fmt == "lm-eval" else None
    if task is not None and model is not None:
        # two models' files of one task hold the same doc_ids without reading a row twice (the
        # runs these keys keep apart but may be one model's: calibcli.io.run_models)
        task = f"{task} ({model})"
    log_task = sample_scope(fmt, source)

    def ident(row: dict) -> Any:
        try:
            return row_key(formats, row, fmt, id_field, task, log_task)
        except ValueError as exc:
            field = id_field or default_id_field(fmt)
            text = str(exc)
            raise ValueError(
                f'id field "{field}" {text}' if text.startswith("is ") else text
            ) from None

    ident.log_task = log_task  # type: ignore[attr-defined]
    return ident


def id_hash(key: Any) -> int:
    """A stable 64-bit hash of an id (the same in every process and run)."""
    digest = hashlib.blake2b(repr(key).encode("utf-8", "backslashreplace"), digest_size=8)
    return int.from_bytes(digest.digest(), "little")


def id_hashes(keys: Any) -> Any:
    """:func:`id_hash` of each id, as a uint64 array: ``keys`` is a sequence of ids, or an
    object whose ``hashes()`` gives them (:class:`KeyColumn`)."""
    import numpy as np

    if hasattr(keys, "hashes"):
        return keys.hashes()
    if not len(keys):
        return np.zeros(0, np.uint64)
    return hash_texts(list(map(repr, keys)))


def question_of(key: Any) -> Any:
    """The question a row's id names: an inspect-ai sample's id with its epoch taken as 1 (its
    task kept), a HELM instance's with its train trial taken as 0 (the epochs or trials of one
    question share it, and a run of one keeps its ids); any other id as it is."""
    if type(key) is tuple:
        if key[0] == "sample" and key[3] != 1:
            return (*key[:3], 1, *key[4:])
        if key[0] == "instance" and key[3] != 0:
            return (*key[:3], 0, *key[4:])
    return key


def question_hashes(ids: Any, hashes: Any) -> Any:
    """The hash of each row's question (:func:`question_of`): ``hashes``, the ids' own, unless
    an inspect-ai sample of another epoch than 1 (or a HELM instance of another train trial
    than 0) is among them."""
    if hasattr(ids, "hashes") or all(question_of(key) is key for key in ids):
        return hashes
    return id_hashes([question_of(key) for key in ids])


def hash_texts(texts: list[str]) -> Any:
    """The 64-bit blake2b hash of each text's UTF-8 bytes (``backslashreplace``), as
    :func:`id_hash` hashes an id's repr: one encoding of the joined texts, then hashlib's C
    code called straight from ``map`` (the Python around each call is what costs)."""
    # a repr never holds a raw NUL (repr escapes it), so it separates the texts
    joined = "\x00".join(texts).encode("utf-8", "backslashreplace")
    parts = joined.split(b"\x00")
    if len(parts) != len(texts):  # a text that is no repr: each encoded alone
        parts = [t.encode("utf-8", "backslashreplace") for t in texts]
    return _digests(parts)


def _digests(parts: list[bytes]) -> Any:
    import numpy as np

    digest = partial(hashlib.blake2b, digest_size=8)
    return np.frombuffer(b"".join(map(methodcaller("digest"), map(digest, parts))), "<u8")


# id_key's kinds of the values whose ids KeyColumn builds without a call (a float is keyed by
# ``other``, which folds a whole number into its integer as id_key does)
_KINDS = {int: "number", str: "string"}


class KeyColumn:
    """The ids of a block's rows that share a prefix, such as lm-eval's ``("task", name)``:
    ``(*prefix, kind, value)`` with the kind of an int value ``"number"`` and of a string
    ``"string"`` (:func:`id_key`'s); other values (floats among them) are given to ``other``.
    The tuples are built only when one is asked for (a message); :meth:`hashes` hashes their
    reprs from the values' own."""

    def __init__(self, prefix: tuple, values: list, other: Callable[[Any], Any]) -> None:
        self.prefix = prefix
        self.values = values
        self.other = other

    def __len__(self) -> int:
        return len(self.values)

    def __getitem__(self, i: int) -> Any:
        value = self.values[i]
        kind = _KINDS.get(type(value))
        return (*self.prefix, kind, value) if kind is not None else self.other(value)

    def hashes(self) -> Any:
        values = self.values
        types = set(map(type, values))
        kinds = {_KINDS.get(t) for t in types}
        if len(kinds) != 1 or None in kinds:
            return hash_texts([repr(self[i]) for i in range(len(values))])
        # every repr is the same head, the value's repr and ")"
        head = repr((*self.prefix, kinds.pop(), 0))[:-2]
        sep = ")\x00" + head
        joined = (head + sep.join(map(repr, values)) + ")").encode("utf-8", "backslashreplace")
        parts = joined.split(b"\x00")
        if len(parts) != len(values):
            return hash_texts([repr(self[i]) for i in range(len(values))])
        return _digests(parts)


# The bits of the hashes' filter (SeenIds): 2**25 bits, 4 MB, so that most hashes new to a
# reading of a few million rows find their bit clear and are not searched for
_FILTER_BITS = 25


class SeenIds:
    """The ids read so far in one reading, with where each was read: the hashes in sorted runs
    (merged as a binary counter merges, so a look-up searches a logarithmic number of them),
    and each recorded batch's hashes and places in reading order, searched only to name the
    first row of a repeated id. A bit per value of a hash's top bits, set for every hash
    recorded, spares searching the runs for a hash whose bit is clear: it was never read."""

    def __init__(self) -> None:
        self._runs: list[Any] = []
        self._batches: list[tuple[str, Any, Any, list | None]] = []
        self._filter: Any = None

    def _slots(self, hashes: Any) -> tuple[Any, Any]:
        """Each hash's byte in the filter and its bit in that byte."""
        import numpy as np

        top = hashes >> np.uint64(64 - _FILTER_BITS)
        return top >> np.uint64(3), (top & np.uint64(7)).astype(np.uint8)

    def first_repeat(self, hashes: Any) -> int | None:
        """The index of the first of ``hashes`` read before: by an earlier batch, or earlier
        among ``hashes``; None when every one is new."""
        import numpy as np

        n = hashes.shape[0]
        if not n:
            return None
        repeat = np.zeros(n, np.bool_)
        if self._runs:
            byte, bit = self._slots(hashes)
            maybe = np.flatnonzero((self._filter[byte] >> bit) & 1)
            if maybe.shape[0]:
                wanted = hashes[maybe]
                for run in self._runs:
                    at = np.searchsorted(run, wanted)
                    np.minimum(at, run.shape[0] - 1, out=at)
                    repeat[maybe[run[at] == wanted]] = True
        if n > 1:
            order = np.argsort(hashes, kind="stable")
            ordered = hashes[order]
            repeat[order[1:][ordered[1:] == ordered[:-1]]] = True
        found = int(repeat.argmax())
        return found if repeat[found] else None

    def where(self, h: int, batch: tuple | None = None) -> tuple[str, Any] | None:
        """(source name, line or locator) of the first row read with hash ``h`` (in the
        recorded batches, or the first of ``batch`` when none has it)."""
        import numpy as np

        for entry in [*self._batches, *([batch] if batch is not None else [])]:
            name, hashes, lines, locators = entry
            hit = np.flatnonzero(hashes == np.uint64(h))
            if hit.shape[0]:
                j = int(hit[0])
                if locators is not None:
                    return name, locators[j]
                return name, None if lines[j] < 0 else int(lines[j])
        return None

    def record(self, name: str, hashes: Any, lines: Any, locators: list | None = None) -> None:
        """Add a batch of new ids (``lines``: int64, -1 for no line; ``locators``: each row's
        place in a whole document instead)."""
        import numpy as np

        self._batches.append((name, hashes, lines, locators))
        if self._filter is None:
            self._filter = np.zeros(1 << (_FILTER_BITS - 3), np.uint8)
        byte, bit = self._slots(hashes)
        np.bitwise_or.at(self._filter, byte, np.left_shift(1, bit, dtype=np.uint8))
        run = np.sort(hashes)
        runs = self._runs
        while runs and runs[-1].shape[0] <= run.shape[0]:
            run = np.sort(np.concatenate([runs.pop(), run]), kind="stable")  # merges two runs
        runs.append(run)
