"""The backend choice: an entered CUDA handler, or the CPU, as the user asked and the machine allows."""

from __future__ import annotations

import logging
from contextlib import ExitStack

from motiondetect.core.errors import CudaUnavailable, UsageError
from motiondetect.gpu import early_start
from motiondetect.gpu.cuda_handler import CUDAHandler
from motiondetect.gpu.platform import cuda_device_error

log = logging.getLogger("motiondetect")


def open_backend(requested: str, filters, stack: ExitStack):
    """Return an entered CUDAHandler, or None for the CPU, as ``requested`` and the engines say.

    With ``auto`` (and no cuBLAS engine), a device that is missing or whose context cannot be
    made gives the CPU, with a notice.

    Raises:
        UsageError: a cuBLAS engine is selected with ``--backend cpu``.
        CudaUnavailable: CUDA (or cuBLAS, when selected) is needed but cannot be used.
    """
    cuda = _open(requested, filters, stack)
    if cuda is None:
        early_start.finish()  # a driver started early for nothing: its context goes now
    return cuda


def _open(requested: str, filters, stack: ExitStack):
    cublas = [f.NAME for f in filters if f.engine == "cublas"]
    if requested == "cpu":
        if cublas:
            raise UsageError(f"the cuBLAS engine ({', '.join(cublas)}) runs on the GPU; use --backend cuda or auto, or --engine kernel")
        return None
    if requested == "auto" and not cublas:
        reason = cuda_device_error()
        if reason:
            log.info("notice: CUDA unavailable (%s); using the CPU backend", reason.split(";")[0])
            return None
    try:
        cuda = stack.enter_context(CUDAHandler())
    except CudaUnavailable as exc:
        if cublas:
            raise CudaUnavailable(f"the cuBLAS engine needs a CUDA device: {exc}") from None
        if requested == "auto":
            log.info("notice: %s; using the CPU backend", str(exc).split(";")[0])
            return None
        raise
    if cublas:
        cuda.blas  # load scikit-cuda now: a missing install fails before any frame is read
    return cuda
