"""Start the CUDA driver on a thread while the command imports the rest of the program.

A CUDA run's process spends about 0.2 s in the driver before its first kernel (``cuInit`` and
the creation of the device's primary context, 0.1 s each on the GPU machine, NVIDIA H200) and
about 0.45 s importing NumPy, OpenCV, PyAV, jsonschema and the package. Done one after the
other they add up; here the driver starts first, on a thread, through ``ctypes`` (which
releases the GIL during the call; PyCUDA's own calls hold it), while the main thread imports.
:class:`~motiondetect.gpu.cuda_handler.CUDAHandler` then retains the primary context that is
already made (a reference count) and calls :func:`keep`: this module's retain then lasts as
long as the process. A handler's close no longer destroys the context (the next input of a
multi-file run finds it made), and the command leaves with :func:`os._exit` once its outputs
are closed (:func:`holding`; ``motiondetect.__main__``), so neither the driver's teardown of the
context nor Python's of its modules runs; an NVDEC decoder is left to that exit too
(:func:`leave_to_exit`). A run that takes the CPU calls :func:`finish`, which drops the retain
(the context is destroyed, its device memory freed).

Measured on the GPU machine: ``import motiondetect.apps.cli, pycuda.driver, PyNvVideoCodec``
followed by ``cuInit`` and the primary context, 0.59-0.64 s one after the other, 0.35-0.39 s
with the driver started on a thread first. At the end of a 600-frame ``--no-video --decoder
cpu`` run (H200, medians of 5 processes): 1.26 s with the context destroyed and the normal
exit, 1.19 s with either one skipped, 1.10 s with both.

Nothing here raises: without libcuda, a device or a working driver the thread does nothing and
the handler reports the problem as before.
"""

from __future__ import annotations

import ctypes
import os
import threading

_lock = threading.Lock()
_thread: threading.Thread | None = None
#: (libcuda, device handle) while this module holds a retain of the primary context.
_retained: tuple | None = None
#: Whether a handler took the context: the retain then lasts as long as the process.
_kept = False

#: The device resource whose release is left to the process's exit (:func:`leave_to_exit`).
_left_to_exit: object = None

#: Arguments after which the command never enters a CUDA handler in this process.
_NO_CUDA = {"-h", "--help", "--version", "evaluate", "--jobs", "--scheduler"}


def wanted(argv: list[str]) -> bool:
    """Whether the command line ``argv`` (without the program name) may run on the GPU in
    this process: not help, ``--version``, the ``evaluate`` subcommand, ``--backend cpu``, or a
    chunked run (its workers open their own contexts)."""
    if any(arg in _NO_CUDA or arg.startswith(("--jobs=", "--scheduler=")) for arg in argv):
        return False
    pairs = zip(argv, argv[1:])
    return not ("--backend=cpu" in argv or ("--backend", "cpu") in pairs)


def start(ordinal: int | None = None) -> None:
    """Start ``cuInit`` and the primary context of device ``ordinal`` (default: ``CUDA_DEVICE``
    or 0) on a daemon thread, once per process."""
    global _thread
    with _lock:
        if _thread is not None:
            return
        if ordinal is None:
            try:
                ordinal = int(os.environ.get("CUDA_DEVICE", "0"))
            except ValueError:
                return  # the handler reports the bad value
        _thread = threading.Thread(target=_retain_primary_context, args=(ordinal,), name="motiondetect-cuda-start", daemon=True)
        _thread.start()


def _retain_primary_context(ordinal: int) -> None:
    global _retained
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return  # no driver: the handler says so
    device, context = ctypes.c_int(), ctypes.c_void_p()
    if cuda.cuInit(0) or cuda.cuDeviceGet(ctypes.byref(device), ordinal):
        return
    if cuda.cuDevicePrimaryCtxRetain(ctypes.byref(context), device) == 0:
        _retained = (cuda, device)


def keep() -> None:
    """Wait for :func:`start`'s thread (if any) and keep its retain of the primary context for
    the rest of the process: called by a handler that has retained the context itself."""
    global _kept
    _join()
    with _lock:
        _kept = _retained is not None


def holding() -> bool:
    """Whether this process keeps a primary context until it exits (:func:`keep`): its
    command then leaves with :func:`os._exit` after closing its outputs and flushing its
    streams, instead of tearing the context down."""
    return _kept


def leave_to_exit(resource: object) -> None:
    """Keep ``resource`` (an object that owns device resources, an NVDEC decoder) referenced
    until the process exits, where it leaves with :func:`os._exit` (:func:`holding`): the
    driver then reclaims it with the context, instead of destroying it on its own. Destroying
    PyNvVideoCodec's decoder took 0.15-0.24 s with the GIL held (1080p and 2160p, NVIDIA H200):
    with it left to the exit a 1,200-frame ``--no-video`` NVDEC run took 2.07 s instead of 2.29.

    One resource is kept at a time: the next call releases the one before, so a run over many
    files keeps one at most; :func:`finish` releases it before the context. Where the process
    does not hold its context, ``resource`` is not kept (the caller's reference going releases
    it).
    """
    global _left_to_exit
    with _lock:
        previous, _left_to_exit = _left_to_exit, resource if _kept else None
    del previous  # released here, outside the lock


def finish() -> None:
    """Wait for :func:`start`'s thread (if any) and drop its retain of the primary context,
    kept or not: when the run takes the CPU (the context is then destroyed, its device memory
    freed) or leaves the device to other processes (a chunked run's workers)."""
    global _retained, _kept, _left_to_exit
    _join()
    with _lock:
        _kept = False
        _left_to_exit = None  # a resource left to the exit goes now, while its context lives
        if _retained is not None:
            cuda, device = _retained
            _retained = None
            release = getattr(cuda, "cuDevicePrimaryCtxRelease_v2", None) or cuda.cuDevicePrimaryCtxRelease
            release(device)


def _join() -> None:
    thread = _thread
    if thread is not None:
        thread.join()
