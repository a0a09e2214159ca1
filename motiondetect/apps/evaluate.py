"""``motiondetect evaluate``: the command that scores configurations against ground truth.

The scoring rules, the anchors and the folder layout are :mod:`motiondetect.evaluation.scoring`'s;
leave-one-clip-out tuning (``--loo``) is :mod:`motiondetect.evaluation.tuning`'s.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from contextlib import ExitStack
from pathlib import Path

from motiondetect import __version__
from motiondetect.core.errors import MotionDetectError, OneLineParser, UsageError
from motiondetect.evaluation.scoring import (
    BGSLIBRARY_MISSING,
    DEFAULT_SKIP,
    Evaluation,
    EventRules,
    bgslibrary_available,
    classic_baselines,
    config_method,
    evaluate,
    format_table,
    load_folder,
)
from motiondetect.evaluation.sweep import sweep, threshold_axis
from motiondetect.evaluation.tuning import GRIDS, grid_summary
from motiondetect.outputs.events import write_json_atomic
from motiondetect.outputs.paths import checked_output_file, checked_plot_file
from motiondetect.outputs.plot import plot_threshold_curves, require_matplotlib
from motiondetect.pipeline import presets
from motiondetect.pipeline.config import BACKENDS, ENGINES, build_filters, load_config, with_overrides
from motiondetect.pipeline.frame_rate import for_source, fps_arg
from motiondetect.scaleout.cluster import jobs_arg
from motiondetect.sources.video import DEFAULT_SEQUENCE_FPS

log = logging.getLogger("motiondetect")


def build_parser() -> argparse.ArgumentParser:
    """Return the parser of ``motiondetect evaluate``."""
    parser = OneLineParser(
        prog="motiondetect evaluate",
        description="Score motion detection against ground truth in the CDnet 2014 layout (input/, groundtruth/, "
        "temporalROI.txt, ROI.bmp): pixel precision, recall and F-measure by CDnet rules, frame-level precision, "
        "recall and F1, and events hit and false events (the frames with motion grouped into events as a scan's events file "
        "groups them: the config's events.min_event_length and events.merge_gap at --fps, without padding); optionally the "
        "classic OpenCV anchors on the same frames.",
    )
    parser.add_argument("folders", nargs="+", metavar="GT_FOLDER", help="a folder in the CDnet layout (several: one table each)")
    parser.add_argument("-c", "--config", help=presets.config_help())
    parser.add_argument("--backend", choices=BACKENDS, help="where to compute [setting: config 'backend', default auto]")
    parser.add_argument("--engine", choices=ENGINES, help="GPU engine for gray and difference [setting: config 'engine', default kernel]")
    parser.add_argument(
        "--baselines",
        action="store_true",
        help="also score the classic anchors (default parameters), each as it is and with a 5x5 median on its mask: "
        "OpenCV MOG2 and KNN, MOG, CNT and GSOC where opencv-contrib (cv2.bgsegm) is installed, and bgslibrary's "
        "SuBSENSE and PAWCS where pybgs is installed (slow: PAWCS about 6 frames/s at 320x240)",
    )
    parser.add_argument(
        "--skip", type=_non_negative, default=DEFAULT_SKIP, metavar="N", help=f"frames at the start not scored [default: {DEFAULT_SKIP}]"
    )
    parser.add_argument(
        "--loo",
        action="store_true",
        help="also tune by leave-one-clip-out (2 or more folders): score a parameter grid around the config on every clip "
        "(CPU reference), score each clip with the grid point that does best on the others, and print that table beside the config's scores and the anchors'",
    )
    parser.add_argument(
        "--grid",
        choices=sorted(GRIDS),
        help="the --loo parameter grid, each around the config (its own values join the axes): "
        + "; ".join(grid_summary(name) for name in sorted(GRIDS))
        + " (subsense: with configs/subsense.yaml) [default: small]",
    )
    parser.add_argument(
        "--jobs",
        type=jobs_arg,
        metavar="N",
        help="worker processes for the --loo grid and the --plot sweep, or auto [default: auto, all cores]",
    )
    parser.add_argument(
        "--frame-f1-guard",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="with --loo, let a fold choose only grid points that keep each of its clips at frame F1 0.95 (or at the config's, "
        "where lower); --no-frame-f1-guard chooses by mean pixel F alone [default: on]",
    )
    parser.add_argument(
        "--loo-cache",
        metavar="FILE",
        help="JSON file of --loo scores to reuse and extend (a rerun or a grown grid computes only what is missing; a change to the code scores again)",
    )
    parser.add_argument(
        "--plot",
        metavar="FILE.png",
        help="also sweep the pipeline's decision threshold (gaussian_background.sigmas, threshold.threshold, subsense.color_threshold, "
        "dispersion_threshold.sigma_strong) on every clip and draw pixel precision, recall and F-measure against it, one panel per clip "
        "(CPU reference; needs matplotlib: pip install 'motiondetect[plot]')",
    )
    parser.add_argument(
        "--fps",
        type=fps_arg,
        help="frame rate of the folders' footage, frames/s (CDnet ships none): the events' min_event_length and merge_gap "
        "apply at it, and where the rate the model sees frames at "
        "(this over scan.frame_skip + 1) is outside the config's tuned_fps, the model's per-frame learning rates and counts "
        "are rescaled as for a video at that rate (a --loo grid's own values of them stay as written) [default: 25, as "
        "image sequences are read]",
    )
    parser.add_argument(
        "--inter-coded",
        action="store_true",
        help="the folders' frames were decoded from an inter-coded video (H.264, HEVC, VP9...), whose skip blocks repeat still "
        "pixels exactly: the model takes the values it takes for such a video (gaussian_background.still_frames_inter) "
        "[default: the values for image sequences]",
    )
    parser.add_argument("--json", metavar="OUT", help="also write every score (counts included) to this JSON file")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --json file or --plot image")
    parser.add_argument("-q", "--quiet", action="store_true", help="print the tables only, no progress bar")
    return parser


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number of frames >= 0, got {text!r}")
    return value


def _progress(total: int, quiet: bool, label: str):
    from motiondetect.core.progress import progress_bar as cli_progress

    bar = cli_progress(total, quiet)
    if hasattr(bar, "set_description"):
        bar.set_description(label)
    return bar


def run(args: argparse.Namespace) -> int:
    """Evaluate every folder as ``args`` say; print the tables; return the exit code.

    With ``args.loo``, then tune by leave-one-clip-out (:func:`motiondetect.evaluation.tuning.tune`) and
    print its table. On Ctrl-C the tables printed so far stand, and ``--json`` is written with
    what was finished and ``"complete": false``.
    """
    from motiondetect.evaluation import tuning
    from motiondetect.gpu.backend import open_backend

    config = with_overrides(load_config(args.config), backend=args.backend, engine=args.engine)
    # For every detector below (the scores, --loo, --plot), as a scan of a source at that rate
    # sets it up: --inter-coded's values, then the rates at the rate the model sees frames.
    fps = DEFAULT_SEQUENCE_FPS if args.fps is None else args.fps
    config = for_source(config, fps, inter_coded=args.inter_coded)
    # Events as a scan of the footage reports them: every labelled frame is scored (a skipped
    # one with the mask held over it, as a scan feeds its events), so at the footage's rate.
    event_rules = EventRules.from_config(config["events"], fps)
    skip, downscale = config["scan"]["frame_skip"], config["scan"]["downscale"]
    unused = [
        key
        for key, used in (
            ("roi", config["roi"] is None),
            ("events.min_pixels", config["events"]["min_pixels"] is None),
            ("events.max_area", config["events"]["max_area"] >= 1.0),
        )
        if not used
    ]
    if unused:  # CDnet's rules: the folder's ROI.bmp, and a frame moves at events.min_area
        log.info("notice: the config's %s not applied: scoring uses each folder's ROI.bmp and events.min_area", ", ".join(unused))
    if skip or downscale != 1:
        log.info(
            "notice: scored as the config's scan runs: one frame in %d processed (scan.frame_skip %d), at 1/%d of the "
            "width and height (scan.downscale %d)",
            skip + 1,
            skip,
            downscale,
            downscale,
        )
    folders = [load_folder(path) for path in args.folders]  # check them all before any work
    inputs = {path for folder in folders for path in folder.files()}  # never replaced, --overwrite or not
    json_path = checked_output_file(Path(args.json), args.overwrite, "--json", inputs) if args.json else None
    cache_path = Path(args.loo_cache) if args.loo_cache else None
    if cache_path is not None and cache_path.resolve() in inputs:
        raise UsageError(f"--loo-cache {str(cache_path)!r} is a file of a ground-truth folder; choose another name")
    plot_path = checked_plot_file(Path(args.plot), args.overwrite, inputs) if args.plot else None
    named = [
        (flag, Path(given).resolve())
        for flag, given in (("--json", args.json), ("--plot", args.plot), ("--loo-cache", args.loo_cache))
        if given
    ]
    for i, (flag, path) in enumerate(named):
        twin = next((other for other, same in named[:i] if same == path), None)
        if twin is not None:
            raise UsageError(f"{twin} and {flag} name the same file ({str(path)!r}); give each its own")
    if plot_path is not None:
        require_matplotlib()
        threshold_axis(config)  # a pipeline with no threshold to sweep fails now
    if args.loo or plot_path is not None:
        args.jobs = args.jobs or os.cpu_count() or 1
    if args.loo:
        args.grid = args.grid or "small"
        names = [f.name for f in folders]
        if len(folders) < 2:
            raise UsageError(
                f"--loo needs at least 2 ground-truth folders (each is scored with parameters chosen on the others); got {len(folders)}"
            )
        if len(set(names)) < len(names):
            raise UsageError(
                f"--loo tells the clips apart by folder name, and {sorted(n for n in names if names.count(n) > 1)[0]!r} is given twice"
            )
        tuning.grid_axes(tuning.GRIDS[args.grid], config)  # a pipeline the grid cannot tune fails now
        if cache_path is not None and (cache_path.is_dir() or not cache_path.resolve().parent.is_dir()):
            raise UsageError(f"--loo-cache {str(cache_path)!r} must be a file in an existing folder")
    else:
        jobs = None if plot_path is not None else args.jobs  # --plot's sweep runs on --jobs too
        guard_flag = "--frame-f1-guard" if args.frame_f1_guard else "--no-frame-f1-guard"  # as typed
        flags = (("--grid", args.grid), ("--jobs", jobs), (guard_flag, args.frame_f1_guard), ("--loo-cache", args.loo_cache))
        given = [flag for flag, value in flags if value is not None]
        if given:
            raise UsageError(f"{', '.join(given)} only apply with --loo" + (" or --plot" if given == ["--jobs"] else ""))
    for folder in folders:
        if not folder.scored_count(args.skip):  # a table of zeros otherwise
            most = folder.labelled_positions()[-1]  # load_folder ensures one
            raise UsageError(f"--skip {args.skip} leaves no labelled frame of {folder.name} to score; at most {most} here")
    if args.baselines and not bgslibrary_available():
        log.info("notice: %s", BGSLIBRARY_MISSING)
    results: list[Evaluation] = []
    loo = None
    backend = device = None
    complete = False
    try:
        with ExitStack() as stack:
            cuda = open_backend(config["backend"], build_filters(config), stack)
            backend, device = ("cpu" if cuda is None else "cuda"), (cuda.device_name if cuda else None)
            label = f"motiondetect ({backend})"
            for index, folder in enumerate(folders):
                # A fresh detector for each folder, as its scan would run it (scan.downscale, scan.frame_skip).
                methods = [config_method(config, cuda, label)] + (classic_baselines() if args.baselines else [])
                bar = _progress(len(folder.frames), args.quiet, folder.name)
                try:
                    evaluation = evaluate(
                        folder, methods, skip=args.skip, min_area=config["events"]["min_area"], progress=bar, event_rules=event_rules
                    )
                finally:
                    bar.close()
                # After the bar: a line logged while it shows would share its line.
                warning = evaluation.label_values.warning() if evaluation.label_values is not None else None
                if warning is not None:
                    log.warning("%s: %s", folder.name, warning)
                results.append(evaluation)
                print(("\n" if index else "") + format_table(evaluation), flush=True)
        if args.loo:
            points = len(tuning.grid_points(tuning.grid_axes(tuning.GRIDS[args.grid], config))) * len(folders)
            bar = _progress(points, args.quiet, "leave-one-out grid")
            try:
                loo = tuning.tune(
                    args.folders,
                    config,
                    grid=args.grid,
                    skip=args.skip,
                    min_area=config["events"]["min_area"],
                    jobs=args.jobs,
                    cache_path=cache_path,
                    progress=bar.update,
                    guard=args.frame_f1_guard is not False,
                )
            finally:
                bar.close()
            # The anchors were scored above, on the same frames: reuse them.
            loo.anchors = {e.folder.name: [tuning.summary(m.name, s) for m, s in e.scores[1:]] for e in results}
            print("\n" + tuning.format_loo_table(loo, base_label="config" if args.config else "default"), flush=True)
        if plot_path is not None:
            axis, values = threshold_axis(config)
            bar = _progress(len(values) * len(folders), args.quiet, "threshold sweep")
            try:
                _, curves = sweep(
                    args.folders, config, skip=args.skip, min_area=config["events"]["min_area"], jobs=args.jobs, progress=bar.update
                )
            finally:
                bar.close()
            names = {path: folder.name for path, folder in zip(args.folders, folders)}
            plot_threshold_curves(plot_path, {names[path]: points for path, points in curves.items()}, f"{axis[0]}.{axis[1]}")
            log.info("threshold sweep of %s.%s drawn in %s", *axis, plot_path)
        complete = True
    finally:
        if json_path is not None and (results or complete):
            report = {
                "motiondetect_version": __version__,
                "backend": backend,
                "device": device,
                "config": config,
                "complete": complete,
                "evaluations": [e.as_dict() for e in results],
            }
            if loo is not None:
                report["leave_one_out"] = loo.as_dict()
            write_json_atomic(json_path, report)
    return 0


def main(argv: list[str]) -> int:
    """Run ``motiondetect evaluate`` with ``argv`` (the arguments after ``evaluate``); return the exit code."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.WARNING if args.quiet else logging.INFO, format="motiondetect: %(message)s", stream=sys.stderr, force=True
    )
    try:
        return run(args)
    except MotionDetectError as exc:
        if os.environ.get("MOTIONDETECT_DEBUG"):
            raise
        print(f"motiondetect: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("motiondetect: Stopped.", file=sys.stderr)
        return 130
