"""The run loop: frames from a source through the detector into output sinks.

Every output (annotated video, events reports, clips, masks, and later preview windows) is a
:class:`Sink`. Per frame the :class:`Runner` gets the detector's result (or, with frame skip, the
last result held over the frame), draws the overlays, feeds the event segmenter, then each sink.
Whatever ends the run (the end of the input, Ctrl-C or SIGTERM, a failure), it closes the open
event and every sink with a :class:`RunSummary`, so outputs always hold what was processed.
"""

from __future__ import annotations

import logging
import time
from contextlib import nullcontext
from typing import Iterable, Sequence

from motiondetect.core.errors import MotionDetectError
from motiondetect.core.faults import describe_device_fault, is_device_fault
from motiondetect.core.types import Frame
from motiondetect.outputs.events import EventSegmenter
from motiondetect.outputs.sinks import RunSummary, Sink, StopRequested
from motiondetect.pipeline.detector import MotionDetector
from motiondetect.pipeline.frame_skip import FrameSkipper

log = logging.getLogger("motiondetect")


class Runner:
    """Runs ``detector`` over ``frames`` and feeds ``sinks``.

    Args:
        frames: an iterable of :class:`~motiondetect.sources.video.Frame` (a ``VideoHandler``, or a
            ``LatestFrameReader`` whose ``dropped`` count goes into the summary).
        detector: the configured :class:`~motiondetect.pipeline.detector.MotionDetector`.
        sinks: outputs, fed in order; closed in order at the end, each even if another fails.
        progress: an object with ``update(n)``, ``set_postfix_str(s, refresh)`` and ``close()``
            (a tqdm bar), or ``None``.
        events: the :class:`~motiondetect.outputs.events.EventSegmenter` to feed before the sinks (they
            read its state), finished before they close; or ``None``.
        frame_skip: process one frame in ``frame_skip + 1``; the others get the last processed
            result held over them (:meth:`MotionDetector.repeat`), and the last of them primes
            the reference (:meth:`MotionDetector.prime`), so a processed frame is compared with
            its predecessor as in a full run. 0 processes every frame.
        overlay: an :class:`~motiondetect.outputs.overlay.Overlay` drawn on each result's frame before
            the sinks see it, or ``None``.
        source: the input (a ``VideoHandler`` or ``ConcatSource``) whose ``decode_errors`` go
            into the summary, or ``None``.
        stop: a :class:`~motiondetect.core.signals.StopSignals` whose signals end the run after the
            current frame and never interrupt the closing of the sinks, or ``None``.
    """

    def __init__(
        self,
        frames: Iterable[Frame],
        detector: MotionDetector,
        sinks: Sequence[Sink],
        progress=None,
        events: EventSegmenter | None = None,
        frame_skip: int = 0,
        overlay=None,
        source=None,
        stop=None,
    ) -> None:
        self.frames = frames
        self.detector = detector
        self.sinks = list(sinks)
        self.progress = progress
        self.events = events
        self.frame_skip = frame_skip
        self.overlay = overlay
        self.source = source
        self.stop = stop

    def run(self) -> RunSummary:
        """Process until the input ends, Ctrl-C, or a failure; close every sink; return how it went.

        Ctrl-C (and SIGTERM, through ``stop``), :class:`MotionDetectError`, ``ValueError`` (a bad
        frame) and device faults (``pycuda.driver.Error``) are caught and recorded in the summary;
        anything else propagates after the sinks are closed.
        """
        summary = RunSummary()
        started = time.perf_counter()
        try:
            frames = self.stop.frames(self.frames) if self.stop is not None else self.frames
            # A batched detector takes the whole stream; the frame-at-a-time one gets each frame.
            pairs = self.detector.stream(frames) if hasattr(self.detector, "stream") else self._one_at_a_time(frames)
            for frame, result in pairs:
                if self.overlay is not None:
                    result = self.overlay.draw(frame, result)
                if self.events is not None:
                    self.events.update(frame.index, result.motion_fraction, result.bbox, time=frame.time)
                for sink in self.sinks:
                    sink.consume(frame, result)
                del frame, result  # free this frame's arrays before the next is decoded
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
        except Exception as exc:
            if not is_device_fault(exc):
                raise
            summary.error = MotionDetectError(describe_device_fault(exc))
        finally:
            with self.stop.finishing() if self.stop is not None else nullcontext():  # signals wait for the outputs
                summary.elapsed = time.perf_counter() - started
                summary.dropped_frames = getattr(self.frames, "dropped", 0)
                summary.decode_errors = getattr(self.source, "decode_errors", 0)
                if self.progress is not None:
                    self.progress.close()
                if self.events is not None:
                    self.events.finish()
                self._close_sinks(summary)
        return summary

    def _one_at_a_time(self, frames: Iterable[Frame]):
        """Yield (frame, result) for each frame, holding results over skipped frames."""
        skipper = FrameSkipper(self.detector, self.frame_skip)
        for frame in frames:
            yield frame, skipper(frame.image)

    def _close_sinks(self, summary: RunSummary) -> None:
        # Sinks that write files are closed first, the report last, so a failure to finish the
        # video is recorded in the report as "complete": false.
        for sink in self.sinks:
            try:
                sink.close(summary)
            except (MotionDetectError, OSError) as exc:
                reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
                message = f"could not finish {sink.describe() or type(sink).__name__}: {reason}"
                summary.complete = False
                if summary.error is None:
                    summary.error = MotionDetectError(message)  # the command's error line says it
                else:
                    log.error("%s", message)
