"""The run loop: frames from a source through the detector into output sinks.

Every output (annotated video, events report, and later preview windows, clips, masks) is a
:class:`Sink`. The :class:`Runner` feeds each sink every frame and, whatever ends the run (the
end of the input, Ctrl-C, a failure), closes every sink with a :class:`RunSummary`, so outputs
always hold what was processed.
"""

from __future__ import annotations

import logging
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from motiondetect.detector import FrameResult, MotionDetector
from motiondetect.errors import MotionDetectError
from motiondetect.events import EventTracker, write_json_atomic
from motiondetect.video import Frame, VideoWriter

log = logging.getLogger("motiondetect")


class StopRequested(Exception):
    """Raised by a sink to end the run early at the user's request (``q`` in the preview)."""


@dataclass
class RunSummary:
    """How a run ended.

    Attributes:
        frames: frames processed and handed to every sink.
        elapsed: wall-clock seconds of the loop.
        complete: the input was read to its end and every sink closed cleanly.
        interrupted: the run was stopped by Ctrl-C.
        stopped: a sink ended the run at the user's request (``q`` in the preview window).
        error: what failed, or ``None``.
        dropped_frames: frames a live source delivered that were skipped to stay current.
    """

    frames: int = 0
    elapsed: float = 0.0
    complete: bool = False
    interrupted: bool = False
    stopped: bool = False
    error: Exception | None = None
    dropped_frames: int = 0

    @property
    def fps(self) -> float:
        """Frames per second of the whole loop."""
        return self.frames / self.elapsed if self.elapsed > 0 else 0.0


class Sink(ABC):
    """An output fed with every processed frame."""

    @abstractmethod
    def consume(self, frame: Frame, result: FrameResult) -> None:
        """Take one frame and its detection result.

        Raises:
            StopRequested: the sink ends the run early at the user's request.
            MotionDetectError: the output failed; the run stops and every sink is closed.
        """

    @abstractmethod
    def close(self, summary: RunSummary) -> None:
        """Finish the output with what was consumed; called exactly once."""

    def describe(self) -> str | None:
        """Where the output went, for the summary line (``None``: nothing to name)."""
        return None


class VideoSink(Sink):
    """Writes the annotated frames (``result.frame``) to a video file.

    Args:
        writer: the open :class:`~motiondetect.video.VideoWriter`.
        timestamps: place each frame at its own timestamp (a live source, where dropped frames
            leave gaps) instead of one frame period after the last.
    """

    def __init__(self, writer: VideoWriter, timestamps: bool = False) -> None:
        self.writer = writer
        self.timestamps = timestamps

    def consume(self, frame, result):
        self.writer.write(result.frame, time=frame.time if self.timestamps else None)

    def close(self, summary):
        self.writer.close()  # the file plays up to the last frame written

    def describe(self):
        return self.writer.path


class EventsSink(Sink):
    """Tracks motion events and writes the JSON report (atomically) when the run ends.

    Args:
        path: JSON file to write, or ``None`` to track events without a report (live preview).
        min_area: motion fraction at or above which a frame is moving.
        header: fields written first (input, fps, backend, config...).
    """

    def __init__(self, path: str | Path | None, min_area: float, header: dict[str, Any]) -> None:
        self.path = None if path is None else Path(path)
        self.tracker = EventTracker(min_area)
        self.header = header

    def consume(self, frame, result):
        self.tracker.update(frame.index, frame.time, result.motion_fraction)

    def close(self, summary):
        if self.path is None:
            return
        report = {
            **self.header,
            "frame_count": summary.frames,
            "events": self.tracker.as_dicts(),
            "complete": summary.complete,
            "dropped_frames": summary.dropped_frames,
            "elapsed_seconds": round(summary.elapsed, 3),
        }
        write_json_atomic(self.path, report)

    def describe(self):
        return None if self.path is None else str(self.path)


class Runner:
    """Runs ``detector`` over ``frames`` and feeds ``sinks``.

    Args:
        frames: an iterable of :class:`~motiondetect.video.Frame` (a ``VideoHandler``, or a
            ``LatestFrameReader`` whose ``dropped`` count goes into the summary).
        detector: the configured :class:`~motiondetect.detector.MotionDetector`.
        sinks: outputs, fed in order; closed in order at the end, each even if another fails.
        progress: an object with ``update(n)``, ``set_postfix_str(s, refresh)`` and ``close()``
            (a tqdm bar), or ``None``.
    """

    def __init__(self, frames: Iterable[Frame], detector: MotionDetector, sinks: Sequence[Sink], progress=None) -> None:
        self.frames = frames
        self.detector = detector
        self.sinks = list(sinks)
        self.progress = progress
        self.events = next((s.tracker for s in self.sinks if isinstance(s, EventsSink)), None)

    def run(self) -> RunSummary:
        """Process until the input ends, Ctrl-C, or a failure; close every sink; return how it went.

        Ctrl-C and :class:`MotionDetectError` / ``ValueError`` (a bad frame) are caught and recorded
        in the summary; anything else propagates after the sinks are closed.
        """
        summary = RunSummary()
        started = time.perf_counter()
        try:
            for frame in self.frames:
                result = self.detector.process(frame.image)
                for sink in self.sinks:
                    sink.consume(frame, result)
                summary.frames += 1
                if self.progress is not None:
                    self.progress.update(1)
                    if self.events is not None:
                        self.progress.set_postfix_str(f"events {len(self.events.events)}", refresh=False)
            summary.complete = True
        except KeyboardInterrupt:
            summary.interrupted = True
        except StopRequested:
            summary.stopped = True
        except (MotionDetectError, ValueError) as exc:
            summary.error = exc
        finally:
            summary.elapsed = time.perf_counter() - started
            summary.dropped_frames = getattr(self.frames, "dropped", 0)
            if self.progress is not None:
                self.progress.close()
            self._close_sinks(summary)
        return summary

    def _close_sinks(self, summary: RunSummary) -> None:
        # Sinks that write files are closed first, the report last, so a failure to finish the
        # video is recorded in the report as "complete": false.
        for sink in self.sinks:
            try:
                sink.close(summary)
            except (MotionDetectError, OSError) as exc:
                log.error("could not finish %s: %s", sink.describe() or type(sink).__name__, exc)
                summary.complete = False
                summary.error = summary.error or exc
