"""Videos of the motion events: one clip per event (``--clips DIR``), or all events in one file
(``-o OUT --only-motion``).

Both write the frames of the annotated video (with the overlays switched on; ``--no-blend``
gives untouched footage) that fall inside the padded events. Frames are routed as they arrive,
so memory stays bounded: a ring of the last ``time_before + min_event_length`` seconds of
frames waits for an event to open, and, when ``merge_gap`` is longer than ``time_after``, up to
``merge_gap - time_after`` seconds of frames past an open event's padding wait to see whether
motion resumes (in the event) or not (dropped from it; they may still open the next one).
"""

from __future__ import annotations

import logging
from abc import abstractmethod
from collections import deque
from pathlib import Path
from typing import Sequence

import numpy as np

from motiondetect.outputs.events import EventSegmenter, MotionEvent, event_spans
from motiondetect.outputs.sinks import Sink
from motiondetect.outputs.stream_copy import copy_clips
from motiondetect.outputs.writer import VideoWriter

log = logging.getLogger("motiondetect")


def clip_name(stem: str, index: int) -> str:
    """File name of event ``index``'s clip: ``<stem>_event0001.mp4`` (DVR-Scan: ``.DSME_0001``)."""
    return f"{stem}_event{index:04d}.mp4"


class _EventFramesSink(Sink):
    """Hands each frame of a padded event to :meth:`_write`, in order, exactly once.

    Reads the segmenter's state after the :class:`~motiondetect.pipeline.runner.Runner` has fed it the
    frame. Subclasses open and close their files in :meth:`_begin` and :meth:`_end`.
    """

    def __init__(self, events: EventSegmenter) -> None:
        self.events = events
        # (frame number, time in seconds, image) of frames waiting for an event, or past its padding
        self._recent: deque[tuple[int, float, np.ndarray]] = deque(maxlen=events.lookback)
        self._held: list[tuple[int, float, np.ndarray]] = []
        self._event: MotionEvent | None = None

    def consume(self, frame, result):
        index, time, image, seg = frame.index, frame.time, result.frame, self.events
        event = self._event
        if event is not None:
            if seg.ended is event:  # closed by this frame: the held frames are not part of it
                self._event = None  # over even if its file cannot be finished: close() must not end it again
                self._end(event)
                self._recent.extend(self._held)  # but may lead into the next event
                self._held.clear()
            elif index <= event.end_frame:
                for _, held_time, held in self._held:  # motion resumed: the pause belongs to the event
                    self._write(event, held, held_time)
                self._held.clear()
                self._write(event, image, time)
                return
            else:
                self._held.append((index, time, image))
                return
        if seg.started is not None:
            event = seg.started
            self._begin(event)
            self._event = event  # only once its file is open
            for old_index, old_time, old in self._recent:
                if old_index >= event.start_frame:
                    self._write(event, old, old_time)
            self._recent.clear()
            self._write(event, image, time)
        else:
            self._recent.append((index, time, image))

    def close(self, summary):
        # The segmenter has finished: the open event ends at its padding or at the last frame,
        # so held frames (past its padding) stay out.
        self._held.clear()
        self._recent.clear()
        event, self._event = self._event, None
        try:
            if event is not None:
                self._end(event)
        finally:
            self._finish()

    @abstractmethod
    def _begin(self, event: MotionEvent) -> None: ...

    @abstractmethod
    def _write(self, event: MotionEvent, image: np.ndarray, time: float) -> None:
        """Write one frame of ``event``: ``image`` (H, W, 3) uint8 BGR, ``time`` its time in seconds."""

    @abstractmethod
    def _end(self, event: MotionEvent) -> None: ...

    def _finish(self) -> None:
        pass


class ClipSink(_EventFramesSink):
    """Writes one video per motion event, padding included, into a folder.

    Args:
        folder: existing folder for the clips.
        stem: file-name prefix (the input's stem); clip ``i`` is :func:`clip_name` ``(stem, i)``.
        events: the run's segmenter.
        fps: frames per second of the clips (the input's).
        size: (width, height) of the frames.
        display_matrix: the input's display matrix, for the clips to play turned as it does
            (:class:`~motiondetect.outputs.writer.VideoWriter`); ``None``: none.
        own_times: each frame keeps its own time in the clip (the frame's ``time`` less the
            clip's first frame's; a variable-frame-rate input), where ``False`` (default) puts
            frame ``k`` of the clip at ``k / fps``.
    """

    def __init__(
        self,
        folder: str | Path,
        stem: str,
        events: EventSegmenter,
        fps: float,
        size: tuple[int, int],
        display_matrix: Sequence[int] | None = None,
        own_times: bool = False,
    ) -> None:
        super().__init__(events)
        self.folder, self.stem, self.fps, self.size = Path(folder), stem, fps, size
        self.display_matrix, self.own_times = display_matrix, own_times
        self.paths: list[Path] = []
        self._writer: VideoWriter | None = None

    def _begin(self, event):
        path = self.folder / clip_name(self.stem, event.index)
        self._writer = VideoWriter(path, self.fps, self.size, display_matrix=self.display_matrix, own_times=self.own_times)
        self.paths.append(path)

    def _write(self, event, image, time):
        self._writer.write(image, time=time if self.own_times else None)

    def _end(self, event):
        writer, self._writer = self._writer, None
        try:
            writer.close()
        finally:
            if writer.removed:  # cut short by a full disk: no clip to count
                self.paths.remove(Path(writer.path))

    def describe(self):
        return f"{len(self.paths)} clip{'' if len(self.paths) == 1 else 's'} in {self.folder}"


class MotionOnlySink(_EventFramesSink):
    """Writes the frames of every padded event, in order, into one video (``--only-motion``).

    The file is created when the first event opens: a run without events writes none, and
    removes the file an earlier run left at ``path`` (only ``--overwrite`` lets a run start with
    one there), so what is there afterwards is always this run's.

    Args:
        path: the video file.
        events, fps, size, display_matrix: as :class:`ClipSink`.
        own_times: each frame keeps its own time, less the frames left out before it (each
            event follows the last frame of the one before by one period, ``1 / fps``); as
            :class:`ClipSink`'s.
    """

    def __init__(
        self,
        path: str | Path,
        events: EventSegmenter,
        fps: float,
        size: tuple[int, int],
        display_matrix: Sequence[int] | None = None,
        own_times: bool = False,
    ) -> None:
        super().__init__(events)
        self.path, self.fps, self.size, self.display_matrix = Path(path), fps, size, display_matrix
        self.own_times = own_times
        self._writer: VideoWriter | None = None
        self._last: tuple[MotionEvent, float] | None = None  # the event and time of the frame written last
        self._cut = 0.0  # seconds of the input left out so far

    def _begin(self, event):
        if self._writer is None:
            self._writer = VideoWriter(self.path, self.fps, self.size, display_matrix=self.display_matrix, own_times=self.own_times)

    def _write(self, event, image, time):
        if not self.own_times:
            self._writer.write(image)
            return
        if self._last is not None and self._last[0] is not event:
            self._cut += time - self._last[1] - 1 / self.fps
        self._last = (event, time)
        self._writer.write(image, time=time - self._cut)

    def _end(self, event):
        pass

    def _finish(self):
        if self._writer is not None:
            self._writer.close()
        elif self.path.exists():
            self.path.unlink()
            log.info("no motion events: %s not written, and the earlier file there removed", self.path)

    def describe(self):
        return str(self.path) if self._writer is not None else None

    @property
    def removed(self):
        return self._writer is not None and self._writer.removed


class CopiedClipSink(Sink):
    """Cuts one clip per motion event out of the input file by stream copy when the run ends
    (``--clip-mode copy``): the original quality, no re-encoding, no overlays; each clip starts
    at the keyframe at or before its padded event's first frame (DVR-Scan's copy mode does the
    same), so it may begin up to one GOP early (:func:`~motiondetect.outputs.stream_copy.copy_clips`).

    Args:
        source: the input video file.
        folder: existing folder for the clips, named as :class:`ClipSink` names them.
        stem: file-name prefix (the input's stem).
        events: the run's segmenter; its events are final when the sink is closed.
    """

    def __init__(self, source: str | Path, folder: str | Path, stem: str, events: EventSegmenter) -> None:
        self.source, self.folder, self.stem, self.events = source, Path(folder), stem, events
        self.spans: list[tuple[float, float]] = []

    def consume(self, frame, result):
        pass  # the clips are cut from the file once the events are known

    def close(self, summary):
        # Whatever ended the run, the events found so far get their clips.
        events = self.events.events
        spans = event_spans(events)
        paths = [self.folder / clip_name(self.stem, e.index) for e in events]
        self.spans = copy_clips(self.source, spans, paths) if events else []

    def describe(self):
        return f"{len(self.spans)} clip{'' if len(self.spans) == 1 else 's'} (stream copy) in {self.folder}"
