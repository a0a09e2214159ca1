"""Frames per second of the detector on each backend, decode and encode excluded.

Decodes a clip into memory, then runs ``MotionDetector.process`` over all of its frames (BGR in
host memory -> mask and blended frame back in host memory), after one warm-up pass, and prints
the median of ``--repeats`` passes per backend. Usage::

    python benchmarks/bench_backends.py VIDEO [--repeats 5] [--max-frames 1000] [-c CONFIG]

``-c configs/seed.yaml`` times the case study's pipeline; the default is the built-in one.
"""

from __future__ import annotations

import argparse
import statistics
import time

from motiondetect.core.picture import as_bgr
from motiondetect.gpu.cuda_handler import CUDAHandler
from motiondetect.gpu.platform import cuda_device_error
from motiondetect.pipeline.config import build_filters, load_config
from motiondetect.pipeline.detector import MotionDetector
from motiondetect.sources.video import VideoHandler


def time_backend(frames, cuda, repeats: int, config: dict) -> float:
    """Median seconds for one pass over ``frames``; the first (warm-up) pass is not counted."""
    detector = MotionDetector(build_filters(config), cuda=cuda)
    passes = []
    for _ in range(repeats + 1):
        detector.reset()
        started = time.perf_counter()
        for frame in frames:
            detector.process(frame)
        passes.append(time.perf_counter() - started)
    return statistics.median(passes[1:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("video")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--max-frames", type=int, default=1000)
    parser.add_argument("-c", "--config", help="YAML config [default: built-in defaults]")
    args = parser.parse_args()
    config = load_config(args.config)
    with VideoHandler(args.video) as video:
        frames = [as_bgr(f.image) for _, f in zip(range(args.max_frames), video)]
    height, width = frames[0].shape[:2]
    print(
        f"{args.video}: {len(frames)} frames of {width}x{height}, config {args.config or 'built-in defaults'}, median of {args.repeats} passes"
    )
    print("| backend | device | fps |\n| --- | --- | --- |")
    seconds = time_backend(frames, None, args.repeats, config)
    print(f"| cpu | - | {len(frames) / seconds:,.0f} |")
    if cuda_device_error() is None:
        with CUDAHandler() as cuda:
            seconds = time_backend(frames, cuda, args.repeats, config)
            print(f"| cuda | {cuda.device_name} | {len(frames) / seconds:,.0f} |")
    else:
        print(f"| cuda | unavailable: {cuda_device_error()} | - |")


if __name__ == "__main__":
    main()
