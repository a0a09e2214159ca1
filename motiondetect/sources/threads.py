"""Decode and encode on their own threads, so they overlap the detection on the main thread.

OpenCV's decoder and PyAV's encoder release the GIL while they work, so a decode thread, the
detector (which owns the CUDA context and stays on the main thread) and an encode thread run
at the same time. Bounded queues keep memory flat; an error on a worker thread is re-raised on
the main thread at the next call.
"""

from __future__ import annotations

import queue
import threading
from typing import TYPE_CHECKING, Iterable, Iterator

from motiondetect.core.types import Frame

if TYPE_CHECKING:  # annotations only: sources do not import outputs
    from motiondetect.outputs.writer import VideoWriter

_END = object()


class PrefetchReader:
    """Iterates ``frames`` on a daemon thread, ``depth`` frames ahead; yields every frame in order.

    Unlike :class:`~motiondetect.sources.live.LatestFrameReader` it never drops a frame: when the
    consumer is slower, the reader waits on the full queue.

    Args:
        frames: the source (a :class:`~motiondetect.sources.video.VideoHandler` or a windowed view of one).
        depth: frames decoded ahead at most (memory: ``depth`` frames).

    Raises:
        Exception: whatever the source raised, on the consumer's thread, after the frames read
            before it.
    """

    def __init__(self, frames: Iterable[Frame], depth: int = 8) -> None:
        self._frames = frames
        self._queue: queue.Queue = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, name="motiondetect-decode", daemon=True)
        self._thread.start()

    def _put(self, item) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

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
            item = self._queue.get()
            if item is _END:
                return
            if isinstance(item, BaseException):
                raise item
            yield item

    def stop(self) -> None:
        """Stop the thread (it may be waiting on a full queue) and wait for it briefly."""
        self._stop.set()
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
