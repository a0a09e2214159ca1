"""Decode and encode on their own threads, so they overlap the detection on the main thread.

OpenCV's decoder and PyAV's encoder release the GIL while they work, so a decode thread, the
detector (which owns the CUDA context and stays on the main thread) and an encode thread run
at the same time. Bounded queues keep memory flat; an error on a worker thread is re-raised on
the main thread at the next call.
"""

from __future__ import annotations

import queue
import threading
from collections import deque
from typing import TYPE_CHECKING, Iterable, Iterator

from motiondetect.core.types import Frame

if TYPE_CHECKING:  # annotations only: sources do not import outputs
    from motiondetect.outputs.writer import VideoWriter

_END = object()

#: Memory a :class:`PrefetchReader`'s head start may hold: 86 yuv420p pictures at 1080p, 21 at
#: 2160p. The set-up it overlaps took 0.07-0.09 s on the GPU machine (H200, 16 cores), during
#: which the decode thread, sharing the GIL with it, read about 30 1080p pictures: the bound
#: matters when the set-up is longer (kernels compiled by nvcc on a first run).
HEAD_START_BYTES = 256 * 2**20


def head_start_frames(size: tuple[int, int], bytes_per_pixel: float) -> int:
    """Frames of (width, height) ``size`` pixels, ``bytes_per_pixel`` each (1.5 for yuv420p
    pictures, 3 for BGR frames), that :data:`HEAD_START_BYTES` holds; 8 to 256."""
    width, height = size
    return int(min(256, max(8, HEAD_START_BYTES // max(1, int(width * height * bytes_per_pixel)))))


class PrefetchReader:
    """Iterates ``frames`` on a daemon thread, ``depth`` frames ahead; yields every frame in order.

    Unlike :class:`~motiondetect.sources.live.LatestFrameReader` it never drops a frame: when the
    consumer is slower, the reader waits.

    A ``head_start`` lets the decoder run while the consumer is still being set up (the CUDA
    handler and the warm-up take 0.07-0.09 s before a GPU run's first frame, and a multithreaded
    decoder left idle that long must refill its pipeline): until the first frame is taken, up
    to ``head_start`` frames are read ahead; each frame taken then lowers the bound by one,
    down to ``depth``, so the frames held shrink back to ``depth`` whatever the consumer's pace
    and the decoder never waits while the consumer catches up.

    Args:
        frames: the source (a :class:`~motiondetect.sources.video.VideoHandler` or a windowed view of one).
        depth: frames read ahead at most in the steady state (memory: ``depth`` frames).
        head_start: frames read ahead at most before the first is taken (memory: as many
            frames); at most ``depth`` has no effect.

    Raises:
        Exception: whatever the source raised, on the consumer's thread, after the frames read
            before it.
    """

    def __init__(self, frames: Iterable[Frame], depth: int = 8, head_start: int = 0) -> None:
        self._frames = frames
        self._held: deque = deque()
        self._changed = threading.Condition()
        self._depth = depth
        self._bound = max(depth, head_start)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, name="motiondetect-decode", daemon=True)
        self._thread.start()

    def _put(self, item) -> bool:
        with self._changed:
            while len(self._held) >= self._bound:
                if self._stop.is_set():
                    return False
                self._changed.wait(0.1)
            if self._stop.is_set():
                return False
            self._held.append(item)
            self._changed.notify()
        return True

    def _read(self) -> None:
        try:
            for frame in self._frames:
                if not self._put(frame):
                    return
            self._put(_END)
        except BaseException as exc:  # re-raised on the consumer's thread
            self._put(exc)

    def __iter__(self) -> Iterator[Frame]:
        while True:
            with self._changed:
                while not self._held:
                    self._changed.wait()
                item = self._held.popleft()
                self._bound = max(self._depth, self._bound - 1)
                self._changed.notify()
            if item is _END:
                return
            if isinstance(item, BaseException):
                raise item
            yield item

    @property
    def held(self) -> int:
        """Frames read and not yet taken."""
        return len(self._held)

    def stop(self) -> None:
        """Stop the thread (it may be waiting for room) and wait for it briefly."""
        self._stop.set()
        with self._changed:
            self._changed.notify_all()
        self._thread.join(timeout=2.0)


class BackgroundWriter:
    """Feeds a :class:`~motiondetect.sources.video.VideoWriter` from a bounded queue on its own thread.

    Args:
        writer: the open writer; this object owns it from now on.
        depth: frames queued at most before :meth:`write` waits.

    Raises:
        VideoOpenFailure: from :meth:`write` or :meth:`close`, when the encoder failed on its thread.
    """

    def __init__(self, writer: VideoWriter, depth: int = 8) -> None:
        self.writer = writer
        self.path = writer.path
        self._queue: queue.Queue = queue.Queue(maxsize=depth)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._encode, name="motiondetect-encode", daemon=True)
        self._thread.start()

    def _encode(self) -> None:
        while True:
            item = self._queue.get()
            if item is _END:
                return
            if self._error is None:
                try:
                    self.writer.write(*item)
                except BaseException as exc:
                    self._error = exc  # keep draining so the producer never blocks

    def write(self, frame, time: float | None = None) -> None:
        """Queue one (H, W, 3) uint8 BGR frame; the array must not be changed afterwards."""
        if self._error is not None:
            raise self._error
        self._queue.put((frame, time))

    def close(self) -> None:
        """Encode what is queued, finish the file, and re-raise an encoder error if there was one."""
        if self._thread.is_alive():
            self._queue.put(_END)
            self._thread.join()
        self.writer.close()
        if self._error is not None:
            raise self._error
