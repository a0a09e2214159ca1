"""Light switches and exposure changes (issue 15): what a global brightness change costs the
default pipeline, and what ``gaussian_background.lightswitch`` and ``exposure`` win back, on
labelled clips.

From the middle frame of a clip on, every frame is changed the same way (seeded nothing: the
change is deterministic): ``+N`` adds N grey levels to each BGR channel, ``xG`` multiplies them by
G (``cv2.convertScaleAbs``, saturating), as a light switched on (``+40``) or off (``x0.6``) does,
``rG`` ramps the gain from 1 to G over ten frames, as a camera's auto-exposure does, and ``fA@H``
makes it flicker by A % either way at H Hz, as mains lighting beating with the frame rate
(100 Hz light, 30 frames/s: 10 Hz) or a hunting auto-exposure does; the
labels stay as they are, since the objects do not change. Each clip is scored as it is and with
each change, with the default pipeline (or ``--config``'s) at each value of ``--param``
(``lightswitch``, ``exposure``, ``relative_floor`` or ``min_sigma``), by the same CDnet scorer as ``motiondetect evaluate`` (first 50 frames of the
window unscored, CPU backend: the GPU gives the same masks). Prints one Markdown table of the
means and the clips that move. Usage::

    python benchmarks/lightswitch_study.py [FOLDER ...] [--steps +40,x0.6,r0.6] [--param lightswitch|exposure]
                                           [--values 0,0.6,0.7,0.8] [--config CONFIG.yaml] [--jobs 2]
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

import cv2
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from jitter_study import dev_clips  # noqa: E402

from motiondetect.evaluation.scoring import detector_method, evaluate, load_folder  # noqa: E402
from motiondetect.evaluation.tuning import config_for  # noqa: E402
from motiondetect.pipeline.config import build_filters, default_config, load_config  # noqa: E402
from motiondetect.pipeline.detector import MotionDetector  # noqa: E402

#: Frames over which an ``rG`` step ramps the gain.
RAMP_FRAMES = 10


def change(step: str, frame: int = RAMP_FRAMES):
    """``(gain, offset)`` of a step written ``+N`` (N grey levels added), ``xG`` (gain G), ``rG``
    (gain G reached over RAMP_FRAMES frames) or ``fA@H`` (flicker: the gain swings by A % either
    way at H Hz, frames read at 25 frames/s), ``frame`` frames after its start (0: the first)."""
    if step.startswith("+"):
        return 1.0, float(step[1:])
    if step.startswith("f"):
        amplitude, hertz = (float(v) for v in step[1:].split("@"))
        return 1 + amplitude / 100 * math.sin(2 * math.pi * hertz * frame / 25), 0.0
    gain = float(step[1:])
    if step.startswith("r"):
        gain = 1 + (gain - 1) * min(frame + 1, RAMP_FRAMES) / RAMP_FRAMES
    return gain, 0.0


def stepped(src: Path, dst: Path, step: str) -> Path:
    """Write ``src`` (CDnet layout) with every frame from the middle one on changed by ``step``
    (:func:`change`) into ``dst``, the labels, ROI and temporal ROI copied; return ``dst``."""
    folder = load_folder(src)
    (dst / "input").mkdir(parents=True)
    (dst / "groundtruth").mkdir()
    for name in ("temporalROI.txt", "ROI.bmp"):
        if (src / name).is_file():
            shutil.copy(src / name, dst)
    middle = len(folder.frames) // 2
    for i, (number, image_path, label_path) in enumerate(folder.frames):
        image = cv2.imread(str(image_path), cv2.IMREAD_COLOR)
        if i >= middle:
            gain, offset = change(step, i - middle)
            image = cv2.convertScaleAbs(image, alpha=gain, beta=offset)
        cv2.imwrite(str(dst / "input" / f"in{number:06d}.png"), image)
        if label_path is not None:
            shutil.copy(label_path, dst / "groundtruth" / f"gt{number:06d}{label_path.suffix}")
    return dst


def score_clip(
    clip: Path, steps: list[str], values: list[float], param: str = "lightswitch", config: dict | None = None
) -> list[tuple[str, str, float, float, float]]:
    """Rows (clip, light, value of ``param``, pixel F, frame F1) for ``clip`` as it is and with each
    step, ``param`` set in ``config`` (default: the built-in defaults)."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="light_") as scratch:
        cases = [("as it is", clip)] + [(step, stepped(clip, Path(scratch) / f"s{i}", step)) for i, step in enumerate(steps)]
        for light, folder in cases:
            configs = [config_for(config or default_config(), {("gaussian_background", param): v}) for v in values]
            methods = [detector_method(MotionDetector(build_filters(c), annotate=False), str(v)) for c, v in zip(configs, values)]
            for method, score in evaluate(load_folder(folder), methods).scores:
                rows.append((clip.name, light, float(method.name), score.pixel.f_measure, score.frames.f1))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="*", type=Path)
    parser.add_argument(
        "--steps", default="+40,x0.6", help="changes from the middle frame on: +N grey levels, xG gain, rG ramp, fA@H flicker [+40,x0.6]"
    )
    parser.add_argument(
        "--param",
        default="lightswitch",
        choices=["lightswitch", "exposure", "relative_floor", "min_sigma"],
        help="the gaussian_background parameter varied",
    )
    parser.add_argument("--config", type=Path, help="YAML config the values are set in [default: built-in defaults]")
    parser.add_argument("--values", default="0,0.6,0.7,0.8", help="its values [0,0.6,0.7,0.8]")
    parser.add_argument("--jobs", type=int, default=2, help="clips scored at once [2]")
    args = parser.parse_args(argv)
    folders = args.folders or dev_clips()
    steps = [s for s in args.steps.split(",") if s]
    values = [float(v) for v in args.values.split(",")]
    with ProcessPoolExecutor(args.jobs) as pool:
        config = load_config(args.config) if args.config else None
        runs = pool.map(
            score_clip, folders, [steps] * len(folders), [values] * len(folders), [args.param] * len(folders), [config] * len(folders)
        )
        rows = [row for clip_rows in runs for row in clip_rows]
    lights = ["as it is", *steps]
    print(f"| `{args.param}` | " + " | ".join(f"{light}: pixel F / frame F1 (lowest)" for light in lights) + " |")
    print("| ---: |" + " --- |" * len(lights))
    for value in values:
        cells = []
        for light in lights:
            chosen = [r for r in rows if r[1] == light and r[2] == value]
            frames = [r[4] for r in chosen]
            cells.append(f"{np.mean([r[3] for r in chosen]):.3f} / {np.mean(frames):.3f} ({min(frames):.3f})")
        print(f"| {value:g} | " + " | ".join(cells) + " |")
    print(f"\nmeans over {len(folders)} clips; clips whose pixel F moves by more than 0.005 against {args.param} {values[0]:g}:")
    base = {(r[0], r[1]): r[3] for r in rows if r[2] == values[0]}
    for value in values[1:]:
        for light in lights:
            moved = [(r[3] - base[r[0], light], r[0]) for r in rows if r[1] == light and r[2] == value]
            listed = ", ".join(f"{name} {d:+.3f}" for d, name in sorted(moved) if abs(d) > 0.005)
            print(f"- {value:g}, {light}: {listed or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
