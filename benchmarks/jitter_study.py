"""Camera jitter, a study for issue 15: how much pixel F does a shaking camera cost the default
pipeline, and how much does registering each frame to the first by global translation recover?

Each frame of a real CDnet clip (and its ground truth) is moved by a random whole-pixel
translation of up to AMP pixels and cropped by MARGIN on every side (no border enters); the
default pipeline is scored on it as it is and behind a prototype registration: the translation
to the clip's first frame by phase correlation (``cv2.phaseCorrelate``, Hann window, rounded),
the frame moved back before detection and the mask moved forward again for scoring. A prototype
on the CPU to decide whether the product's registration stage (cuFFT on the GPU) pays; not the
product. Usage::

    python benchmarks/jitter_study.py [SAMPLES]   # default: $MOTIONDETECT_SAMPLES or ../shared/samples
"""

import os
import shutil
import sys
import tempfile
from pathlib import Path

import cv2
import numpy as np

from motiondetect.evaluation.scoring import Method, detector_method, evaluate, load_folder
from motiondetect.pipeline.config import build_filters, default_config
from motiondetect.pipeline.detector import MotionDetector

MARGIN = 6


def shift(img, dx, dy, border):
    h, w = img.shape[:2]
    return cv2.warpAffine(img, np.float32([[1, 0, dx], [0, 1, dy]]), (w, h), flags=cv2.INTER_NEAREST, borderMode=border)


def jittered(src: Path, dst: Path, amp: int, seed: int):
    rng = np.random.default_rng(seed)
    if dst.exists():
        shutil.rmtree(dst)
    (dst / "input").mkdir(parents=True)
    (dst / "groundtruth").mkdir()
    shutil.copy(src / "temporalROI.txt", dst)
    roi = cv2.imread(str(src / "ROI.bmp"), cv2.IMREAD_GRAYSCALE)
    for path in sorted((src / "input").iterdir()):
        n = path.stem[2:]
        dx, dy = (int(v) for v in rng.integers(-amp, amp + 1, 2))
        img = cv2.imread(str(path))
        gt = cv2.imread(str(src / "groundtruth" / f"gt{n}.png"), cv2.IMREAD_GRAYSCALE)
        crop = (slice(MARGIN, -MARGIN), slice(MARGIN, -MARGIN))
        cv2.imwrite(str(dst / "input" / f"in{n}.png"), shift(img, dx, dy, cv2.BORDER_REPLICATE)[crop])
        cv2.imwrite(str(dst / "groundtruth" / f"gt{n}.png"), shift(gt, dx, dy, cv2.BORDER_REPLICATE)[crop])
    cv2.imwrite(str(dst / "ROI.bmp"), roi[MARGIN:-MARGIN, MARGIN:-MARGIN])


def registered_method() -> Method:
    detector = MotionDetector(build_filters(default_config()), annotate=False)
    state = {}
    window = None

    def run(frame):
        nonlocal window
        grey = cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY).astype(np.float32)
        if "ref" not in state:
            state["ref"] = grey
            window = cv2.createHanningWindow(grey.shape[::-1], cv2.CV_32F)
        (sx, sy), _ = cv2.phaseCorrelate(state["ref"], grey, window)
        dx, dy = int(round(sx)), int(round(sy))
        aligned = shift(frame, -dx, -dy, cv2.BORDER_REPLICATE)
        mask = detector.process(aligned).mask
        return shift(mask, dx, dy, cv2.BORDER_CONSTANT)

    return Method("default + registration", run)


def main() -> None:
    root = Path(__file__).resolve().parent.parent
    default = os.environ.get("MOTIONDETECT_SAMPLES", str(root.parent / "shared" / "samples"))
    samples = Path(sys.argv[1] if len(sys.argv) > 1 else default)
    out = Path(tempfile.mkdtemp(prefix="jitter_"))
    for clip in ("cdnet_highway", "cdnet_fall"):
        src = samples / clip
        plain = load_folder(src)
        base = evaluate(
            plain, [detector_method(MotionDetector(build_filters(default_config()), annotate=False), "default, steady")]
        ).scores[0][1]
        print(f"{clip} steady: pixel F {base.pixel.f_measure:.3f} frame F1 {base.frames.f1:.3f}")
        for amp in (2, 4):
            dst = out / f"{clip}_jitter{amp}"
            jittered(src, dst, amp, seed=1)
            folder = load_folder(dst)
            methods = [detector_method(MotionDetector(build_filters(default_config()), annotate=False), "default"), registered_method()]
            for method, score in evaluate(folder, methods).scores:
                print(f"{clip} jitter ±{amp}px {method.name:24s}: pixel F {score.pixel.f_measure:.3f} frame F1 {score.frames.f1:.3f}")
    shutil.rmtree(out)


if __name__ == "__main__":
    main()
