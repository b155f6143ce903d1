"""inspect-ai samples to calibration columns through typed structs.

The samples of a ``.json`` log after its first come from :mod:`calibcli.io.inspect_log` as
``(struct, text)`` pairs, the struct holding only the fields read
(:func:`calibcli.formats.inspect_typed.sample_type`, with the top-level fields a ``--by`` or
``--id-field`` path starts from). :class:`InspectDecoder` takes each one's values, group and id
straight from the struct; a sample it cannot (one the row function refuses or reads in a
special way) is decoded whole from its text and read through
:class:`~calibcli.io.decode.BlockDecoder`'s dict path, which words every error. Rows are taken
in order and an error stops at its sample, so the values, groups, ids and messages are those of
the dict path either way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from msgspec import UNSET

from calibcli.errors import InputError
from calibcli.io.decode import BlockDecoder
from calibcli.io.rows import group_name

# id_key's kinds of the ids taken without a call (an int id is a number, a string a string); a
# float (a whole one is folded into its integer), boolean, null or any other id is keyed by the
# identifier itself
_ID_KINDS = {int: "number", str: "string"}


def read_fields(by: str | None, id_field: str | None) -> tuple[str, ...]:
    """The top-level fields an id or a group is looked up in: ``id`` and ``epoch`` (the
    default id), and each path's first name and the whole path (a key holding dots is matched
    whole first)."""
    names = ["id", "epoch"]
    for path in (by, id_field):
        if path is not None:
            names += [path, path.split(".", 1)[0]]
    return tuple(dict.fromkeys(names))


def typed_sample_type(by: str | None, id_field: str | None) -> Any:
    """The struct the samples of an inspect-ai log are decoded into for calibration with these
    settings, or None when a path starts from a field the struct holds typed (``scores``,
    ``output``): those samples are read as dicts."""
    from calibcli.formats import inspect_typed

    return inspect_typed.sample_type(read_fields(by, id_field))


class InspectDecoder(BlockDecoder):
    """A :class:`~calibcli.io.decode.BlockDecoder` of inspect-ai calibration rows whose
    :meth:`rows` also takes ``(struct, text)`` samples (see the module docstring)."""

    def __init__(
        self,
        spec: Any,
        *,
        convert: Callable[[dict], list[tuple]],
        key: Callable[[dict], Any] | None,
        ident: Callable[[dict], Any] | None,
        scorer: str | None,
        confidence: str,
        fields: tuple[str, ...],
        default_id: bool,
    ) -> None:
        super().__init__(spec, convert=convert, key=key, many=True, ident=ident)
        self.scorer = scorer
        self.confidence = confidence
        self.fields = fields
        self.default_id = default_id  # ident gives the format's own id, not --id-field's

    def rows(self, items: list[tuple[Any, Any]], name: str) -> tuple:
        from calibcli.formats import inspect_typed
        from calibcli.io.inspect_log import full_sample

        self.ids = ids = None if self.ident is None else []
        key, ident = self.key, self.ident
        # the default id (id + epoch) of a number or string id is built here; any other id, and
        # an --id-field's, by the identifier itself
        quick_id = ident is not None and self.default_id
        # the log's task and model, which its ids carry (calibcli.io.ids.sample_scope)
        task = getattr(ident, "log_task", None)
        tail = () if task is None else (task,)
        scorer, confidence = self.scorer, self.confidence
        modes = self.modes  # the converter's counts: typed and dict rows together
        values: list = []
        keys: list[str] | None = None if key is None else []
        where: list = []
        read = None
        values_of = inspect_typed.calibration_values
        for locator, row in items:
            if type(row) is tuple:
                sample = row[0]
                got = values_of(sample, scorer, confidence)
                if got is not None:
                    kind = _ID_KINDS.get(type(sample.id)) if quick_id else None
                    if kind is not None and key is None and ids is not None:
                        epoch = 1 if sample.epoch is UNSET else sample.epoch
                        ids.append(("sample", kind, sample.id, epoch, *tail))
                        values.append(got)
                        modes[got[2]] += 1
                        where.append(locator)
                        continue
                    if read is None:
                        read = inspect_typed.fields_reader(type(sample), self.fields)
                    taken = _keyed(read(sample), key, ident)
                    if taken is not None:
                        values.append(got)
                        modes[got[2]] += 1
                        where.append(locator)
                        if keys is not None:
                            keys.append(taken[0])
                        if ids is not None:
                            ids.append(taken[1])
                        continue
            try:
                if type(row) is tuple:  # the dict path words what the struct cannot give
                    row = full_sample(row[1])
                taken = self._take(row, values, keys)
            except ValueError as e:
                raise InputError(name, locator, str(e)) from None
            where.extend([locator] * taken)
        return self.spec.columns(values), keys, where


def _keyed(
    fields: dict[str, Any], key: Callable[[dict], Any] | None, ident: Callable[[dict], Any] | None
) -> tuple[Any, Any] | None:
    """(group name, id) of a sample from its top-level ``fields`` (None for what is not
    asked), or None where either raises: the dict path then words the error."""
    try:
        group = None if key is None else group_name(key(fields))
        return group, None if ident is None else ident(fields)
    except (ValueError, RecursionError):
        return None


def side_modes(logs: Iterable[str], options: dict[str, Any]) -> tuple | None:
    """(display name, samples taken by the answer letter's probability, samples taken by the
    whole completion's) of each inspect-ai log of ``logs`` read with ``--inspect-confidence
    auto`` (and ``options``' scorer and bounds), its samples read again
    (:func:`calibcli.formats.inspect_sample_taken`): rows read by
    :func:`calibcli.read_predictions` keep only the mode their files joined to. None when a log
    cannot be read again (standard input)."""
    from calibcli.formats import inspect_sample_taken
    from calibcli.io.records import records
    from calibcli.io.sources import display_name

    logs = list(logs)
    if "-" in logs:
        return None
    bounds = {k: options[k] for k in ("max_line_bytes", "max_document_bytes") if k in options}
    scorer = options.get("scorer")
    found = []
    for path in logs:
        answer = sequence = 0
        for _, _, sample, _ in records(path, **bounds):
            if inspect_sample_taken(sample, scorer=scorer)[1] == "answer-token":
                answer += 1
            else:
                sequence += 1
        found.append((display_name(path), answer, sequence))
    return tuple(found)
