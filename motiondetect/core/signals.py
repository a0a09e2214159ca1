"""Stop signals: Ctrl-C (SIGINT) and SIGTERM end a run after the current frame, outputs intact.

:class:`StopSignals` replaces the handlers of both signals while a run lasts (main thread only)
and restores the previous ones afterwards. What a signal does depends on where the run is:

- processing a frame: it is recorded; the frame is finished and handed to every output, and the
  run stops before the next one (a second signal stops at once, e.g. out of a paused preview);
- waiting for a frame (decoding, a camera, a paced file), or setting up: ``KeyboardInterrupt``
  at once, the same path as Ctrl-C always took;
- finishing the outputs (flushing the video, writing the reports): recorded only, so the files
  are always completed.

The command then exits with 128 + the signal's number (130 for SIGINT, 143 for SIGTERM), the
shells' convention for a process ended by a signal.
"""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, TypeVar

if TYPE_CHECKING:
    from types import FrameType

    #: What ``signal.getsignal`` returns (None: a handler not installed from Python).
    _Handler = Callable[[int, FrameType | None], Any] | int | signal.Handlers | None

T = TypeVar("T")

#: The signals that ask for a graceful stop.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def exit_code(signum: int | None) -> int:
    """The exit code for a run stopped by ``signum`` (``None``: Ctrl-C as a KeyboardInterrupt)."""
    return 128 + (signum or signal.SIGINT)


class StopSignals:
    """Turns SIGINT and SIGTERM into a stop after the current frame; a context manager.

    Attributes:
        received: the first stop signal's number, or ``None``.
        count: stop signals received so far.

    Example:
        >>> with StopSignals() as stop:                               # doctest: +SKIP
        ...     for frame in stop.frames(source):
        ...         process(frame)                  # a signal here ends the loop after it
        ...     with stop.finishing():
        ...         close_outputs()                 # never interrupted
    """

    def __init__(self) -> None:
        self.received: int | None = None
        self.count = 0
        self._state = "idle"  # idle | frame | finishing
        self._previous: dict[int, _Handler] = {}

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():  # signal.signal needs it
            for signum in STOP_SIGNALS:
                self._previous[signum] = signal.getsignal(signum)
                signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc_info) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler if handler is not None else signal.SIG_DFL)
        self._previous.clear()

    def _handle(self, signum, _frame) -> None:
        repeated = self.received is not None
        self.count += 1
        if not repeated:
            self.received = signum
        if self._state == "finishing" or (self._state == "frame" and not repeated):
            return
        self._stop()

    def _stop(self) -> None:
        self._state = "finishing"  # from here on the run only winds down: later signals wait
        raise KeyboardInterrupt

    def frames(self, frames: Iterable[T]) -> Iterator[T]:
        """Yield from ``frames``; a signal during the consumer's work on a frame ends the
        iteration with ``KeyboardInterrupt`` when the consumer asks for the next frame.

        Once the iteration has ended (the source's end, a stop, or the consumer leaving the
        loop), signals are only recorded until :meth:`finishing` is left: call it after the loop.

        Raises:
            KeyboardInterrupt: a stop signal arrived (now, while waiting, or during the last frame).
        """
        source = iter(frames)
        while True:
            if self.received is not None:
                self._stop()
            try:
                item = next(source)
            except StopIteration:
                self._state = "finishing"
                return
            self._state = "frame"
            try:
                yield item
            except GeneratorExit:  # the consumer left the loop (a failure): it is winding down
                self._state = "finishing"
                raise
            self._state = "idle"

    def until_another(self, frames: Iterable[T]) -> Iterator[T]:
        """Yield from ``frames`` until a stop signal arrives after this call: a long step of
        finishing the outputs (cutting clips from a whole file's video, say) that a signal
        should cut short, inside :meth:`finishing`, where signals only are recorded. A signal
        received before the call does not end it: its outputs are what is being finished.

        Raises:
            KeyboardInterrupt: a signal arrived, when the consumer asks for the next frame.
        """
        before = self.count
        for item in frames:
            if self.count > before:
                raise KeyboardInterrupt
            yield item

    @contextmanager
    def finishing(self):
        """Inside, signals are recorded but never interrupt (the outputs are being completed)."""
        self._state = "finishing"
        try:
            yield
        finally:
            self._state = "idle"
