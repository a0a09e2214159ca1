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

#: Fewest pixels worth a band of their own: handing a band to a pool thread and waiting for it
#: costs tens of microseconds, the work of about this many pixels in the cheapest filter.
MIN_BAND_PIXELS = 1 << 15

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


def run_bands(height: int, width: int, work: Callable[[int, int, int], None]) -> None:
    """Call ``work(band, start, stop)`` for row bands that partition ``range(height)``, in parallel.

    Band 0 runs on the calling thread, the others on a shared pool; the call returns when all
    are done. ``band`` numbers the bands from 0 (a band's scratch buffers can be keyed on it).

    Args:
        height, width: size of the image in pixels (the width only decides whether splitting pays).
        work: does rows ``start`` to ``stop - 1``; it must touch no row outside them.

    Raises:
        Exception: the first band's error (in band order) that ``work`` raised.
    """
    bands = band_count(height, width)
    if bands == 1:
        work(0, 0, height)
        return
    edges = [height * i // bands for i in range(bands + 1)]
    pool = _executor(bands - 1)
    futures = [pool.submit(work, i, edges[i], edges[i + 1]) for i in range(1, bands)]
    try:
        work(0, edges[0], edges[1])
    finally:
        wait(futures)  # no band still writes into the caller's arrays after this returns or raises
    for future in futures:
        future.result()
