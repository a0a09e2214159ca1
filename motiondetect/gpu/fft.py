"""The cuFFT path: batched 2-D real FFTs through scikit-cuda, on the CUDAHandler's context and stream.

Only ``skcuda.cufft`` (the ctypes binding of libcufft) is used: ``skcuda.fft`` imports
``skcuda.misc``, which fails under NumPy 2 (``np.typeDict``). scikit-cuda is imported as for the
cuBLAS engine (:mod:`motiondetect.gpu.blas`: without ``pkg_resources``), only when a transform is
planned, so a missing install never breaks ``import motiondetect``.
"""

from __future__ import annotations

import ctypes

from motiondetect.gpu.blas import import_skcuda


def import_cufft():
    """Import and return ``skcuda.cufft`` (:func:`~motiondetect.gpu.blas.import_skcuda`).

    Raises:
        CudaUnavailable: scikit-cuda is missing or cannot load ``libcufft.so``; the message
            names the fix.
    """
    return import_skcuda("cufft", "cuFFT")


class Cufft:
    """Batched 2-D real transforms on one CUDA stream; plans are made once per shape and batch
    and destroyed by :meth:`close`.

    Buffers are contiguous device arrays in the basic cuFFT layout: K real images (K, H, W)
    float32 and K half spectra (K, H, W // 2 + 1) complex64. The inverse is unnormalised (a
    round trip multiplies by H * W), as cuFFT computes it.

    Args:
        stream: the ``pycuda.driver.Stream`` every transform is queued on.

    Raises:
        CudaUnavailable: scikit-cuda or libcufft cannot be loaded.
    """

    def __init__(self, stream) -> None:
        self._lib = import_cufft()
        self._stream = stream
        self._plans: dict[tuple[int, int, int, int], object] = {}

    def _plan(self, height: int, width: int, batch: int, kind: int):
        key = (height, width, batch, kind)
        plan = self._plans.get(key)
        if plan is None:
            dims = (ctypes.c_int * 2)(height, width)
            plan = self._lib.cufftPlanMany(2, dims, None, 1, 0, None, 1, 0, kind, batch)
            self._lib.cufftSetStream(plan, self._stream.handle)
            self._plans[key] = plan
        return plan

    def forward(self, real, spectrum) -> None:
        """Queue ``spectrum = rfft2(real)`` for each image: real (K, H, W) float32 in,
        (K, H, W // 2 + 1) complex64 out."""
        batch, height, width = real.shape
        self._lib.cufftExecR2C(self._plan(height, width, batch, self._lib.CUFFT_R2C), int(real.gpudata), int(spectrum.gpudata))

    def inverse(self, spectrum, real) -> None:
        """Queue ``real = H * W * irfft2(spectrum)`` for each image (the shapes of
        :meth:`forward`, reversed); ``spectrum`` is overwritten (cuFFT's C2R works in place)."""
        batch, height, width = real.shape
        self._lib.cufftExecC2R(self._plan(height, width, batch, self._lib.CUFFT_C2R), int(spectrum.gpudata), int(real.gpudata))

    def close(self) -> None:
        """Destroy every plan (before the context they live in is released)."""
        for plan in self._plans.values():
            self._lib.cufftDestroy(plan)
        self._plans.clear()
