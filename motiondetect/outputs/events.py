"""Motion events: frames with enough motion, grouped, filtered and padded, and their reports.

An :class:`EventSegmenter` is fed one frame at a time (frame index, motion fraction, bounding
box) and keeps a list of :class:`MotionEvent` s, so an interrupted run still reports what closed
plus the open event. The rules, after DVR-Scan's and Motion's (settings in ``config.EVENT_SETTINGS``):

- a frame *moves* when its motion fraction is > 0, reaches ``min_area`` (or the fraction that
  ``min_pixels`` makes of the pixels that can move) and does not exceed ``max_area``; frames above
  ``max_area`` (a light switched on, auto-exposure: most of the picture changes at once) are
  ignored, as Motion's lightswitch and DVR-Scan's max-area do;
- an event starts when ``min_event_length`` seconds of consecutive frames move; its motion starts
  at the first of them;
- it ends once ``merge_gap`` seconds pass without a moving frame (at least ``time_after``, so the
  padding after an event never holds motion of the next); its motion ends at the last moving frame;
- it is padded with ``time_before`` seconds before and ``time_after`` seconds after, cut at the
  start and end of the input and, before, at the previous event's padded end, so padded events
  never overlap.

Durations become whole frames at the input's frame rate, rounding half up (0.1 s at 25 fps is 3
frames). An event's times are its first and last frame's: frame / fps, or, for a segmenter made
with ``frame_times=True`` (a variable-frame-rate file, whose frames carry their own timestamps),
the times given to :meth:`EventSegmenter.update` with those frames; the rules above still count
frames at the average rate. Reports are JSON or CSV with the same fields (:func:`event_rows`).
"""

from __future__ import annotations

import csv
import json
import math
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Callable

from motiondetect.core.files import atomic_write
from motiondetect.core.types import Box

#: Report fields of an event, in order (CSV columns; JSON keeps ``bbox`` as one [x, y, w, h]).
CSV_COLUMNS = (
    "index",
    "start_frame",
    "end_frame",
    "start_timecode",
    "end_timecode",
    "start_time",
    "end_time",
    "duration",
    "motion_start_frame",
    "motion_end_frame",
    "peak_motion",
    "mean_motion",
    "bbox_x",
    "bbox_y",
    "bbox_w",
    "bbox_h",
)


def seconds_to_frames(seconds: float, fps: float) -> int:
    """Whole frames in ``seconds`` at ``fps`` frames/s, rounding half up (0.1 s at 25 fps: 3)."""
    return int(math.floor(seconds * fps + 0.5 + 1e-9))


def format_timecode(seconds: float) -> str:
    """``HH:MM:SS.mmm`` for a time in seconds >= 0, rounded to the millisecond.

    Example:
        >>> format_timecode(3725.5)
        '01:02:05.500'
    """
    millis = int(math.floor(seconds * 1000 + 0.5))
    hours, millis = divmod(millis, 3_600_000)
    minutes, millis = divmod(millis, 60_000)
    secs, millis = divmod(millis, 1000)
    return f"{hours:02d}:{minutes:02d}:{secs:02d}.{millis:03d}"


def union_box(a: Box | None, b: Box | None) -> Box | None:
    """Smallest (x, y, w, h) box holding both boxes; ``None`` stands for no box."""
    if a is None:
        return b
    if b is None:
        return a
    x0, y0 = min(a[0], b[0]), min(a[1], b[1])
    x1, y1 = max(a[0] + a[2], b[0] + b[2]), max(a[1] + a[3], b[1] + b[3])
    return (x0, y0, x1 - x0, y1 - y0)


@dataclass
class _Stats:
    """Motion statistics over a span of frames (ignored frames excluded)."""

    total: float = 0.0
    frames: int = 0
    peak: float = 0.0
    bbox: Box | None = None

    def add(self, fraction: float, bbox: Box | None, moving: bool) -> None:
        self.total += fraction
        self.frames += 1
        if moving:
            self.peak = max(self.peak, fraction)
            self.bbox = union_box(self.bbox, bbox)

    def absorb(self, other: _Stats) -> None:
        self.total += other.total
        self.frames += other.frames
        self.peak = max(self.peak, other.peak)
        self.bbox = union_box(self.bbox, other.bbox)


@dataclass
class MotionEvent:
    """One motion event.

    Attributes:
        index: 1-based number of the event in its input.
        start_frame, end_frame: first and last frame of the padded event (0-based, inclusive):
            what its clip holds.
        motion_start_frame, motion_end_frame: first and last moving frame (inclusive).
        peak_motion: largest motion fraction of a moving frame, in [0, 1].
        mean_motion: mean motion fraction over motion_start_frame..motion_end_frame (frames
            above ``max_area`` left out), in [0, 1].
        bbox: (x, y, w, h) in input pixels holding the motion of every moving frame, or ``None``
            when no box was given.
        fps: frame rate, frames/s, for the times.
        first_time, last_time: the times of start_frame and end_frame in seconds, where the
            frames carry their own (a variable-frame-rate file's timestamps); ``None``: the
            times are frame / fps. An open event's last_time, whose end frame is not read yet,
            is the current frame's time plus the frames to it at ``fps``.
    """

    index: int
    start_frame: int
    end_frame: int
    motion_start_frame: int
    motion_end_frame: int
    fps: float
    stats: _Stats = field(default_factory=_Stats, repr=False)
    first_time: float | None = None
    last_time: float | None = None

    @property
    def peak_motion(self) -> float:
        return self.stats.peak

    @property
    def mean_motion(self) -> float:
        return self.stats.total / self.stats.frames if self.stats.frames else 0.0

    @property
    def bbox(self) -> Box | None:
        return self.stats.bbox

    @property
    def start_time(self) -> float:
        """Timestamp of the first frame, seconds: :attr:`first_time`, else start_frame / fps."""
        return self.start_frame / self.fps if self.first_time is None else self.first_time

    @property
    def end_time(self) -> float:
        """Timestamp of the last frame, seconds: :attr:`last_time`, else end_frame / fps."""
        return self.end_frame / self.fps if self.last_time is None else self.last_time

    @property
    def duration(self) -> float:
        """Length of the padded event in seconds: its frame count / fps (end_time - start_time +
        1/fps); with the frames' own times, end_time - start_time + 1/fps (the last frame's
        length taken at the average rate)."""
        if self.first_time is None or self.last_time is None:
            return (self.end_frame - self.start_frame + 1) / self.fps
        return self.last_time - self.first_time + 1 / self.fps

    @property
    def frame_count(self) -> int:
        """Frames in the padded event."""
        return self.end_frame - self.start_frame + 1

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready fields (times to the millisecond, fractions to 6 decimals)."""
        return {
            "index": self.index,
            "start_frame": self.start_frame,
            "end_frame": self.end_frame,
            "start_timecode": format_timecode(self.start_time),
            "end_timecode": format_timecode(self.end_time),
            "start_time": round(self.start_time, 3),
            "end_time": round(self.end_time, 3),
            "duration": round(self.duration, 3),
            "motion_start_frame": self.motion_start_frame,
            "motion_end_frame": self.motion_end_frame,
            "peak_motion": round(self.peak_motion, 6),
            "mean_motion": round(self.mean_motion, 6),
            "bbox": None if self.bbox is None else list(self.bbox),
        }


class EventSegmenter:
    """Streaming motion-event segmentation (the rules are in the module docstring).

    Feed every frame in order with :meth:`update`, then call :meth:`finish` once. :attr:`events`
    holds the closed events and the open one at every moment; after each update
    :attr:`started` / :attr:`ended` name the event that this frame confirmed / closed.

    Args:
        fps: frames per second of the input (> 0).
        min_area: motion fraction, [0, 1], at which a frame moves.
        min_pixels: moving pixels (at the input size) at which a frame moves; replaces
            ``min_area`` when given.
        area: pixels that can move at the input size (the ROI's or the frame's); needed with
            ``min_pixels``.
        min_event_length, merge_gap, time_before, time_after: seconds >= 0.
        max_area: motion fraction, [0, 1], above which a frame is ignored (1.0: never).
        frame_times: the events take their times from the times given to :meth:`update` with
            their first and last frames (a variable-frame-rate file's own timestamps), not
            frame / fps; durations in the rules stay whole frames at ``fps``.

    Raises:
        ValueError: ``fps`` <= 0, or ``min_pixels`` without ``area``.

    Example:
        >>> seg = EventSegmenter(10.0, min_area=0.1, min_event_length=0, merge_gap=0, time_before=0, time_after=0)
        >>> for i, f in enumerate([0, 0.5, 0.5, 0, 0]):
        ...     seg.update(i, f)
        >>> [(e.start_frame, e.end_frame) for e in seg.finish()]
        [(1, 2)]
    """

    def __init__(
        self,
        fps: float,
        min_area: float = 0.001,
        min_pixels: int | None = None,
        area: int | None = None,
        min_event_length: float = 0.1,
        merge_gap: float = 2.0,
        time_before: float = 1.5,
        time_after: float = 2.0,
        max_area: float = 1.0,
        frame_times: bool = False,
    ) -> None:
        if not fps > 0:
            raise ValueError(f"fps must be > 0; got {fps}")
        if min_pixels is None:
            trigger = min_area
        elif not area:
            raise ValueError("min_pixels needs the pixel area that can move")
        else:
            trigger = min_pixels / area
        self.fps = float(fps)
        #: Motion fraction at which a frame moves.
        self.trigger = trigger
        self.max_area = max_area
        self.min_frames = max(1, seconds_to_frames(min_event_length, fps))
        self.before_frames = seconds_to_frames(time_before, fps)
        self.after_frames = seconds_to_frames(time_after, fps)
        self.gap_frames = max(seconds_to_frames(merge_gap, fps), self.after_frames)
        self.events: list[MotionEvent] = []
        self.active: MotionEvent | None = None
        self.started: MotionEvent | None = None
        self.ended: MotionEvent | None = None
        self.first_frame: int | None = None
        self.last_frame: int | None = None
        self._run_start: int | None = None
        self._run = _Stats()
        self._gap = _Stats()
        self._previous_end = -1
        self.frame_times = frame_times
        #: (index, time) of the recent frames an event may start or end at (frame_times only).
        self._times: deque[tuple[int, float]] = deque(maxlen=max(self.lookback, self.gap_frames + 1) + 1)

    @classmethod
    def from_config(cls, events: dict[str, Any], fps: float, area: int | None = None, frame_times: bool = False) -> EventSegmenter:
        """Build from a validated config's ``events`` section (see ``config.EVENT_SETTINGS``)."""
        return cls(fps, area=area, frame_times=frame_times, **events)

    @property
    def lookback(self) -> int:
        """Most frames, the current one included, that an event opening now can reach back to."""
        return self.before_frames + self.min_frames

    @property
    def hold_frames(self) -> int:
        """Most frames past an open event's padded end that may still join it (merge gap)."""
        return self.gap_frames - self.after_frames

    def moves(self, fraction: float) -> bool:
        """Whether a frame with this motion fraction counts as moving."""
        return 0 < fraction and self.trigger <= fraction <= self.max_area

    def _time_of(self, index: int) -> float:
        """The time of frame ``index`` (frame_times): its own where it was fed recently, else
        the nearest fed frame's time moved by the frames between at ``fps``."""
        times = self._times
        newest_index, newest_time = times[-1]
        if index >= newest_index:
            return newest_time + (index - newest_index) / self.fps
        for known_index, known_time in reversed(times):
            if known_index == index:
                return known_time
            if known_index < index:
                return known_time + (index - known_index) / self.fps
        oldest_index, oldest_time = times[0]
        return oldest_time - (oldest_index - index) / self.fps

    def update(self, index: int, fraction: float, bbox: Box | None = None, time: float | None = None) -> None:
        """Feed frame ``index`` (consecutive from the first fed) with its motion fraction and box;
        ``time``: its time in seconds, which the events take with ``frame_times`` (without it,
        or ``None``, index / fps)."""
        self.started = self.ended = None
        if self.frame_times:
            self._times.append((index, index / self.fps if time is None else time))
        if self.first_frame is None:
            self.first_frame = index
        self.last_frame = index
        ignored = fraction > self.max_area
        moving = self.moves(fraction)
        event = self.active
        if event is not None:
            if moving:
                event.stats.absorb(self._gap)
                self._gap = _Stats()
                event.stats.add(fraction, bbox, True)
                event.motion_end_frame = index
                event.end_frame = index + self.after_frames
                if self.frame_times:
                    event.last_time = self._time_of(event.end_frame)
            else:
                if not ignored:
                    self._gap.add(fraction, bbox, False)
                if index - event.motion_end_frame > self.gap_frames:
                    self._close(event, event.motion_end_frame + self.after_frames)
            return
        if not moving:
            self._run_start, self._run = None, _Stats()
            return
        if self._run_start is None:
            self._run_start = index
        self._run.add(fraction, bbox, True)
        if self._run.frames >= self.min_frames:
            start = max(self.first_frame, self._run_start - self.before_frames, self._previous_end + 1)
            event = MotionEvent(len(self.events) + 1, start, index + self.after_frames, self._run_start, index, self.fps, self._run)
            if self.frame_times:
                event.first_time, event.last_time = self._time_of(start), self._time_of(event.end_frame)
            self.events.append(event)
            self.active = self.started = event
            self._run_start, self._run, self._gap = None, _Stats(), _Stats()

    def _close(self, event: MotionEvent, end: int) -> None:
        event.end_frame = end
        if self.frame_times:
            event.last_time = self._time_of(end)
        self._previous_end = end
        self.active = None
        self.ended = event
        self._gap = _Stats()

    def finish(self) -> list[MotionEvent]:
        """End the input at the last frame fed: close the open event there; return all events.

        The open event's padding after is cut at the last frame. Calling it again changes nothing.
        """
        if self.active is not None:
            assert self.last_frame is not None  # set by the update that opened the event
            self._close(self.active, min(self.active.motion_end_frame + self.after_frames, self.last_frame))
        return self.events

    @property
    def in_event(self) -> bool:
        """Whether an event is open (started and not yet ended), for the preview's REC mark."""
        return self.active is not None

    def as_dicts(self) -> list[dict[str, Any]]:
        """The events so far as JSON-ready dicts (:meth:`MotionEvent.as_dict`)."""
        return [e.as_dict() for e in self.events]


def event_spans(events: list[MotionEvent]) -> list[tuple[float, float]]:
    """Each padded event's (first frame's time, last frame's time), seconds from the input's
    start (:attr:`MotionEvent.start_time` / ``end_time``: the frames' own times where the events
    carry them)."""
    return [(e.start_time, e.end_time) for e in events]


def event_rows(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Flatten event dicts for CSV: ``bbox`` becomes bbox_x, bbox_y, bbox_w, bbox_h ('' for none)."""
    rows = []
    for e in events:
        row = {k: v for k, v in e.items() if k != "bbox"}
        box = e["bbox"] or ("", "", "", "")
        row.update(zip(("bbox_x", "bbox_y", "bbox_w", "bbox_h"), box))
        rows.append({k: row[k] for k in CSV_COLUMNS})
    return rows


def _write_atomic(path: str | Path, write: Callable[[IO[str]], None], newline: str | None = None) -> None:
    with atomic_write(path, "w", newline=newline) as handle:
        write(handle)


def write_json_atomic(path: str | Path, data: dict[str, Any]) -> None:
    """Write ``data`` as JSON to ``path`` through a temporary file and a rename.

    A reader never sees a half-written file, and an existing file is only replaced whole.

    Raises:
        OSError: the folder is not writable or the disk is full (the temporary file is removed).
    """

    def write(handle):
        json.dump(data, handle, indent=2)
        handle.write("\n")

    _write_atomic(path, write)


def write_csv_atomic(path: str | Path, events: list[dict[str, Any]]) -> None:
    """Write events (:meth:`MotionEvent.as_dict` dicts) as CSV with a header row, atomically.

    Columns are :data:`CSV_COLUMNS`; the csv module quotes as needed (RFC 4180, CRLF rows).

    Raises:
        OSError: as :func:`write_json_atomic`.
    """

    def write(handle):
        writer = csv.DictWriter(handle, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        writer.writerows(event_rows(events))

    _write_atomic(path, write, newline="")
