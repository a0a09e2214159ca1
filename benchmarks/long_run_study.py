"""Long runs: what hours of a busy scene do to a configuration, against the dev set's short windows.

The dev clips are windows of 100 to 350 frames, and every score on them is a model's first
seconds. A scan runs for hours, and a background model that learns from its foreground pixels
drifts towards what stays in view: people working at a desk, the cars of a busy lane. This script
plays each clip forward, backward, forward ... (``--passes`` times, a ping-pong, so no frame jumps)
and scores only the last pass (its first 50 frames unscored, as a fresh window's are), beside the
clip as it is. The frames are symbolic links into the clips (``--workdir``; a temporary folder by
default) and the labels follow their frames, so the long clip is scored by the same CDnet rules.

For each point of a grid of :data:`motiondetect.evaluation.tuning.GRIDS` (``foreground`` by
default: the selective update's foreground rates), it prints the mean pixel F fresh, after the
long run, and of the two together, and the leave-one-clip-out choice on that mean (each clip's
fresh and long scores left out together), with the held-out scores. Scores come from the CPU
reference and are kept in ``--cache`` like ``benchmarks/tune_loo.py``'s::

    python benchmarks/long_run_study.py ../shared/samples/cdnet_* samples/dev/*/ [-c CONFIG] [--grid foreground]
        [--passes 5] [--jobs 2] [--cache .data/long_run.json] [--workdir DIR] [--skip 50]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from motiondetect.core.errors import MotionDetectError  # noqa: E402
from motiondetect.evaluation.scoring import DEFAULT_SKIP, load_folder  # noqa: E402
from motiondetect.evaluation.tuning import GRIDS, leave_one_out, short_key, tune  # noqa: E402
from motiondetect.pipeline.config import load_config  # noqa: E402


def ping_pong(src: Path, dst: Path, passes: int, skip: int = DEFAULT_SKIP) -> Path:
    """Write ``src`` (CDnet layout) played ``passes`` times, forward then backward in turn, into
    ``dst`` as symbolic links; return ``dst``.

    Frame i (from 1) of the long clip is ``in{i:06d}`` (``src``'s extension); the labels of the
    last pass only are linked, and ``temporalROI.txt`` scores that pass from its ``skip + 1``-th
    frame, so the last pass of a long clip is scored on the frames of ``src``'s fresh window
    (when ``passes`` is odd it runs forward, as ``src`` does). ``ROI.bmp`` is linked as it is.

    Raises:
        ValueError: ``passes`` is below 1.
        motiondetect.evaluation.scoring.GroundTruthError: ``src`` cannot be read.
    """
    if passes < 1:
        raise ValueError(f"passes must be at least 1; got {passes}")
    frames = list(load_folder(src).frames)
    sequence = [f for p in range(passes) for f in (frames if p % 2 == 0 else frames[::-1])]
    last = len(sequence) - len(frames) + 1  # the last pass's first frame, from 1
    (dst / "input").mkdir(parents=True)
    (dst / "groundtruth").mkdir()
    for i, (_, image, label) in enumerate(sequence, 1):
        os.symlink(Path(image).resolve(), dst / "input" / f"in{i:06d}{Path(image).suffix}")
        if label is not None and i >= last:
            os.symlink(Path(label).resolve(), dst / "groundtruth" / f"gt{i:06d}{Path(label).suffix}")
    (dst / "temporalROI.txt").write_text(f"{last + skip} {len(sequence)}\n")
    if (src / "ROI.bmp").is_file():
        os.symlink((src / "ROI.bmp").resolve(), dst / "ROI.bmp")
    return dst


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path, help="ground-truth folders in the CDnet layout (at least 2)")
    parser.add_argument("-c", "--config", help="YAML config the grid starts from [default: built-in defaults]")
    parser.add_argument("--grid", choices=sorted(GRIDS), default="foreground", help="parameter grid [default: foreground]")
    parser.add_argument("--passes", type=int, default=5, help="plays of each clip in the long run [default: 5]")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="worker processes [default: all cores]")
    parser.add_argument("--cache", type=Path, default=Path(".data/long_run.json"), help="score cache (JSON) [default: .data/long_run.json]")
    parser.add_argument("--workdir", type=Path, help="where the long clips' links go [default: a temporary folder]")
    parser.add_argument(
        "--skip", type=int, default=DEFAULT_SKIP, help=f"frames at the start of a window not scored [default: {DEFAULT_SKIP}]"
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="long_run_") as scratch:
        work = args.workdir or Path(scratch)
        try:
            longs = []
            for folder in args.folders:
                dst = work / f"passes{args.passes}_skip{args.skip}" / folder.resolve().name
                longs.append(dst if dst.is_dir() else ping_pong(folder, dst, args.passes, args.skip))
            config = load_config(args.config)
            # The long clips' skip is their temporal ROI's: the stream's first frames are far before it.
            runs = {
                "fresh": tune([str(f) for f in args.folders], config, args.grid, skip=args.skip, jobs=args.jobs, cache_path=args.cache),
                "long": tune([str(f) for f in longs], config, args.grid, skip=0, jobs=args.jobs, cache_path=args.cache),
            }
        except (MotionDetectError, ValueError) as exc:
            print(f"long_run_study: error: {exc}", file=sys.stderr)
            return 2
    fresh = runs["fresh"]
    clips, keys = list(fresh.scores), fresh.keys
    score = {run: {c: {k: result.scores[c][k]["pixel_f"] for k in keys} for c in clips} for run, result in runs.items()}
    both = {c: {k: (score["fresh"][c][k] + score["long"][c][k]) / 2 for k in keys} for c in clips}
    print(f"{len(clips)} clips, grid {args.grid!r} ({len(keys)} points), long runs of {args.passes} passes; mean pixel F:\n")
    print("| point | fresh | long | both |\n| --- | ---: | ---: | ---: |")
    for k in keys:
        means = [statistics.mean(score[run][c][k] for c in clips) for run in ("fresh", "long")]
        mark = " (default)" if k == fresh.base else ""
        print(f"| {short_key(k)}{mark} | {means[0]:.4f} | {means[1]:.4f} | {statistics.mean(means):.4f} |")
    chosen = leave_one_out(both)
    print("\nLeave-one-clip-out on the mean of fresh and long (each clip's two scores left out together):\n")
    print("| clip | chosen | fresh | long | default fresh | default long |\n| --- | --- | ---: | ---: | ---: | ---: |")
    for c in clips:
        k = chosen[c]
        print(
            f"| {c} | {short_key(k)} | {score['fresh'][c][k]:.3f} | {score['long'][c][k]:.3f} | {score['fresh'][c][fresh.base]:.3f} | {score['long'][c][fresh.base]:.3f} |"
        )
    held = [statistics.mean(score[run][c][chosen[c]] for c in clips) for run in ("fresh", "long")]
    base = [statistics.mean(score[run][c][fresh.base] for c in clips) for run in ("fresh", "long")]
    print(f"| **mean** | | **{held[0]:.4f}** | **{held[1]:.4f}** | {base[0]:.4f} | {base[1]:.4f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
