"""Entry point: ``python -m motiondetect`` and the ``motiondetect`` console script.

The CUDA driver starts on a thread before the program's modules are imported, so the two
overlap (:mod:`motiondetect.gpu.early_start`); ``import motiondetect`` itself imports nothing
heavy, so this runs first. A process that keeps its CUDA context to the end leaves with
:func:`os._exit` once the command has returned: every output is closed by then, and the log and
the standard streams are flushed here; the teardown skipped (the context's, the driver's and
Python's) took 0.16 s of every such run (:mod:`~motiondetect.gpu.early_start`).

NumPy's OpenBLAS is held to one thread (``OPENBLAS_NUM_THREADS``, unless the environment sets
it): its pool starts a thread per core when NumPy is imported, and they spin (``import numpy``
took 2.3 CPU-seconds in 0.37 s on the GPU machine's 16 cores). The program does no
floating-point matrix work on the host (NumPy's integer matrix products do not use BLAS), so
nothing is lost: a 750-frame 2160p ``--no-video`` NVDEC run fell from 5.1 to 1.4 CPU-seconds in
the same wall time (docs/performance.md). Dask workers of a chunked run inherit the setting.
"""

import logging
import os
import sys

# Before anything imports NumPy: OpenBLAS reads it when it loads (module docstring).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from motiondetect.gpu import early_start  # noqa: E402

if early_start.wanted(sys.argv[1:]):
    early_start.start()

from motiondetect.apps.cli import main as _main  # noqa: E402  (after the driver's start)


def main() -> int:
    """Run the command line with ``sys.argv`` and return its exit code (or, where the process
    keeps a CUDA context, exit with it)."""
    code = _main()
    if early_start.holding():
        _leave(code)
    return code


def _leave(code: int) -> None:
    """Flush what the process has written and end it with ``code`` at once."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (``| head``) or stream: nothing to save
            pass
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
