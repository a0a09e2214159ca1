"""Sinks: the outputs a run feeds with every processed frame (annotated video, events reports,
and the others in this package), and how a run ended (:class:`RunSummary`)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from motiondetect.core.errors import MotionDetectError
from motiondetect.core.types import Frame, FrameResult
from motiondetect.outputs.events import EventSegmenter, write_csv_atomic, write_json_atomic
from motiondetect.outputs.writer import VideoWriter


class StopRequested(Exception):
    """Raised by a sink to end the run early at the user's request (``q`` in the preview)."""


@dataclass
class RunSummary:
    """How a run ended.

    Attributes:
        frames: frames processed and handed to every sink.
        elapsed: wall-clock seconds of the loop.
        complete: the input was read to its end and every sink closed cleanly.
        interrupted: the run was stopped by Ctrl-C or SIGTERM.
        stopped: a sink ended the run at the user's request (``q`` in the preview window).
        error: what failed, or ``None``.
        dropped_frames: frames a live source delivered that were skipped to stay current.
        decode_errors: frames of the input that could not be decoded and were skipped.
    """

    frames: int = 0
    elapsed: float = 0.0
    complete: bool = False
    interrupted: bool = False
    stopped: bool = False
    error: Exception | None = None
    dropped_frames: int = 0
    decode_errors: int = 0

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

    @property
    def removed(self) -> bool:
        """The output could not be finished (a full disk) and its file was removed, as it would
        not play: the summary line and the report do not name it."""
        return False


class VideoSink(Sink):
    """Writes the annotated frames (``result.frame``) to a video file.

    Args:
        writer: the open :class:`~motiondetect.outputs.writer.VideoWriter`.
        timestamps: place each frame at its own time (a live source, where dropped frames leave
            gaps; a variable-frame-rate file, to a writer with ``own_times``) instead of one frame
            period after the last.
    """

    def __init__(self, writer: VideoWriter, timestamps: bool = False) -> None:
        self.writer = writer
        self.timestamps = timestamps

    def consume(self, frame, result):
        self.writer.write(result.frame, time=frame.time if self.timestamps else None)

    def close(self, summary):
        try:
            self.writer.close()  # the file plays up to the last frame written
        except MotionDetectError as exc:
            if exc is not summary.error:  # the failure that stopped the run is said once
                raise

    def describe(self):
        return self.writer.path

    @property
    def removed(self):
        # A BackgroundWriter feeds the VideoWriter that knows.
        return getattr(getattr(self.writer, "writer", self.writer), "removed", False)


def _named(path) -> str | None:
    return None if path is None else str(path)


class EventsSink(Sink):
    """Writes the events report when the run ends, atomically: JSON, or CSV for a ``.csv`` name.

    The JSON report is ``header`` plus ``frame_count``, ``events``, ``complete``,
    ``dropped_frames``, ``decode_errors`` and ``elapsed_seconds``; the CSV holds the events only, one row each, with the same fields
    (:data:`motiondetect.outputs.events.CSV_COLUMNS`).

    Args:
        path: file to write; its suffix picks the format.
        events: the run's segmenter (fed and finished by the :class:`Runner`).
        header: fields written first in the JSON (input, fps, backend, config...).
        video: the sink writing the output video, closed before this one; the report's
            ``output_video`` is what its :meth:`~Sink.describe` names then (``None`` where it
            wrote nothing: ``--only-motion`` without events; or where it was
            :attr:`~Sink.removed`), not the name planned in ``header``.
    """

    def __init__(self, path: str | Path, events: EventSegmenter, header: dict[str, Any], video: Sink | None = None) -> None:
        self.path = Path(path)
        self.events = events
        self.header = header
        self.video = video
        self.format = "csv" if self.path.suffix.lower() == ".csv" else "json"

    def consume(self, frame, result):
        pass  # the Runner feeds the segmenter

    def close(self, summary):
        if self.format == "csv":
            write_csv_atomic(self.path, self.events.as_dicts())
            return
        report = {
            **self.header,
            **({"output_video": None if self.video.removed else _named(self.video.describe())} if self.video is not None else {}),
            "frame_count": summary.frames,
            "events": self.events.as_dicts(),
            "complete": summary.complete,
            "dropped_frames": summary.dropped_frames,
            "decode_errors": summary.decode_errors,
            "elapsed_seconds": round(summary.elapsed, 3),
        }
        write_json_atomic(self.path, report)

    def describe(self):
        return None if self.path is None else str(self.path)
