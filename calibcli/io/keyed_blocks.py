"""A native JSON Lines block of keyed rows decoded in one msgspec call, for ``compare``'s reader
(:mod:`calibcli.io.keyed`): each row's confidence, correctness and its id's raw JSON text, the
ids hashed as a column (:mod:`calibcli.io.keys`). A block that does not decode, check or hash
that way (an id with escapes, a fraction or an exponent, a bad row, a blank or indented line)
gives None, and is read line by line with the same rules, checks and messages."""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np

from calibcli.io.decode import struct_names_ok
from calibcli.io.keys import hash_packed, plain_ids
from calibcli.io.sources import is_utf8


class KeyedBlocks:
    """Decodes the blocks of native rows (``native``: their fields and checks,
    :class:`~calibcli.io.rows.CalibrationRow`) identified by ``id_field`` (``id`` when None)."""

    def __init__(self, native: Any, id_field: str | None) -> None:
        self.native = native
        self.field = id_field or "id"
        self._decoder: Any = False  # (decoder, its errors) once made; None: no such decoder

    def decoder(self) -> Any:
        """msgspec's decoder of a native row with its id as raw JSON text, and the errors it
        raises; None when the id is the confidence or correctness itself, or a name the struct
        cannot hold (:func:`~calibcli.io.decode.struct_names_ok`)."""
        if self._decoder is False:
            import msgspec

            fields, rename = self.native.struct_fields()
            # the id is the confidence or correctness itself, or a name is not one msgspec takes
            names = [*rename.values(), self.field]
            if self.field in rename.values() or not struct_names_ok(names):
                self._decoder = None
                return None
            row_type = msgspec.defstruct(
                "KeyedRow",
                [*fields, ("i", msgspec.Raw)],
                rename={**rename, "i": self.field},
                gc=False,
            )
            self._decoder = (
                msgspec.json.Decoder(row_type),
                (msgspec.DecodeError, msgspec.ValidationError, RecursionError),
            )
        return self._decoder

    def decode(self, view: memoryview, expected: int) -> tuple[Any, Any, Any] | None:
        """The ``expected`` rows of a block as (confidences, correctness, id hashes); None when
        the block must be read line by line."""
        found = self.decoder()
        if found is None or not is_utf8(view):  # line by line: each line's text is checked
            return None
        decoder, errors = found
        rows = None
        with contextlib.suppress(*errors):
            rows = decoder.decode_lines(view)
        if rows is None or len(rows) != expected:
            return None
        n = len(rows)
        conf = np.fromiter([r.c for r in rows], np.float64, n)
        if not self.native.columns_ok((conf,)):
            return None
        raws = [r.i for r in rows]
        lengths = np.fromiter(map(len, raws), np.int64, n)
        packed = b"".join(raws)
        if not plain_ids(packed, lengths):
            return None
        corr = np.frombuffer(bytes([r.y for r in rows]), np.bool_)
        return conf, corr, hash_packed(packed, lengths)
