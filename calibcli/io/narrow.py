"""float32 and float16 values read as written: each as the float64 nearest to its shortest
decimal spelling (the digits ``str(numpy.float32(x))`` prints, which a float32-aware writer puts
in a CSV or JSON file), not as its exact binary value widened to float64.

float32(0.7) is 0.699999988079071 when widened, which bins in [0.6, 0.7) where the 0.7 of a
text file bins in [0.7, 0.8); read here it is 0.7, so a table of float32 columns (Parquet,
Arrow, a Spark or Dask DataFrame) or a float32 array gives the report its CSV gives. The
shortest spelling rounds back to the same float32, so a value's float32 is never changed, and
no value crosses 0 or 1 (checks of ranges give the same answer either way). float64 values and
every other type are left as they are.

float32 goes through Arrow's own casts (float32 -> shortest text -> float64, ~0.5 s for 5M
values where numpy's ``astype(str)`` takes ~5 s); without pyarrow, numpy's casts give the same
values. float16 has 65,536 values: a table of all of them, made once, is looked up.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np

_TEXT_WIDTH = "S24"
"""Room for numpy's longest float32 text (``-9999999000000000.0``, 19 characters)."""


@cache
def _halves() -> np.ndarray:
    """The float64 of each float16 bit pattern (by its uint16), read as written."""
    return np.arange(1 << 16, dtype=np.uint16).view(np.float16).astype("S16").astype(np.float64)


def written_floats(values: np.ndarray) -> np.ndarray:
    """float64 of a float32 or float16 array's values as written (as their shortest decimal
    spelling reads); an array of another dtype is returned as it is.

    >>> written_floats(np.array([0.7, 0.1], np.float32)).tolist()
    [0.7, 0.1]
    """
    if values.dtype == np.float16:
        return _halves()[values.view(np.uint16)]
    if values.dtype != np.float32:
        return values
    try:
        import pyarrow as pa
    except ImportError:
        return values.astype(_TEXT_WIDTH).astype(np.float64)
    flat = np.ascontiguousarray(values).reshape(-1)
    wide = pa.array(flat).cast(pa.string()).cast(pa.float64()).to_numpy(zero_copy_only=False)
    return wide.reshape(values.shape)


def _narrow(kind: Any) -> bool:
    """Whether an Arrow type holds float32 or float16 values, as itself or inside lists (of
    any size), structs and dictionaries (the nestings :func:`_written_array` reads)."""
    import pyarrow as pa

    if pa.types.is_float32(kind) or pa.types.is_float16(kind):
        return True
    if pa.types.is_dictionary(kind):
        return _narrow(kind.value_type)
    if pa.types.is_fixed_size_list(kind):
        return _narrow(kind.value_type)
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_struct(kind):
        return any(_narrow(kind.field(i).type) for i in range(kind.num_fields))
    return False


def _written_array(array: Any) -> Any:
    """An Arrow array with its float32 and float16 values read as written (as float64): plain
    columns, and those inside lists, structs and dictionaries (a token's logprob, a dotted
    path's leaf, a column of repeated confidences)."""
    import pyarrow as pa

    kind = array.type
    if not _narrow(kind):
        return array
    if pa.types.is_dictionary(kind):  # each row's value, as a plain column reads it
        return _written_array(array.dictionary_decode())
    if pa.types.is_fixed_size_list(kind):  # read as the list it is (values under a null too)
        return _written_array(array.cast(pa.list_(kind.value_field)))
    mask = array.is_null() if array.null_count else None
    if pa.types.is_float32(kind) or pa.types.is_float16(kind):
        values = array.to_numpy(zero_copy_only=False)  # a null as NaN, masked again here
        nulls = None if mask is None else mask.to_numpy(zero_copy_only=False)
        return pa.array(written_floats(values), pa.float64(), mask=nulls)
    if pa.types.is_struct(kind):
        children = [_written_array(array.field(i)) for i in range(kind.num_fields)]
        fields = [kind.field(i).with_type(c.type) for i, c in enumerate(children)]
        return pa.StructArray.from_arrays(children, fields=fields, mask=mask)
    # a list: its values (those of null lists left out) read as written, and offsets to match
    lengths = array.value_lengths().fill_null(0).to_numpy(zero_copy_only=False)
    offsets = np.concatenate([np.zeros(1, lengths.dtype), np.cumsum(lengths, dtype=lengths.dtype)])
    lists = pa.ListArray if pa.types.is_list(kind) else pa.LargeListArray
    return lists.from_arrays(pa.array(offsets), _written_array(array.flatten()), mask=mask)


def written_columns(batch: Any) -> Any:
    """An Arrow record batch with every float32 and float16 column (and such values inside
    list and struct columns) read as written, as float64; a batch without any, as it is."""
    import pyarrow as pa

    if not any(_narrow(f.type) for f in batch.schema):
        return batch
    columns = [_written_array(c) for c in batch.columns]
    return pa.RecordBatch.from_arrays(columns, names=batch.schema.names)
