"""Scans a worker keeps open between consecutive chunks of one file, so the next chunk continues.

A chunk task that starts afresh pays its set-up (CUDA context, kernels, decoder, seek) and decodes
its warm-up frames again; one that takes over where the previous chunk of the same file stopped
pays neither, and its results are the sequential run's exactly (the pipeline's state is that of
every frame before it, not of a warm-up). The run gives each worker slot a sequence of
consecutive chunks (:func:`~motiondetect.scaleout.balance.slot_sequences`) and tells each task
whether its slot's next task is the chunk after it; such a task leaves its scan here, and that
next task takes it.

A scan is kept per thread: a CUDA context is current on the thread that made it, and a Dask worker
runs a task on one of its threads. Each thread keeps at most one scan: a task that does not take
the kept scan (another chunk came first: a retry, a stolen task) closes it and starts afresh, so
an interrupted run leaves at most one open scan per worker thread, closed by its next task.
"""

from __future__ import annotations

import threading
from typing import Protocol


class OpenScan(Protocol):
    """What is kept: anything with ``close()`` (:class:`~motiondetect.scaleout.chunk_task.Scan`)."""

    def close(self) -> None: ...


#: thread id -> ((run, input number, chunk number the scan continues with), scan).
_kept: dict[int, tuple[tuple[str, int, int], OpenScan]] = {}
_lock = threading.Lock()


def _pop() -> tuple[tuple[str, int, int], OpenScan] | None:
    with _lock:
        return _kept.pop(threading.get_ident(), None)


def keep(run: str, input_number: int, next_chunk: int, scan: OpenScan) -> None:
    """Keep ``scan`` on this thread for the task of chunk ``next_chunk`` of input ``input_number``
    in run ``run``; a scan this thread kept before is closed."""
    discard()
    with _lock:
        _kept[threading.get_ident()] = ((run, input_number, next_chunk), scan)


def take(run: str, input_number: int, chunk: int) -> OpenScan | None:
    """The scan this thread kept for chunk ``chunk`` of input ``input_number`` in run ``run``, or
    ``None``; a scan kept for another chunk is closed (the caller starts afresh)."""
    entry = _pop()
    if entry is not None and entry[0] == (run, input_number, chunk):
        return entry[1]
    if entry is not None:
        entry[1].close()
    return None


def discard() -> None:
    """Close the scan this thread keeps, if any (the end of a run's in-process tasks, tests)."""
    entry = _pop()
    if entry is not None:
        entry[1].close()
