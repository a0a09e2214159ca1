"""The backend choice: an entered CUDA handler, or the CPU, as the user asked and the machine allows."""

from __future__ import annotations

import logging
from contextlib import ExitStack

from motiondetect.core.errors import CudaUnavailable, UsageError
from motiondetect.gpu import early_start
from motiondetect.gpu.blas import INSTALL_HINT
from motiondetect.gpu.cuda_handler import CUDAHandler
from motiondetect.gpu.platform import cuda_device_error, cufft_error

log = logging.getLogger("motiondetect")


def open_backend(requested: str, filters, stack: ExitStack):
    """Return an entered CUDAHandler, or None for the CPU, as ``requested`` and the engines say.

    With ``auto`` (and no cuBLAS engine), a device that is missing or whose context cannot be
    made gives the CPU, with a notice, and so does a pipeline whose ``register`` filter needs
    cuFFT (scikit-cuda) where it cannot load.

    Raises:
        UsageError: a cuBLAS engine is selected with ``--backend cpu``.
        CudaUnavailable: CUDA (or cuBLAS, when selected, or cuFFT, for ``register``) is needed but
            cannot be used.
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
    with ExitStack() as attempt:  # the handler is kept only when the pipeline can run on it
        try:
            cuda = attempt.enter_context(CUDAHandler())
        except CudaUnavailable as exc:
            if cublas:
                raise CudaUnavailable(f"the cuBLAS engine needs a CUDA device: {exc}") from None
            if requested == "auto":
                log.info("notice: %s; using the CPU backend", str(exc).split(";")[0])
                return None
            raise
        cufft = [f.NAME for f in filters if f.CUFFT]
        missing = cufft_error() if cufft else None
        if missing:
            detail = missing.split("; ")[0].removeprefix("cuFFT unavailable: ")
            reason = (
                f"the {', '.join(cufft)} filter needs cuFFT, which did not load ({detail}); "
                f"install it with: {INSTALL_HINT}, or run without it: -c configs/steady.yaml"
            )
            if requested == "auto" and not cublas:
                log.info("notice: %s; using the CPU backend", reason.split(";")[0])
                return None  # the attempt's context is released on the way out
            raise CudaUnavailable(reason)
        stack.enter_context(attempt.pop_all())
    if cublas:
        cuda.blas  # load scikit-cuda now: a missing install fails before any frame is read
    return cuda
