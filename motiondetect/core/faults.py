"""GPU faults: recognise PyCUDA's errors, and find them before the first frame.

A CUDA device can be listed and still fail: its context cannot be made, nvcc rejects a kernel,
or the frames are too large for its memory. :func:`warm_up` runs the whole pipeline on two
blank frames of the input's size before any output is written, so every kernel is compiled and
every device buffer allocated up front; the command line then falls back to the CPU (``--backend
auto``, with a notice) or stops with one clear error (``--backend cuda``). A fault later in the
run (a device lost mid-run) ends the run like any other failure: outputs keep what was processed.
"""

from __future__ import annotations

import sys

import numpy as np


def _driver():
    """``pycuda.driver`` if it has been imported (it is only imported once CUDA is used)."""
    return sys.modules.get("pycuda.driver")


def is_device_fault(exc: BaseException) -> bool:
    """Whether ``exc`` is an error of the CUDA driver or compiler (``pycuda.driver.Error``:
    ``CompileError``, ``MemoryError``, ``LogicError``, ``LaunchError``...)."""
    drv = _driver()
    error = getattr(drv, "Error", None)
    return isinstance(error, type) and isinstance(exc, error)


def describe_device_fault(exc: BaseException) -> str:
    """One message for a device fault; for a compile error, nvcc's own message (once), indented.

    Args:
        exc: an exception for which :func:`is_device_fault` holds.
    """
    drv = _driver()
    if isinstance(exc, getattr(drv, "CompileError", ())):
        said = getattr(exc, "stderr", None) or getattr(exc, "stdout", None) or ""
        said = (said.decode(errors="replace") if isinstance(said, bytes) else said).strip()  # PyCUDA gives bytes
        head = getattr(exc, "msg", None) or str(exc).splitlines()[0]
        return f"the CUDA kernels do not compile ({head})" + ("; nvcc said:\n  " + "\n  ".join(said.splitlines()) if said else "")
    if isinstance(exc, getattr(drv, "MemoryError", ())):
        return f"out of GPU memory ({exc})"
    return f"CUDA error ({exc})"


def warm_up(detector, size: tuple[int, int]) -> str | None:
    """Run ``detector`` on two blank frames of ``size`` and forget them (``reset``).

    On the CUDA backend this compiles every kernel the pipeline uses and allocates every device
    and page-locked buffer for frames of this size, so a device that cannot run the pipeline is
    found before the first real frame. The CPU backend is not run.

    Args:
        detector: a :class:`~motiondetect.pipeline.detector.MotionDetector`.
        size: (width, height) of the input's frames, pixels.

    Returns:
        ``None`` when the pipeline ran, else :func:`describe_device_fault`'s message.

    Raises:
        ValueError, TypeError: the detector's own checks (e.g. the ROI does not fit the frame).
    """
    if detector.backend == "cpu":
        return None
    width, height = size
    blank = np.zeros((height, width, 3), np.uint8)
    try:
        detector.process(blank)
        detector.process(blank)
    except Exception as exc:
        if not is_device_fault(exc):
            raise
        return describe_device_fault(exc)
    finally:
        detector.reset()
    return None
