"""Two BLAS products over long row-sized operands, computed a slice of rows at a time as the
same float numpy's one call on the whole arrays gives, where a probe shows this BLAS does so.

For the (n, k) C-ordered X and W and the n-vector r (k of 2 or 3, n in the millions), numpy
computes ``W.T @ X`` with one ``cblas_dgemm(RowMajor, Trans, NoTrans, k, k, n, 1, W, k, X, k,
0, C, k)`` and ``X.T @ r`` with one ``cblas_dgemv(RowMajor, Trans, n, k, 1, X, k, r, 1, 0, y,
1)``. :func:`gram_and_dot` makes the same calls on slices of rows:

* dgemm: OpenBLAS's level-3 driver walks the n rows in blocks of GEMM_Q (its last two blocks
  split by its own rule) and adds each block's product into C in order. Called slice by slice
  with beta = 1 after the first, slice edges on multiples of ``_BLOCK`` (a multiple of the
  kernel's GEMM_Q, 256 on Haswell) and a last slice of at least ``_BLOCK`` rows, the blocks
  and their order are the whole call's.
* dgemv: for k < 4 OpenBLAS's kernel sums each output over all n rows into one running scalar,
  four rows at a time from the start, and adds it to y at the end. Each slice is given four
  rows in front: the first holds the sums so far (zeros for the first slice) and is multiplied
  by 1, the others are zeros, so the running scalar starts from those sums as the whole
  call's does there (``s·1 + 0·0 = s`` and ``s + 0 = s`` are exact).

Neither is promised by BLAS: they depend on the library, its version, its kernel for this CPU
and its thread count (with two BLAS threads the sliced dgemv differs here from the whole one).
So the sliced products are used only where :func:`sliced_products` found numpy's OpenBLAS by
its symbols and a probe at the current thread count gave the whole products bit for bit;
elsewhere the caller takes the whole arrays.
"""

from __future__ import annotations

import ctypes
import itertools
import os
from collections.abc import Callable

import numpy as np

__all__ = ["MIN_ROWS", "gram_and_dot", "slice_edges", "sliced_products"]

_BLOCK = 7680  # 2^9 · 3 · 5: a multiple of the usual double GEMM_Q values (the probe checks)
_ROWS = 16 * _BLOCK  # rows of a slice
MIN_ROWS = 2 * _ROWS  # fewer rows are multiplied whole: their copies are small

_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112
_I = ctypes.c_int64  # the ILP64 interface of scipy-openblas (symbols ending in 64_)

# fill(a, b, x, w, r): write rows [a, b) of X, W and r into the (b − a, k), (b − a, k) and
# (b − a,) arrays given
Fill = Callable[[int, int, np.ndarray, np.ndarray, np.ndarray], None]


def slice_edges(n: int) -> list[int]:
    """Edges 0 = e_0 < e_1 < … < e_m = n of the slices: every edge but n a multiple of
    ``_BLOCK``, every slice at most ``_ROWS`` rows but the last, which holds [``_BLOCK``,
    2·``_BLOCK``) rows when n >= ``_BLOCK`` (a shorter one would end the whole call's blocks
    differently)."""
    edges = list(range(0, n - _BLOCK + 1, _ROWS)) or [0]
    last = max(edges[-1], (n - _BLOCK) // _BLOCK * _BLOCK)
    if last > edges[-1]:
        edges.append(last)
    return [*edges, n]


class _Blas:
    """ctypes handles on numpy's OpenBLAS: dgemm, dgemv and its thread count."""

    def __init__(self, lib: ctypes.CDLL) -> None:
        d, p = ctypes.c_double, ctypes.c_void_p
        self.gemm = lib.scipy_cblas_dgemm64_
        self.gemm.argtypes = [ctypes.c_int] * 3 + [_I] * 3 + [d, p, _I, p, _I, d, p, _I]
        self.gemm.restype = None
        self.gemv = lib.scipy_cblas_dgemv64_
        self.gemv.argtypes = [ctypes.c_int] * 2 + [_I] * 2 + [d, p, _I, p, _I, d, p, _I]
        self.gemv.restype = None
        self.threads = lib.scipy_openblas_get_num_threads64_
        self.threads.argtypes = []
        self.threads.restype = ctypes.c_int


_LIBRARY: list[_Blas | None] = []
_PROBED: dict[int, bool] = {}  # thread count -> whether the sliced products are the whole ones


def _library() -> _Blas | None:
    """numpy's OpenBLAS (the scipy-openblas build numpy's wheels carry), or None. Only a library
    inside numpy's own folders counts (numpy.libs, numpy/.dylibs): SciPy carries an OpenBLAS
    of its own beside it, which numpy does not call."""
    if not _LIBRARY:
        found = None
        try:
            from threadpoolctl import threadpool_info

            infos = threadpool_info()
        except ImportError:
            infos = []
        package = os.path.dirname(os.path.abspath(np.__file__))
        for info in infos:
            path = os.path.abspath(info.get("filepath") or "")
            inside = path.startswith(package + os.sep) or path.startswith(package + ".libs")
            if info.get("internal_api") != "openblas" or not inside:
                continue
            try:
                found = _Blas(ctypes.CDLL(path))
                break
            except (OSError, AttributeError):  # not loadable, or not the symbols numpy's has
                continue
        _LIBRARY.append(found)
    return _LIBRARY[0]


def sliced_products() -> bool:
    """Whether :func:`gram_and_dot` gives numpy's whole products bit for bit here: numpy's
    OpenBLAS is found and, at its current thread count (probed once per count), the sliced
    products equal numpy's on operands of several lengths, widths and magnitudes."""
    blas = _library()
    if blas is None:
        return False
    threads = int(blas.threads())
    if threads not in _PROBED:
        _PROBED[threads] = _probe()
    return _PROBED[threads]


def _probe() -> bool:
    rng = np.random.default_rng(0)
    for n, k, scale in ((MIN_ROWS + 3, 2, 1.0), (MIN_ROWS + _ROWS + _BLOCK + 11, 3, 1e-3)):
        x = np.ones((n, k))
        x[:, :-1] = rng.normal(0.0, 5.0, (n, k - 1)) * rng.choice([1.0, 1e-8, 30.0], (n, 1))
        w = x * rng.uniform(0.0, 0.25, n)[:, None] * scale
        r = rng.uniform(-1.0, 1.0, n) * scale
        whole_gram = np.empty(x.shape).T  # the layout of the weighted matrix of a fit
        whole_gram.T[:] = w
        whole_gram = whole_gram @ x
        whole_dot = x.T @ r

        def fill(a: int, b: int, *out: np.ndarray, given=(x, w, r)) -> None:
            for target, values in zip(out, given, strict=True):
                target[:] = values[a:b]

        gram, dot = gram_and_dot(n, k, fill)
        if not (np.array_equal(gram, whole_gram) and np.array_equal(dot, whole_dot)):
            return False
    return True


def gram_and_dot(n: int, k: int, fill: Fill) -> tuple[np.ndarray, np.ndarray]:
    """(``W.T @ X``, ``X.T @ r``) over n rows, filled a slice at a time by ``fill``, by the
    BLAS calls numpy makes for the whole arrays (see the module docstring). Only where
    :func:`sliced_products` is true do they equal numpy's products."""
    blas = _library()
    if blas is None:
        raise RuntimeError("numpy's OpenBLAS was not found")
    edges = slice_edges(n)
    rows = max(b - a for a, b in itertools.pairwise(edges))
    x_rows = np.empty((rows + 4, k))  # four rows in front carry the dot product's running sums
    r_rows = np.empty(rows + 4)
    w_rows = np.empty((rows, k))
    gram = np.empty((k, k))
    dot = np.zeros(k)
    for i, (a, b) in enumerate(itertools.pairwise(edges)):
        m = b - a
        x, w, r = x_rows[4 : 4 + m], w_rows[:m], r_rows[4 : 4 + m]
        fill(a, b, x, w, r)
        p_w, p_x = w.ctypes.data, x.ctypes.data
        blas.gemm(
            _ROW_MAJOR,
            _TRANS,
            _NO_TRANS,
            k,
            k,
            m,
            1.0,
            p_w,
            k,
            p_x,
            k,
            float(i > 0),
            gram.ctypes.data,
            k,
        )
        x_rows[:4] = 0.0
        x_rows[0] = dot
        r_rows[:4] = (1.0, 0.0, 0.0, 0.0)
        blas.gemv(
            _ROW_MAJOR,
            _TRANS,
            m + 4,
            k,
            1.0,
            x_rows.ctypes.data,
            k,
            r_rows.ctypes.data,
            1,
            0.0,
            dot.ctypes.data,
            1,
        )
    return gram, dot
