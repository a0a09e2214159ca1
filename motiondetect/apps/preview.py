"""PreviewSink: an OpenCV window showing the annotated frames live, with an overlay and keys.

Needs a display and OpenCV's GUI build (``opencv-python``); ``opencv-python-headless`` has no
``imshow`` ("The function is not implemented", opencv/opencv-python#323).
"""

from __future__ import annotations

import logging
import os
import re
import sys
import time
from datetime import datetime
from pathlib import Path

import cv2
import numpy as np

from motiondetect.core.errors import MotionDetectError
from motiondetect.core.picture import as_bgr
from motiondetect.core.safety import free_name, write_image
from motiondetect.outputs.sinks import Sink, StopRequested

log = logging.getLogger("motiondetect")

#: Keys and what they do; shown in ``--help`` and in the window's first seconds.
KEYS = (("q/Esc", "quit"), ("space", "pause"), ("m", "mask view"), ("+/-", "threshold"), ("s", "snapshot PNG"))
#: Seconds the key help stays on screen after the window opens.
HELP_SECONDS = 5.0
_ESC = 27
_GREEN, _RED, _BLACK = (0, 255, 0), (0, 0, 255), (0, 0, 0)


def display_error() -> str | None:
    """Return why no window can be opened here, or ``None`` when one can.

    Checked before touching the GUI: without a display, OpenCV's Qt backend aborts the process
    instead of raising.
    """
    if sys.platform.startswith("linux") and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        return "no display: DISPLAY is not set (run on a desktop, or under Xvfb)"
    gui = re.search(r"^\s*GUI:\s*(\S+)", cv2.getBuildInformation(), re.MULTILINE)
    if gui is None or gui.group(1).upper() == "NONE":
        return "this OpenCV build has no GUI (opencv-python-headless?); install opencv-python"
    return None


class PreviewSink(Sink):
    """Shows each annotated frame (or the mask) in a resizable window, with an overlay and keys.

    Overlay: frames per second (measured at the window), backend, threshold, motion fraction,
    dropped frames, a timestamp, and a red ``REC`` mark while a motion event is open.

    Args:
        title: window title.
        detector: the running :class:`~motiondetect.pipeline.detector.MotionDetector`; ``+``/``-`` move
            the sensitivity parameter of its first filter that has one (``Filter.SENSITIVITY``:
            a Threshold's grey levels by 1, the Gaussian model's ``sigmas`` by 0.1), within its range.
        events: the run's :class:`~motiondetect.outputs.events.EventSegmenter`, for the REC mark, or None.
        snapshot_stem: ``s`` writes what the window shows to ``<snapshot_stem>_snapshot_<frame>.png``
            (``..._mask.png`` in the mask view) in the current folder; a file of that name from
            before the run is kept and the snapshot gets ``_2``, ``_3``... appended.
        realtime_fps: pace the display at this rate (frames/s); ``None`` shows frames as fast as
            they come.
        live: timestamps are wall-clock times (a camera) rather than media times (a file).
        reader: the :class:`~motiondetect.sources.live.LatestFrameReader` whose ``dropped`` count is shown.

    Raises:
        MotionDetectError: no display, or OpenCV has no GUI support.
    """

    def __init__(self, title, detector, events=None, snapshot_stem="motiondetect", realtime_fps=None, live=False, reader=None):
        reason = display_error()
        if reason:
            raise MotionDetectError(f"cannot open the preview window: {reason}")
        # opencv-python points Qt at a font folder it does not ship, and Qt then warns on every
        # window; use the system's DejaVu fonts where that folder is missing.
        fonts = Path("/usr/share/fonts/truetype/dejavu")
        if not Path(os.environ.get("QT_QPA_FONTDIR", "")).is_dir() and fonts.is_dir():
            os.environ["QT_QPA_FONTDIR"] = str(fonts)
        self.title = title
        self.detector = detector
        self.events = events
        self.snapshot_stem = snapshot_stem
        self.realtime_fps = realtime_fps
        self.live = live
        self.reader = reader
        self.show_mask = False
        self.paused = False
        self._opened = time.monotonic()
        self._last_shown = None
        self._fps = 0.0
        self._next_due = None
        self._snapshots: set[Path] = set()
        try:
            cv2.namedWindow(title, cv2.WINDOW_NORMAL | cv2.WINDOW_KEEPRATIO | cv2.WINDOW_GUI_NORMAL)
            cv2.waitKey(100)  # let the window map before the first frame is drawn into it
        except cv2.error as exc:
            raise MotionDetectError(f"cannot open the preview window: {str(exc).strip().splitlines()[-1]}") from None

    # -- keys -------------------------------------------------------------------------------
    @property
    def _sensitive(self):
        """The first filter with a sensitivity parameter (threshold, Gaussian sigmas), or None."""
        return next((f for f in self.detector.filters if f.SENSITIVITY), None)

    @property
    def threshold(self) -> str:
        """``name=value`` of the sensitivity parameter shown in the overlay, or ``"-"``."""
        flt = self._sensitive
        return "-" if flt is None else f"{flt.SENSITIVITY[0]}={flt.params[flt.SENSITIVITY[0]]:g}"

    def _change_threshold(self, direction: int) -> None:
        flt = self._sensitive
        if flt is None:
            log.info("this pipeline has no threshold to change")
            return
        name, step = flt.SENSITIVITY
        spec = next(p for p in flt.PARAMS if p.name == name)
        old = flt.params[name]
        flt.params[name] = spec.type(min(spec.maximum, max(spec.minimum, round(old + direction * step, 6))))
        log.info("%s %g -> %g", name, old, flt.params[name])

    def _handle_key(self, key: int, frame, shown) -> None:
        if key in (ord("q"), _ESC):
            raise StopRequested("quit from the preview window")
        if key == ord(" "):
            self.paused = not self.paused
            log.info("%s", "paused" if self.paused else "resumed")
        elif key == ord("m"):
            self.show_mask = not self.show_mask
        elif key in (ord("+"), ord("=")):
            self._change_threshold(+1)
        elif key in (ord("-"), ord("_")):
            self._change_threshold(-1)
        elif key == ord("s"):
            view = "_mask" if self.show_mask else ""
            path = Path(f"{self.snapshot_stem}_snapshot_{frame.index:06d}{view}.png")
            if path not in self._snapshots:  # a file from before this run is never replaced
                path = free_name(path)
            self._snapshots.add(path)
            try:
                write_image(path, shown)
            except OSError as exc:
                log.warning("cannot write snapshot %s: %s", path, exc.strerror or exc)
                return
            log.info("snapshot written: %s", path)

    # -- drawing ----------------------------------------------------------------------------
    def _compose(self, frame, result) -> np.ndarray:
        image = cv2.cvtColor(result.mask, cv2.COLOR_GRAY2BGR) if self.show_mask else as_bgr(result.frame).copy()
        height = image.shape[0]
        scale = max(0.6, height / 720)  # readable on 240p, proportional on HD
        thick = max(1, round(scale * 2))
        line = int(28 * scale)
        if self.live:
            stamp = datetime.now().strftime("%Y-%m-%d %H:%M:%S")
        else:
            stamp = f"{int(frame.time // 3600):02d}:{int(frame.time % 3600 // 60):02d}:{frame.time % 60:06.3f}"
        threshold = self.threshold
        lines = [
            f"{self._fps:5.1f} fps  {self.detector.backend}  {threshold}",
            f"motion {100 * result.motion_fraction:5.2f}%" + (f"  dropped {self.reader.dropped}" if self.reader else ""),
            f"{stamp}  frame {frame.index}" + ("  PAUSED" if self.paused else "") + ("  MASK" if self.show_mask else ""),
        ]
        width = max(cv2.getTextSize(t, cv2.FONT_HERSHEY_SIMPLEX, 0.6 * scale, thick)[0][0] for t in lines)
        cv2.rectangle(image, (0, 0), (width + 12, line * len(lines) + 8), _BLACK, cv2.FILLED)
        for i, text in enumerate(lines):
            cv2.putText(image, text, (6, line * (i + 1)), cv2.FONT_HERSHEY_SIMPLEX, 0.6 * scale, _GREEN, thick, cv2.LINE_AA)
        if self.events is not None and self.events.in_event:
            x = image.shape[1] - int(90 * scale)
            cv2.circle(image, (x, int(20 * scale)), max(3, int(9 * scale)), _RED, cv2.FILLED)
            cv2.putText(
                image, "REC", (x + int(14 * scale), int(28 * scale)), cv2.FONT_HERSHEY_SIMPLEX, 0.7 * scale, _RED, thick, cv2.LINE_AA
            )
        if time.monotonic() - self._opened < HELP_SECONDS:
            help_text = "   ".join(f"{k}: {v}" for k, v in KEYS)
            y = height - 8
            size = cv2.getTextSize(help_text, cv2.FONT_HERSHEY_SIMPLEX, 0.45 * scale, 1)[0]
            cv2.rectangle(image, (0, y - size[1] - 8), (size[0] + 12, height), _BLACK, cv2.FILLED)
            cv2.putText(image, help_text, (6, y), cv2.FONT_HERSHEY_SIMPLEX, 0.45 * scale, _GREEN, 1, cv2.LINE_AA)
        return image

    def consume(self, frame, result):
        now = time.monotonic()
        if self._last_shown is not None:
            interval = max(now - self._last_shown, 1e-6)
            self._fps = 1 / interval if self._fps == 0 else 0.9 * self._fps + 0.1 / interval
        self._last_shown = now
        shown = self._compose(frame, result)
        cv2.imshow(self.title, shown)
        wait_ms = 1
        if self.realtime_fps:
            self._next_due = (self._next_due or now) + 1 / self.realtime_fps
            wait_ms = max(1, int((self._next_due - time.monotonic()) * 1000))
        self._handle_key(cv2.waitKey(wait_ms) & 0xFF, frame, shown)
        while self.paused:  # keep the window alive; a live reader keeps dropping meanwhile
            shown = self._compose(frame, result)
            cv2.imshow(self.title, shown)
            self._handle_key(cv2.waitKey(30) & 0xFF, frame, shown)
            self._next_due = None

    def close(self, summary):
        try:
            cv2.destroyWindow(self.title)
            cv2.waitKey(1)
        except cv2.error:
            pass  # the user closed the window already
