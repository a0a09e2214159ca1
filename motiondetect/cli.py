"""The ``motiondetect`` command: argument parsing and the run controller.

Errors the user can fix print one line, ``motiondetect: error: ...``, and exit 2 (usage,
config) or 1 (run time). Whatever was processed before a failure or Ctrl-C is kept: the video is
closed so it plays up to the last frame, and the events file is written with ``"complete":
false``. Set ``MOTIONDETECT_DEBUG=1`` to get tracebacks instead.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from motiondetect import __version__
from motiondetect.config import BACKENDS, ENGINES, EVENT_SETTINGS, build_filters, load_config, with_overrides
from motiondetect.cuda_handler import CUDAHandler
from motiondetect.detector import MotionDetector
from motiondetect.errors import CudaUnavailable, MotionDetectError, UsageError
from motiondetect.filters import REGISTRY, Threshold
from motiondetect.platform import cuda_device_error, feature_report
from motiondetect.runner import EventsSink, Runner, Sink, VideoSink
from motiondetect.video import VideoHandler

log = logging.getLogger("motiondetect")


def _param_arg(param):
    """argparse ``type`` that parses a value of ``param`` and checks its range."""

    def parse(text: str):
        try:
            value = param.type(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {param.type.__name__} {param.unit}, got {text!r}") from None
        if not param.minimum <= value <= param.maximum:
            raise argparse.ArgumentTypeError(f"{value} is out of range (allowed {param.minimum}..{param.maximum})")
        return value

    return parse


def _positive_fps(text: str) -> float:
    """argparse ``type`` for ``--fps``: a finite number of frames per second above 0."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected a positive number of frames per second, got {text!r}")
    return value


def _filters_help() -> str:
    lines = ["pipeline filters (YAML 'filter:' names and parameters, from the registry):"]
    for name, cls in REGISTRY.items():
        lines.append(f"  {name}: {cls.__doc__.strip().splitlines()[0].replace('``', '')}")
        lines += [f"      {p.describe()}" for p in cls.PARAMS]
    lines.append("event settings (YAML 'events:'):")
    lines += [f"  {name}={default}: {text}" for name, (_, default, text) in EVENT_SETTINGS.items()]
    lines.append("score against ground truth (CDnet layout): motiondetect evaluate GT_FOLDER [--baselines] (see its --help)")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser (its choices and help come from the registry)."""
    threshold = Threshold.PARAMS[0]
    parser = argparse.ArgumentParser(
        prog="motiondetect",
        description="Detect motion in a video on the GPU (CUDA) or CPU: by default a per-pixel background "
        "model at a working resolution and mask clean-up (configs/seed.yaml: the case study's frame pairs, "
        "threshold and erosion), with the motion blended into the red channel.",
        epilog=_filters_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("input", nargs="?", help="video file, image folder, printf pattern (in%%06d.jpg), camera index or URL")
    parser.add_argument("-o", "--output", help="annotated video to write [default: <stem>_motion.mp4 in the current folder]")
    parser.add_argument("-c", "--config", help="YAML config (see configs/default.yaml) [default: built-in defaults]")
    parser.add_argument("--events", help="events JSON to write [default: <stem>_motion.json in the current folder]")
    parser.add_argument("--backend", choices=BACKENDS, help="where to compute [setting: config 'backend', default auto: CUDA if a device answers]")
    parser.add_argument("--engine", choices=ENGINES, help="GPU engine for gray and difference: their CUDA kernels or cuBLAS (scikit-cuda) [setting: config 'engine', default kernel]")
    parser.add_argument("--threshold", type=_param_arg(threshold), metavar="T", help=f"threshold in {threshold.unit} ({threshold.minimum}..{threshold.maximum}) of the pipeline's 'threshold' filter (e.g. -c configs/seed.yaml) [setting: config]")
    parser.add_argument("--fps", type=_positive_fps, help="frame rate to assume, frames/s, overriding the container's [default: the container's; 25 for image sequences]")
    parser.add_argument("--no-video", action="store_true", help="write only the events file, no annotated video")
    parser.add_argument("--overwrite", action="store_true", help="replace existing output files")
    verbosity = parser.add_mutually_exclusive_group()
    verbosity.add_argument("-q", "--quiet", action="store_true", help="print errors only, no progress bar")
    verbosity.add_argument("-v", "--verbose", action="store_true", help="print debug messages")
    parser.add_argument("--version", action="store_true", help="print the version and the detected features, then exit")
    return parser


def _output_path(given: str | None, default: str, input_path: Path | None, overwrite: bool, what: str) -> Path:
    path = Path(given) if given else Path.cwd() / default
    if path.is_dir():
        raise UsageError(f"{what} {str(path)!r} is a folder; give a file name")
    if input_path is not None and path.resolve() == input_path:
        raise UsageError(f"{what} {str(path)!r} is the input file; choose another name")
    if path.exists() and not overwrite:
        raise UsageError(f"{what} {str(path)!r} exists; pass --overwrite to replace it")
    folder = path.resolve().parent
    if not folder.is_dir():
        raise UsageError(f"{what} folder {str(folder)!r} does not exist")
    if not os.access(folder, os.W_OK):
        raise UsageError(f"{what} folder {str(folder)!r} is not writable")
    return path


def _open_backend(requested: str, filters, stack: ExitStack):
    """Return an entered CUDAHandler, or None for the CPU, as ``requested`` and the engines say.

    Raises:
        UsageError: a cuBLAS engine is selected with ``--backend cpu``.
        CudaUnavailable: CUDA (or cuBLAS, when selected) is needed but cannot be used.
    """
    cublas = [f.NAME for f in filters if f.engine == "cublas"]
    if requested == "cpu":
        if cublas:
            raise UsageError(f"the cuBLAS engine ({', '.join(cublas)}) runs on the GPU; use --backend cuda or auto, or --engine kernel")
        return None
    if requested == "auto" and not cublas:
        reason = cuda_device_error()
        if reason:
            log.info("notice: CUDA unavailable (%s); using the CPU backend", reason.split(";")[0])
            return None
    try:
        cuda = stack.enter_context(CUDAHandler())
    except CudaUnavailable as exc:
        if cublas:
            raise CudaUnavailable(f"the cuBLAS engine needs a CUDA device: {exc}") from None
        raise
    if cublas:
        cuda.blas  # load scikit-cuda now: a missing install fails before any frame is read
    return cuda


def run(args: argparse.Namespace) -> int:
    """Process one input as the parsed ``args`` say; return the exit code."""
    config = with_overrides(load_config(args.config), backend=args.backend, engine=args.engine, threshold=args.threshold)
    video = VideoHandler(args.input, fps=args.fps)
    with ExitStack() as stack:
        stack.enter_context(video)
        input_path = Path(args.input).resolve() if Path(args.input).is_file() else None
        video_path = None if args.no_video else _output_path(args.output, f"{video.name}_motion.mp4", input_path, args.overwrite, "output video")
        events_path = _output_path(args.events, f"{video.name}_motion.json", input_path, args.overwrite, "events file")
        if video_path is not None and events_path.resolve() == video_path.resolve():
            raise UsageError("the events file and the output video must differ")
        filters = build_filters(config)
        cuda = _open_backend(config["backend"], filters, stack)
        detector = MotionDetector(filters, cuda=cuda)
        header: dict[str, Any] = {
            "motiondetect_version": __version__,
            "input": args.input,
            "output_video": str(video_path) if video_path else None,
            "fps": video.fps,
            "frame_size": list(video.size),
            "backend": detector.backend,
            "device": cuda.device_name if cuda else None,
            "config": config,
        }
        sinks: list[Sink] = [VideoSink(video.writer(video_path))] if video_path else []
        events = EventsSink(events_path, config["events"]["min_area"], header)
        sinks.append(events)  # last: it records whether the others finished
        summary = Runner(video, detector, sinks, _progress(video.frame_count, args.quiet)).run()
    if summary.frames == 0 and summary.complete:
        raise MotionDetectError(f"no frames could be decoded from {args.input!r}")
    device = f" ({header['device']})" if header["device"] else ""
    outputs = ", ".join(filter(None, (s.describe() for s in sinks)))
    log.info(
        "%d frames in %.1f s (%.0f fps), %d events, backend %s%s -> %s",
        summary.frames, summary.elapsed, summary.fps, len(events.tracker.events), detector.backend, device, outputs,
    )
    if summary.interrupted:
        log.warning("Stopped after %d frames; outputs hold what was processed", summary.frames)
        return 130
    if summary.error is not None:
        raise MotionDetectError(f"stopped after {summary.frames} frames: {summary.error}")
    return 0


def _progress(total: int | None, quiet: bool):
    """A tqdm bar with fps and ETA on a terminal; a no-op stand-in otherwise."""
    try:
        from tqdm import tqdm
    except ImportError:  # tqdm is a dependency, but keep the CLI usable without it
        tqdm = None
    if tqdm is None or quiet or not sys.stderr.isatty():

        class _Silent:
            def update(self, n): ...
            def set_postfix_str(self, s, refresh=True): ...
            def close(self): ...

        return _Silent()
    return tqdm(total=total, unit="frame", dynamic_ncols=True, leave=False)


def main(argv: list[str] | None = None) -> int:
    """Run the command line; return the process exit code."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["evaluate"]:  # the scoring subcommand lives in its own module
        from motiondetect.evaluate import main as evaluate_main

        return evaluate_main(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    level = logging.WARNING if args.quiet else logging.DEBUG if args.verbose else logging.INFO
    logging.basicConfig(level=level, format="motiondetect: %(message)s", stream=sys.stderr, force=True)
    if args.version:
        print(f"motiondetect {__version__}")
        for line in feature_report():
            print(f"  {line}")
        return 0
    if args.input is None:
        parser.error("the following arguments are required: input")
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
