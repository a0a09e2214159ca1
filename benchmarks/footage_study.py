"""Footage as cameras record it (issue 15): what a lower frame rate, H.264 compression and sensor
noise cost the default pipeline and the best classic anchors, on labelled clips.

The dev clips are mostly still images saved with little loss at 25-30 frames/s; what people
bring is H.264 from a camera, often at 5-15 frames/s (Frigate detects at 5 by default, Motion
captures at 15), and noisy at night. Each clip is written again with one change and scored as
``motiondetect evaluate`` scores it (CDnet rules, CPU backend: the GPU gives the same masks):

- ``fN``: every N-th frame only (the frame rate / N; CDnet's lowFramerate category), from the
  first N that keeps the most labelled frames. The first ``ceil(50 / N)`` frames of the window are not scored, the same seconds as the usual 50.
- ``cQ``: each frame through libx264 (PyAV) and back, 4:2:0, CRF Q, a keyframe every 25 frames
  and no B-frames, as IP cameras stream; CRF 23 is x264's default, 35 a low bitrate. Odd frame
  sides are padded by one replicated row or column for the encoder and cut off again.
- ``nS``: Gaussian noise of S grey levels (standard deviation) added to each channel of each
  frame (seeded, the same for every method), as a sensor at high gain adds.
- ``dusk``, ``dawn``: a camera's switch to night (infrared) mode: the frames from the middle
  one on (``dusk``), or up to it (``dawn``), grey (each BGR channel the frame's BT.601 luma, so
  the grey level does not change and only the colour goes).
- ``rain``, ``snow``: bad weather drawn over every frame (seeded, new on each frame; CDnet's
  badWeather labels falling snow as background, so the labels stay), sized to the frame so that
  every clip looks alike at 240 rows (s = rows / 240, rounded, at least 1): heavy rain as streaks
  s pixels wide and 1/24 to 1/12 of the height long, slanted by 0.15, one per 400 s^2 pixels,
  30 % of the way to white; heavy snow as flakes of radius s to 2 s pixels, one per 300 s^2
  pixels, 80 % of the way to white.

The labels stay as they are. Methods: the default pipeline (``configs/default.yaml``) as image
sequences get it; on ``fN`` and ``cQ`` clips also as a video gets it (on ``fN`` clips, a video at
25 / N frames/s: its per-frame rates and counts rescaled, ``tuned_fps``,
``motiondetect.pipeline.frame_rate``; on ``cQ`` clips, an H.264 video: ``still_frames_inter`` for
``still_frames``, ``motiondetect.pipeline.coding``); and OpenCV's MOG2 and KNN with their
defaults, each with a 5x5 median (``motiondetect evaluate --baselines``'s
best anchors on the dev set). Prints one Markdown table of the means and the clips the changes
move most. Usage::

    python benchmarks/footage_study.py [FOLDER ...] [--changes f2,f3,c23,c35,n6] [--jobs 2]
    # default folders: ../shared/samples/cdnet_* and samples/dev/*/ (after samples/dev/fetch_dev.py)
"""

from __future__ import annotations

import argparse
import math
import shutil
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import av
import cv2
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from jitter_study import dev_clips  # noqa: E402

from motiondetect.evaluation.scoring import DEFAULT_SKIP, classic_baselines, detector_method, evaluate, load_folder  # noqa: E402
from motiondetect.pipeline.config import build_filters, default_config  # noqa: E402
from motiondetect.pipeline.detector import MotionDetector  # noqa: E402
from motiondetect.pipeline.frame_rate import for_source  # noqa: E402
from motiondetect.sources.video import DEFAULT_SEQUENCE_FPS  # noqa: E402

#: Frames between keyframes of the ``cQ`` encodes: one second at 25 frames/s, as IP cameras send.
KEYFRAME_INTERVAL = 25

#: The default pipeline as a video gets it: at the lower rate (``tuned_fps``) on ``fN`` clips,
#: as H.264 (``still_frames_inter``) on ``cQ`` clips.
AS_VIDEO = "motiondetect, as a video gets it"

#: The methods whose rows are printed, by their evaluation names.
SHOWN = ("motiondetect", AS_VIDEO, "OpenCV KNN + median 5x5", "OpenCV MOG2 + median 5x5")


def _copy_layout(src: Path, dst: Path) -> None:
    (dst / "input").mkdir(parents=True)
    (dst / "groundtruth").mkdir()
    for name in ("temporalROI.txt", "ROI.bmp"):
        if (src / name).is_file():
            shutil.copy(src / name, dst)


def _through_x264(images: list[np.ndarray], crf: int) -> list[np.ndarray]:
    """``images`` ((H, W, 3) uint8 BGR, one size) encoded with libx264 at ``crf`` and decoded
    again, in order."""
    height, width = images[0].shape[:2]
    pad = ((0, height % 2), (0, width % 2), (0, 0))
    with tempfile.TemporaryDirectory(prefix="x264_") as scratch:
        path = Path(scratch) / "clip.mp4"
        with av.open(str(path), "w") as container:
            stream = container.add_stream("libx264", rate=25)
            stream.width, stream.height, stream.pix_fmt = width + width % 2, height + height % 2, "yuv420p"
            stream.options = {
                "crf": str(crf),
                "preset": "veryfast",
                "x264-params": f"keyint={KEYFRAME_INTERVAL}:min-keyint={KEYFRAME_INTERVAL}:scenecut=0:bframes=0",
            }
            for image in images:
                frame = av.VideoFrame.from_ndarray(np.pad(image, pad, mode="edge"), format="bgr24")
                container.mux(stream.encode(frame))
            container.mux(stream.encode())
        with av.open(str(path)) as container:
            decoded = [f.to_ndarray(format="bgr24")[:height, :width] for f in container.decode(video=0)]
    if len(decoded) != len(images):
        raise RuntimeError(f"libx264 round trip gave {len(decoded)} frames for {len(images)}")
    return decoded


def weathered(images: list[np.ndarray], kind: str, seed: int = 3) -> list[np.ndarray]:
    """``images`` ((H, W, 3) uint8 BGR) with ``kind`` (``rain`` or ``snow``, see the module's
    docstring) drawn over each, a new draw on every frame (seeded)."""
    rng = np.random.default_rng(seed)
    out = []
    for image in images:
        height, width = image.shape[:2]
        scale = max(1, round(height / 240))
        layer = np.zeros((height, width), np.uint8)
        if kind == "rain":
            for _ in range(height * width // (400 * scale * scale)):
                x, y = int(rng.integers(0, width)), int(rng.integers(0, height))
                length = int(rng.integers(height // 24, height // 12 + 1))
                cv2.line(layer, (x, y), (x + round(0.15 * length), y + length), 255, scale)
            strength = 0.3
        else:
            for _ in range(height * width // (300 * scale * scale)):
                x, y = int(rng.integers(0, width)), int(rng.integers(0, height))
                cv2.circle(layer, (x, y), int(rng.integers(1, 3)) * scale, 255, -1)
            strength = 0.8
        drawn = layer[..., None] > 0
        whiter = image + strength * (255.0 - image)
        out.append(np.where(drawn, np.round(whiter), image).astype(np.uint8))
    return out


def changed(src: Path, dst: Path, change: str) -> Path:
    """Write ``src`` (CDnet layout) with ``change`` (``fN``, ``cQ``, ``nS``, ``dusk``, ``dawn``, ``rain`` or ``snow``, see the module's
    docstring) into ``dst``, labels, ROI and temporal ROI kept; return ``dst``."""
    folder = load_folder(src)
    _copy_layout(src, dst)
    frames = folder.frames
    kind, value = change[0], int(change[1:]) if change[1:].isdigit() else None
    if kind == "f" and value:
        # The phase that keeps the most labelled frames (a clip may label one frame in many).
        labelled = [i % value for i, (_, _, label) in enumerate(frames) if label is not None]
        frames = frames[max(range(value), key=labelled.count) :: value]
    images = [cv2.imread(str(image_path), cv2.IMREAD_COLOR) for _, image_path, _ in frames]
    if change in ("rain", "snow"):
        images = weathered(images, change)
    elif change in ("dusk", "dawn"):
        middle = len(images) // 2
        for i, image in enumerate(images):
            if (i >= middle) == (change == "dusk"):
                images[i] = cv2.cvtColor(cv2.cvtColor(image, cv2.COLOR_BGR2GRAY), cv2.COLOR_GRAY2BGR)
    elif kind == "c" and value is not None:
        images = _through_x264(images, value)
    elif kind == "n" and value is not None:
        rng = np.random.default_rng(1)
        images = [np.clip(image + rng.normal(0, value, image.shape), 0, 255).round().astype(np.uint8) for image in images]
    elif not (kind == "f" and value):
        raise ValueError(f"unknown change {change!r}: expected fN, cQ, nS, dusk, dawn, rain or snow")
    return _written(dst, frames, images)
    kind, value = change[0], int(change[1:])
    if kind == "f":
        # The phase that keeps the most labelled frames (a clip may label one frame in many).
        labelled = [i % value for i, (_, _, label) in enumerate(frames) if label is not None]
        frames = frames[max(range(value), key=labelled.count) :: value]
    images = [cv2.imread(str(image_path), cv2.IMREAD_COLOR) for _, image_path, _ in frames]
    if kind == "c":
        images = _through_x264(images, value)
    elif kind == "n":
        rng = np.random.default_rng(1)
        images = [np.clip(image + rng.normal(0, value, image.shape), 0, 255).round().astype(np.uint8) for image in images]
    elif kind != "f":
        raise ValueError(f"unknown change {change!r}: expected fN, cQ, nS, dusk, dawn, rain or snow")
    return _written(dst, frames, images)


def _written(dst: Path, frames: list, images: list[np.ndarray]) -> Path:
    """Write ``images`` as the frames ``frames`` (``(number, image path, label path)``) of the
    CDnet-layout folder ``dst``, with their labels; return ``dst``."""
    for (number, _, label_path), image in zip(frames, images):
        cv2.imwrite(str(dst / "input" / f"in{number:06d}.png"), image)
        if label_path is not None:
            shutil.copy(label_path, dst / "groundtruth" / f"gt{number:06d}{label_path.suffix}")
    return dst


def score_clip(clip: Path, changes: list[str]) -> list[tuple[str, str, str, float, float]]:
    """Rows (clip, change, method, pixel F, frame F1) for ``clip`` as it is and with each change."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="footage_") as scratch:
        for change in ["as it is", *changes]:
            folder = clip if change == "as it is" else changed(clip, Path(scratch) / change, change)
            skip = math.ceil(DEFAULT_SKIP / int(change[1:])) if change[0] == "f" else DEFAULT_SKIP
            methods = [detector_method(MotionDetector(build_filters(default_config()), annotate=False))]
            if change[0] in "fc" and change[1:].isdigit():  # as a video at 25 / N frames/s, or an H.264 video, gets the model
                fps = DEFAULT_SEQUENCE_FPS / int(change[1:]) if change[0] == "f" else DEFAULT_SEQUENCE_FPS
                as_video = for_source(default_config(), fps, inter_coded=change[0] == "c", notice=False)
                methods.append(detector_method(MotionDetector(build_filters(as_video), annotate=False), AS_VIDEO))
            methods += [m for m in classic_baselines() if m.name.startswith(("OpenCV KNN", "OpenCV MOG2"))]
            for method, score in evaluate(load_folder(folder), methods, skip=skip).scores:
                if method.name in SHOWN:
                    rows.append((clip.name, change, method.name, score.pixel.f_measure, score.frames.f1))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="*", type=Path)
    parser.add_argument(
        "--changes",
        default="f2,f3,c23,c35,n6",
        help="fN frame rate / N, cQ x264 CRF Q, nS noise S grey levels, dusk/dawn night mode, rain/snow bad weather",
    )
    parser.add_argument("--jobs", type=int, default=2, help="clips scored at once [2]")
    args = parser.parse_args(argv)
    folders = args.folders or dev_clips()
    changes = [c for c in args.changes.split(",") if c]
    with ProcessPoolExecutor(args.jobs) as pool:
        rows = [row for clip_rows in pool.map(score_clip, folders, [changes] * len(folders)) for row in clip_rows]
    cases = ["as it is", *changes]
    print("| method | " + " | ".join(f"{c}: pixel F / frame F1 (lowest)" for c in cases) + " |")
    print("| --- |" + " --- |" * len(cases))
    for name in SHOWN:
        cells = []
        for case in cases:
            chosen = [r for r in rows if r[1] == case and r[2] == name]
            if not chosen:  # the video's row where a video gets the image sequences' model
                cells.append("as above")
                continue
            frames = [r[4] for r in chosen]
            cells.append(f"{np.mean([r[3] for r in chosen]):.3f} / {np.mean(frames):.3f} ({min(frames):.3f})")
        print(f"| {name} | " + " | ".join(cells) + " |")
    print(f"\nmeans over {len(folders)} clips; clips that move by more than 0.02 (or frame F1 under 0.95), pixel F (change) / frame F1:")
    base = {r[0]: r for r in rows if r[1] == "as it is" and r[2] == SHOWN[0]}
    for case in changes:
        for name in SHOWN[:2]:
            moved = sorted((r[3] - base[r[0]][3], r[0], r[3], r[4]) for r in rows if r[1] == case and r[2] == name)
            listed = ", ".join(f"{clip} {f:.3f} ({d:+.3f}) / {f1:.3f}" for d, clip, f, f1 in moved if abs(d) > 0.02 or f1 < 0.95)
            if moved:
                print(f"- {case}, {name}: {listed or 'none by more than 0.02'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
