"""Motion events: runs of consecutive frames whose motion fraction reaches ``min_area``."""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any


@dataclass
class MotionEvent:
    """One run of moving frames.

    Attributes:
        start_frame, end_frame: first and last moving frame (0-based, inclusive).
        start_time, end_time: their timestamps in seconds from the start of the input.
        peak_motion: largest motion fraction in the run, in [0, 1].
    """

    start_frame: int
    end_frame: int
    start_time: float
    end_time: float
    peak_motion: float


class EventTracker:
    """Builds :class:`MotionEvent` s frame by frame, so an interrupted run still has its events.

    Args:
        min_area: motion fraction in [0, 1] at or above which a frame is moving.
    """

    def __init__(self, min_area: float) -> None:
        self.min_area = min_area
        self.events: list[MotionEvent] = []
        self._open: MotionEvent | None = None

    def update(self, index: int, time: float, motion_fraction: float) -> None:
        """Feed frame ``index`` (timestamp ``time`` s) with its motion fraction."""
        if motion_fraction >= self.min_area and motion_fraction > 0:
            if self._open is None:
                self._open = MotionEvent(index, index, time, time, motion_fraction)
                self.events.append(self._open)
            else:
                self._open.end_frame, self._open.end_time = index, time
                self._open.peak_motion = max(self._open.peak_motion, motion_fraction)
        else:
            self._open = None

    @property
    def in_event(self) -> bool:
        """Whether the last frame fed was moving (an event is open)."""
        return self._open is not None

    def as_dicts(self) -> list[dict[str, Any]]:
        """The events so far as JSON-ready dicts (times rounded to milliseconds)."""
        return [
            {**asdict(e), "start_time": round(e.start_time, 3), "end_time": round(e.end_time, 3), "peak_motion": round(e.peak_motion, 6)}
            for e in self.events
        ]


def write_json_atomic(path: str | Path, data: dict[str, Any]) -> None:
    """Write ``data`` as JSON to ``path`` through a temporary file and a rename.

    A reader never sees a half-written file, and an existing file is only replaced whole.

    Raises:
        OSError: the folder is not writable or the disk is full (the temporary file is removed).
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)  # mkstemp makes 0600; a report is as readable as the video
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=2)
            handle.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
