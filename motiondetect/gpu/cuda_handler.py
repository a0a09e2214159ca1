"""CUDAHandler: the PyCUDA context, compiled kernels, device and page-locked buffers, one stream.

Only this module and the filters' ``apply`` methods touch PyCUDA, and only after a handler has
been entered: importing it does not create a context (no ``pycuda.autoinit``).
"""

from __future__ import annotations

import functools
import math
from typing import Any, Hashable

import numpy as np

from motiondetect.core.errors import CudaUnavailable
from motiondetect.gpu import early_start
from motiondetect.gpu.kernel_sources import kernel_dir, kernel_source
from motiondetect.gpu.platform import cuda_device_error

#: Threads per block for element-wise kernels; a multiple of the 32-thread warp.
BLOCK_1D = 256
#: Block shape (x, y, z) for 2-D image kernels: 32 columns keep a warp on one row.
BLOCK_2D = (32, 8, 1)


class CUDAHandler:
    """Owns one CUDA context and everything allocated in it; use it as a context manager.

    Kernels are compiled once per handler with ``pycuda.compiler.SourceModule``, whose on-disk
    cache stays on (``PYCUDA_CACHE_DIR`` moves it), so a second run skips nvcc. Device buffers
    and page-locked host buffers are allocated once per key and shape and then reused. All
    launches and asynchronous copies go to :attr:`stream`. Every call must come from the thread
    that entered the handler.

    Args:
        device: CUDA device ordinal; ``None`` uses the ``CUDA_DEVICE`` environment variable, or
            device 0. The handler works in that device's primary context, which it retains.

    Raises:
        CudaUnavailable: PyCUDA is missing, no device answers, or the context cannot be made.

    Example:
        >>> with CUDAHandler() as cuda:                      # doctest: +SKIP
        ...     fn = cuda.function("threshold", "md_threshold_u8", "PPii")
    """

    def __init__(self, device: int | None = None) -> None:
        self._device_ordinal = device
        self.device_ordinal: int | None = None
        self.context = None
        self.stream = None
        self._modules: dict[tuple, Any] = {}
        self._functions: dict[tuple, Any] = {}
        self._buffers: dict[Hashable, Any] = {}
        self._pinned: dict[Hashable, np.ndarray] = {}
        self._blas = None
        self._fft = None

    # -- lifetime -------------------------------------------------------------------------
    def __enter__(self) -> CUDAHandler:
        reason = cuda_device_error()
        if reason:
            raise CudaUnavailable(f"CUDA backend unavailable: {reason}")
        import os

        import pycuda.driver as drv

        try:
            ordinal = self._device_ordinal if self._device_ordinal is not None else int(os.environ.get("CUDA_DEVICE", "0"))
            # The device's primary context, retained (not a new one): NVDEC (PyNvVideoCodec) and
            # other CUDA libraries in the process work in the same context, so device memory
            # passes between them without copies.
            self.context = drv.Device(ordinal).retain_primary_context()
            self.context.push()
            self.device_ordinal = ordinal
            self.stream = drv.Stream()
        except (drv.Error, ValueError) as exc:
            if self.context is not None:
                self.context.pop()
                self.context = None
            early_start.finish()  # the context could not be made: the driver's start goes too
            raise CudaUnavailable(f"CUDA backend unavailable: cannot create a context ({exc})") from exc
        early_start.keep()  # the context is retained here now, and made until the process exits
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def close(self) -> None:
        """Wait for queued work, free every buffer and kernel, and release the context."""
        if self.context is None:
            return
        try:
            self.stream.synchronize()
        finally:
            if self._blas is not None:
                self._blas.close()
                self._blas = None
            if self._fft is not None:
                self._fft.close()
                self._fft = None
            self._functions.clear()
            self._modules.clear()
            for buf in self._buffers.values():
                buf.gpudata.free()
            self._buffers.clear()
            self._pinned.clear()
            self.stream = None
            self.context.pop()
            self.context.detach()  # releases the retained primary context
            self.context = None

    @property
    def device_name(self) -> str:
        """Name of the device this handler's context runs on (e.g. ``"NVIDIA H100 80GB HBM3"``)."""
        import pycuda.driver as drv

        return drv.Context.get_device().name()

    @functools.cached_property
    def multiprocessors(self) -> int:
        """Streaming multiprocessors of the device (132 on an H100 SXM or H200): how many blocks
        a kernel needs to fill it, for the launches that size their grid by it."""
        import pycuda.driver as drv

        return drv.Context.get_device().get_attribute(drv.device_attribute.MULTIPROCESSOR_COUNT)

    @property
    def blas(self):
        """The :class:`~motiondetect.gpu.blas.Cublas` handle on :attr:`stream`, created on first use.

        Raises:
            CudaUnavailable: scikit-cuda or libcublas cannot be loaded.
        """
        if self._blas is None:
            from motiondetect.gpu.blas import Cublas

            self._blas = Cublas(self.stream)
        return self._blas

    @property
    def fft(self):
        """The :class:`~motiondetect.gpu.fft.Cufft` plans on :attr:`stream`, created on first use.

        Raises:
            CudaUnavailable: scikit-cuda or libcufft cannot be loaded.
        """
        if self._fft is None:
            from motiondetect.gpu.fft import Cufft

            self._fft = Cufft(self.stream)
        return self._fft

    # -- kernels ---------------------------------------------------------------------------
    def function(self, kernel: str, entry: str, arg_types: str, defines: dict[str, int] | None = None):
        """Return the prepared kernel ``entry`` of ``kernels/<kernel>.cu``, compiling it once.

        Args:
            kernel: file stem in ``kernels/``.
            entry: ``__global__`` function name (``md_<op>_<type>``).
            arg_types: PyCUDA ``prepare`` signature, one letter per argument (``P`` pointer,
                ``i`` int32, ``f`` float32).
            defines: compile-time constants passed as ``-DNAME=value``.

        Raises:
            pycuda.driver.CompileError: nvcc rejected the source (carries nvcc's message).
        """
        key = (kernel, entry, tuple(sorted(defines.items())) if defines else ())
        fn = self._functions.get(key)
        if fn is None:
            from pycuda.compiler import SourceModule

            module_key = (kernel, key[2])
            module = self._modules.get(module_key)
            if module is None:
                options = [f"-D{name}={value}" for name, value in key[2]]
                module = SourceModule(kernel_source(kernel), options=options, include_dirs=[str(kernel_dir())])
                self._modules[module_key] = module
            fn = module.get_function(entry)
            fn.prepare(arg_types)
            self._functions[key] = fn
        return fn

    def launch_1d(self, fn, count: int, *args) -> None:
        """Launch ``fn`` with one thread per element for ``count`` elements, on :attr:`stream`."""
        grid = (max(1, math.ceil(count / BLOCK_1D)), 1)
        fn.prepared_async_call(grid, (BLOCK_1D, 1, 1), self.stream, *args)

    def launch_strided(self, fn, count: int, max_blocks: int, *args, frames: int = 1) -> None:
        """Launch ``fn``, a kernel that loops over ``count`` elements of each of ``frames`` images
        with a grid stride (the reductions: counts, histograms), on :attr:`stream`: blocks of
        ``BLOCK_1D`` threads, as many per image as the elements fill up to ``max_blocks``,
        ``blockIdx.y`` numbering the images."""
        blocks = min(max_blocks, max(1, math.ceil(count / BLOCK_1D)))
        fn.prepared_async_call((blocks, frames), (BLOCK_1D, 1, 1), self.stream, *args)

    def launch_2d(self, fn, size: tuple[int, int], *args, frames: int = 1) -> None:
        """Launch ``fn`` with one thread per pixel of ``frames`` images of ``size`` = (H, W), on
        :attr:`stream`; ``blockIdx.z`` numbers the images (kernels/batch.cuh)."""
        height, width = size
        grid = (math.ceil(width / BLOCK_2D[0]), math.ceil(height / BLOCK_2D[1]), frames)
        fn.prepared_async_call(grid, BLOCK_2D, self.stream, *args)

    # -- memory ----------------------------------------------------------------------------
    def buffer(self, key: Hashable, shape: tuple[int, ...], dtype=np.uint8, zeroed: bool = False):
        """Return the device array for ``key``, reallocated only when its shape or dtype changes.

        Args:
            zeroed: fill a new allocation with zeros (queued on :attr:`stream`, so before
                anything queued after this call): for accumulators whose kernels leave them zero
                after use, which then need no memset per launch.

        Returns:
            ``pycuda.gpuarray.GPUArray`` of ``shape`` and ``dtype``; contents are undefined
            (zeros when just allocated with ``zeroed``).
        """
        buf = self._buffers.get(key)
        if buf is not None and buf.shape == shape and buf.dtype == dtype:
            return buf  # the common case, a launch's scratch: no import or conversion on the way
        import pycuda.gpuarray as gpuarray

        if buf is None or buf.shape != tuple(shape) or buf.dtype != np.dtype(dtype):
            if buf is not None:
                buf.gpudata.free()
            buf = gpuarray.empty(tuple(shape), dtype)
            self._buffers[key] = buf
            if zeroed:
                import pycuda.driver as drv

                drv.memset_d8_async(buf.gpudata, 0, buf.nbytes, self.stream)
        return buf

    def swap_buffers(self, a: Hashable, b: Hashable) -> None:
        """Exchange the device buffers stored under keys ``a`` and ``b`` (either may be absent).

        Lets a stage's output become persistent state (the reference frame) without a copy.
        """
        buf_a, buf_b = self._buffers.pop(a, None), self._buffers.pop(b, None)
        if buf_a is not None:
            self._buffers[b] = buf_a
        if buf_b is not None:
            self._buffers[a] = buf_b

    def constant(self, key: Hashable, host: np.ndarray):
        """Return a device copy of a small read-only table, uploaded once per ``key``.

        The key must identify the contents (e.g. include the parameter they derive from).
        """
        import pycuda.gpuarray as gpuarray

        buf = self._buffers.get(("constant", key))
        if buf is None:
            buf = gpuarray.to_gpu(host)
            self._buffers[("constant", key)] = buf
        return buf

    def pinned(self, key: Hashable, shape: tuple[int, ...], dtype=np.uint8) -> np.ndarray:
        """Return the page-locked host array for ``key`` (needed for truly async copies)."""
        import pycuda.driver as drv

        arr = self._pinned.get(key)
        if arr is None or arr.shape != tuple(shape) or arr.dtype != np.dtype(dtype):
            arr = drv.pagelocked_empty(tuple(shape), dtype)
            self._pinned[key] = arr
        return arr

    def upload(self, key: Hashable, host: np.ndarray):
        """Copy ``host`` to the device buffer ``key`` through its page-locked staging buffer.

        The copy is queued on :attr:`stream`; the returned ``GPUArray`` is ready for kernels
        queued after it.
        """
        staging = self.pinned(("upload", key), host.shape, host.dtype)
        np.copyto(staging, host)
        dev = self.buffer(key, host.shape, host.dtype)
        dev.set_async(staging, stream=self.stream)
        return dev

    def download(self, key: Hashable, dev) -> np.ndarray:
        """Queue a copy of ``dev`` into the page-locked buffer ``key`` and return that buffer.

        The contents are valid after :meth:`synchronize` and until the next download to ``key``.
        """
        host = self.pinned(("download", key), dev.shape, dev.dtype)
        dev.get_async(stream=self.stream, ary=host)
        return host

    def synchronize(self) -> None:
        """Block until everything queued on :attr:`stream` has finished."""
        self.stream.synchronize()
