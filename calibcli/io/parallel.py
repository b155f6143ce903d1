"""Reading one source with forked worker processes.

Every worker runs the same loop (:func:`_work`): it folds a stream of blocks into a sink of its
own and answers with one message in one format (:func:`_reply`, read by :func:`_collect`). Only
where its blocks come from differs:

* a regular uncompressed file is cut at line starts into byte ranges; each worker opens the file
  and reads its range itself, and this process reads the first (no bytes cross a pipe);
* a stream (gzip, stdin) cannot be split by position: this process reads (and decompresses) it,
  keeps some blocks and sends the others to one worker, in a fixed pattern.

The workers' results are merged in input order, so the statistics are identical from run to run
and agree with a single-process read to rounding. The first bad line in input order is reported,
wherever it was found. Workers are forked (the parent's reader and sink types need no pickling).
"""

from __future__ import annotations

import contextlib
import math
import sys
from typing import TYPE_CHECKING, Any

from calibcli.errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from calibcli.io.reader import Reader
    from calibcli.io.sources import Source

PIPE_CHUNK = 1 << 17
"""float64 values per message when a worker sends columns (1 MB): bounds the pipe's copies."""

# Worker -> parent, one message per worker:
#   ("done", state, newlines, lengths)  then the arrays of sink.bulk() in PIPE_CHUNK pieces
#   ("input", InputError)               bad input; lines counted from the worker's first line
#   ("crash", traceback text)
# Parent -> a stream's worker: (fmt, first_line, newlines, expected) then the block's bytes,
# for each block; None at the end.


def read(reader: Reader, src: Source, sink: Any, parts: int) -> bool:
    """Fold ``src`` into ``sink`` with ``parts`` processes in all (this one included); False,
    having read nothing, where processes cannot be forked."""
    import multiprocessing

    try:
        ctx = multiprocessing.get_context("fork")
    except ValueError:  # pragma: no cover - no fork (Windows)
        return False
    if src.size is not None and not src.gzip:
        _read_ranges(ctx, reader, src, sink, parts)
    else:
        _read_stream(ctx, reader, src, sink)
    return True


# --------------------------------------------------------------------------- the worker side


def _work(reader: Reader, src: Source, items: Any, results: Any, drain: Any = None) -> None:
    """Worker body: fold ``items`` (blocks) into a new sink and send the one reply."""
    import traceback

    try:
        sink = reader.new_sink()
        newlines = reader.fold(src, items, sink)
        _reply(results, sink, newlines)
    except InputError as e:
        results.send(("input", e))
        if drain is not None:
            drain()  # keep taking blocks so the sender never blocks
    except BaseException:
        results.send(("crash", traceback.format_exc()))
    results.close()


def _reply(conn: Any, sink: Any, newlines: int) -> None:
    bulk = sink.bulk()
    conn.send(("done", sink.export(with_columns=False), newlines, [a.shape[0] for a in bulk]))
    for array in bulk:  # raw bytes, received in place: no pickled copy on either side
        for start in range(0, array.shape[0], PIPE_CHUNK):
            conn.send_bytes(array[start : start + PIPE_CHUNK])


def _range_worker(reader: Reader, src: Source, start: int, stop: int, results: Any) -> None:
    with open(src.source, "rb") as f:
        f.seek(start)
        _work(reader, src, reader.blocks(src, f, stop - start, start), results)


def _stream_worker(reader: Reader, src: Source, blocks_in: Any, results: Any) -> None:
    def received():
        while (header := blocks_in.recv()) is not None:
            fmt, first_line, newlines, expected = header
            reader.fmt = fmt  # resolved by the parent from the input's first row
            yield first_line, blocks_in.recv_bytes(), newlines, expected

    def drain() -> None:
        with contextlib.suppress(EOFError, OSError):
            while blocks_in.recv() is not None:
                blocks_in.recv_bytes()

    _work(reader, src, received(), results, drain)


# --------------------------------------------------------------------------- the parent side


def _collect(proc: Any, conn: Any, src: Source, sink: Any, line_offset: int) -> int:
    """Merge one worker's reply into ``sink``; return its newline count. A bad line raises
    InputError (its line shifted by ``line_offset``), a failed worker RuntimeError."""
    try:
        message = conn.recv()
    except EOFError:
        proc.join()
        message = ("crash", f"worker exited with code {proc.exitcode}")
    if message[0] == "crash":
        raise RuntimeError(f"a worker reading {src.name} failed:\n{message[1]}")
    if message[0] == "input":
        e = message[1]
        raise InputError(e.path, None if e.line is None else e.line + line_offset, e.detail)
    _, state, newlines, lengths = message
    sink.absorb(state, src.name, line_offset)
    for out in sink.claim_bulk(lengths):
        _receive(conn, out)
    return newlines


def _receive(conn: Any, out: np.ndarray) -> None:
    """Fill ``out`` with float64 values sent in PIPE_CHUNK pieces, in place."""
    for start in range(0, out.shape[0], PIPE_CHUNK):
        conn.recv_bytes_into(out[start:], 0)


def _flush_std_streams() -> None:
    """Flush stdout/stderr before forking: a child must not repeat buffered output."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, ValueError):
            stream.flush()


def _split_points(path: str, size: int, parts: int) -> list[int]:
    """Byte offsets [0, b1, ..., size] cutting a file into ``parts`` ranges at line starts."""
    bounds = [0]
    with open(path, "rb") as f:
        for k in range(1, parts):
            pos = max(size * k // parts, bounds[-1])
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


def _read_ranges(ctx: Any, reader: Reader, src: Source, sink: Any, parts: int) -> None:
    """A regular file: this process reads the first byte range, a worker each of the others."""
    path, size = src.source, src.size
    assert size is not None
    src.close()  # each process opens the file itself
    if reader.fmt is None:  # resolved here, so that every worker decodes the same format
        with open(path, "rb") as f:
            for first_line, block, _, _ in reader.blocks(src, f):
                if reader.resolve(block, first_line, src.name):
                    break
        if reader.fmt is None:
            return  # only blank lines
    bounds = _split_points(path, size, parts)
    _flush_std_streams()
    workers = []
    finished = False
    try:
        for k in range(1, parts):
            recv, send = ctx.Pipe(duplex=False)
            args = (reader, src, bounds[k], bounds[k + 1], send)
            proc = ctx.Process(target=_range_worker, args=args, daemon=True)
            proc.start()
            send.close()
            workers.append((proc, recv))
        with open(path, "rb") as f:
            src.raw = f
            offset = reader.fold(
                src,
                reader.blocks(src, f, bounds[1]),
                sink,
                bar=reader.bar(src),
                limit=bounds[1],
                scale=parts,
                expect=size,
            )
        for proc, recv in workers:
            offset += _collect(proc, recv, src, sink, offset)
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


def _read_stream(ctx: Any, reader: Reader, src: Source, sink: Any) -> None:
    """A stream: this process reads it and decodes one block in ``period``; a worker decodes the
    others. The worker is forked before decompression starts (no thread exists to fork). A
    worker's error stops the reading; an error here waits for the worker's verdict on the
    earlier blocks it holds."""
    _flush_std_streams()
    blocks_out_recv, blocks_out = ctx.Pipe(duplex=False)
    results, results_send = ctx.Pipe(duplex=False)
    args = (reader, src, blocks_out_recv, results_send)
    proc = ctx.Process(target=_stream_worker, args=args, daemon=True)
    proc.start()
    blocks_out_recv.close()
    results_send.close()
    # Decompression runs in a thread of this process: it keeps one block in three from gzip,
    # one in two from a plain stream.
    period = 3 if src.gzip else 2
    sender = _Sender(blocks_out)
    turn = 0

    def handoff(first_line: int, block: Any, newlines: int, expected: int) -> bool | None:
        nonlocal turn
        turn += 1
        if turn % period == 1:
            return False
        if results.poll():
            return None  # the worker found a bad line: nothing after it matters
        sender.send((reader.fmt, first_line, newlines, expected), block)
        return True

    errors: list[InputError] = []
    finished = False
    stream = src.stream()
    try:
        try:
            reader.fold(src, reader.blocks(src, stream), sink, bar=reader.bar(src), handoff=handoff)
        except InputError as e:
            errors.append(e)
        sender.close()
        try:
            _collect(proc, results, src, sink if not errors else _Discard(), 0)
        except InputError as e:
            errors.append(e)
        if errors:
            raise min(errors, key=lambda e: math.inf if e.line is None else e.line)
        finished = True
    finally:
        stream.close()
        if not finished and proc.is_alive():
            proc.terminate()
        sender.close()
        proc.join()
        blocks_out.close()
        results.close()


class _Discard:
    """Takes a worker's reply when an error here already decides the outcome."""

    def absorb(self, state: dict, path: str, line_offset: int) -> None:
        pass

    def claim_bulk(self, lengths: list[int]) -> list:
        return []
