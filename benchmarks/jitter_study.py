"""Camera jitter (issue 15): what a shaking camera costs the default pipeline, and what the
``register`` filter (phase correlation, in the default pipeline) wins back, on labelled clips.

Each frame of a clip (and its ground truth) is moved by a random whole-pixel translation of up
to AMP pixels each way (seeded, the same for every method) and cropped by MARGIN pixels on every
side, so no border enters; the ROI is cropped alike. A real mount also moves by fractions of a
pixel and turns a little: ``--subpixel`` draws real-valued shifts (the frame resampled
bilinearly, its labels by nearest neighbour, as ``cv2.warpAffine`` does) and ``--rotation DEG``
adds a random turn of up to DEG degrees about the centre (the crop grows by what the turn moves
the corners). ``--light STEP`` changes the light from each clip's middle frame on, after the
shake (``benchmarks/lightswitch_study.py``'s steps: ``x0.4`` a light dimmed to 0.4, ``+40``), for
a shaking camera whose light changes. Each clip is scored steady and jittered,
with configs/steady.yaml (the default pipeline without ``register``) and with the default, by the same CDnet
scorer as ``motiondetect evaluate`` (first 50 frames of the window unscored, CPU backend: the
GPU gives the same masks); ``--max-shifts`` and ``--tapers`` add the default with other
``register.max_shift`` and ``register.taper`` values. Prints one Markdown table and the means.
Usage::

    python benchmarks/jitter_study.py [FOLDER ...] [--amps 2,4] [--max-shifts 12,16] [--tapers 1,0.5]
        [--jobs 2] [--subpixel] [--rotation 0.5] [--light x0.4]
    # default folders: ../shared/samples/cdnet_* and samples/dev/*/ (after samples/dev/fetch_dev.py)
"""

from __future__ import annotations

import argparse
import math
import shutil
import sys
import tempfile
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import cv2
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from motiondetect.evaluation.scoring import detector_method, evaluate, load_folder  # noqa: E402
from motiondetect.evaluation.tuning import config_for  # noqa: E402
from motiondetect.filters.register import translate  # noqa: E402
from motiondetect.pipeline.config import build_filters, default_config, load_config  # noqa: E402
from motiondetect.pipeline.detector import MotionDetector  # noqa: E402

#: Pixels cropped from every side of a jittered frame beyond the largest AMP, so no border enters.
MARGIN = 2


def rotation_margin(size: tuple[int, int], degrees: float) -> int:
    """Pixels a turn of ``degrees`` about the centre moves the corners of a (W, H) frame, at most
    (the chord of the half-diagonal), rounded up."""
    return math.ceil(math.hypot(*size) * math.sin(math.radians(abs(degrees)) / 2))


def moved(image: np.ndarray, dx: float, dy: float, degrees: float, interpolation: int) -> np.ndarray:
    """``image`` turned by ``degrees`` about its centre and shifted by (dx, dy) pixels,
    resampled with ``interpolation`` (edges replicated; the caller crops them)."""
    height, width = image.shape[:2]
    matrix = cv2.getRotationMatrix2D((width / 2, height / 2), degrees, 1.0)
    matrix[:, 2] += (dx, dy)
    return cv2.warpAffine(image, matrix, (width, height), flags=interpolation, borderMode=cv2.BORDER_REPLICATE)


def jittered(src: Path, dst: Path, amp: int, seed: int, crop_by: int, subpixel: bool = False, rotation: float = 0.0) -> Path:
    """Write ``src`` (CDnet layout) moved frame by frame by up to ``amp`` pixels (real-valued
    with ``subpixel``; turned by up to ``rotation`` degrees) and cropped by ``crop_by`` pixels on
    every side into ``dst``; return ``dst``."""
    folder = load_folder(src)
    rng = np.random.default_rng(seed)
    (dst / "input").mkdir(parents=True)
    (dst / "groundtruth").mkdir()
    if (src / "temporalROI.txt").is_file():
        shutil.copy(src / "temporalROI.txt", dst)
    crop = (slice(crop_by, -crop_by), slice(crop_by, -crop_by))
    if folder.roi is not None:
        cv2.imwrite(str(dst / "ROI.bmp"), (folder.roi[crop] * 255).astype(np.uint8))
    for number, image_path, label_path in folder.frames:
        image = cv2.imread(str(image_path), cv2.IMREAD_COLOR)
        label = cv2.imread(str(label_path), cv2.IMREAD_GRAYSCALE) if label_path is not None else None
        if subpixel or rotation:
            dx, dy = rng.uniform(-amp, amp, 2) if subpixel else rng.integers(-amp, amp + 1, 2)
            degrees = rng.uniform(-rotation, rotation)
            image = moved(image, dx, dy, degrees, cv2.INTER_LINEAR)
            label = moved(label, dx, dy, degrees, cv2.INTER_NEAREST) if label is not None else None
        else:
            dx, dy = (int(v) for v in rng.integers(-amp, amp + 1, 2))
            image = np.dstack([translate(image[..., c], dx, dy, -1, True) for c in range(3)])
            label = translate(label, dx, dy, -1, True) if label is not None else None
        cv2.imwrite(str(dst / "input" / f"in{number:06d}.png"), image[crop])
        if label is not None:
            cv2.imwrite(str(dst / "groundtruth" / f"gt{number:06d}.png"), label[crop])
    return dst


def dev_clips() -> list[Path]:
    """The labelled dev clips: ../shared/samples/cdnet_* and samples/dev/*/ (after
    samples/dev/fetch_dev.py), each a CDnet-layout folder."""
    return sorted((ROOT.parent / "shared" / "samples").glob("cdnet_*")) + sorted(
        p.parent for p in (ROOT / "samples" / "dev").glob("*/groundtruth")
    )


def methods(max_shifts: list[int], tapers: Sequence[float] = ()):
    """configs/steady.yaml, the default pipeline and the default with each of ``max_shifts`` and
    each of ``tapers``, fresh detectors."""
    steady = load_config(ROOT / "configs" / "steady.yaml")
    configs = [("steady.yaml", steady), ("default (register)", default_config())]
    configs += [(f"default, max_shift {m}", config_for(default_config(), {("register", "max_shift"): m})) for m in max_shifts]
    configs += [(f"default, taper {t:g}", config_for(default_config(), {("register", "taper"): t})) for t in tapers]
    return [detector_method(MotionDetector(build_filters(config), annotate=False), name) for name, config in configs]


def scored_rows(name: str, cases: list[tuple[str, Path]], make_methods) -> list[tuple[str, str, str, float, float]]:
    """Rows (clip ``name``, case, method, pixel F, frame F1) of each (case, folder) in ``cases``,
    scored with the fresh methods ``make_methods()`` returns for each."""
    rows = []
    for case, folder in cases:
        for method, score in evaluate(load_folder(folder), make_methods()).scores:
            rows.append((name, case, method.name, score.pixel.f_measure, score.frames.f1))
    return rows


def mean_cell(chosen: list[tuple[str, str, str, float, float]]) -> str:
    """``pixel F / frame F1 (lowest frame F1)`` of rows as :func:`scored_rows` makes them: the
    means over the clips, and the lowest clip's frame F1."""
    frames = [r[4] for r in chosen]
    return f"{np.mean([r[3] for r in chosen]):.3f} / {np.mean(frames):.3f} ({min(frames):.3f})"


def score_clip(
    clip: Path,
    amps: list[int],
    max_shifts: list[int],
    subpixel: bool = False,
    rotation: float = 0.0,
    tapers: Sequence[float] = (),
    light: str = "",
) -> list[tuple[str, str, str, float, float]]:
    """Rows (clip, camera, method, pixel F, frame F1) for ``clip`` steady and at each amplitude,
    each with the ``light`` step from its middle frame on when one is given."""
    # The same crop at every amplitude, so the rows compare.
    crop_by = max(amps) + MARGIN + rotation_margin(load_folder(clip).size, rotation)
    with tempfile.TemporaryDirectory(prefix="jitter_") as scratch:
        cases = [("steady", clip)] + [
            (f"+-{a} px", jittered(clip, Path(scratch) / f"j{a}", a, 1, crop_by, subpixel, rotation)) for a in amps
        ]
        if light:
            from lightswitch_study import stepped  # a script beside this one, which imports this one

            cases = [(case, stepped(folder, Path(scratch) / f"light{i}", light)) for i, (case, folder) in enumerate(cases)]
        return scored_rows(clip.name, cases, lambda: methods(max_shifts, tapers))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="*", type=Path)
    parser.add_argument("--amps", default="2,4", help="jitter amplitudes, pixels each way [2,4]")
    parser.add_argument("--max-shifts", default="", help="register.max_shift values to score beside the default's [none]")
    parser.add_argument("--tapers", default="", help="register.taper values to score beside the default's [none]")
    parser.add_argument("--jobs", type=int, default=2, help="clips scored at once [2]")
    parser.add_argument("--subpixel", action="store_true", help="real-valued shifts, frames resampled bilinearly")
    parser.add_argument("--rotation", type=float, default=0.0, help="turn each frame by up to this many degrees [0]")
    parser.add_argument("--light", default="", help="a light step from each clip's middle frame on, e.g. x0.4 or +40 [none]")
    args = parser.parse_args(argv)
    folders = args.folders or dev_clips()
    amps = [int(a) for a in args.amps.split(",")]
    max_shifts = [int(m) for m in args.max_shifts.split(",") if m]
    tapers = [float(t) for t in args.tapers.split(",") if t]
    with ProcessPoolExecutor(args.jobs) as pool:
        results = list(
            pool.map(
                score_clip,
                folders,
                [amps] * len(folders),
                [max_shifts] * len(folders),
                [args.subpixel] * len(folders),
                [args.rotation] * len(folders),
                [tapers] * len(folders),
                [args.light] * len(folders),
            )
        )
    print("| clip | camera | method | pixel F | frame F1 |\n| --- | --- | --- | ---: | ---: |")
    rows = [row for clip_rows in results for row in clip_rows]
    for clip, camera, method, pixel_f, frame_f1 in rows:
        print(f"| {clip} | {camera} | {method} | {pixel_f:.3f} | {frame_f1:.3f} |")
    print()
    for camera in ["steady"] + [f"+-{a} px" for a in amps]:
        extra = [f"default, max_shift {m}" for m in max_shifts] + [f"default, taper {t:g}" for t in tapers]
        for method in ["steady.yaml", "default (register)"] + extra:
            chosen = [r for r in rows if r[1] == camera and r[2] == method]
            pixel = np.mean([r[3] for r in chosen])
            frames = [r[4] for r in chosen]
            print(
                f"mean over {len(chosen)} clips, {camera}, {method}: pixel F {pixel:.3f}, frame F1 {np.mean(frames):.3f} (min {min(frames):.3f})"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
