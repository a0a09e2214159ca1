"""Row bands: split a CPU reference's per-pixel work over a small thread pool.

OpenCV's functions and NumPy's loops over large arrays release the GIL, so the bands of one
image run on several cores at once. A filter whose work is independent from row to row (the
grey conversion, the background model's update) calls :func:`run_bands` with a function that
does rows ``start`` to ``stop``; each band writes only its own rows, so the result is the same
bits whatever the number of bands.

The number of threads is OpenCV's (:func:`cv2.getNumThreads`: the cores this process may use by
default), so one knob, ``cv2.setNumThreads(n)``, sets both OpenCV's own threads and the bands;
``cv2.setNumThreads(1)`` (or 0) runs everything on the calling thread.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Callable

import cv2
import numpy as np

#: Fewest pixels worth a band of their own: handing a band to a pool thread and waiting for it
#: costs tens of microseconds, the work of about this many pixels in the cheapest filter.
MIN_BAND_PIXELS = 1 << 15
#: Pixels per chunk of a band's rows: a filter's float64 scratch buffers for a chunk take 512 KB
#: each, so they stay in the cache from one operation to the next. At 1080p this halves the
#: background models' time against whole-frame buffers (measured: 2**15 to 2**18 alike); at
#: the default working size (480 x 270) a chunk is about half the image.
CHUNK_PIXELS = 1 << 16

_pool: ThreadPoolExecutor | None = None
_pool_size = 0
_pool_lock = threading.Lock()


def band_count(height: int, width: int) -> int:
    """How many row bands an ``height`` x ``width`` image is split into (1: no split)."""
    threads = max(1, cv2.getNumThreads())
    return max(1, min(threads, height, height * width // MIN_BAND_PIXELS))


def _executor(workers: int) -> ThreadPoolExecutor:
    global _pool, _pool_size
    with _pool_lock:
        if _pool is None or _pool_size < workers:
            if _pool is not None:
                _pool.shutdown(wait=False)  # running bands finish; new ones go to the larger pool
            _pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="motiondetect-band")
            _pool_size = workers
        return _pool


def run_bands(height: int, width: int, work: Callable[[int, int, int], None], chunk_rows: int | None = None) -> None:
    """Call ``work(band, start, stop)`` for row bands that partition ``range(height)``, in parallel.

    Band 0 runs on the calling thread, the others on a shared pool; the call returns when all
    are done. ``band`` numbers the bands from 0 (a band's scratch buffers can be keyed on it).

    Args:
        height, width: size of the image in pixels (the width only decides whether splitting pays).
        work: does rows ``start`` to ``stop - 1``; it must touch no row outside them.
        chunk_rows: if given, each band calls ``work`` on consecutive chunks of at most this many
            rows, one after another, so that scratch buffers sized for one chunk stay in the
            processor's cache (see :func:`chunk_rows`).

    Raises:
        Exception: the first band's error (in band order) that ``work`` raised.
    """

    def band(i: int, start: int, stop: int) -> None:
        step = chunk_rows or max(1, stop - start)
        for y in range(start, stop, step):
            work(i, y, min(stop, y + step))

    bands = band_count(height, width)
    if bands == 1:
        band(0, 0, height)
        return
    edges = [height * i // bands for i in range(bands + 1)]
    pool = _executor(bands - 1)
    futures = [pool.submit(band, i, edges[i], edges[i + 1]) for i in range(1, bands)]
    try:
        band(0, edges[0], edges[1])
    finally:
        wait(futures)  # no band still writes into the caller's arrays after this returns or raises
    for future in futures:
        future.result()


def chunk_rows(width: int) -> int:
    """Rows of a ``width``-pixel image in a chunk of about :data:`CHUNK_PIXELS` (at least 1)."""
    return max(1, CHUNK_PIXELS // width)


class Scratch:
    """A filter's scratch buffers for each band, kept from frame to frame (no allocation per frame).

    Args:
        layout: buffer name -> (dtype, trailing dimensions), e.g. ``pixels=(np.float32, (3,))``.

    Example:
        >>> scratch = Scratch(total=(np.int32, ()))
        >>> scratch.get(band=0, rows=4, width=6)["total"].shape
        (4, 6)
    """

    def __init__(self, **layout: tuple[type, tuple[int, ...]]) -> None:
        self._layout = layout
        self._bands: dict[int, dict[str, np.ndarray]] = {}

    def get(self, band: int, rows: int, width: int) -> dict[str, np.ndarray]:
        """Band ``band``'s buffers, each (rows, width, *trailing) (made again when the size changes)."""
        buffers = self._bands.get(band)
        if buffers is None or next(iter(buffers.values())).shape[:2] != (rows, width):
            buffers = {name: np.empty((rows, width, *trailing), dtype) for name, (dtype, trailing) in self._layout.items()}
            self._bands[band] = buffers  # one key per band: bands never share a buffer
        return buffers
