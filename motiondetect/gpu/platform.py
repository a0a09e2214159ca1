"""Capability probes for optional features: PyCUDA, a CUDA device, scikit-cuda, the H.264 encoder.

Every probe runs lazily, at most once, and never raises: importing :mod:`motiondetect` and
``motiondetect --help`` must work on a machine without CUDA. A probe returns ``None`` or a short
reason string that the command line can show as the fix.
"""

from __future__ import annotations

import functools
import importlib


@functools.lru_cache(maxsize=None)
def pycuda_import_error() -> str | None:
    """Return why ``pycuda.driver`` cannot be imported, or ``None`` when it can."""
    try:
        importlib.import_module("pycuda.driver")
    except (ImportError, OSError) as exc:  # OSError: libcuda.so missing or broken
        return f"PyCUDA is not importable ({exc}); install it with: pip install 'motiondetect[cuda]'"
    return None


@functools.lru_cache(maxsize=None)
def cuda_device_error() -> str | None:
    """Return why no CUDA device answers, or ``None`` when device 0 (or ``CUDA_DEVICE``) does."""
    reason = pycuda_import_error()
    if reason:
        return reason
    import pycuda.driver as drv

    try:
        drv.init()
        if drv.Device.count() == 0:
            return "no CUDA device found"
    except drv.Error as exc:
        return f"the CUDA driver did not start ({exc})"
    return None


@functools.lru_cache(maxsize=None)
def cuda_device_name() -> str | None:
    """Return the name of the first CUDA device, or ``None`` when there is none."""
    if cuda_device_error():
        return None
    import pycuda.driver as drv

    return drv.Device(0).name()


def _load_error(load) -> str | None:
    """Return the message of the CudaUnavailable that ``load()`` raises, or ``None``."""
    from motiondetect.core.errors import CudaUnavailable

    try:
        load()
    except CudaUnavailable as exc:
        return str(exc)
    return None


@functools.lru_cache(maxsize=None)
def cublas_error() -> str | None:
    """Return why the cuBLAS engine (scikit-cuda + libcublas) cannot load, or ``None``."""
    from motiondetect.gpu.blas import import_cublas

    return _load_error(import_cublas)


@functools.lru_cache(maxsize=None)
def cufft_error() -> str | None:
    """Return why cuFFT (scikit-cuda + libcufft, for the ``register`` filter) cannot load, or ``None``."""
    from motiondetect.gpu.fft import import_cufft

    return _load_error(import_cufft)


@functools.lru_cache(maxsize=None)
def h264_encoder() -> str | None:
    """Return the PyAV H.264 encoder name (``"libx264"``), or ``None`` when PyAV or it is missing."""
    try:
        av = importlib.import_module("av")
    except ImportError:
        return None
    return "libx264" if "libx264" in av.codecs_available else None


def feature_report() -> list[str]:
    """Describe each optional feature on one line each, for ``motiondetect --version``."""
    from importlib.metadata import PackageNotFoundError, version

    def dist_version(name: str) -> str:
        try:
            return version(name)
        except PackageNotFoundError:
            return "?"

    lines = []
    cuda_reason = cuda_device_error()
    if cuda_reason is None:
        lines.append(f"CUDA: {cuda_device_name()} (PyCUDA {dist_version('pycuda')})")
    else:
        lines.append(f"CUDA: unavailable - {cuda_reason}")
    reason = cublas_error()
    lines.append(f"cuBLAS: {'scikit-cuda ' + dist_version('scikit-cuda') if reason is None else reason}")
    reason = cufft_error()
    lines.append(f"cuFFT: {'scikit-cuda ' + dist_version('scikit-cuda') if reason is None else reason}")
    encoder = h264_encoder()
    if encoder:
        lines.append(f"H.264 encoder: {encoder} (PyAV {dist_version('av')})")
    else:
        lines.append("H.264 encoder: unavailable (PyAV missing); videos fall back to OpenCV mp4v")
    import cv2

    lines.append(f"OpenCV: {cv2.__version__}")
    return lines
