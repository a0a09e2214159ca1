"""Decoder frame buffers registered as pinned memory, so the GPU reads host pictures by DMA.

FFmpeg's H.264 and HEVC decoders take each frame's planes from a buffer pool that keeps every
buffer, at the same address, for as long as the decoder lives (``av_buffer_pool``; a 1080p
stream uses about 25 Y-plane buffers). Registering each buffer once as page-locked memory
(``cuMemHostRegister``) lets an
asynchronous copy read a plane straight from where the decoder wrote it, so the CPU does not
copy the picture into a staging buffer first. Measured on the GPU machine (NVIDIA H200, 16
cores), 1080p H.264, ``--no-video``, CPU decoder, batches of 8: in one process, decoding alone
1,225 frames/s, staging copies 1,133 (92 %), these registered buffers 1,149 (94 %); whole
processes on a 12,000-frame file, 91 % of a decode-only process staged, 93 % registered
(``docs/performance.md``).

A registration stays valid only while its memory stays mapped: were a buffer freed and its
address given to another allocation, a copy through the old registration would read the old
pages. So a buffer is registered only for a picture that names its pool
(:attr:`~motiondetect.core.picture.Picture.pool`: the decoder and the picture's format and size,
:class:`~motiondetect.sources.video.PyAVCapture`), every registration is dropped as soon as a
picture of another pool arrives (another file, a change of format or size), and all are dropped
when the stream ends; each time after the copies queued from them are done.
"""

from __future__ import annotations

import ctypes
from typing import Callable, Hashable

import numpy as np


class _DriverRegistration:
    """``nbytes`` of host memory at ``address`` page-locked by ``cuMemHostRegister`` (the CUDA
    driver API, called through ``ctypes``: PyCUDA's ``register_host_memory`` wants an array
    that owns its memory, and these buffers are FFmpeg's)."""

    _libcuda: ctypes.CDLL | None = None

    def __init__(self, address: int) -> None:
        self.address = address

    @classmethod
    def driver(cls) -> ctypes.CDLL:
        if cls._libcuda is None:
            lib = ctypes.CDLL("libcuda.so.1")
            lib.cuMemHostRegister_v2.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint]
            lib.cuMemHostUnregister.argtypes = [ctypes.c_void_p]
            cls._libcuda = lib
        return cls._libcuda

    @classmethod
    def register(cls, address: int, nbytes: int) -> _DriverRegistration | None:
        """Register the range in the calling thread's current context; ``None`` when the
        driver refuses it (``CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED`` for a range that
        shares a page with another registration, for one)."""
        return cls(address) if cls.driver().cuMemHostRegister_v2(address, nbytes, 0) == 0 else None

    def unregister(self) -> None:
        self.driver().cuMemHostUnregister(self.address)


def extent(plane: np.ndarray) -> tuple[int, int]:
    """(address, bytes) of the memory a 2-D uint8 view with unit column stride spans, from its
    first pixel to its last (rows of ``strides[0]`` bytes; the padding after the last row's
    pixels excluded)."""
    rows, cols = plane.shape
    return plane.__array_interface__["data"][0], plane.strides[0] * (rows - 1) + cols


class RegisteredBuffers:
    """The decoder buffers registered so far for one stream of pictures.

    Args:
        stream: the ``pycuda.driver.Stream`` the copies from the buffers are queued on; it is
            waited for before any buffer is released.
        register: ``(address, nbytes) -> registration`` with ``unregister()``, or ``None`` when
            the range cannot be registered; default the driver's ``cuMemHostRegister`` (a
            parameter for tests without a GPU).
    """

    def __init__(self, stream, register: Callable[[int, int], object] | None = None) -> None:
        self._stream = stream
        self._register = register or _DriverRegistration.register
        #: address -> (registration, the registered bytes as a 1-D uint8 array over them)
        self._held: dict[int, tuple[object, np.ndarray]] = {}
        self._refused: set[tuple[int, int]] = set()  # (address, bytes) the driver would not register
        self._pool: Hashable | None = None
        #: Buffers registered over the object's life.
        self.registered = 0

    def source(self, plane: np.ndarray, pool: Hashable | None) -> np.ndarray | None:
        """The registered memory ``plane`` (a 2-D uint8 view with unit column stride) lies in,
        as a 1-D uint8 array from its first pixel, for an asynchronous copy straight from it
        (``pycuda.driver.Memcpy2D.set_src_host``, the plane's pitch and shape); the buffer is
        registered now if it was not. ``None`` when the picture names no pool or the driver
        refuses the range (it overlaps another registration's pages, for one): stage it instead.

        A picture of another pool than the last one's releases every registration first.
        """
        if pool is None:
            return None
        if pool != self._pool:
            self.release()
            self._pool = pool
        address, nbytes = extent(plane)
        held = self._held.get(address)
        if held is not None and held[1].size >= nbytes:
            return held[1]
        if (address, nbytes) in self._refused:
            return None
        if held is not None:  # a smaller range at the same address: give it up first
            self._stream.synchronize()
            held[0].unregister()
            del self._held[address]
        registration = self._register(address, nbytes)
        if registration is None:
            self._refused.add((address, nbytes))
            return None
        memory = np.ctypeslib.as_array((ctypes.c_uint8 * nbytes).from_address(address))
        self._held[address] = (registration, memory)
        self.registered += 1
        return memory

    def release(self) -> None:
        """Wait for the copies queued from the buffers, then unregister them all."""
        if self._held:
            self._stream.synchronize()
            for registration, _ in self._held.values():
                registration.unregister()
            self._held.clear()
        self._refused.clear()
        self._pool = None
