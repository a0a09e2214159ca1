"""The CPU backend against the CPU tools people pick instead, on one 1080p H.264 file.

Makes the file by upscaling a real clip (``bench_throughput.make_input``), decodes it once into
memory, then measures, each after a warm-up and as the median of ``--repeats`` runs:

- processing: our CPU backend's detector with the default pipeline as a ``--no-video`` run uses
  it (no mask returned, no annotated frame), fed the decoded yuv420p pictures as such a run is
  and fed BGR frames as the reference is, and with mask and annotated frame (the full
  processing), next to the OpenCV reference pipeline of ``bench_throughput`` (grey,
  absdiff, threshold, erode, red blend, count);
- whole process, from the shell, start-up included: ``motiondetect FILE --no-video --backend cpu
  -q`` and, when the ``dvr-scan`` command is found (``--dvr-scan``, else ``PATH``), DVR-Scan's
  scan-only ``dvr-scan -i FILE -so`` with its defaults (MOG2, OpenCV's threads). Install
  DVR-Scan in a virtual environment of its own: it pins its own OpenCV build and NumPy, which
  would replace this project's.

Prints one Markdown table: frames per second and the ratio to the row each target compares
with (issue 14: the end-to-end run at least 2x DVR-Scan on 2 cores and 1.5x on 16; the
processing rate at least the OpenCV reference pipeline's). Usage::

    python benchmarks/bench_cpu.py [CLIP] [--frames 240] [--repeats 3] [--size 1920x1080] [--dvr-scan PATH]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import cv2
from bench_throughput import ROOT, backend_pipeline, make_input, median_rate, opencv_pipeline

from motiondetect.core.picture import as_bgr
from motiondetect.pipeline.config import build_filters, default_config
from motiondetect.pipeline.detector import MotionDetector
from motiondetect.sources.video import VideoHandler


def no_video_pipeline(frames) -> None:
    """Our CPU backend as a ``--no-video`` run drives it: motion fraction and box only."""
    detector = MotionDetector(build_filters(default_config()), annotate=False, masks=False)
    for frame in frames:
        detector.process(frame)


def process_rate(command: list[str], count: int, repeats: int, cwd: Path) -> float:
    """Frames per second of a whole process that handles ``count`` frames: median of ``repeats``
    wall times (after one warm-up run, which fills the page cache)."""
    times = []
    for run in range(repeats + 1):
        started = time.perf_counter()
        subprocess.run(command, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if run:
            times.append(time.perf_counter() - started)
    return count / statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("clip", nargs="?", default=str(ROOT / "samples" / "highway_traffic_320x240.avi"))
    parser.add_argument("--frames", type=int, default=240, help="frames in the test file [default: 240]")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per row; the median is shown [default: 3]")
    parser.add_argument("--size", default="1920x1080", help="frame size of the test file [default: 1920x1080]")
    parser.add_argument("--dvr-scan", default=shutil.which("dvr-scan"), help="the dvr-scan command [default: from PATH]")
    args = parser.parse_args()
    size = tuple(int(v) for v in args.size.split("x"))
    print(f"{os.cpu_count()} cores, OpenCV {cv2.__version__} with {cv2.getNumThreads()} threads; {args.size}, {args.frames} frames")
    rows: list[tuple[str, float | None, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        path = make_input(Path(args.clip), size, args.frames, folder)[0]
        with VideoHandler(path) as video:
            # Decoded pictures (yuv420p planes) as a --no-video run gets them, and BGR arrays, the
            # input the OpenCV reference takes, so one row compares like with like.
            pictures = [frame.image for frame in video]
        frames = [as_bgr(picture) for picture in pictures]
        count = len(frames)

        opencv = median_rate(count, lambda: opencv_pipeline(frames), args.repeats)
        no_video = median_rate(count, lambda: no_video_pipeline(frames), args.repeats)
        luma = median_rate(count, lambda: no_video_pipeline(pictures), args.repeats)
        full = median_rate(count, lambda: backend_pipeline(frames, None), args.repeats)
        rows.append(("OpenCV reference pipeline (bench_throughput), decoded frames in memory", opencv, ""))
        rows.append(
            ("our CPU backend, as --no-video runs it (decoded yuv420p pictures: luma read in place)", luma, f"{luma / opencv:.2f}x OpenCV")
        )
        rows.append(("our CPU backend, no mask out, no annotation, fed the BGR frames", no_video, f"{no_video / opencv:.2f}x OpenCV"))
        rows.append(("our CPU backend, mask and annotated frame out", full, f"{full / opencv:.2f}x OpenCV"))

        events = folder / "events.json"
        ours = [
            sys.executable,
            "-m",
            "motiondetect",
            str(path),
            "--no-video",
            "--backend",
            "cpu",
            "-q",
            "--overwrite",
            "--events",
            str(events),
        ]
        e2e = process_rate(ours, count, args.repeats, folder)
        dvr = None
        if args.dvr_scan:
            dvr = process_rate([args.dvr_scan, "-i", str(path), "-so"], count, args.repeats, folder)
            rows.append(("DVR-Scan -so, whole process", dvr, ""))
        rows.append(
            (
                "motiondetect --no-video --backend cpu -q, whole process",
                e2e,
                f"{e2e / dvr:.2f}x DVR-Scan" if dvr else "DVR-Scan not found: row skipped",
            )
        )
    print(f"frames per second, median of {args.repeats}")
    print("| measure | fps | ratio |")
    print("| --- | --- | --- |")
    for name, rate, ratio in rows:
        print(f"| {name} | {rate:,.1f} | {ratio} |")


if __name__ == "__main__":
    main()
