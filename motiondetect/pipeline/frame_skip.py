"""Frame skip: process one frame in ``frame_skip + 1`` and hold the last result over the others.

The scan's ``--frame-skip`` (``scan.frame_skip``), after DVR-Scan's ``--frame-skip``. Shared by
the run loop (:class:`~motiondetect.pipeline.runner.Runner`) and ``motiondetect evaluate``, so a
config is scored as it scans.
"""

from __future__ import annotations

import numpy as np

from motiondetect.core.picture import Picture
from motiondetect.core.types import FrameResult
from motiondetect.pipeline.detector import MotionDetector


class FrameSkipper:
    """Feeds a frame-at-a-time :class:`~motiondetect.pipeline.detector.MotionDetector` one frame at
    a time, skipping as ``scan.frame_skip`` says.

    The first frame and every ``frame_skip + 1``-th after a processed one are processed
    (:meth:`MotionDetector.process`); each frame between gets the last processed result held over
    it (:meth:`MotionDetector.repeat`), and the last of them primes the reference
    (:meth:`MotionDetector.prime`), so a processed frame is compared with its true predecessor and
    the sensitivity does not change with the skip. ``frame_skip`` 0 processes every frame.

    Args:
        detector: the detector; its state is the stream's (call :meth:`MotionDetector.reset` for a
            new one).
        frame_skip: frames skipped after each processed frame, >= 0.
    """

    def __init__(self, detector: MotionDetector, frame_skip: int = 0) -> None:
        self.detector = detector
        self.frame_skip = frame_skip
        self._held: FrameResult | None = None
        self._skipped = 0

    def __call__(self, image: np.ndarray | Picture) -> FrameResult:
        """The result for the stream's next frame (a (H, W, 3) uint8 BGR array or a Picture):
        processed, or the last processed one held over it."""
        if self._held is not None and self._skipped < self.frame_skip:
            self._skipped += 1
            if self._skipped == self.frame_skip:  # the next frame is processed: compare it with this one
                self.detector.prime(image)
            return self.detector.repeat(image, self._held)
        result = self.detector.process(image)
        self._held = result if self.frame_skip else None
        self._skipped = 0
        return result
