"""Block decoding of lm-eval samples rows through typed structs.

A block is decoded in one ``decode_lines`` call into structs holding only the fields read
(:mod:`calibcli.formats.lm_eval_columns`), and its columns are computed for the whole block at
once. Multiple-choice blocks go first to the number decoder, which parses the loglikelihood
strings itself; a block it leaves goes to the strict decoder, which keeps them as text and
checks each as the row function does. Any block the typed path does not take whole (a row the
structs refuse, a value the column functions leave to the row functions, empty lines, a
grouping other than the file's task or model) is read by
:class:`~calibcli.io.decode.BlockDecoder`'s dict path, which words every error: the values,
ids, groups and messages are those of the dict path either way.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable, Iterator
from operator import attrgetter
from typing import Any

from calibcli.io.decode import SMALL_BLOCK, BlockDecoder
from calibcli.io.ids import KeyColumn
from calibcli.io.rows import group_name
from calibcli.io.sources import is_utf8

# the doc_id types whose ids KeyColumn builds itself (id_key's integer and string); any other
# doc_id (a float, whose whole number is folded into its integer) is keyed by the identifier
_ID_TYPES = {int, str}
_DOC_ID = attrgetter("doc_id")


@contextlib.contextmanager
def _no_collection() -> Iterator[None]:
    """The cyclic garbage collector paused: a block's rows are thousands of lists, tuples and
    structs that hold no cycle and are freed together when the block is done, and the
    collections their allocation would start find nothing to free (a tenth of the CPU)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


class LmEvalBlockDecoder(BlockDecoder):
    """A :class:`~calibcli.io.decode.BlockDecoder` of lm-eval rows (``kind``:
    ``"multiple_choice"`` or ``"loglikelihood_rolling"``) with a typed path for whole blocks.

    ``group`` is the one group of every row of the source (``--by task`` or ``--by model`` from
    the file name), computed by calling ``key``; ``ident`` keys each row by its ``doc_id``;
    ``target_delimiter`` is the task's, which length normalisation takes off each choice."""

    def __init__(
        self,
        spec: Any,
        *,
        kind: str,
        mc_norm: str,
        target_delimiter: str = " ",
        convert: Callable[[dict], list[tuple]],
        key: Callable[[dict], Any] | None,
        ident: Callable[[dict], Any] | None,
        constant_key: bool,
    ) -> None:
        super().__init__(spec, convert=convert, key=key, many=True, ident=ident)
        self.kind = kind
        self.mc_norm = mc_norm
        self.target_delimiter = target_delimiter
        self.constant_key = constant_key
        self._typed_decoder: Any = None
        self._number_decoder: Any = None

    def block(
        self,
        block: memoryview,
        first_line: int,
        name: str,
        expected: int,
        consecutive: bool = False,
    ) -> tuple:
        got = None
        typed = self._typed_decoder is not None or len(block) >= SMALL_BLOCK
        # a block that is not UTF-8 goes the checked way: msgspec skips the fields not read
        if consecutive and typed and is_utf8(block):
            with _no_collection():
                got = self._typed(block, expected)
        if got is None:
            return super().block(block, first_line, name, expected, consecutive)
        return got

    def _typed(self, block: memoryview, expected: int) -> tuple | None:
        if self._typed_decoder is None:
            self._load_typed()
        found = None
        if self._number_decoder is not None:
            found = self._decode(self._number_decoder, self._number_columns, block, expected)
            if found is None:
                # a source logging what the number decoder leaves to the strict one (greedy
                # flags as booleans, an infinity) is read by the strict one from here on
                self._number_decoder = None
        if found is None:
            found = self._decode(self._typed_decoder, self._typed_columns, block, expected)
        if found is None:
            return None
        rows, cols = found
        keys = None
        if self.key is not None:
            if not self.constant_key:
                return None
            try:
                keys = [group_name(self.key({}))] * len(rows)
            except ValueError:
                return None
        ids = None
        if self.ident is not None:
            ids = self._ids(list(map(_DOC_ID, rows)))
            if ids is None:
                return None
        self.ids = ids
        return cols, keys, None

    def _load_typed(self) -> None:
        import msgspec

        from calibcli.formats import lm_eval_columns as typed

        norm, delimiter = self.mc_norm, self.target_delimiter
        if self.kind == "multiple_choice":
            self._typed_decoder = typed.choice_decoder(norm)
            self._typed_columns = lambda rows: typed.choice_columns(rows, norm, delimiter)
            self._number_decoder = typed.choice_number_decoder(norm)
            self._number_columns = lambda rows: typed.choice_number_columns(rows, norm, delimiter)
        else:
            self._typed_decoder = typed.rolling_decoder()
            self._typed_columns = typed.rolling_columns
        self._typed_errors = (msgspec.DecodeError, msgspec.ValidationError, RecursionError)

    def _decode(
        self, decoder: Any, columns: Callable[[list], Any], block: memoryview, expected: int
    ) -> tuple | None:
        """(rows, columns) of a block of ``expected`` rows decoded by ``decoder``, or None when
        it refuses a row or ``columns`` a value."""
        rows = None
        with contextlib.suppress(*self._typed_errors):
            rows = decoder.decode_lines(block)
        if not rows or len(rows) != expected:
            return None
        cols = columns(rows)
        return None if cols is None else (rows, cols)

    def _ids(self, docs: list) -> Any:
        """Each row's id as ``ident`` gives it, or None when one cannot be given (the dict
        path then words the error). The ids of int and string doc_ids are a
        :class:`~calibcli.io.ids.KeyColumn` of the first row's prefix (checked to be the
        identifier's own), their tuples built only for a message."""
        ident = self.ident
        try:
            first = ident({"doc_id": docs[0]})  # type: ignore[misc]
        except ValueError:
            return None

        def other(doc_id: Any) -> Any:
            return ident({"doc_id": doc_id})  # type: ignore[misc]

        ids = KeyColumn(first[:2], docs, other)
        if not set(map(type, docs)) <= _ID_TYPES:
            try:
                ids = [ids[i] for i in range(len(docs))]  # type: ignore[assignment]
            except ValueError:
                return None
        return ids if ids[0] == first else None
