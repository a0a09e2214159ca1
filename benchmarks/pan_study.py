"""Camera moves (issue 15): what a pan, a PTZ camera turning from one view to the next, costs the
default pipeline and OpenCV's anchors, on labelled clips.

Every frame of a clip (and its labels and ROI) is cropped to ``1 - SHARE`` of its width. Up to
the middle frame the crop sits at the left edge; from the middle frame on it slides right by
``SHARE`` of the width over ``--ramp`` frames and stays there, as a camera that pans to a new view
and stops. The fixed case keeps the left crop throughout, so the two compare frame for frame. Each
clip is scored fixed and panned by each share, by the same CDnet scorer as ``motiondetect
evaluate`` (first 50 frames of the window unscored, CPU backend: the GPU gives the same masks),
with the default pipeline and OpenCV's MOG2 and KNN, each followed by a 5x5 median (their
defaults, as ``evaluate --baselines`` runs them). Prints one Markdown table of the means and the
clips the pan costs most. ``--follow`` adds the default with a prototype that follows the move
(:class:`FollowingDetector`, CPU only, not part of the product). Usage::

    python benchmarks/pan_study.py [FOLDER ...] [--shares 0.05,0.15] [--ramp 10] [--jobs 2] [--follow]
    # default folders: ../shared/samples/cdnet_* and samples/dev/*/ (after samples/dev/fetch_dev.py)
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from collections import deque
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from unittest import mock

import cv2
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from jitter_study import dev_clips, mean_cell, scored_rows  # noqa: E402

from motiondetect.evaluation.scoring import classic_baselines, detector_method, load_folder  # noqa: E402
from motiondetect.filters import register as register_module  # noqa: E402
from motiondetect.filters.gaussian_background import GaussianBackground  # noqa: E402
from motiondetect.filters.register import Register  # noqa: E402
from motiondetect.pipeline.config import build_filters, default_config  # noqa: E402
from motiondetect.pipeline.detector import MotionDetector  # noqa: E402

#: The anchors scored beside the default: OpenCV's, with the 5x5 median on their masks.
ANCHORS = ("OpenCV MOG2 + median 5x5", "OpenCV KNN + median 5x5")


def offset(index: int, middle: int, reach: int, ramp: int) -> int:
    """Pixels the crop of frame ``index`` (0: the first) sits from the left edge: 0 before the
    ``middle`` frame, then ``reach`` reached over ``ramp`` frames (rounded half to even)."""
    return 0 if index < middle else round(reach * min(index - middle + 1, ramp) / ramp)


def panned(src: Path, dst: Path, crop: float, share: float, ramp: int) -> Path:
    """Write ``src`` (CDnet layout) cropped to ``1 - crop`` of its width, the crop panning right
    by ``share`` (at most ``crop``) of the width from the middle frame on over ``ramp`` frames,
    its labels and ROI cropped alike, into ``dst``; return ``dst``. Labels of another size than
    the frames are first resized to them with nearest neighbour, as the scorer does."""
    folder = load_folder(src)
    width, height = folder.size
    reach = round(share * width)
    keep = width - round(crop * width)
    (dst / "input").mkdir(parents=True)
    (dst / "groundtruth").mkdir()
    if (src / "temporalROI.txt").is_file():
        shutil.copy(src / "temporalROI.txt", dst)
    middle = len(folder.frames) // 2
    rois = []
    for i, (number, image_path, label_path) in enumerate(folder.frames):
        x0 = offset(i, middle, reach, ramp)
        image = cv2.imread(str(image_path), cv2.IMREAD_COLOR)
        cv2.imwrite(str(dst / "input" / f"in{number:06d}.png"), image[:, x0 : x0 + keep])
        if folder.roi is not None:
            rois.append(folder.roi[:, x0 : x0 + keep])
        if label_path is not None:
            labels = cv2.imread(str(label_path), cv2.IMREAD_GRAYSCALE)
            if labels.shape != (height, width):
                labels = cv2.resize(labels, (width, height), interpolation=cv2.INTER_NEAREST)
            cv2.imwrite(str(dst / "groundtruth" / f"gt{number:06d}.png"), labels[:, x0 : x0 + keep])
    if rois:  # the scorer takes one ROI: where every view of the pan lies inside the camera's
        cv2.imwrite(str(dst / "ROI.bmp"), np.logical_and.reduce(rois).astype(np.uint8) * 255)
    return dst


#: The search the watched one hands the surface on to.
PEAK_SHIFT = register_module.peak_shift


class WatchedRegister(Register):
    """``register`` that keeps each frame's correlation surface (``surface``: the shrunk frame's
    (h, w) float32 surface and the coarse reach, pixels of the shrunk frame), as the search saw it."""

    def reference(self, src, side=None):
        seen = {}

        def watch(corr, reach, *args):
            seen["surface"] = (corr, reach)
            return PEAK_SHIFT(corr, reach, *args)

        with mock.patch.object(register_module, "peak_shift", watch):
            moved = super().reference(src, side)
        self.surface = seen.get("surface")
        return moved


def _moved(array: np.ndarray, dx: int, dy: int, fill) -> np.ndarray:
    """``array`` (..., H, W) moved by (dx, dy) pixels (out[y + dy, x + dx] = array[y, x]), the
    uncovered pixels ``fill``."""
    out = np.full_like(array, fill)
    height, width = array.shape[-2:]
    rows = (slice(0, height - dy), slice(dy, height)) if dy >= 0 else (slice(-dy, height), slice(0, height + dy))
    cols = (slice(0, width - dx), slice(dx, width)) if dx >= 0 else (slice(-dx, width), slice(0, width + dx))
    out[..., rows[1], cols[1]] = array[..., rows[0], cols[0]]
    return out


class FollowingDetector(MotionDetector):
    """The prototype of docs/evaluation-log.md, "Camera moves": a detector (CPU backend, the default
    pipeline) that notices a pan in ``register``'s correlation surface and moves its background
    model with the view.

    The level is the median of the last ``LEVEL_FRAMES`` frames' peaks within the reach (the
    share of the frame that agrees with the anchor). A frame whose peak within the reach falls
    below ``COLLAPSE`` times the level on ``COLLAPSED_FRAMES`` frames in a row, while the whole
    surface peaks beyond the reach at ``FAR`` times the level or more, moved the camera by that
    far peak's shift (twice the coarse one): the model's means, variances, chroma and still counts
    move by it, the strip it uncovers takes the frame's grey level with the floor variance and an
    open chroma (a variance of 255**2), ``register`` takes the frame as its anchor, and the frame
    runs again. Before the model's bootstrap is done, the detector starts afresh instead."""

    LEVEL_FRAMES = 25
    COLLAPSE = 0.25
    COLLAPSED_FRAMES = 2
    FAR = 0.4

    def __init__(self, filters, **kwargs) -> None:
        filters = [WatchedRegister(**f.params) if isinstance(f, Register) else f for f in filters]
        super().__init__(filters, **kwargs)
        self.register = next(f for f in self.filters if isinstance(f, WatchedRegister))
        self.model = next(f for f in self.filters if isinstance(f, GaussianBackground))
        self.moves = 0  # camera moves found
        self.collapses = 0  # frames whose peak within the reach collapsed, moves or not
        self._forget_level()

    def _forget_level(self) -> None:
        self._peaks: deque[float] = deque(maxlen=self.LEVEL_FRAMES)
        self._collapsed = 0

    def reset(self) -> None:
        super().reset()
        self._forget_level()

    def process(self, frame):
        result = super().process(frame)
        shift = self._camera_move()
        if shift is None:
            return result
        self.moves += 1
        self._collapsed = 0
        if self.model._boot_grey is not None:  # the bootstrap's frames would be of two views
            self.reset()
        else:
            self._move_model(*shift)
            self.register.reset()
        return super().process(frame)

    def _camera_move(self) -> tuple[int, int] | None:
        """The shift (dx, dy), pixels, by which this frame's view moved from the anchor's, or None."""
        if self.register.surface is None:
            return None
        surface, reach = self.register.surface
        height, width = surface.shape
        values = np.nan_to_num(surface, nan=-np.inf)
        offsets = np.arange(-reach, reach + 1)
        near = float(values[np.ix_(offsets % height, offsets % width)].max()) / (height * width)
        ky, kx = np.unravel_index(int(np.argmax(values)), values.shape)
        ky, kx = (ky - height if ky > height // 2 else ky), (kx - width if kx > width // 2 else kx)
        far = float(values.max()) / (height * width)
        if len(self._peaks) <= self.LEVEL_FRAMES // 2:
            self._peaks.append(near)
            return None
        level = float(np.median(self._peaks))
        if near >= self.COLLAPSE * level:
            self._peaks.append(near)
            self._collapsed = 0
            return None
        self._collapsed += 1
        self.collapses += 1
        if self._collapsed < self.COLLAPSED_FRAMES or max(abs(kx), abs(ky)) <= reach or far < self.FAR * level:
            return None
        return 2 * int(kx), 2 * int(ky)

    def _move_model(self, dx: int, dy: int) -> None:
        """Move the model by (dx, dy): frame(x) ~ anchor(x - shift), so model(x) becomes model(x - shift)."""
        model, c = self.model, self.model.constants
        frame = model._last.astype(np.int32) << 16  # the frame just compared, unmoved (no shift within reach)
        uncovered = _moved(np.ones(model._mean.shape, np.uint8), dx, dy, 0) == 0
        model._mean = np.where(uncovered, frame, _moved(model._mean, dx, dy, 0))
        model._var = _moved(model._var, dx, dy, c["min_var_q8"])
        if model._chroma_mean is not None:
            model._chroma_mean = _moved(model._chroma_mean, dx, dy, 128 << 16)
            model._chroma_var = _moved(model._chroma_var, dx, dy, 255 * 255 * 256)
        if model._still is not None:
            model._still = _moved(model._still, dx, dy, 0)


def methods(follow: bool = False):
    """The default pipeline, with ``follow`` also :class:`FollowingDetector`, and :data:`ANCHORS`, fresh."""
    anchors = [m for m in classic_baselines() if m.name in ANCHORS]
    default = [detector_method(MotionDetector(build_filters(default_config()), annotate=False), "default")]
    if follow:
        default.append(detector_method(FollowingDetector(build_filters(default_config()), annotate=False), FOLLOWING))
    return default + anchors


#: The name of :class:`FollowingDetector`'s rows.
FOLLOWING = "default, following the view (prototype)"


def score_clip(clip: Path, shares: list[float], ramp: int, follow: bool = False) -> list[tuple[str, str, str, float, float]]:
    """Rows (clip, camera, method, pixel F, frame F1) for ``clip`` fixed and panned by each share."""
    widest = max(shares)
    with tempfile.TemporaryDirectory(prefix="pan_") as scratch:
        # One crop width for every case (the widest pan's), so the rows compare; fixed: no pan.
        cases = [("fixed", panned(clip, Path(scratch) / "fixed", widest, 0.0, ramp))] + [
            (f"pan {s:g}", panned(clip, Path(scratch) / f"p{i}", widest, s, ramp)) for i, s in enumerate(shares)
        ]
        return scored_rows(clip.name, cases, lambda: methods(follow))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="*", type=Path)
    parser.add_argument("--shares", default="0.05,0.15", help="pans as shares of the frame's width [0.05,0.15]")
    parser.add_argument("--ramp", type=int, default=10, help="frames the pan takes [10]")
    parser.add_argument("--jobs", type=int, default=2, help="clips scored at once [2]")
    parser.add_argument("--follow", action="store_true", help="also the prototype that moves the model with the view")
    args = parser.parse_args(argv)
    folders = args.folders or dev_clips()
    shares = [float(s) for s in args.shares.split(",") if s]
    if not shares or not all(0 < s < 1 for s in shares) or args.ramp < 1:
        parser.error(f"--shares must be fractions between 0 and 1 and --ramp at least 1; got {args.shares!r}, {args.ramp}")
    with ProcessPoolExecutor(args.jobs) as pool:
        rows = [
            row
            for clip_rows in pool.map(
                score_clip, folders, [shares] * len(folders), [args.ramp] * len(folders), [args.follow] * len(folders)
            )
            for row in clip_rows
        ]
    cameras = ["fixed", *(f"pan {s:g}" for s in shares)]
    names = ["default", *([FOLLOWING] if args.follow else []), *ANCHORS]
    print("| method | " + " | ".join(f"{c}: pixel F / frame F1 (lowest)" for c in cameras) + " |")
    print("| --- |" + " --- |" * len(cameras))
    for name in names:
        cells = [mean_cell([r for r in rows if r[1] == camera and r[2] == name]) for camera in cameras]
        print(f"| {name} | " + " | ".join(cells) + " |")
    print(f"\nmeans over {len(folders)} clips, pan over {args.ramp} frames; pixel F, fixed -> panned, where it falls by more than 0.1:")
    for name in names[: 2 if args.follow else 1]:
        fixed = {r[0]: r[3] for r in rows if r[1] == "fixed" and r[2] == name}
        for camera in cameras[1:]:
            fell = sorted((r[3] - fixed[r[0]], r[0]) for r in rows if r[1] == camera and r[2] == name)
            print(f"- {name}, {camera}: " + (", ".join(f"{n} {fixed[n]:.3f} -> {fixed[n] + d:.3f}" for d, n in fell if d < -0.1) or "none"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
