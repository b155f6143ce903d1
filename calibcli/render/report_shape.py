"""What a report body must hold before a renderer draws it, and the gate's verdict as shown.

``calibcli render`` draws a saved report, which may have been edited or relabelled since
calibcli wrote it. The renderers read a body leniently (a missing figure shows as n/a), so a
body that lacks what its command's page is about, holds a figure of the wrong JSON type, or
carries a gate whose verdict contradicts its own checks would be drawn as something calibcli
never said. :func:`check_shape` refuses such a body with :class:`NotAReport`, naming the field;
the fields it requires are those each command's renderers read for the page's headline, and the
figures it types are the registry's (:data:`calibcli.reports.BY_COMMAND`), so a figure added
there is checked here too.

:func:`gate_passed` is the verdict every renderer shows: passed only when the gate says so and
it holds checks that all passed, which is how calibcli computes it. A check recording
``"decides": false`` (the pooled figures of several models' rows beside --gate-each's --by model
groups) is shown failed closed and left out of the verdict.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from calibcli.reports import BY_COMMAND, decides, has, lookup


class NotAReport(ValueError):
    """The data is not a calibcli report this renderer reads; the message says why."""


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _is_count(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


NUMBER = ("a number", _is_number)
FIGURE = ("a number or null", lambda v: v is None or _is_number(v))
COUNT = ("a whole number ≥ 0", _is_count)
COUNT_OR_NULL = ("a whole number ≥ 0 or null", lambda v: v is None or _is_count(v))
TEXT = ("a string", lambda v: isinstance(v, str))
FLAG = ("true or false", lambda v: isinstance(v, bool))
OBJECT = ("an object", lambda v: isinstance(v, dict))
OBJECT_OR_NULL = ("an object or null", lambda v: v is None or isinstance(v, dict))
Kind = tuple[str, Callable[[Any], bool]]

# The fields each command's page cannot do without: what its title's facts and its headline
# read. Other fields are optional, and typed when present.
REQUIRED: dict[str, dict[str, Kind]] = {
    "calibrate": {"n": COUNT, "ece": FIGURE, "reliability": OBJECT},
    "reliability": {"n": COUNT, "ece": FIGURE, "reliability": OBJECT},
    "threshold": {
        "n": COUNT,
        "target_accuracy": NUMBER,
        "delta": NUMBER,
        "method": TEXT,
        "guaranteed": OBJECT_OR_NULL,  # null: no rows, so no threshold to choose
        "plug_in": OBJECT_OR_NULL,
    },
    "perplexity": {"sequences": COUNT, "total_tokens": COUNT},
    "compare": {
        "paired": FLAG,
        "n_base": COUNT,
        "n_new": COUNT,
        "figures": OBJECT_OR_NULL,  # null: no rows to compare
    },
    "fit": {"method": TEXT, "n": COUNT, "params": OBJECT},
    "calibrator": {"method": TEXT, "params": OBJECT, "fitted_on": OBJECT},
}

# what a paired comparison's sentence reads besides
PAIRED: dict[str, Kind] = {
    "id_field": TEXT,
    "matched": COUNT,
    "unmatched_base": COUNT,
    "unmatched_new": COUNT,
}


def _shown(value: Any) -> str:
    """A value as the error shows it: its JSON, cut short, in ASCII."""
    said = json.dumps(value, ensure_ascii=True, default=str)
    return said if len(said) <= 40 else said[:37] + "..."


def _field(path: str, value: Any, kind: Kind) -> None:
    what, ok = kind
    if not ok(value):
        raise NotAReport(f"{path} is {_shown(value)}, not {what}")


def _name(parent: str, key: Any) -> str:
    """A field's path as the error names it (``groups["law"].ece``)."""
    return f"{parent}[{json.dumps(key, ensure_ascii=True)}]"


def _figures(kind: str, section: Mapping[str, Any], where: str) -> None:
    """Each figure of the command's registry that ``section`` holds is a number (a count a
    whole number) or null."""
    for figure in BY_COMMAND.get(kind, ()):
        if has(section, figure.key):
            count = figure.kind in ("count", "bins")
            _field(
                where + figure.key, lookup(section, figure.key), COUNT_OR_NULL if count else FIGURE
            )


def _groups(kind: str, body: Mapping[str, Any]) -> None:
    groups = body.get("groups")
    if groups is None or kind in ("fit", "calibrator"):
        return
    _field("groups", groups, OBJECT)
    for name, group in groups.items():
        where = _name("groups", name)
        _field(where, group, OBJECT)
        _figures(kind, group, where + ".")  # compare's groups hold differences: none typed


def _compare(body: Mapping[str, Any]) -> None:
    if body["paired"]:
        for key, kind in PAIRED.items():
            _field(key, body.get(key), kind)
    for key, row in (body["figures"] or {}).items():
        where = _name("figures", key)
        _field(where, row, OBJECT)
        for part in ("base", "new", "difference"):
            _field(f"{where}.{part}", row.get(part), FIGURE)
    sides = body.get("sides")  # older reports of this schema have none
    if sides is None:
        return
    _field("sides", sides, OBJECT)
    for side, found in sides.items():
        where = _name("sides", side)
        _field(where, found, OBJECT)
        _figures("calibrate", found, where + ".")


def check_gate(gate: Any) -> None:
    """A gate holds checks, each passed or not, and passed exactly when those that decide
    (all but the failed ones recording ``"decides": false``) did; raises :class:`NotAReport`
    naming what is wrong otherwise."""
    _field("gate", gate, OBJECT)
    _field("gate.passed", gate.get("passed"), FLAG)
    checks = gate.get("checks")
    if not isinstance(checks, list) or not checks:
        raise NotAReport(f"gate.checks is {_shown(checks)}, not a non-empty list of checks")
    for i, check in enumerate(checks):
        _field(f"gate.checks[{i}]", check, OBJECT)
        _field(f"gate.checks[{i}].metric", check.get("metric"), TEXT)
        _field(f"gate.checks[{i}].passed", check.get("passed"), FLAG)
        _field(f"gate.checks[{i}].value", check.get("value"), FIGURE)
        limit = "minimum" if "minimum" in check else "threshold"
        _field(f"gate.checks[{i}].{limit}", check.get(limit), NUMBER)
        if "decides" in check:
            _field(f"gate.checks[{i}].decides", check["decides"], FLAG)
            if check["decides"] is False and check["passed"] is not False:
                raise NotAReport(
                    f"gate.checks[{i}] decides nothing but passed is true: a check shown "
                    "beside the verdict never reads as a pass"
                )
            if check["decides"] is False and ("group" in check or "reason" not in check):
                raise NotAReport(
                    f"gate.checks[{i}] decides nothing but is a group's, or not failed closed: "
                    "only the pooled figures' checks, failed closed, are shown beside the verdict"
                )
    deciding = [c for c in checks if decides(c)]
    if not deciding:
        raise NotAReport("gate.checks holds no check that decides the gate's verdict")
    failed = sum(1 for c in deciding if c["passed"] is not True)
    if gate["passed"] != (failed == 0):
        said = "true" if gate["passed"] else "false"
        raise NotAReport(
            f"gate.passed is {said} but {failed:,} of {len(deciding):,} checks failed: the "
            "gate contradicts its own checks"
        )


def check_shape(kind: str, body: Mapping[str, Any]) -> None:
    """Raise :class:`NotAReport` naming the first field of ``body`` (a report of command
    ``kind``, or ``calibrator``) that is missing or of the wrong JSON type."""
    for key, field_kind in REQUIRED[kind].items():
        if key not in body:
            raise NotAReport(f"it has no {key!r}, which a {kind} report holds")
        _field(key, body[key], field_kind)
    _figures(kind, body, "")
    if kind == "compare":
        _compare(body)
    warnings = body.get("warnings")
    if warnings is not None:
        _field("warnings", warnings, ("a list of strings", _strings))
    if body.get("gate") is not None:
        check_gate(body["gate"])
    _groups(kind, body)


def _strings(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(w, str) for w in v)


def gate_passed(gate: Any) -> bool:
    """The verdict a renderer shows for ``gate``: passed only when it says so and holds checks
    that decide, all passed (a gate that contradicts its own checks is shown failed)."""
    if not isinstance(gate, Mapping) or gate.get("passed") is not True:
        return False
    checks = gate.get("checks")
    if not isinstance(checks, list) or not all(isinstance(c, Mapping) for c in checks):
        return False
    deciding = [c for c in checks if decides(c)]
    return bool(deciding) and all(c.get("passed") is True for c in deciding)
