"""Decoder frame buffers registered as pinned memory, so the GPU reads host pictures by DMA.

FFmpeg's H.264 and HEVC decoders take each frame's planes from a buffer pool that keeps every
buffer, at the same address, for as long as the decoder lives (``av_buffer_pool``; a 1080p
stream uses about 25 Y-plane buffers). Registering each buffer once as page-locked memory
(``cuMemHostRegister``) lets an
asynchronous copy read a plane straight from where the decoder wrote it, so the CPU does not
copy the picture into a staging buffer first. Measured in one process on the GPU machine
(NVIDIA H200, 16 cores), 1080p H.264, ``--no-video`` pipeline in batches of 8: decoding alone
1,256 frames/s, staging copies 1,185 (94 %), these registered buffers 1,232 (98 %).

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
        self._held: dict[int, tuple[int, object]] = {}  # address -> (bytes, registration)
        self._refused: set[tuple[int, int]] = set()  # (address, bytes) the driver would not register
        self._pool: Hashable | None = None
        #: Buffers registered over the object's life (for tests and ``-v`` diagnostics).
        self.registered = 0

    def readable(self, plane: np.ndarray, pool: Hashable | None) -> bool:
        """Whether ``plane`` (a 2-D uint8 view with unit column stride) may be copied to the GPU
        asynchronously straight from its memory: its pool is known and its buffer is (now)
        registered. ``False`` when the picture names no pool or the driver refuses the range
        (it overlaps another registration's pages, for one): stage it instead.

        A picture of another pool than the last one's releases every registration first.
        """
        if pool is None:
            return False
        if pool != self._pool:
            self.release()
            self._pool = pool
        address, nbytes = extent(plane)
        held = self._held.get(address)
        if held is not None and held[0] >= nbytes:
            return True
        if (address, nbytes) in self._refused:
            return False
        if held is not None:  # a smaller range at the same address: give it up first
            self._stream.synchronize()
            held[1].unregister()
            del self._held[address]
        registration = self._register(address, nbytes)
        if registration is None:
            self._refused.add((address, nbytes))
            return False
        self._held[address] = (nbytes, registration)
        self.registered += 1
        return True

    def release(self) -> None:
        """Wait for the copies queued from the buffers, then unregister them all."""
        if self._held:
            self._stream.synchronize()
            for _, registration in self._held.values():
                registration.unregister()
            self._held.clear()
        self._refused.clear()
        self._pool = None
