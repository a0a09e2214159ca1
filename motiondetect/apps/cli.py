"""The ``motiondetect`` command: argument parsing and the run controller.

Errors the user can fix print one line, ``motiondetect: error: ...``, and exit 2 (usage,
config) or 1 (run time). Whatever was processed before a failure, Ctrl-C or SIGTERM is kept: the
video is closed so it plays up to the last frame, and the events file is written with
``"complete": false``; a stop signal exits with 128 + its number (130 SIGINT, 143 SIGTERM, see
:mod:`motiondetect.core.signals`). Set ``MOTIONDETECT_DEBUG=1`` to get tracebacks instead.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import numpy as np

from motiondetect import __version__
from motiondetect.apps.preview import KEYS, PreviewSink
from motiondetect.core.errors import ConfigError, CudaUnavailable, MotionDetectError, OneLineParser, UsageError, VideoOpenFailure
from motiondetect.core.faults import describe_device_fault, is_device_fault
from motiondetect.core.progress import progress_bar
from motiondetect.core.safety import quiet_native_logs
from motiondetect.core.signals import StopSignals, exit_code
from motiondetect.filters import REGISTRY, Threshold
from motiondetect.gpu import early_start
from motiondetect.gpu.backend import open_backend
from motiondetect.gpu.platform import feature_report
from motiondetect.outputs.clips import ClipSink, CopiedClipSink, MotionOnlySink, clip_name
from motiondetect.outputs.events import EventSegmenter
from motiondetect.outputs.masks import MaskImagesSink, MaskVideoSink, mask_name
from motiondetect.outputs.overlay import Overlay
from motiondetect.outputs.paths import OutputPaths, plan_outputs, remove_earlier
from motiondetect.outputs.plot import MotionPlotSink, require_matplotlib
from motiondetect.outputs.sinks import EventsSink, Sink, VideoSink
from motiondetect.outputs.writer import VideoWriter
from motiondetect.pipeline import presets
from motiondetect.pipeline.assembly import (
    batch_size,
    batched_path_problem,
    checked_on_device,
    choose_decoder,
    decodes_on_cpu,
    masks_needed,
)
from motiondetect.pipeline.batch import BatchDetector
from motiondetect.pipeline.config import (
    BACKENDS,
    DECODERS,
    ENGINES,
    PRESETS,
    SECTIONS,
    build_filters,
    load_config,
    schema_problems,
    with_overrides,
    with_settings,
)
from motiondetect.pipeline.detector import MotionDetector
from motiondetect.pipeline.frame_rate import for_source, fps_arg, rescaled_values
from motiondetect.pipeline.roi import rasterize, roi_from_file
from motiondetect.pipeline.runner import Runner
from motiondetect.scaleout.chunks import packet_timestamps
from motiondetect.scaleout.cluster import jobs_arg, scheduler_arg
from motiondetect.sources.live import LatestFrameReader
from motiondetect.sources.threads import BackgroundWriter, PrefetchReader, head_start_frames
from motiondetect.sources.video import ConcatSource, Position, VideoHandler, expand_inputs, missing_inputs, window

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


def _filters_help() -> str:
    lines = ["pipeline filters (YAML 'filter:' names and parameters, from the registry):"]
    for name, cls in REGISTRY.items():
        lines.append(f"  {name}: {cls.__doc__.strip().splitlines()[0].replace('``', '')}")
        lines += [f"      {p.describe()}" for p in cls.PARAMS]
    for section, table in SECTIONS.items():
        lines.append(f"{section} settings (YAML '{section}:'; flags above set them):")
        lines += [f"  {name}={default}: {text}" for name, (_, default, text) in table.items()]
    lines.append("preview window keys: " + ", ".join(f"{key} {action}" for key, action in KEYS))
    lines.append("score against ground truth (CDnet layout): motiondetect evaluate GT_FOLDER [--baselines] (see its --help)")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser (its choices and help come from the registry)."""
    threshold = Threshold.PARAMS[0]
    parser = OneLineParser(
        prog="motiondetect",
        description="Detect motion in a video on the GPU (CUDA) or CPU: by default a per-pixel background "
        "model at a working resolution and mask clean-up (configs/seed.yaml: the case study's frame pairs, "
        "threshold and erosion), with the motion blended into the red channel.",
        epilog=_filters_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "input",
        nargs="*",
        metavar="INPUT",
        help="video file, glob ('clips/*.mp4'), image folder, printf pattern (in%%06d.jpg) or image glob, camera index or URL; several: one run and report each, or one stream with --concat",
    )
    parser.add_argument(
        "-o", "--output", action=_OutputFlag, help="annotated video to write [default: <stem>_motion.mp4 in the current folder]"
    )
    parser.add_argument("-c", "--config", help=presets.config_help())
    parser.add_argument(
        "--events",
        action="append",
        metavar="FILE",
        help="events report to write: JSON, or CSV for a name ending in .csv; repeat for both [default: <stem>_motion.json in the current folder]",
    )
    parser.add_argument(
        "--backend", choices=BACKENDS, help="where to compute [setting: config 'backend', default auto: CUDA if a device answers]"
    )
    parser.add_argument(
        "--decoder",
        choices=DECODERS,
        help="where video files are decoded: NVDEC on the GPU (PyNvVideoCodec) or PyAV on the CPU; motion is found on the luma either way, with identical results [setting: config 'decoder', default auto: NVDEC when it can run, else the CPU with a notice]",
    )
    parser.add_argument(
        "--preset",
        choices=PRESETS,
        help="x264 preset of the annotated video and clips (speed against size) [setting: config 'preset', default veryfast]",
    )
    parser.add_argument(
        "--engine",
        choices=ENGINES,
        help="GPU engine for gray and difference: their CUDA kernels or cuBLAS (scikit-cuda) [setting: config 'engine', default kernel]",
    )
    parser.add_argument(
        "--threshold",
        type=_param_arg(threshold),
        metavar="T",
        help=f"threshold in {threshold.unit} ({threshold.minimum}..{threshold.maximum}) of the pipeline's 'threshold' filter (e.g. -c configs/seed.yaml) [setting: config]",
    )
    parser.add_argument(
        "--fps",
        type=fps_arg,
        help="frame rate to assume, frames/s, overriding the container's; outside the config's tuned_fps (25-30) the background "
        "model's per-frame learning rates and counts are rescaled to it [default: the container's; 25 for image sequences]",
    )
    parser.add_argument("--no-video", action="store_true", help="write only the events file, no annotated video")
    parser.add_argument("--overwrite", action="store_true", help="replace existing output files")
    live = parser.add_argument_group("live preview (cameras and streams open a window by default)")
    live.add_argument("--camera", type=int, metavar="N", help="read camera N (0 is the first) instead of INPUT")
    live.add_argument(
        "--preview",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="show the annotated frames in a window while processing a file; --no-preview: none for a camera or stream either "
        "(a server without a display) [default: cameras and streams only]",
    )
    live.add_argument(
        "--realtime", action="store_true", help="with --preview, play a file at its frame rate instead of as fast as possible"
    )
    live.add_argument(
        "--live",
        action="store_true",
        help="play a file as a live source: read on a thread at its frame rate, dropping frames when processing falls behind",
    )
    live.add_argument(
        "--record", dest="output", action=_OutputFlag, metavar="OUT.mp4", help="write the annotated live stream to OUT.mp4 (same as -o)"
    )
    verbosity = parser.add_mutually_exclusive_group()
    verbosity.add_argument("-q", "--quiet", action="store_true", help="print errors only, no progress bar")
    verbosity.add_argument("-v", "--verbose", action="store_true", help="print debug messages")
    parser.add_argument("--version", action="store_true", help="print the version and the detected features, then exit")
    _add_scan_arguments(parser)
    scale = parser.add_argument_group(
        'scale-out (pip install "motiondetect[dask]")',
        "Split each video file at keyframes into chunks (--chunk seconds) and scan them at the same time on "
        "a Dask cluster; events are found over the whole file, outputs are joined in order. A rerun of an "
        "interrupted command resumes from its finished chunks.",
    )
    where = scale.add_mutually_exclusive_group()
    where.add_argument(
        "--jobs",
        type=jobs_arg,
        metavar="N",
        help="start a local Dask cluster: N worker processes on the CPU backend; with GPUs, N chunks scanned at once per GPU, a worker process each; 'auto': one process per core, or 8 chunks per GPU",
    )
    where.add_argument(
        "--scheduler",
        type=scheduler_arg,
        metavar="ADDRESS",
        help="use the existing Dask cluster at ADDRESS (tcp://HOST:PORT); its workers must reach the inputs and the output folders at the same paths",
    )
    return parser


class _OutputFlag(argparse.Action):
    """``-o`` and ``--record``, which name the one annotated video: the flag typed is kept for
    messages (``args.output_flag``), and the two together are refused (one would be ignored)."""

    def __call__(self, parser, namespace, values, option_string=None):
        earlier = getattr(namespace, "output_flag", None)
        if earlier is not None and earlier not in self.option_strings:
            parser.error(f"{earlier} and {option_string} both name the annotated video; give one of them")
        namespace.output, namespace.output_flag = values, option_string


def _schema_arg(schema: dict[str, Any]):
    """argparse ``type`` for a setting: parses the number its JSON Schema wants and checks it."""
    types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    kind = int if "integer" in types else float

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {'a whole number' if kind is int else 'a number'}, got {text!r}") from None
        problems = schema_problems(schema, value)
        if problems:
            raise argparse.ArgumentTypeError(problems[0].split(": ", 1)[1])
        return value

    return parse


def _position_arg(text: str) -> Position:
    try:
        return Position.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _add_scan_arguments(parser: argparse.ArgumentParser) -> None:
    """Footage-scanning flags: outputs, region, input window, and one flag per setting of the
    config's events / scan / overlays sections (derived from their tables)."""
    group = parser.add_argument_group(
        "footage scanning",
        "Motion events, reports, clips, masks, overlays, region of interest and speed knobs. The "
        "setting flags override the config's events / scan / overlays sections.",
    )
    group.add_argument(
        "--clips",
        metavar="DIR",
        help="write one video per event, padding included, into DIR (made if missing) as <stem>_event0001.mp4, ...",
    )
    group.add_argument(
        "--clip-mode",
        choices=("encode", "copy"),
        default="encode",
        help="encode: clips of the annotated frames, re-encoded (H.264); copy: cut from the input file by stream copy at keyframes, "
        "original quality, no overlays, seconds for hours of footage (DVR-Scan's copy mode) [default: encode]",
    )
    group.add_argument(
        "--plot",
        metavar="FILE.png",
        help="draw the motion fraction over time with the events shaded and their times labelled (needs matplotlib: "
        "pip install 'motiondetect[plot]')",
    )
    group.add_argument("--only-motion", action="store_true", help="the output video (-o) holds only the events' frames, padding included")
    group.add_argument("--mask-out", metavar="FILE", help="write the motion masks as a video (H.264, lossy: for viewing)")
    group.add_argument(
        "--masks",
        metavar="DIR",
        help="write each frame's mask as a lossless PNG into DIR (made if missing) as <stem>_000000.png, ... (0-based frame numbers)",
    )
    group.add_argument(
        "--roi",
        metavar="FILE",
        help="region of interest: a mask image (non-zero inside, the frames' size) or YAML with 'polygons: [[[x, y], ...], ...]' in pixels [setting: config 'roi']",
    )
    group.add_argument(
        "--start",
        type=_position_arg,
        metavar="WHEN",
        help="first frame to process: seconds (90, 90.5s), a timecode (HH:MM:SS.mmm) or a frame number (1234f) [default: the first]",
    )
    group.add_argument(
        "--end", type=_position_arg, metavar="WHEN", help="stop before this place (same forms as --start) [default: the end of the input]"
    )
    group.add_argument(
        "--concat", action="store_true", help="read several inputs as one stream (one frame size; times use the first's frame rate)"
    )
    for section, table in SECTIONS.items():
        for name, (schema, default, text) in table.items():
            flag = "--" + name.replace("_", "-")
            # The first clause; the whole text, with the default's source, is in the epilog.
            help_text = f"{text.split(';')[0]} [setting: config {section}.{name}, default {json.dumps(default)}]".replace("%", "%%")
            if schema.get("type") == "boolean":
                group.add_argument(flag, action=argparse.BooleanOptionalAction, default=None, dest=f"{section}__{name}", help=help_text)
            else:
                group.add_argument(
                    flag, type=_schema_arg(schema), default=None, dest=f"{section}__{name}", metavar=name.upper(), help=help_text
                )


def _scan_sinks(
    paths: OutputPaths,
    video,
    events: EventSegmenter,
    display_matrix: tuple[int, ...] | None = None,
    timestamps: bool = False,
    own_times: bool = False,
) -> list[Sink]:
    """The footage-scanning outputs of one run: motion-only video, clips, mask video and images
    (the videos carry the input's ``display_matrix``). ``timestamps``: the frames' times place
    them in the mask video (a live source, a variable-frame-rate file); ``own_times``: the
    videos keep those times as they are (the latter; :class:`VideoWriter`'s)."""
    sinks: list[Sink] = []
    if paths.video is not None and paths.only_motion:
        sinks.append(MotionOnlySink(paths.video, events, video.fps, video.size, display_matrix, own_times=own_times))
    if paths.clips is not None:
        paths.clips.mkdir(exist_ok=True)
        remove_earlier(paths.clips, clip_name(video.name, 1), "clip")
        if paths.clips_by_copy:
            sinks.append(CopiedClipSink(video.source, paths.clips, video.name, events))
        else:
            sinks.append(ClipSink(paths.clips, video.name, events, video.fps, video.size, display_matrix, own_times=own_times))
    if paths.mask_video is not None:
        writer = VideoWriter(paths.mask_video, video.fps, video.size, display_matrix=display_matrix, own_times=own_times)
        sinks.append(MaskVideoSink(writer, timestamps=timestamps))
    if paths.masks is not None:
        paths.masks.mkdir(exist_ok=True)
        remove_earlier(paths.masks, mask_name(video.name, 0), "mask")
        sinks.append(MaskImagesSink(paths.masks, video.name))
    return sinks


def _window_times(video, *positions: Position | None) -> list[float] | None:
    """The frames' times in seconds where ``--start`` / ``--end`` give a time in a
    variable-frame-rate file (:attr:`VideoHandler.timestamped`): its packets' timestamps, sorted,
    less the first, as the frames are timed (read without decoding); else ``None`` (frame ``i``
    at ``i / fps``)."""
    if not getattr(video, "timestamped", False) or all(p is None or p.seconds is None for p in positions):
        return None
    stamps, _ = packet_timestamps(video.source)
    return [float((stamp - stamps[0]) * video.time_base) for stamp in stamps]


def _scan_settings(config: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    """Apply the setting flags (events / scan / overlays) and --roi over the config."""
    if args.events__min_area is not None and args.events__min_pixels is None and config["events"]["min_pixels"] is not None:
        # min_pixels replaces min_area where set: the flag given on the command line wins.
        log.info("notice: --min-area replaces the config's events.min_pixels (%d)", config["events"]["min_pixels"])
        config = {**config, "events": {**config["events"], "min_pixels": None}}
    for section, table in SECTIONS.items():
        config = with_settings(config, section, {name: getattr(args, f"{section}__{name}") for name in table})
    if args.roi:
        config = {**config, "roi": roi_from_file(args.roi)}
    return config


def run(args: argparse.Namespace, stop: StopSignals | None = None) -> int:
    """Process the inputs as the parsed ``args`` say (one run each, or one with ``--concat``);
    return the exit code.

    ``stop``: the installed :class:`~motiondetect.core.signals.StopSignals`; after a stop signal no
    further input is started.
    """
    config = with_overrides(
        load_config(args.config),
        backend=args.backend,
        engine=args.engine,
        threshold=args.threshold,
        decoder=args.decoder,
        preset=args.preset,
    )
    config = _scan_settings(config, args)
    if args.plot:
        require_matplotlib()  # before a long run, not after it
    inputs = [str(args.camera)] if args.camera is not None else expand_inputs(args.input)
    missing = missing_inputs(inputs)
    if missing:  # before the first input's run, not after it
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise VideoOpenFailure(f"input not found: {missing[0]!r}{more}")
    if args.jobs is not None or args.scheduler is not None:
        from motiondetect.scaleout.chunked import run_chunked

        early_start.finish()  # the workers open their own contexts (an abbreviated --jobs got past wanted())
        return run_chunked(args, config, inputs, stop)
    groups = [inputs] if args.concat else [[source] for source in inputs]
    # No output may replace an input of the run, an earlier one or one still to be read.
    every_input = frozenset(Path(source).resolve() for source in inputs if Path(source).is_file())
    taken: set[Path] = set()
    failed: list[tuple[str, MotionDetectError]] = []
    for number, sources in enumerate(groups):
        try:
            code = _run_one(args, config, sources, len(groups) > 1, taken, stop, every_input)
        except CudaUnavailable:
            raise  # the run's backend, not this input: the next would fail the same way
        except MotionDetectError as exc:
            if len(groups) == 1 or (number == 0 and isinstance(exc, (UsageError, ConfigError))):
                raise  # refused before any input ran: most likely the options, which every input would meet
            # One bad file of a batch: said now, naming it, and the others are still scanned.
            log.error("error: %s: %s", sources[0], exc)
            failed.append((sources[0], exc))
            continue
        if code:
            return code
    if failed:
        names = ", ".join(repr(source) for source, _ in failed[:3]) + (f" and {len(failed) - 3} more" if len(failed) > 3 else "")
        error = MotionDetectError(f"{len(failed)} of {len(groups)} inputs failed ({names}); the others were scanned")
        error.exit_code = max(exc.exit_code for _, exc in failed)
        raise error
    return 0


def _run_one(
    args: argparse.Namespace,
    config: dict[str, Any],
    sources: list[str],
    several: bool,
    taken: set[Path],
    signals: StopSignals | None = None,
    every_input: frozenset[Path] = frozenset(),
) -> int:
    """Process one input (or several joined with --concat) into its outputs; return the exit
    code. ``every_input``: the run's input files, which no output may replace."""
    with ExitStack() as stack:
        # Where NVDEC may decode the file, PyAV's decoder (16 threads) is not started to probe it:
        # choose_decoder checks the first frame with the decoder it chooses.
        maybe_nvdec = len(sources) == 1 and config["decoder"] != "cpu" and config["backend"] != "cpu"
        handlers = [stack.enter_context(VideoHandler(source, fps=args.fps, decode_first=not maybe_nvdec)) for source in sources]
        try:
            video = handlers[0] if len(handlers) == 1 else ConcatSource(handlers)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        realtime_source = video.is_live or video.is_stream  # frames arrive on the source's clock
        live = realtime_source or args.live
        input_paths = {Path(source).resolve() for source in sources if Path(source).is_file()} | every_input
        # A file gets outputs by default; a camera or stream only records what is asked for.
        paths = plan_outputs(args, video.name, input_paths, several, taken, defaults=not realtime_source)
        video_path = paths.video
        times = _window_times(video, args.start, args.end)
        start = args.start.to_frame(video.fps, times) if args.start else 0
        stop = args.end.to_frame(video.fps, times) if args.end else None
        if stop is not None and stop <= start:
            raise UsageError(f"--end (frame {stop}) must come after --start (frame {start})")
        known = video.frame_count
        if start and known is not None and start >= known + getattr(video, "announced_slack", 0):
            # Before any output exists: a run would write a report of no frames.
            raise UsageError(f"--start (frame {start}) is past the end of the input ({known} frames)")
        model_config = for_source(config, video.fps, inter_coded=video.inter_coded)
        filters = build_filters(model_config)
        roi = rasterize(config["roi"], video.size)
        if paths.clips_by_copy and not (isinstance(video, VideoHandler) and video.decodes_pictures):
            raise UsageError("--clip-mode copy cuts clips from one video file; this input is a camera, a stream, images or --concat")
        preview = args.preview if args.preview is not None else realtime_source  # cameras and streams: a window
        if args.realtime and not preview:
            raise UsageError("--realtime paces the preview window of a file; add --preview")
        wants_frames = paths.annotated_frames
        ahead = None
        if not live and decodes_on_cpu(config, video):
            # The CPU decoder starts now, beside the device's set-up below, instead of after it.
            video.check_decodable()  # here, before its thread reads
            bytes_per_pixel = 1.5 if getattr(video, "decodes_pictures", False) else 3
            ahead = PrefetchReader(window(video, start, stop), head_start=head_start_frames(video.size, bytes_per_pixel))
            stack.callback(ahead.stop)
        cuda = open_backend(config["backend"], filters, stack)
        needs_mask = masks_needed(config, wants_frames, preview or paths.mask_video is not None or paths.masks is not None)
        detector = MotionDetector(
            filters,
            cuda=cuda,
            roi=roi,
            downscale=config["scan"]["downscale"],
            annotate=config["overlays"]["blend"] and (wants_frames or preview),
            masks=needs_mask,
        )
        width, height = video.size
        try:
            detector.geometry((height, width))
        except ValueError as exc:  # the ROI vanishes at the downscaled size
            raise ConfigError([f"roi: {exc}"]) from None
        detector = checked_on_device(detector, cuda, config["backend"], video.size)
        cuda = cuda if detector.backend == "cuda" else None
        batched = batched_path_problem(config, video, cuda, detector, live or preview, wants_frames)
        if batched is not None and config["scan"]["batch"]:
            log.info("notice: scan.batch %d is not used: this run goes one frame at a time (%s)", config["scan"]["batch"], batched)
        # The videos written play turned as the input does (its frames are read as stored).
        display_matrix = getattr(video, "display_matrix", None)
        # NVDEC reads the rate as the CPU decoder does (a variable-frame-rate file's average), and
        # times such a file's frames by their own timestamps as it does.
        video, decoder = choose_decoder(config["decoder"], video, cuda, batched, video.fps, stack, check=ahead is None)
        batch = batch_size(config, video)
        log.debug(
            "decoder: %s; %s",
            decoder,
            f"batches of {batch} frames on the GPU" if batched is None else f"one frame at a time ({batched})",
        )
        if batched is None:
            detector.reset()  # the warm-up's state
            detector = BatchDetector(
                detector.filters,
                cuda,
                roi=roi,
                annotate=detector.annotate,
                masks=detector.masks,
                batch=batch,
            )
        # A variable-frame-rate file's frames carry their own timestamps: the events take them.
        frame_times = getattr(video, "timestamped", False)
        area = np.count_nonzero(roi) if roi is not None else width * height
        events = EventSegmenter.from_config(config["events"], video.fps, area, frame_times=frame_times)
        header: dict[str, Any] = {
            "motiondetect_version": __version__,
            "input": sources[0],
            "inputs": sources,
            "output_video": str(video_path) if video_path else None,
            "fps": video.fps,
            "frame_size": list(video.size),
            "start_frame": start,
            "backend": detector.backend,
            "device": cuda.device_name if cuda else None,
            "decoder": decoder,
            "config": config,
            "rescaled": rescaled_values(config, model_config),  # where they follow the frame rate or codec
        }
        frames = ahead if ahead is not None else window(video, start, stop)
        if ahead is not None:
            pass  # decoding since before the set-up; the batched detector's thread takes from it too
        elif batched is None:
            pass  # the batched detector decodes on its own thread, into its ring of batches
        elif not live:
            # Decode ahead on a thread while the main thread detects (never drops a frame).
            frames = PrefetchReader(frames)
            stack.callback(frames.stop)
        else:
            # Camera and stream frames are stamped with the wall clock; a file played as live
            # keeps its media times. Either way a slow consumer drops frames, never lags.
            frames = LatestFrameReader(frames, pace_fps=None if realtime_source else video.fps, wallclock=realtime_source)
            stack.callback(frames.stop)
        sinks: list[Sink] = []
        if preview:
            # First: a quit ('q') raised while showing a frame leaves that frame out of every output.
            sinks.append(
                PreviewSink(
                    f"motiondetect - {video.name}",
                    detector,
                    events,
                    snapshot_stem=video.name,
                    realtime_fps=video.fps if args.realtime and not live else None,
                    live=realtime_source,
                    reader=frames if live else None,
                )
            )
        # Frames go into the videos at their times where a live source dropped some (on the
        # output's frame grid) or a variable-frame-rate file's rate changes (exactly).
        timestamps = live or frame_times
        if video_path and not args.only_motion:
            writer = VideoWriter(video_path, video.fps, video.size, config["preset"], display_matrix=display_matrix, own_times=frame_times)
            sinks.append(VideoSink(BackgroundWriter(writer), timestamps=timestamps))  # encodes on its own thread
        sinks += _scan_sinks(paths, video, events, display_matrix, timestamps, own_times=frame_times)
        video_sink = next((s for s in sinks if isinstance(s, (VideoSink, MotionOnlySink))), None)
        if paths.plot is not None:
            sinks.append(MotionPlotSink(paths.plot, events, video.fps, title=video.name))
        sinks += [EventsSink(path, events, header, video_sink) for path in paths.events]  # last: they record whether the others finished
        total = None if video.frame_count is None else max(0, min(video.frame_count, stop or video.frame_count) - start)
        overlay = Overlay.from_config(config["overlays"]) if wants_frames else None
        runner = Runner(
            frames,
            detector,
            sinks,
            progress_bar(total, args.quiet or live),
            events=events,
            frame_skip=config["scan"]["frame_skip"],
            overlay=overlay,
            source=video,
            stop=signals,
        )
        summary = runner.run()
    if summary.frames == 0 and summary.complete:
        raise MotionDetectError(f"no frames could be decoded from {sources[0]!r}" + (f" from frame {start} on" if start else ""))
    device = f" ({header['device']})" if header["device"] else ""
    outputs = ", ".join(filter(None, (s.describe() for s in sinks if not s.removed)))  # a removed video is no output
    undecodable = (
        f", {summary.decode_errors} frame{'s' if summary.decode_errors != 1 else ''} could not be decoded" if summary.decode_errors else ""
    )
    log.info(
        "%d frames in %.1f s (%.0f fps), %d event%s%s, backend %s%s -> %s",
        summary.frames,
        summary.elapsed,
        summary.fps,
        len(events.events),
        "" if len(events.events) == 1 else "s",
        undecodable,
        detector.backend,
        device,
        outputs,
    )
    if summary.dropped_frames:
        log.info("%d frames dropped to keep up with the live source", summary.dropped_frames)
    if summary.stopped:
        return 0
    if summary.interrupted or (signals is not None and signals.received):
        if summary.error is None:
            log.warning("Stopped after %d frames; outputs hold what was processed", summary.frames)
        else:  # an output could not be finished (a full disk): say so, not that the outputs are whole
            log.error("error: stopped after %d frames: %s", summary.frames, summary.error)
        return exit_code(signals.received if signals is not None else None)
    if summary.error is not None:
        raise MotionDetectError(f"stopped after {summary.frames} frames: {summary.error}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the command line; return the process exit code.

    0: done. 1: a failure at run time (input, output, device). 2: a usage or configuration
    mistake. 128 + N: stopped by signal N (130 Ctrl-C, 143 SIGTERM) with the outputs so far.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["evaluate"]:  # the scoring subcommand lives in its own module
        from motiondetect.apps.evaluate import main as evaluate_main

        return evaluate_main(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    level = logging.WARNING if args.quiet else logging.DEBUG if args.verbose else logging.INFO
    logging.basicConfig(level=level, format="motiondetect: %(message)s", stream=sys.stderr, force=True)
    quiet_native_logs(args.verbose)
    if args.version:
        print(f"motiondetect {__version__}")
        for line in feature_report():
            print(f"  {line}")
        return 0
    if bool(args.input) == (args.camera is not None):
        parser.error("give the input: files, folders, patterns or URLs, or --camera N")
    stop = StopSignals()
    try:
        with stop:
            return run(args, stop)
    except KeyboardInterrupt:
        print("motiondetect: Stopped.", file=sys.stderr)
        return exit_code(stop.received)
    except Exception as exc:
        if os.environ.get("MOTIONDETECT_DEBUG"):
            raise
        message = _failure_message(exc)
        if message is None:
            raise
        print(f"motiondetect: error: {message}", file=sys.stderr)
        return getattr(exc, "exit_code", 1)


def _failure_message(exc: Exception) -> str | None:
    """The one-line message for a failure the command reports without a traceback, or ``None``
    for a bug (which keeps its traceback)."""
    if isinstance(exc, MotionDetectError):
        return str(exc)
    if is_device_fault(exc):
        return describe_device_fault(exc)
    if isinstance(exc, OSError):  # e.g. a full disk while making an output folder
        return f"{exc.strerror or exc}" + (f": {exc.filename!r}" if exc.filename else "")
    if isinstance(exc, MemoryError):
        return "out of memory (host RAM); try --downscale or a smaller input"
    return None
