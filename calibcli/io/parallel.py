"""Reading one source with forked worker processes.

A worker receives a small job (:class:`Job`: the read plan, the file, its byte range and its
format) and answers with one summary of its share, as the bytes of
:mod:`calibcli.summaries.encoding` (header, then arrays). Only where its blocks come from
differs:

* a regular uncompressed file is cut at line starts into byte ranges; each worker opens the file
  and reads its range itself, and this process reads the first (no bytes cross a pipe);
* a stream (compressed, stdin) cannot be split by position: this process reads (and
  decompresses) it, keeps some blocks and sends the others to one worker, in a fixed pattern.

The shares are merged in input order, so the kept rows are in input order; the tables are exact
sums, so every figure is the same bits as a single-process read. The first bad line in input
order is reported, wherever it was found.
"""

from __future__ import annotations

import contextlib
import math
import sys
from dataclasses import dataclass
from typing import Any

from calibcli.errors import InputError
from calibcli.io.fold import SourceFold, first_row_end
from calibcli.io.sources import Source, blocks

PIPE_CHUNK = 1 << 20
"""Bytes per message when a worker sends an array: bounds the pipe's copies."""

# Worker -> parent, one message per worker:
#   ("done", header, newlines, first_line)   then each array's bytes in PIPE_CHUNK pieces
#   ("input", InputError)                    bad input; lines counted from the share's start
#   ("crash", traceback text)
# Parent -> a stream's worker: (format, first_line, newlines, expected) then the block's
# bytes, for each block; None at the end. (The worker is forked before the first row is read,
# so the format travels with the blocks.)


@dataclass(frozen=True)
class Job:
    """A worker's share of one source: everything it needs, nothing else."""

    plan: Any  # calibcli.io.plan.ReadPlan
    name: str
    path: str
    fmt: str
    start: int = 0
    stop: int | None = None
    first_id: Any = None  # the file's first row's id, watched for (calibcli.io.first_id)


def read(reader: Any, src: Source, builder: Any, parts: int) -> bool:
    """Fold ``src`` into ``builder`` with ``parts`` processes in all (this one included);
    False, having read nothing, where processes cannot be forked. ``reader`` (a
    :class:`~calibcli.io.reader.Reader`) gives the plan, the source's fold, its progress bar
    and a stream's content hash; only a :class:`Job` reaches a worker."""
    import multiprocessing

    try:
        ctx = multiprocessing.get_context("fork")
    except ValueError:  # pragma: no cover - no fork (Windows)
        return False
    plan, fold, bar = reader.plan, reader.current, reader.bar(src)
    seen = None if reader.stream_hash is None else reader.stream_hash.update
    try:
        if src.size is not None and src.codec is None:
            _read_ranges(ctx, plan, src, fold, builder, parts, bar)
        else:
            _read_stream(ctx, plan, src, fold, builder, bar, seen)
    finally:
        if bar is not None:
            bar.close()
    return True


# --------------------------------------------------------------------------- the worker side


def _work(job: Job, items_of: Any, results: Any, drain: Any = None) -> None:
    """Worker body: fold the blocks ``items_of(fold)`` gives into a new builder and send the
    one reply."""
    import signal
    import traceback

    import numpy as np

    # Ctrl-C on a terminal reaches the whole process group: the parent alone handles it and
    # stops the workers, so a worker neither prints a KeyboardInterrupt traceback nor replies.
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    from calibcli.summaries import Source as SourceInfo
    from calibcli.summaries import encode

    try:
        builder = job.plan.builder()
        builder.begin_source()
        fold = SourceFold(
            job.plan, job.name, job.path, job.fmt, first_id=job.first_id, head_known=True
        )
        newlines = fold.fold(items_of(fold), builder)
        builder.end_source(
            SourceInfo(job.path, "", fold.fmt, 0, job.start, job.stop, **fold.taken())
        )
        # rows that carry their table travel without it (the parent folds them once)
        share = builder.share() if getattr(builder, "rows_hold_table", False) else None
        header, arrays = encode(share or builder.summary())
        first_line = getattr(builder, "first_line", None)
        results.send(("done", header, newlines, first_line))
        for array in arrays:  # raw bytes, received in place: no pickled copy on either side
            raw = memoryview(array.reshape(-1).view(np.uint8))
            for start in range(0, len(raw), PIPE_CHUNK):
                results.send_bytes(raw[start : start + PIPE_CHUNK])
    except InputError as e:
        results.send(("input", e))
        if drain is not None:
            drain()  # keep taking blocks so the sender never blocks
    except BaseException:
        results.send(("crash", traceback.format_exc()))
    results.close()


def _range_worker(job: Job, results: Any) -> None:
    with open(job.path, "rb") as f:
        f.seek(job.start)
        items = blocks(
            f,
            job.name,
            job.plan.block_size,
            job.stop - job.start,
            strip_bom=job.start == 0,
            max_line_bytes=job.plan.max_line_bytes,
        )
        _work(job, lambda fold: items, results)


def _stream_worker(job: Job, blocks_in: Any, results: Any) -> None:
    def received(fold: SourceFold):
        while (header := blocks_in.recv()) is not None:
            fold.fmt, fold.first_id, first_line, newlines, expected = header
            yield first_line, blocks_in.recv_bytes(), newlines, expected

    def drain() -> None:
        with contextlib.suppress(EOFError, OSError):
            while blocks_in.recv() is not None:
                blocks_in.recv_bytes()

    _work(job, received, results, drain)


# --------------------------------------------------------------------------- the parent side


def _collect(
    proc: Any, conn: Any, name: str, builder: Any, line_offset: int, fold: Any = None
) -> int:
    """Merge one worker's reply into ``builder``; return its newline count. A bad line raises
    InputError (its line shifted by ``line_offset``), a failed worker RuntimeError."""
    import numpy as np

    from calibcli.summaries import ROW_ARRAYS, array_specs, assemble, read_header

    try:
        message = conn.recv()
    except EOFError:
        proc.join()
        message = ("crash", f"worker exited with code {proc.exitcode}")
    if message[0] == "crash":
        raise RuntimeError(f"a worker reading {name} failed:\n{message[1]}")
    if message[0] == "input":
        raise message[1].shifted(line_offset)
    _, header, newlines, first_line = message
    meta, _ = read_header(header)
    specs = array_specs(meta)
    shapes = {name: shape for name, _, shape in specs}
    claimed: list[Any] = []
    if builder is not None and "rows.right" in shapes and hasattr(builder, "claim_rows"):
        claimed = builder.claim_rows(shapes["rows.right"][0], shapes["rows.wrong"][0])
    arrays = {}
    for array_name, dtype, shape in specs:
        if array_name in ROW_ARRAYS and claimed:
            out = claimed[ROW_ARRAYS.index(array_name)]
        else:
            out = np.empty(shape, dtype)
        _receive(conn, out)
        arrays[array_name] = out
    if builder is None:
        return newlines
    part = assemble(meta, arrays, table_in_rows=getattr(builder, "rows_hold_table", False))
    if part.row_ids is not None and fold is not None:
        fold.absorb_ids(part.row_ids, line_offset, builder)
    if part.kind == "perplexity":
        line = None if first_line is None else first_line + line_offset
        builder.absorb(part, name, line)
    else:
        builder.absorb(part, received=bool(claimed))
    return newlines


def _receive(conn: Any, out: Any) -> None:
    """Fill ``out`` with bytes sent in PIPE_CHUNK pieces, in place."""
    raw = memoryview(out.reshape(-1).view("u1"))
    for start in range(0, len(raw), PIPE_CHUNK):
        conn.recv_bytes_into(raw[start:], 0)


def _flush_std_streams() -> None:
    """Flush stdout/stderr before forking: a child must not repeat buffered output."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, ValueError):
            stream.flush()


def _split_points(path: str, size: int, parts: int, floor: int = 0) -> list[int]:
    """Byte offsets [0, b1, ..., size] cutting a file into ``parts`` ranges at line starts,
    the first range holding at least the bytes before ``floor``."""
    bounds = [0]
    with open(path, "rb") as f:
        for k in range(1, parts):
            pos = min(max(size * k // parts, bounds[-1], floor), size)
            if pos == 0:
                bounds.append(0)
                continue
            bounds.append(min(_next_line_start(f, pos - 1), size))
    bounds.append(size)
    return bounds


def _next_line_start(f: Any, pos: int) -> int:
    """Offset of the start of the line after the one holding byte ``pos`` (the file's end if
    none), read in pieces: a line may be longer than memory."""
    f.seek(pos)
    while chunk := f.read(1 << 16):
        i = chunk.find(b"\n")
        if i >= 0:
            return f.tell() - len(chunk) + i + 1
    return f.tell()


def _read_ranges(
    ctx: Any, plan: Any, src: Source, fold: SourceFold, builder: Any, parts: int, bar: Any
) -> None:
    """A regular file: this process reads the first byte range, a worker each of the others."""
    path, size = src.source, src.size
    assert size is not None
    src.close()  # each process opens the file itself
    floor = 0  # past the first row: this process reads it, so no worker counts it a repeat
    if fold.fmt is None:  # resolved here, so that every worker decodes the same format
        with open(path, "rb") as f:
            for first_line, block, _, _ in blocks(
                f, src.name, plan.block_size, max_line_bytes=plan.max_line_bytes
            ):
                if fold.resolve(block, first_line):
                    floor += first_row_end(block)
                    break
                floor += len(block)
        if fold.fmt is None:
            return  # only blank lines
    bounds = _split_points(path, size, parts, floor)
    watch = None if fold.first_id is None else fold.first_id.elsewhere()
    _flush_std_streams()
    workers = []
    finished = False
    try:
        for k in range(1, parts):
            recv, send = ctx.Pipe(duplex=False)
            job = Job(plan, src.name, path, fold.fmt, bounds[k], bounds[k + 1], watch)
            proc = ctx.Process(target=_range_worker, args=(job, send), daemon=True)
            proc.start()
            send.close()
            workers.append((proc, recv))
        with open(path, "rb") as f:
            offset = fold.fold(
                blocks(f, src.name, plan.block_size, bounds[1], max_line_bytes=plan.max_line_bytes),
                builder,
                expected_bytes=lambda: size,
                progress=None if bar is None else lambda: bar.update(f.tell() * parts),
            )
        for proc, recv in workers:
            offset += _collect(proc, recv, src.name, builder, offset, fold)
        finished = True
    finally:
        for proc, recv in workers:
            if not finished and proc.is_alive():
                proc.terminate()  # an error elsewhere: its result is not needed
            proc.join()
            recv.close()


class _Sender:
    """Sends blocks to a worker from a background thread, so that this process goes on reading
    and decoding while a block crosses the pipe (a pipe holds only 64 KB)."""

    def __init__(self, conn: Any, depth: int = 3) -> None:
        import queue
        import threading

        self._conn = conn
        self._queue: Any = queue.Queue(depth)
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="calibcli-sender", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        broken = False
        while True:
            item = self._queue.get()
            if item is None:
                break
            if broken:
                continue
            try:
                self._conn.send(item[0])
                self._conn.send_bytes(item[1])
            except OSError:  # the worker is gone; the reader learns why from its reply
                broken = True
        if not broken:
            with contextlib.suppress(OSError):
                self._conn.send(None)  # end of input

    def send(self, header: tuple, block: memoryview | bytes) -> None:
        self._queue.put((header, bytes(block)))  # a copy: the reader reuses its buffer

    def close(self) -> None:
        """Send the end marker after the queued blocks and wait for the thread."""
        if not self._closed:
            self._closed = True
            self._queue.put(None)
            self._thread.join()


def _read_stream(
    ctx: Any, plan: Any, src: Source, fold: SourceFold, builder: Any, bar: Any, seen: Any
) -> None:
    """A stream: this process reads it and decodes one block in ``period``; a worker decodes the
    others. The worker is forked before decompression starts (no thread exists to fork). A
    worker's error stops the reading; an error here waits for the worker's verdict on the
    earlier blocks it holds."""
    _flush_std_streams()
    blocks_out_recv, blocks_out = ctx.Pipe(duplex=False)
    results, results_send = ctx.Pipe(duplex=False)
    job = Job(plan, src.name, src.source, fold.fmt or "")
    proc = ctx.Process(
        target=_stream_worker, args=(job, blocks_out_recv, results_send), daemon=True
    )
    proc.start()
    blocks_out_recv.close()
    results_send.close()
    # Decompression runs in this process (gzip's in a thread of it): it keeps one block in three
    # from a compressed stream, one in two from a plain one.
    period = 3 if src.codec else 2
    sender = _Sender(blocks_out)
    turn = 0

    def handoff(first_line: int, block: Any, newlines: int, expected: int) -> bool | None:
        nonlocal turn
        turn += 1
        if turn % period == 1:
            return False
        if results.poll():
            return None  # the worker found a bad line: nothing after it matters
        sender.send((fold.fmt, fold.first_id, first_line, newlines, expected), block)
        return True

    errors: list[InputError] = []
    finished = False
    stream = src.stream()
    try:
        try:
            fold.fold(
                blocks(
                    stream,
                    src.name,
                    plan.block_size,
                    what=src.what,
                    max_line_bytes=plan.max_line_bytes,
                ),
                builder,
                expected_bytes=src.expected_bytes,
                progress=None if bar is None else lambda: bar.update(src.position()),
                handoff=handoff,
                seen=seen,
            )
        except InputError as e:
            errors.append(e)
        sender.close()
        try:
            _collect(proc, results, src.name, None if errors else builder, 0, fold)
        except InputError as e:
            errors.append(e)
        if errors:
            raise min(errors, key=lambda e: math.inf if not isinstance(e.line, int) else e.line)
        finished = True
    finally:
        stream.close()
        if not finished and proc.is_alive():
            proc.terminate()
        sender.close()
        proc.join()
        blocks_out.close()
        results.close()
