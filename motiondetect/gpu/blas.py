"""The cuBLAS engine: BLAS calls through scikit-cuda, on the CUDAHandler's context and stream.

Only ``skcuda.cublas`` is used: ``skcuda.linalg`` and ``skcuda.misc`` fail under NumPy 2
(``np.typeDict``). scikit-cuda is imported only when the engine is selected, so a missing or
broken install never breaks ``import motiondetect``; it is imported without ``pkg_resources``
(:func:`import_skcuda`).
"""

from __future__ import annotations

import importlib
import sys
import types

import numpy as np

from motiondetect.core.errors import CudaUnavailable

INSTALL_HINT = "pip install 'motiondetect[cuda]' (PyCUDA, scikit-cuda 0.5.3)"


def _import_package() -> None:
    """Import the ``skcuda`` package without ``pkg_resources``.

    scikit-cuda 0.5.3's ``__init__`` declares a namespace package through ``pkg_resources``
    (falling back to ``pkgutil`` when that import fails) and reads its version with
    ``pkg_resources.require``: 0.17 s of every GPU run's start-up on the GPU machine, and a
    ``setuptools < 81`` pin (81 dropped ``pkg_resources``). Here ``skcuda.version`` is made from
    the installed metadata and ``pkg_resources`` is hidden for the duration of the import, so
    the package takes its own ``pkgutil`` fallback.

    Raises:
        ImportError: scikit-cuda is not installed.
    """
    if "skcuda" in sys.modules:
        return
    import importlib.metadata  # here, not at the top: 15 ms of every GPU run's start-up

    try:
        version = importlib.metadata.version("scikit-cuda")
    except importlib.metadata.PackageNotFoundError:
        raise ImportError("No module named 'skcuda'") from None
    module = types.ModuleType("skcuda.version")
    module.__version__ = version  # type: ignore[attr-defined]
    sys.modules.setdefault("skcuda.version", module)
    hide = "pkg_resources" not in sys.modules
    if hide:
        sys.modules["pkg_resources"] = None  # type: ignore[assignment]  # import of it raises ImportError
    try:
        importlib.import_module("skcuda")
    finally:
        if hide and sys.modules.get("pkg_resources", 0) is None:
            del sys.modules["pkg_resources"]


def import_skcuda(module: str, what: str):
    """Import and return ``skcuda.<module>`` (``cublas``, ``cufft``).

    Args:
        module: the scikit-cuda module.
        what: what needs it, for the message (``"cuBLAS engine"``).

    Raises:
        CudaUnavailable: scikit-cuda is missing or cannot load its CUDA library
            (``libcublas.so``, ``libcufft.so``); the message names the fix.
    """
    try:
        _import_package()
        return importlib.import_module(f"skcuda.{module}")
    except (ImportError, OSError) as exc:
        raise CudaUnavailable(f"{what} unavailable: {exc}; install it with: {INSTALL_HINT}") from None


def import_cublas():
    """Import and return ``skcuda.cublas`` (:func:`import_skcuda`)."""
    return import_skcuda("cublas", "cuBLAS engine")


class Cublas:
    """A cuBLAS handle bound to one CUDA stream; destroy it with :meth:`close`.

    Matrices are float32 device arrays (``pycuda.gpuarray.GPUArray``) in row-major NumPy layout;
    each method states the column-major view cuBLAS is given.

    Args:
        stream: the ``pycuda.driver.Stream`` every call is queued on.

    Raises:
        CudaUnavailable: scikit-cuda or libcublas cannot be loaded.
    """

    def __init__(self, stream) -> None:
        self._lib = import_cublas()
        self.handle = self._lib.cublasCreate()
        self._lib.cublasSetStream(self.handle, stream.handle)

    def close(self) -> None:
        """Destroy the handle (before the context it lives in is released)."""
        if self.handle is not None:
            self._lib.cublasDestroy(self.handle)
            self.handle = None

    def rows_dot(self, matrix, vector, out, alpha: float = 1.0) -> None:
        """``out = alpha * matrix @ vector`` with SGEMV.

        Args:
            matrix: (P, K) float32, row-major, i.e. a K x P column-major matrix (lda = K), so
                the product is SGEMV with ``trans = 'T'``.
            vector: (K,) float32.
            out: (P,) float32.
        """
        rows, cols = matrix.shape
        self._lib.cublasSgemv(self.handle, "t", cols, rows, alpha, matrix.gpudata, cols, vector.gpudata, 1, 0.0, out.gpudata, 1)

    def add(self, a, b, out, alpha: float = 1.0, beta: float = 1.0) -> None:
        """``out = alpha * a + beta * b`` element-wise with SGEAM; all (H, W) float32."""
        height, width = a.shape
        self._lib.cublasSgeam(self.handle, "n", "n", width, height, alpha, a.gpudata, width, beta, b.gpudata, width, out.gpudata, width)


def to_float(cuda, src, key):
    """Convert a uint8 device image to the float32 scratch buffer ``key`` (same shape)."""
    dst = cuda.buffer(("cublas", key), src.shape, np.float32)
    n = np.int32(src.size)
    cuda.launch_1d(cuda.function("convert", "md_u8_to_f32", "PPi"), src.size, src.gpudata, dst.gpudata, n)
    return dst


def round_to_u8(cuda, src, dst) -> None:
    """``dst = floor(src + 0.5)`` clamped to 0..255 (float32 -> uint8, same element count)."""
    n = np.int32(dst.size)
    cuda.launch_1d(cuda.function("convert", "md_f32_round_to_u8", "PPi"), dst.size, src.gpudata, dst.gpudata, n)


def abs_to_u8(cuda, src, dst) -> None:
    """``dst = |src|`` clamped to 0..255 (float32 -> uint8, same element count)."""
    n = np.int32(dst.size)
    cuda.launch_1d(cuda.function("convert", "md_f32_abs_to_u8", "PPi"), dst.size, src.gpudata, dst.gpudata, n)
