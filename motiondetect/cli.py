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
from motiondetect.live import LatestFrameReader
from motiondetect.preview import KEYS, PreviewSink
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
    lines.append("preview window keys: " + ", ".join(f"{key} {action}" for key, action in KEYS))
    lines.append("event settings (YAML 'events:'):")
    lines += [f"  {name}={default}: {text}" for name, (_, default, text) in EVENT_SETTINGS.items()]
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser (its choices and help come from the registry)."""
    threshold = Threshold.PARAMS[0]
    parser = argparse.ArgumentParser(
        prog="motiondetect",
        description="Detect motion in a video on the GPU (CUDA) or CPU: grayscale, absdiff of frame "
        "pairs, threshold, erosion, and the motion blended into the red channel.",
        epilog=_filters_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("input", nargs="?", help="video file, image folder, printf pattern (in%%06d.jpg), camera index or URL")
    parser.add_argument("-o", "--output", help="annotated video to write [default: <stem>_motion.mp4 in the current folder]")
    parser.add_argument("-c", "--config", help="YAML config (see configs/default.yaml) [default: built-in defaults]")
    parser.add_argument("--events", help="events JSON to write [default: <stem>_motion.json in the current folder]")
    parser.add_argument("--backend", choices=BACKENDS, help="where to compute [setting: config 'backend', default auto: CUDA if a device answers]")
    parser.add_argument("--engine", choices=ENGINES, help="GPU engine for gray and difference: their CUDA kernels or cuBLAS (scikit-cuda) [setting: config 'engine', default kernel]")
    parser.add_argument("--threshold", type=_param_arg(threshold), metavar="T", help=f"threshold in {threshold.unit} ({threshold.minimum}..{threshold.maximum}) [setting: config, default {threshold.default}]")
    parser.add_argument("--fps", type=_positive_fps, help="frame rate to assume, frames/s, overriding the container's [default: the container's; 25 for image sequences]")
    parser.add_argument("--no-video", action="store_true", help="write only the events file, no annotated video")
    parser.add_argument("--overwrite", action="store_true", help="replace existing output files")
    live = parser.add_argument_group("live preview (cameras and streams open a window by default)")
    live.add_argument("--camera", type=int, metavar="N", help="read camera N (0 is the first) instead of INPUT")
    live.add_argument("--preview", action="store_true", help="show the annotated frames in a window while processing a file")
    live.add_argument("--realtime", action="store_true", help="with --preview, play a file at its frame rate instead of as fast as possible")
    live.add_argument("--live", action="store_true", help="play a file as a live source: read on a thread at its frame rate, dropping frames when processing falls behind")
    live.add_argument("--record", dest="output", metavar="OUT.mp4", help="write the annotated live stream to OUT.mp4 (same as -o)")
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
    source = str(args.camera) if args.camera is not None else args.input
    video = VideoHandler(source, fps=args.fps)
    realtime_source = video.is_live or video.is_stream  # frames arrive on the source's clock
    live = realtime_source or args.live
    with ExitStack() as stack:
        stack.enter_context(video)
        input_path = Path(source).resolve() if Path(source).is_file() else None
        # A file gets outputs by default; a camera or stream only records what is asked for.
        default_video = None if realtime_source else f"{video.name}_motion.mp4"
        default_events = None if realtime_source else f"{video.name}_motion.json"
        video_path = events_path = None
        if not args.no_video and (args.output or default_video):
            video_path = _output_path(args.output, default_video, input_path, args.overwrite, "output video")
        if args.events or default_events:
            events_path = _output_path(args.events, default_events, input_path, args.overwrite, "events file")
        if video_path and events_path and events_path.resolve() == video_path.resolve():
            raise UsageError("the events file and the output video must differ")
        filters = build_filters(config)
        cuda = _open_backend(config["backend"], filters, stack)
        detector = MotionDetector(filters, cuda=cuda)
        header: dict[str, Any] = {
            "motiondetect_version": __version__,
            "input": source,
            "output_video": str(video_path) if video_path else None,
            "fps": video.fps,
            "frame_size": list(video.size),
            "backend": detector.backend,
            "device": cuda.device_name if cuda else None,
            "config": config,
        }
        frames = video
        if live:
            # Camera and stream frames are stamped with the wall clock; a file played as live
            # keeps its media times. Either way a slow consumer drops frames, never lags.
            frames = LatestFrameReader(video, pace_fps=None if realtime_source else video.fps, wallclock=realtime_source)
            stack.callback(frames.stop)
        events = EventsSink(events_path, config["events"]["min_area"], header)
        sinks: list[Sink] = []
        if args.preview or realtime_source:
            # First: a quit ('q') raised while showing a frame leaves that frame out of every output.
            sinks.append(
                PreviewSink(
                    f"motiondetect - {video.name}", detector, events.tracker, snapshot_stem=video.name,
                    realtime_fps=video.fps if args.realtime and not live else None,
                    live=realtime_source, reader=frames if live else None,
                )
            )
        if video_path:
            sinks.append(VideoSink(video.writer(video_path), timestamps=live))
        sinks.append(events)  # last: it records whether the others finished
        summary = Runner(frames, detector, sinks, _progress(video.frame_count, args.quiet or live)).run()
    if summary.frames == 0 and summary.complete:
        raise MotionDetectError(f"no frames could be decoded from {args.input!r}")
    device = f" ({header['device']})" if header["device"] else ""
    outputs = ", ".join(filter(None, (s.describe() for s in sinks)))
    log.info(
        "%d frames in %.1f s (%.0f fps), %d events, backend %s%s -> %s",
        summary.frames, summary.elapsed, summary.fps, len(events.tracker.events), detector.backend, device, outputs,
    )
    if summary.dropped_frames:
        log.info("%d frames dropped to keep up with the live source", summary.dropped_frames)
    if summary.stopped:
        return 0
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
    parser = build_parser()
    args = parser.parse_args(argv)
    level = logging.WARNING if args.quiet else logging.DEBUG if args.verbose else logging.INFO
    logging.basicConfig(level=level, format="motiondetect: %(message)s", stream=sys.stderr, force=True)
    if args.version:
        print(f"motiondetect {__version__}")
        for line in feature_report():
            print(f"  {line}")
        return 0
    if (args.input is None) == (args.camera is None):
        parser.error("give one input: a file, folder, pattern or URL, or --camera N")
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
