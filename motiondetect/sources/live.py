"""Live sources: a reader thread that keeps only the newest frame, so the preview never lags.

Cameras and network streams deliver frames at their own pace; when detection or display is
slower, queuing would make the picture fall further and further behind. Instead the reader
thread overwrites a one-frame slot and counts the frames nobody took (``dropped``). A video file
can be played through the same path at its native frame rate (``motiondetect clip.mp4 --live``),
which is how the live path is tested without a camera. The consumer (the thread that owns the
CUDA context) does all GPU work; the reader only decodes.
"""

from __future__ import annotations

import threading
import time
from typing import Iterable, Iterator

from motiondetect.core.types import Frame


class LatestFrameReader:
    """Reads ``frames`` on a daemon thread; iterating yields the newest unread frame.

    Args:
        frames: the source (a :class:`~motiondetect.sources.video.VideoHandler`), iterated on the thread.
        pace_fps: when set, deliver at most this many frames per second (plays a file like a
            camera); ``None`` reads as fast as the source gives frames (cameras pace themselves).
        wallclock: restamp each frame's ``time`` with seconds since the reader started (a camera
            or stream, whose container times mean little) instead of keeping the source's.

    Attributes:
        dropped: frames read but overwritten before the consumer took them.

    Example:
        >>> with LatestFrameReader(VideoHandler("clip.mp4"), pace_fps=25) as reader:  # doctest: +SKIP
        ...     for frame in reader:
        ...         show(frame)
    """

    def __init__(self, frames: Iterable[Frame], pace_fps: float | None = None, wallclock: bool = False) -> None:
        self._frames = frames
        self._pace_fps = pace_fps
        self._wallclock = wallclock
        self._latest: Frame | None = None
        self._done = False
        self._error: BaseException | None = None
        self._stop = threading.Event()
        self._ready = threading.Condition()
        self.dropped = 0
        self._thread = threading.Thread(target=self._read, name="motiondetect-reader", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        started = time.monotonic()
        try:
            for count, frame in enumerate(self._frames):
                if self._stop.is_set():
                    return
                if self._pace_fps:
                    delay = started + count / self._pace_fps - time.monotonic()
                    if delay > 0:
                        time.sleep(delay)
                if self._wallclock:
                    frame = Frame(frame.index, time.monotonic() - started, frame.image)
                with self._ready:
                    if self._latest is not None:
                        self.dropped += 1
                    self._latest = frame
                    self._ready.notify()
        except BaseException as exc:  # re-raised on the consumer's thread
            self._error = exc
        finally:
            with self._ready:
                self._done = True
                self._ready.notify()

    def __iter__(self) -> Iterator[Frame]:
        """Yield frames newest-first-wins until the source ends.

        Raises:
            Exception: whatever the source raised on the reader thread (e.g. VideoOpenFailure).
        """
        while True:
            with self._ready:
                while self._latest is None and not self._done:
                    self._ready.wait(timeout=0.5)
                frame, self._latest = self._latest, None
                if frame is None:
                    if self._error is not None:
                        raise self._error
                    return
            yield frame

    def stop(self) -> None:
        """Ask the thread to stop after its current frame and wait briefly for it."""
        self._stop.set()
        self._thread.join(timeout=2.0)

    def __enter__(self) -> LatestFrameReader:
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop()
