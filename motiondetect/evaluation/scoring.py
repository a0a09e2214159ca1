"""Scoring against ground truth in the CDnet 2014 layout (the library behind ``motiondetect evaluate``).

A ground-truth folder holds ``input/inNNNNNN.jpg`` (the frames), ``groundtruth/gtNNNNNN.png``
(one label image per frame, same number), ``temporalROI.txt`` (first and last frame number of
the evaluated range) and ``ROI.bmp`` (the spatial region of interest, non-zero inside). The
last two are optional here: without them every frame with a label image and every pixel count.
Frames may be JPEG, PNG or BMP, colour or grey (grey is read as three equal channels). An
``ROI.bmp`` of another size than the frames (CDnet ships a few), and label images of another size
but the frames' aspect ratio, are resized to the frames with nearest neighbour, with a warning.

Scoring follows the CDnet rules (Goyette et al., CVPR Workshops 2012; Wang et al., 2014):

- Labels: 255 motion (positive); 0 static and 50 hard shadow (negative); 85 outside the region
  of interest and 170 unknown motion (object boundaries) are not scored, nor is any other value
  or any pixel outside ``ROI.bmp``. In a predicted mask only 255 is motion (MOG2 and KNN mark
  shadows 127: not motion). Other label values are counted as the labels are read
  (:class:`LabelValues`) and ``motiondetect evaluate`` warns of them once a folder, with their
  likely cause: 0/1 masks (motion 1, so none scores as motion) or lossy (JPEG) labels. They are
  not read as anything else: CDnet's own comparator takes the values as they are too.
- Frames: those with a label image inside the temporal ROI, except the first ``skip`` (50) frames
  processed, which let background models settle.
- Pixel scores from the counts summed over the scored frames: precision, recall, F-measure
  (2PR / (P + R)), plus CDnet's specificity, FPR, FNR and PWC.
- Frame level: a frame has motion when at least ``min_area`` (the config's ``events.min_area``,
  0.001 by default) of its pixels move, in the labels (GT 255) and in the mask (255), both
  counted inside the ROI as a fraction of the whole frame, the rule the events file uses.
  Precision, recall and F1 over the scored frames.
- Events: the frame-level flags grouped as a scan's events file groups moving frames
  (:class:`~motiondetect.outputs.events.EventSegmenter`), by the config's ``events.min_event_length``
  (an event starts after that many seconds of consecutive moving frames: 0.1 s, 3 frames at 25
  frames/s) and ``events.merge_gap`` (shorter pauses merge: 2 s), at the footage's frame rate
  (``evaluate --fps``, 25 by default), over the scored frames in order (:class:`EventRules`).
  Detected events group the mask's flags; ground-truth events the labels' flags, the events a
  perfect detector would make the scan report. Each spans its motion, from its first moving frame
  to its last: no padding (``time_before``/``time_after`` would join events whose motion does not
  overlap) and no ``max_area``. A ground-truth event is hit when a detected event overlaps it; a
  detected event that overlaps none is a false event.

Optionally (``--baselines``) the classic anchors run on the same frames, side by side, each
with its default parameters, as it is and with a 5x5 median on its mask: OpenCV's MOG2 and KNN,
and, where opencv-contrib's ``cv2.bgsegm`` is installed, its MOG, CNT and GSOC; where bgslibrary's
Python binding ``pybgs`` is installed, its SuBSENSE and PAWCS (St-Charles, Bilodeau and Bergevin).

With ``--loo`` and several folders it also tunes by leave-one-clip-out (:mod:`motiondetect.evaluation.tuning`):
a parameter grid around the config is scored on every clip, each clip is scored with the point
that does best on all the *other* clips, and a table sets that beside the config's own scores
and the anchors'.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import importlib.util
import logging
import os
import re
import statistics
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import cv2
import numpy as np

from motiondetect.core.errors import MotionDetectError
from motiondetect.core.safety import native_output_silenced
from motiondetect.outputs.events import EventSegmenter
from motiondetect.pipeline.config import EVENT_SETTINGS, build_filters
from motiondetect.pipeline.detector import MotionDetector
from motiondetect.pipeline.frame_skip import FrameSkipper
from motiondetect.sources.video import DEFAULT_SEQUENCE_FPS

log = logging.getLogger("motiondetect")

#: CDnet ground-truth labels.
STATIC, SHADOW, OUTSIDE_ROI, UNKNOWN, MOTION = 0, 50, 85, 170, 255
#: The five; a label image's other values are not scored (:class:`LabelValues` tells them).
CDNET_LABELS = (STATIC, SHADOW, OUTSIDE_ROI, UNKNOWN, MOTION)
#: Frames at the start of the processed window that are not scored (the issue's rule; background
#: models need them to settle).
DEFAULT_SKIP = 50
_NUMBER = re.compile(r"(\d+)$")


class GroundTruthError(MotionDetectError):
    """The ground-truth folder is missing, incomplete or not in the CDnet layout (exit code 2)."""

    exit_code = 2


# -- the ground-truth folder ---------------------------------------------------------------


@dataclass(frozen=True)
class GroundTruthFolder:
    """A sequence in the CDnet layout.

    Attributes:
        root: the folder.
        frames: ``(number, input image, label image or None)`` in frame order.
        temporal_roi: first and last frame number evaluated (``temporalROI.txt``), or ``None``.
        roi: ``(H, W)`` bool region of interest (``ROI.bmp`` non-zero), or ``None`` (all pixels).
        size: ``(width, height)`` of the frames, in pixels.
    """

    root: Path
    frames: list[tuple[int, Path, Path | None]]
    temporal_roi: tuple[int, int] | None
    roi: np.ndarray | None
    size: tuple[int, int]

    @property
    def name(self) -> str:
        """The folder's name (e.g. ``cdnet_highway``)."""
        return self.root.resolve().name

    def in_temporal_roi(self, number: int) -> bool:
        """Whether frame ``number`` lies in the evaluated range."""
        return self.temporal_roi is None or self.temporal_roi[0] <= number <= self.temporal_roi[1]

    def files(self) -> set[Path]:
        """Every file of the layout, resolved: frames, label images, ``ROI.bmp`` (with CDnet's
        ``ROI.jpg``) and ``temporalROI.txt``, which no output may replace."""
        found = {p.resolve() for _, image, label in self.frames for p in (image, label) if p is not None}
        return found | {(self.root / name).resolve() for name in ("ROI.bmp", "ROI.jpg", "temporalROI.txt")}

    def labelled_positions(self) -> list[int]:
        """Positions in :attr:`frames` (from 0) of the frames with a label image in the temporal
        ROI, the ones :func:`evaluate` scores past its ``skip``."""
        return [i for i, (n, _, label) in enumerate(self.frames) if label is not None and self.in_temporal_roi(n)]

    def scored_count(self, skip: int) -> int:
        """How many frames :func:`evaluate` scores with ``skip`` (frames)."""
        return sum(1 for i in self.labelled_positions() if i >= skip)


def _numbered(folder: Path, prefix: str, suffixes: set[str]) -> dict[int, Path]:
    found = {}
    for path in folder.iterdir():
        match = _NUMBER.search(path.stem)
        if path.suffix.lower() in suffixes and path.stem.startswith(prefix) and match:
            found[int(match.group(1))] = path
    return found


def load_folder(path: str | Path) -> GroundTruthFolder:
    """Read the layout of a CDnet ground-truth folder (the images themselves are read later).

    Args:
        path: folder holding ``input/``, ``groundtruth/`` and optionally ``temporalROI.txt`` and
            ``ROI.bmp``.

    Returns:
        The :class:`GroundTruthFolder`.

    Raises:
        GroundTruthError: the folder or its ``input/`` or ``groundtruth/`` part is missing, no
            frame has a label image inside the temporal ROI, ``temporalROI.txt`` is not two
            frame numbers, or ``ROI.bmp`` cannot be read or holds no pixel inside.

    An ``ROI.bmp`` of another size than the frames is resized to them with nearest neighbour
    (``cv2.INTER_NEAREST_EXACT``: each frame pixel takes the ROI pixel its centre falls in) and
    a warning is logged.
    """
    root = Path(path)
    if not root.is_dir():
        raise GroundTruthError(f"ground-truth folder not found: {str(root)!r}")
    inputs_dir, labels_dir = root / "input", root / "groundtruth"
    for part in (inputs_dir, labels_dir):
        if not part.is_dir():
            raise GroundTruthError(
                f"{str(root)!r} is not in the CDnet layout: no {part.name}/ folder (expected input/inNNNNNN.jpg and groundtruth/gtNNNNNN.png)"
            )
    inputs = _numbered(inputs_dir, "in", {".jpg", ".jpeg", ".png", ".bmp"})
    labels = _numbered(labels_dir, "gt", {".png", ".bmp"})
    if not inputs:
        raise GroundTruthError(f"no frames (inNNNNNN.jpg) in {str(inputs_dir)!r}")
    temporal_roi = None
    roi_file = root / "temporalROI.txt"
    if roi_file.is_file():
        fields = roi_file.read_text(encoding="utf-8", errors="replace").split()
        if len(fields) != 2 or not all(f.isdigit() for f in fields):
            raise GroundTruthError(f"{str(roi_file)!r} must hold two frame numbers (first last); got {' '.join(fields)[:40]!r}")
        temporal_roi = (int(fields[0]), int(fields[1]))
    frames = [(n, inputs[n], labels.get(n)) for n in sorted(inputs)]
    if not any(label is not None and (temporal_roi is None or temporal_roi[0] <= n <= temporal_roi[1]) for n, _, label in frames):
        raise GroundTruthError(
            f"no frame of {str(root)!r} has a label image (groundtruth/gtNNNNNN.png) inside the temporal ROI {temporal_roi}"
        )
    first = cv2.imread(str(frames[0][1]), cv2.IMREAD_COLOR)
    if first is None:
        raise GroundTruthError(f"cannot decode frame {str(frames[0][1])!r}")
    height, width = first.shape[:2]
    roi = None
    roi_path = root / "ROI.bmp"
    if roi_path.is_file():
        image = cv2.imread(str(roi_path), cv2.IMREAD_GRAYSCALE)
        if image is None:
            raise GroundTruthError(f"cannot decode {str(roi_path)!r}")
        if image.shape != (height, width):
            image = _nearest_to_frames(image, (width, height), f"{roi_path} is")
        roi = image != 0
        if not roi.any():  # every score would be 0 (a scan's --roi refuses such a mask too)
            raise GroundTruthError(f"{str(roi_path)!r} holds no pixel inside (all 0): nothing would be scored")
    folder = GroundTruthFolder(root, frames, temporal_roi, roi, (width, height))
    missing = sum(1 for n, _, _ in frames if folder.in_temporal_roi(n)) - len(folder.labelled_positions())
    if missing:
        log.info("notice: %s: %d frames inside the temporal ROI have no label image and are not scored", root.name, missing)
    return folder


def _nearest_to_frames(image: np.ndarray, size: tuple[int, int], warning: str | None) -> np.ndarray:
    """``image`` (an ``ROI.bmp`` or label image, ``(h, w)`` uint8) resized to the frames' ``size``
    (width, height) with nearest neighbour (``cv2.INTER_NEAREST_EXACT``: each frame pixel takes the
    pixel its centre falls in), logging "``warning`` WxH, the frames WxH: resized ..." unless
    ``warning`` is ``None`` (its subject and verb, e.g. ``"ROI.bmp is"``)."""
    if warning is not None:
        log.warning(
            "%s %dx%d, the frames %dx%d: resized to the frames with nearest neighbour", warning, image.shape[1], image.shape[0], *size
        )
    return cv2.resize(image, size, interpolation=cv2.INTER_NEAREST_EXACT)


#: Per grey value: whether it is none of CDnet's five labels.
_NOT_CDNET = np.ones(256, bool)
_NOT_CDNET[list(CDNET_LABELS)] = False
#: Per grey value: its distance to the nearest CDnet label (grey levels).
_TO_CDNET = np.min(np.abs(np.arange(256)[:, None] - np.array(CDNET_LABELS)[None, :]), axis=1)
#: Values this close to a CDnet label (grey levels), on at least half the other pixels, say lossy labels:
#: a JPEG round trip of CDnet labels (quality 90, 320x240) leaves 97 % of its changed pixels within
#: 8 of the value they had and all within 24.
LOSSY_DISTANCE = 16


class LabelValues:
    """How often each grey value occurs in the label images read, to tell labels that are not
    CDnet's (:meth:`warning`).

    Pixels of a value other than CDnet's five are neither motion nor static to
    :func:`pixel_classes`, so they are not scored, silently: a folder of 0/1 masks then has no
    motion at all, and labels that went through JPEG lose their edges' pixels to "not scored".

    Attributes:
        counts: ``(256,)`` int64: pixels of each value, summed over the label images.
        images: label images counted.
        odd_images: those of them holding a value that is not a CDnet label.
    """

    def __init__(self) -> None:
        self.counts = np.zeros(256, np.int64)
        self.images = 0
        self.odd_images = 0

    def add(self, labels: np.ndarray) -> None:
        """Count one ``(H, W)`` uint8 label image, every pixel, inside ``ROI.bmp`` or not (about
        60 us at 320x240, 1.4 ms at 1920x1080)."""
        # calcHist: a quarter to a half of np.bincount's time; its float32 counts are exact up to
        # 2**24 pixels an image.
        counts = cv2.calcHist([labels], [0], None, [256], [0, 256]).ravel().astype(np.int64)
        self.counts += counts
        self.images += 1
        self.odd_images += bool(counts[_NOT_CDNET].any())

    @property
    def odd_pixels(self) -> int:
        """Pixels counted whose value is not a CDnet label."""
        return int(self.counts[_NOT_CDNET].sum())

    def warning(self) -> str | None:
        """What to tell the user when some label pixels are not CDnet's values, or ``None``.

        Says how many pixels in how many label images, the most frequent values (five at most),
        that they are not scored, and the likely cause with its remedy: 0/1 masks (only 0 and 1
        seen) are to be multiplied by 255; values within :data:`LOSSY_DISTANCE` of CDnet's on at
        least half those pixels, not all of them near 0, are lossy (JPEG) labels, to be saved as PNG.
        """
        odd = self.odd_pixels
        if not odd:
            return None
        values = np.flatnonzero((self.counts > 0) & _NOT_CDNET)
        values = values[np.argsort(-self.counts[values], kind="stable")]
        shown = ", ".join(str(v) for v in values[:5]) + (f" and {len(values) - 5} more" if len(values) > 5 else "")
        if set(np.flatnonzero(self.counts)) <= {STATIC, 1}:
            hint = "the labels look like 0/1 masks (no 255, so no frame has motion); CDnet labels mark motion 255: multiply by 255"
        elif self.counts[values][_TO_CDNET[values] <= LOSSY_DISTANCE].sum() * 2 >= odd and values.max() > LOSSY_DISTANCE:
            # ... and not all near 0, as class indices (0, 1, 2...) are.
            hint = "this looks like lossy (JPEG) labels (values near CDnet's); use PNG labels saved without loss"
        else:
            hint = "convert the labels to CDnet's values"
        return (
            f"{odd} pixels in {self.odd_images} of {self.images} label images hold values that are not CDnet labels "
            f"(0 static, 50 shadow, 85 outside ROI, 170 unknown, 255 motion): {shown}; they are not scored, "
            f"as 85 and 170 are not: {hint}"
        )


# -- scores ----------------------------------------------------------------------------------


def _ratio(num: int, den: int) -> float:
    return num / den if den else 0.0


def _f1(precision: float, recall: float) -> float:
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


@dataclass
class ConfusionCounts:
    """True/false positives and negatives, and the precision, recall and F-measure they give."""

    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0

    @property
    def precision(self) -> float:
        """TP / (TP + FP); 0 when nothing was predicted."""
        return _ratio(self.tp, self.tp + self.fp)

    @property
    def recall(self) -> float:
        """TP / (TP + FN); 0 when nothing was positive."""
        return _ratio(self.tp, self.tp + self.fn)

    @property
    def f_measure(self) -> float:
        """2 P R / (P + R): CDnet's F-measure, the F1 score."""
        return _f1(self.precision, self.recall)


@dataclass
class PixelScore(ConfusionCounts):
    """Pixel counts over the scored frames (CDnet rules) and the measures derived from them."""

    def as_dict(self) -> dict[str, Any]:
        """Counts and measures (CDnet's specificity, FPR, FNR and PWC included), JSON-ready."""
        total = self.tp + self.fp + self.fn + self.tn
        return {
            **asdict(self),
            "precision": self.precision,
            "recall": self.recall,
            "f_measure": self.f_measure,
            "specificity": _ratio(self.tn, self.tn + self.fp),
            "fpr": _ratio(self.fp, self.fp + self.tn),
            "fnr": _ratio(self.fn, self.tp + self.fn),
            "pwc": 100.0 * _ratio(self.fn + self.fp, total),
        }


@dataclass
class FrameScore(ConfusionCounts):
    """Frame-level counts: frames with motion (truth) against frames flagged (prediction)."""

    @property
    def f1(self) -> float:
        """Frame-level F1 (the F-measure of the frame counts)."""
        return self.f_measure

    def as_dict(self) -> dict[str, Any]:
        """Counts and measures, JSON-ready."""
        return {**asdict(self), "precision": self.precision, "recall": self.recall, "f1": self.f1}


def runs(flags: list[bool]) -> list[tuple[int, int]]:
    """``(first, last)`` positions (inclusive) of each run of consecutive ``True`` in ``flags``
    (the events of :class:`EventRules` with ``min_event_length`` and ``merge_gap`` 0)."""
    out, start = [], None
    for i, flag in enumerate([*flags, False]):
        if flag and start is None:
            start = i
        elif not flag and start is not None:
            out.append((start, i - 1))
            start = None
    return out


@dataclass(frozen=True)
class EventRules:
    """How the frames' motion flags group into events: as a scan's events file groups its moving
    frames (:class:`~motiondetect.outputs.events.EventSegmenter`), without padding.

    Attributes:
        min_event_length: seconds of consecutive moving frames that start an event (the config's
            ``events.min_event_length``; 0.1: 3 frames at 25 frames/s).
        merge_gap: seconds; pauses up to that long inside an event merge (``events.merge_gap``).
        fps: frame rate of the footage, frames/s (> 0): that of the frames scored, each labelled
            frame being scored (with ``scan.frame_skip`` a skipped frame scores the mask held
            over it, as a scan feeds it to its events). Where the labelled frames are each N
            frame numbers apart (the median step), the rules apply at ``fps / N``.

    ``time_before`` and ``time_after`` are left out (padding would join events whose motion does
    not overlap), and so is ``max_area`` (``evaluate`` does not apply it).
    """

    min_event_length: float = EVENT_SETTINGS["min_event_length"][1]
    merge_gap: float = EVENT_SETTINGS["merge_gap"][1]
    fps: float = DEFAULT_SEQUENCE_FPS

    @classmethod
    def from_config(cls, events: dict[str, Any], fps: float) -> EventRules:
        """The rules of a validated config's ``events`` section at ``fps`` frames/s."""
        return cls(events["min_event_length"], events["merge_gap"], fps)

    def segment(self, flags: list[bool], step: int = 1) -> list[tuple[int, int]]:
        """``(first, last)`` positions (inclusive) in ``flags`` of each event's motion: its first
        and last moving frame.

        Args:
            flags: whether each frame moves, consecutive frames in order.
            step: frame numbers between consecutive flags (the rules apply at ``fps / step``).

        Example:
            >>> EventRules(0.1, 2.0, 25.0).segment([True, False, True, True, True, False, False, True])
            [(2, 7)]
        """
        segmenter = EventSegmenter(
            self.fps / step,
            min_area=1.0,
            min_event_length=self.min_event_length,
            merge_gap=self.merge_gap,
            time_before=0.0,
            time_after=0.0,
        )
        for position, flag in enumerate(flags):
            segmenter.update(position, 1.0 if flag else 0.0)
        return [(e.motion_start_frame, e.motion_end_frame) for e in segmenter.finish()]

    def as_dict(self) -> dict[str, Any]:
        """The rules, JSON-ready."""
        return asdict(self)

    def describe(self) -> str:
        """The rules in words, for a table's header."""
        return f"events from {self.min_event_length:g} s of motion, pauses up to {self.merge_gap:g} s merged, at {self.fps:g} fps"


@dataclass
class EventScore:
    """Ground-truth events hit by detected events, and false events: each event the ``(first,
    last)`` frame numbers of its motion (:class:`EventRules`)."""

    truth: list[tuple[int, int]] = field(default_factory=list)
    detected: list[tuple[int, int]] = field(default_factory=list)

    @staticmethod
    def _overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool:
        return a[0] <= b[1] and b[0] <= a[1]

    @property
    def hits(self) -> int:
        """Ground-truth events that some detected event overlaps."""
        return sum(any(self._overlaps(t, d) for d in self.detected) for t in self.truth)

    @property
    def false_events(self) -> int:
        """Detected events that overlap no ground-truth event."""
        return sum(not any(self._overlaps(d, t) for t in self.truth) for d in self.detected)

    def as_dict(self) -> dict[str, Any]:
        """Event counts, hits, false events and both event lists (frame numbers), JSON-ready."""
        return {
            "truth_events": len(self.truth),
            "detected_events": len(self.detected),
            "hits": self.hits,
            "false_events": self.false_events,
            "truth": [list(e) for e in self.truth],
            "detected": [list(e) for e in self.detected],
        }


def pixel_classes(mask: np.ndarray, labels: np.ndarray, roi: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The CDnet classes of one frame's pixels: (predicted, positive, negative), each ``(H, W)``
    bool, inside ``roi`` (an ``(H, W)`` bool region of interest, or ``None`` for the whole frame).

    ``predicted`` is the mask's motion (255; any other value is not), ``positive`` the labels'
    motion (255), ``negative`` their static and hard-shadow pixels (0, 50); the labels' 85 and
    170 are neither, so they are not scored, and no more is any other value (see :class:`LabelValues`).

    Raises:
        ValueError: ``mask`` and ``labels`` differ in shape.
    """
    if mask.shape != labels.shape:
        raise ValueError(f"mask is {mask.shape[1]}x{mask.shape[0]}, the labels {labels.shape[1]}x{labels.shape[0]}")
    predicted = mask == MOTION
    positive = labels == MOTION
    negative = (labels == STATIC) | (labels == SHADOW)
    if roi is not None:
        predicted, positive, negative = predicted & roi, positive & roi, negative & roi
    return predicted, positive, negative


class Scorer:
    """Accumulates the scores of one method, frame by frame.

    Args:
        roi: ``(H, W)`` bool region of interest, or ``None`` for the whole frame.
        min_area: fraction of the frame's pixels, in [0, 1], that must move for a frame to
            have motion (the config's ``events.min_area``).
        event_rules: how the frames with motion group into events (:attr:`events`); ``None``:
            the config's defaults at 25 frames/s (:class:`EventRules`).

    Example:
        >>> scorer = Scorer(None, 0.001)
        >>> scorer.add(np.full((2, 2), 255, np.uint8), np.array([[255, 0], [170, 50]], np.uint8))
        >>> (scorer.pixel.tp, scorer.pixel.fp, scorer.pixel.fn, scorer.pixel.tn)
        (1, 2, 0, 0)
    """

    def __init__(self, roi: np.ndarray | None, min_area: float, event_rules: EventRules | None = None) -> None:
        self.roi = roi
        self.min_area = min_area
        self.event_rules = EventRules() if event_rules is None else event_rules
        self.pixel = PixelScore()
        self.frames = FrameScore()
        self.truth_flags: list[bool] = []
        self.predicted_flags: list[bool] = []
        self.numbers: list[int] = []

    def _moving(self, count: int, size: int) -> bool:
        # The events rule (EventSegmenter): a fraction of at least min_area, and not zero.
        fraction = count / size
        return fraction >= self.min_area and fraction > 0

    def add(self, mask: np.ndarray, labels: np.ndarray, number: int | None = None) -> None:
        """Score one frame.

        Args:
            mask: ``(H, W)`` uint8 prediction; 255 is motion, any other value is not.
            labels: ``(H, W)`` uint8 CDnet labels of the same frame.
            number: the frame's number, for the event lists (default: its position).

        Raises:
            ValueError: ``mask`` and ``labels`` differ in shape.
        """
        predicted, positive, negative = pixel_classes(mask, labels, self.roi)
        p = self.pixel
        p.tp += int(np.count_nonzero(predicted & positive))
        p.fn += int(np.count_nonzero(positive & ~predicted))
        p.fp += int(np.count_nonzero(predicted & negative))
        p.tn += int(np.count_nonzero(negative & ~predicted))
        truth = self._moving(int(np.count_nonzero(positive)), labels.size)
        flagged = self._moving(int(np.count_nonzero(predicted)), mask.size)
        f = self.frames
        f.tp += truth and flagged
        f.fp += flagged and not truth
        f.fn += truth and not flagged
        f.tn += not truth and not flagged
        self.truth_flags.append(truth)
        self.predicted_flags.append(flagged)
        self.numbers.append(len(self.numbers) if number is None else number)

    @property
    def number_step(self) -> int:
        """Frame numbers between consecutive scored frames: the median step (1 with fewer than two
        frames, or numbers that do not increase)."""
        steps = [b - a for a, b in zip(self.numbers, self.numbers[1:])]
        return max(1, statistics.median_low(steps)) if steps else 1

    @property
    def events(self) -> EventScore:
        """Events over the frames scored so far, as frame numbers: the labels' flags and the
        mask's, each grouped by :attr:`event_rules` over the scored frames in order (positions
        among them, at ``fps`` over :attr:`number_step`)."""
        step = self.number_step

        def numbered(flags):
            return [(self.numbers[a], self.numbers[b]) for a, b in self.event_rules.segment(flags, step)]

        return EventScore(numbered(self.truth_flags), numbered(self.predicted_flags))


# -- methods -----------------------------------------------------------------------------------


@dataclass
class Method:
    """A motion detector to score: ``segment(frame) -> mask`` called on every frame in order.

    Attributes:
        name: the label in the table.
        segment: takes a ``(H, W, 3)`` uint8 BGR frame, returns a ``(H, W)`` uint8 mask (255 motion).
        seconds: time spent in ``segment`` so far.
        upstream: the method whose mask this one post-processes (its time counts in
            :attr:`total_seconds`), or ``None``.
    """

    name: str
    segment: Callable[[np.ndarray], np.ndarray]
    seconds: float = 0.0
    upstream: Method | None = None

    def __call__(self, frame: np.ndarray) -> np.ndarray:
        started = time.perf_counter()
        mask = self.segment(frame)
        self.seconds += time.perf_counter() - started
        return mask

    @property
    def total_seconds(self) -> float:
        """Seconds spent making this method's masks, the upstream method's included (for the fps)."""
        return self.seconds + (self.upstream.total_seconds if self.upstream is not None else 0.0)


#: Side of the median applied to an anchor's mask: the CDnet custom (its published results and
#: the issue's anchors use a 5x5 median as post-processing).
ANCHOR_MEDIAN = 5


class _SharedMask:
    """One background subtractor whose mask two methods score: as it is, and post-processed.

    The post-processed method reuses the mask the plain one made for the same frame object, so
    the subtractor sees each frame once (KNN draws from OpenCV's global random generator: a
    second instance would change the first one's draws and scores).
    """

    def __init__(self, apply: Callable[[np.ndarray], np.ndarray]) -> None:
        self._apply = apply
        self._frame: np.ndarray | None = None
        self._mask: np.ndarray | None = None

    def __call__(self, frame: np.ndarray) -> np.ndarray:
        if frame is not self._frame:
            self._frame, self._mask = frame, self._apply(frame)
        return self._mask


def median_of_motion(mask: np.ndarray, size: int = ANCHOR_MEDIAN) -> np.ndarray:
    """The ``size`` x ``size`` median of a mask's motion: 255 where most of the window is 255.

    Args:
        mask: ``(H, W)`` uint8 mask; only 255 is motion (MOG2's and KNN's shadow value 127 is not).
        size: odd window side in pixels (``cv2.medianBlur``; replicated borders).

    Returns:
        ``(H, W)`` uint8 mask of 0 and 255.
    """
    return cv2.medianBlur(np.where(mask == MOTION, MOTION, 0).astype(np.uint8), size)


def anchor_factories() -> list[tuple[str, Callable[[], Any]]]:
    """``(name, factory)`` of each classic anchor available here, every one with its defaults.

    OpenCV's MOG2 (history 500, varThreshold 16, shadows on) and KNN (history 500,
    dist2Threshold 400, shadows on); with opencv-contrib (``cv2.bgsegm``) also MOG, CNT and GSOC.
    Without ``cv2.bgsegm`` the contrib anchors are left out silently: opencv-contrib is not a
    dependency.
    """
    factories: list[tuple[str, Callable[[], Any]]] = [
        ("MOG2", cv2.createBackgroundSubtractorMOG2),
        ("KNN", cv2.createBackgroundSubtractorKNN),
    ]
    bgsegm = getattr(cv2, "bgsegm", None)
    if bgsegm is not None:
        factories += [
            ("MOG", bgsegm.createBackgroundSubtractorMOG),
            ("CNT", bgsegm.createBackgroundSubtractorCNT),
            ("GSOC", bgsegm.createBackgroundSubtractorGSOC),
        ]
    return factories


#: bgslibrary's anchors (``pybgs`` class names): SuBSENSE (St-Charles, Bilodeau and Bergevin,
#: IEEE TIP 2015) and PAWCS (the same authors, WACV 2015).
BGSLIBRARY_ANCHORS = ("SuBSENSE", "PAWCS")

#: What a table or notice says when ``pybgs`` is missing: the strongest anchors are then not scored.
BGSLIBRARY_MISSING = (
    "bgslibrary's SuBSENSE and PAWCS are not scored: pybgs is not installed (pip install pybgs; it builds against the system OpenCV)"
)


def bgslibrary_available() -> bool:
    """Whether ``pybgs`` (bgslibrary's Python binding) can be imported here, without importing it."""
    return importlib.util.find_spec("pybgs") is not None


class _BgsLibrary:
    """One of bgslibrary's algorithms (``pybgs.NAME()``, bgslibrary 3.3) with its default parameters.

    bgslibrary reads an algorithm's parameters from ``./config/NAME.xml`` of the working directory
    when that file exists (and writes its defaults there when only the folder does): it is made
    in an empty temporary directory, so the defaults hold and nothing is written beside the user's
    files. ``apply`` takes a ``(H, W, 3)`` uint8 BGR frame; bgslibrary returns a ``(H, W)`` uint8
    mask of 0 and 255 (SuBSENSE and PAWCS median-filter it themselves), mapped here to 255 wherever
    it is non-zero.
    """

    def __init__(self, name: str) -> None:
        import pybgs

        previous = os.getcwd()
        with native_output_silenced(), tempfile.TemporaryDirectory() as empty:
            os.chdir(empty)
            try:
                os.mkdir("config")  # its defaults go there and come back: no errors printed
                self._algorithm = getattr(pybgs, name)()
            finally:
                os.chdir(previous)

    def apply(self, frame: np.ndarray) -> np.ndarray:
        with native_output_silenced():
            mask = self._algorithm.apply(frame)
        return np.where(mask != 0, MOTION, 0).astype(np.uint8)

    def __del__(self) -> None:
        # Its destructor prints "-NAME()"; at interpreter exit the modules used here may be gone,
        # and an error in __del__ would only print a warning, so the object is then freed as it is.
        try:
            with native_output_silenced():
                self.__dict__.pop("_algorithm", None)
        except Exception:
            self.__dict__.pop("_algorithm", None)


def _reseed_c_rand(seed: int = 0) -> None:
    """``srand(seed)`` of the C library: SuBSENSE and PAWCS draw from its global ``rand()``."""
    name = ctypes.util.find_library("c")
    if name:
        ctypes.CDLL(name).srand(seed)


def _with_median(label: str, subtractor: Any) -> list[Method]:
    """``label (defaults)``, the subtractor's mask, and ``label + median 5x5`` of that same mask."""
    shared = _SharedMask(subtractor.apply)
    plain = Method(f"{label} (defaults)", shared)
    filtered = Method(
        f"{label} + median {ANCHOR_MEDIAN}x{ANCHOR_MEDIAN}",
        lambda frame: median_of_motion(shared(frame)),
        upstream=plain,
    )
    return [plain, filtered]


def classic_baselines() -> list[Method]:
    """The classic anchors, each as it is and with a 5x5 median: those of :func:`anchor_factories`,
    then bgslibrary's :data:`BGSLIBRARY_ANCHORS` where ``pybgs`` is installed.

    For each anchor two methods, in this order: ``OpenCV NAME (defaults)`` (or ``bgslibrary NAME
    (defaults)``), its raw mask (MOG2 and KNN mark shadows 127, which scores as no motion), and
    ``OpenCV NAME + median 5x5``, :func:`median_of_motion` of that same mask. KNN (and GSOC) draw
    random numbers from OpenCV's global generator, so it is reseeded here (``cv2.setRNGSeed(0)``:
    the state of a fresh process) to make their scores repeatable. SuBSENSE and PAWCS draw from
    the C library's global ``rand()``, so their masks depend on what drew before them (a second
    run on 80 frames of baseline_pedestrians in the same process differed on 55 of them): it is
    reseeded too (``srand(0)``), which makes them repeatable where ``pybgs`` shares that
    generator (glibc). Without ``pybgs`` (not a dependency) its anchors are left out; ``evaluate
    --baselines`` then says so (:data:`BGSLIBRARY_MISSING`), as the leave-one-out table does.
    """
    cv2.setRNGSeed(0)
    methods = []
    for name, factory in anchor_factories():
        methods += _with_median(f"OpenCV {name}", factory())
    if not bgslibrary_available():
        return methods
    _reseed_c_rand(0)
    for name in BGSLIBRARY_ANCHORS:
        methods += _with_median(f"bgslibrary {name}", _BgsLibrary(name))
    return methods


def detector_method(detector: MotionDetector, label: str = "motiondetect", frame_skip: int = 0) -> Method:
    """The :class:`~motiondetect.pipeline.detector.MotionDetector` as a :class:`Method` (a fresh
    stream), skipping ``frame_skip`` frames after each processed one as a scan does
    (:class:`~motiondetect.pipeline.frame_skip.FrameSkipper`: a skipped frame gets the last
    processed mask)."""
    detector.reset()
    skipper = FrameSkipper(detector, frame_skip)
    return Method(label, lambda frame: skipper(frame).mask)


def config_method(config: dict[str, Any], cuda=None, label: str = "motiondetect") -> Method:
    """A config's pipeline as a :class:`Method`, as a scan runs it: at ``scan.downscale`` (the
    masks scored at the frames' size) and with ``scan.frame_skip``; no annotation. ``cuda``: a
    :class:`~motiondetect.gpu.cuda_handler.CUDAHandler`, or ``None`` for the CPU backend.

    Raises:
        motiondetect.core.errors.ConfigError: a bad pipeline (:func:`~motiondetect.pipeline.config.build_filters`).
    """
    scan = config["scan"]
    detector = MotionDetector(build_filters(config), cuda=cuda, annotate=False, downscale=scan["downscale"])
    return detector_method(detector, label, scan["frame_skip"])


# -- the evaluation ------------------------------------------------------------------------------


@dataclass
class Evaluation:
    """Scores of every method on one ground-truth folder."""

    folder: GroundTruthFolder
    skip: int
    min_area: float
    processed: int
    scored_numbers: list[int]
    scores: list[tuple[Method, Scorer]]
    #: The values of the label images read (:class:`LabelValues`), or ``None`` where
    #: :func:`evaluate` was given decoded frames (it did not read them).
    label_values: LabelValues | None = None
    #: How the frames with motion group into events (:class:`EventRules`).
    event_rules: EventRules = field(default_factory=EventRules)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: the folder, what was scored, and each method's pixel, frame and event scores."""
        return {
            "folder": str(self.folder.root),
            "frame_size": list(self.folder.size),
            "frames_processed": self.processed,
            "frames_scored": len(self.scored_numbers),
            "scored_range": [self.scored_numbers[0], self.scored_numbers[-1]] if self.scored_numbers else None,
            "skip": self.skip,
            "temporal_roi": list(self.folder.temporal_roi) if self.folder.temporal_roi else None,
            "roi_fraction": 1.0 if self.folder.roi is None else float(self.folder.roi.mean()),
            "min_area": self.min_area,
            "event_rules": self.event_rules.as_dict(),
            "methods": [
                {
                    "name": method.name,
                    "pixel": scorer.pixel.as_dict(),
                    "frame": scorer.frames.as_dict(),
                    "events": scorer.events.as_dict(),
                    "seconds": round(method.total_seconds, 3),
                    "fps": round(self.processed / method.total_seconds, 1) if method.total_seconds > 0 else None,
                }
                for method, scorer in self.scores
            ],
        }


#: One decoded frame: its number, ``(H, W, 3)`` uint8 BGR image, and ``(H, W)`` uint8 CDnet labels
#: (``None`` where the frame has no label image or lies outside the temporal ROI).
DecodedFrame = tuple[int, np.ndarray, "np.ndarray | None"]


def decoded_frames(folder: GroundTruthFolder, label_values: LabelValues | None = None) -> Iterator[DecodedFrame]:
    """Decode the folder's frames in order, with the labels of those the temporal ROI covers.

    ``list(decoded_frames(folder))`` keeps a clip in memory for repeated runs (parameter
    tuning); :func:`evaluate` streams it.

    Label images of another size than the frames but the same aspect ratio (within 1 %) are
    resized to the frames with nearest neighbour (``cv2.INTER_NEAREST_EXACT``), as an ``ROI.bmp``
    is, with one warning per pass: some public sets ship labels drawn on a smaller copy of the
    frames (the COL780 course's PETS 2001 clip: 320x240 labels for 768x576 frames).

    ``label_values``, where given, counts the values of every label image read
    (:meth:`LabelValues.add`), for a warning about labels that are not CDnet's.

    Raises:
        GroundTruthError: a frame or label image cannot be decoded, a frame has another size than
            the first, or a label image another aspect ratio than the frames.
    """
    width, height = folder.size
    warned = False
    for number, image_path, label_path in folder.frames:
        image = cv2.imread(str(image_path), cv2.IMREAD_COLOR)
        if image is None:
            raise GroundTruthError(f"cannot decode frame {str(image_path)!r}")
        if image.shape[:2] != (height, width):
            raise GroundTruthError(f"frame {str(image_path)!r} is {image.shape[1]}x{image.shape[0]}, the first {width}x{height}")
        labels = None
        if label_path is not None and folder.in_temporal_roi(number):
            labels = cv2.imread(str(label_path), cv2.IMREAD_GRAYSCALE)
            if labels is None:
                raise GroundTruthError(f"cannot decode label image {str(label_path)!r}")
            if labels.shape != image.shape[:2]:
                labels_height, labels_width = labels.shape
                if abs(labels_width * height - width * labels_height) * 100 > width * labels_height:
                    raise GroundTruthError(
                        f"label image {str(label_path)!r} is {labels_width}x{labels_height}, the frames {width}x{height}: "
                        "expected the frames' size or their aspect ratio"
                    )
                labels = _nearest_to_frames(labels, folder.size, None if warned else f"{folder.root}: label images are")
                warned = True
            if label_values is not None:
                label_values.add(labels)
        yield number, image, labels


def evaluate(
    folder: GroundTruthFolder,
    methods: list[Method],
    skip: int = DEFAULT_SKIP,
    min_area: float = 0.001,
    progress=None,
    frames: Iterable[DecodedFrame] | None = None,
    scorer: type[Scorer] = Scorer,
    event_rules: EventRules | None = None,
) -> Evaluation:
    """Run every method over the folder's frames in order and score them.

    Args:
        folder: the ground truth (:func:`load_folder`).
        methods: detectors, each fed every frame from the first (fresh state expected).
        skip: frames at the start of the processed window that are not scored.
        min_area: frame-level "has motion" fraction, in [0, 1].
        progress: optional object with ``update(n)`` (a tqdm bar).
        frames: the folder's frames already decoded (:func:`decoded_frames`), or ``None`` to
            read them now, counting the label images' values (:attr:`Evaluation.label_values`).
        scorer: the :class:`Scorer` class each method's scores accumulate in (a subclass can
            count more, as ``benchmarks/miss_bands.py``'s counts by row).
        event_rules: how frames with motion group into events (:class:`EventRules`), or
            ``None`` for the config's defaults at 25 frames/s.

    Returns:
        The :class:`Evaluation`.

    Raises:
        GroundTruthError: a frame or label image cannot be decoded or has another size.
    """
    event_rules = EventRules() if event_rules is None else event_rules
    scorers = [scorer(folder.roi, min_area, event_rules) for _ in methods]
    scored: list[int] = []
    processed = 0
    # Counted where the labels are read, so a clip decoded once and scored many times (tuning) is not recounted.
    label_values = LabelValues() if frames is None else None
    for position, (number, image, labels) in enumerate(decoded_frames(folder, label_values) if frames is None else frames):
        masks = [method(image) for method in methods]
        processed += 1
        if progress is not None:
            progress.update(1)
        if position < skip or labels is None:
            continue
        for scorer, mask in zip(scorers, masks):
            scorer.add(mask, labels, number)
        scored.append(number)
    return Evaluation(folder, skip, min_area, processed, scored, list(zip(methods, scorers)), label_values, event_rules)


# -- output ------------------------------------------------------------------------------------

_COLUMNS = ("pixel P", "pixel R", "pixel F", "frame P", "frame R", "frame F1", "events hit", "false events", "fps")


def format_table(evaluation: Evaluation) -> str:
    """The side-by-side table of one evaluation, with a header line saying what was scored."""
    folder = evaluation.folder
    width, height = folder.size
    scored = evaluation.scored_numbers
    span = f"frames {scored[0]}..{scored[-1]}" if scored else "no frames"
    roi = "whole frame" if folder.roi is None else f"ROI {100 * folder.roi.mean():.0f} % of the frame"
    lines = [
        f"{folder.name}: {evaluation.processed} frames {width}x{height}, {len(scored)} scored ({span}; "
        f"first {evaluation.skip} not scored), {roi}, frame has motion at >= {100 * evaluation.min_area:g} % of pixels, "
        + evaluation.event_rules.describe()
    ]
    rows = []
    for method, scorer in evaluation.scores:
        events = scorer.events
        fps = evaluation.processed / method.total_seconds if method.total_seconds > 0 else float("nan")
        rows.append(
            [
                method.name,
                f"{scorer.pixel.precision:.3f}",
                f"{scorer.pixel.recall:.3f}",
                f"{scorer.pixel.f_measure:.3f}",
                f"{scorer.frames.precision:.3f}",
                f"{scorer.frames.recall:.3f}",
                f"{scorer.frames.f1:.3f}",
                f"{events.hits}/{len(events.truth)}",
                str(events.false_events),
                f"{fps:.0f}",
            ]
        )
    header = ["method", *_COLUMNS]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        lines.append("  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths))))
    return "\n".join(lines)


# -- command line --------------------------------------------------------------------------------
