"""Leave-one-clip-out tuning over the dev set, with a score cache: ``motiondetect evaluate --loo`` for long runs.

The grid, the scoring and the table live in :mod:`motiondetect.evaluation.tuning` (``motiondetect evaluate
--loo`` prints the same table after its per-clip tables). This script skips the per-clip tables,
scores the anchors in the worker processes too, and keeps every score in a cache by default, so
a rerun, a grown grid or more clips compute only what is missing::

    python benchmarks/tune_loo.py samples/dev/*/ ../shared/samples/cdnet_highway ../shared/samples/cdnet_fall \\
        [-c CONFIG] [--grid small|tiny|shadow|chroma|morph|rates|still|light|ghost|subsense] [--jobs N] [--cache .data/tune_loo.json] [--skip 50] \\
        [--no-frame-f1-guard] [--json OUT]

Scores come from the CPU reference (the GPU backend gives the same masks); the first ``--skip``
frames of each clip are not scored. Every failure the command refuses prints one line.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from motiondetect.core.errors import MotionDetectError
from motiondetect.evaluation.scoring import DEFAULT_SKIP, load_folder
from motiondetect.evaluation.tuning import GRIDS, format_loo_table, tune
from motiondetect.pipeline.config import load_config


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", help="ground-truth folders in the CDnet layout (at least 2)")
    parser.add_argument("-c", "--config", help="YAML config the grid starts from [default: built-in defaults]")
    parser.add_argument("--grid", choices=sorted(GRIDS), default="small", help="parameter grid [default: small]")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="worker processes [default: all cores]")
    parser.add_argument("--cache", type=Path, default=Path(".data/tune_loo.json"), help="score cache (JSON) [default: .data/tune_loo.json]")
    parser.add_argument("--skip", type=int, default=DEFAULT_SKIP, help=f"frames at the start not scored [default: {DEFAULT_SKIP}]")
    parser.add_argument(
        "--frame-f1-guard",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="let a fold choose only points that keep each of its clips at frame F1 0.95, or at the config's where lower [default: on]",
    )
    parser.add_argument("--json", type=Path, help="also write the result (JSON) here")
    args = parser.parse_args(argv)
    try:
        config = load_config(args.config)
        for path in args.folders:
            load_folder(path)  # all readable before any work
        result = tune(
            args.folders,
            config,
            grid=args.grid,
            skip=args.skip,
            min_area=config["events"]["min_area"],
            jobs=args.jobs,
            anchors=True,
            cache_path=args.cache,
            guard=args.frame_f1_guard,
        )
    except MotionDetectError as exc:
        print(f"tune_loo: error: {exc}", file=sys.stderr)
        return exc.exit_code
    print(format_loo_table(result, base_label="config" if args.config else "default"))
    if args.json:
        args.json.write_text(json.dumps(result.as_dict(), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
