"""Throughput of the whole pipeline against its limits, at 1920x1080 and 3840x2160.

Makes its own H.264 inputs by upscaling a real clip (so the content is real), then measures,
each after a warm-up and as the median of ``--repeats`` runs:

- decode only, and decode + encode only (threaded like the application): the end-to-end limits;
- the PCIe limit: a BGR frame up and an annotated frame down through pinned memory, the two
  directions on separate streams so they overlap;
- the same pipeline in plain OpenCV on the CPU, our CPU backend, and our CUDA backend on frames
  in host memory (processing: BGR in, mask + annotated frame back in host memory);
- the on-device rate: the filters' kernels on frames already on the GPU (CUDA events);
- ``motiondetect`` end to end with ``--no-video`` and with the annotated video.

``--configs`` adds an on-device row for each other pipeline (a config file: issue 15's speed
target compares the default with ``benchmarks/two_clip_default.yaml``), and ``--on-device-only``
measures those rows alone. Prints one Markdown table. Usage::

    python benchmarks/bench_throughput.py [CLIP] [--frames 240] [--repeats 3] [--sizes 1920x1080,3840x2160]
    python benchmarks/bench_throughput.py --configs benchmarks/two_clip_default.yaml --on-device-only --sizes 1920x1080 --repeats 5
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import tempfile
import time
from pathlib import Path

import cv2
import numpy as np

from motiondetect.apps.cli import main as motiondetect_main
from motiondetect.core.picture import as_bgr
from motiondetect.filters.ghosts import tested_until
from motiondetect.gpu.platform import cuda_device_error
from motiondetect.outputs.writer import VideoWriter
from motiondetect.pipeline.config import build_filters, default_config, load_config
from motiondetect.pipeline.detector import MotionDetector, queue_mask_stats
from motiondetect.sources.threads import BackgroundWriter, PrefetchReader
from motiondetect.sources.video import VideoHandler

ROOT = Path(__file__).resolve().parent.parent


def median_rate(count: int, run, repeats: int) -> float:
    """Frames per second of ``run()`` (which handles ``count`` frames): warm-up, then median."""
    run()
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return count / statistics.median(times)


def make_input(clip: Path, size: tuple[int, int], frames: int, folder: Path) -> tuple[Path, list[np.ndarray]]:
    """Upscale the clip's first ``frames`` frames (looping) to ``size``; write them as H.264."""
    source = []
    with VideoHandler(clip) as video:
        for frame in video:
            source.append(cv2.resize(as_bgr(frame.image), size, interpolation=cv2.INTER_LINEAR))
            if len(source) == frames:
                break
    while len(source) < frames:
        source += source[: frames - len(source)]
    path = folder / f"input_{size[0]}x{size[1]}.mp4"
    with VideoWriter(path, 25.0, size) as writer:
        for image in source:
            writer.write(image)
    return path, source


def decode_only(path: Path) -> None:
    with VideoHandler(path) as video:
        for _ in PrefetchReader(video):
            pass


def decode_encode_only(path: Path, out: Path) -> None:
    with VideoHandler(path) as video:
        writer = BackgroundWriter(VideoWriter(out, video.fps, video.size))
        for frame in PrefetchReader(video):
            writer.write(frame.image)
        writer.close()


def opencv_pipeline(frames: list[np.ndarray]) -> None:
    """The same five steps in plain OpenCV (cvtColor's BT.601, absdiff, threshold, erode, blend)."""
    kernel = np.ones((3, 3), np.uint8)
    lut = np.floor(0.5 * np.arange(256) + 127.5 + 0.5).astype(np.uint8)
    previous = None
    for frame in frames:
        gray = cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY)
        if previous is not None:
            mask = cv2.erode(cv2.threshold(cv2.absdiff(gray, previous), 25, 255, cv2.THRESH_BINARY)[1], kernel)
            blue, green, red = cv2.split(frame)
            cv2.copyTo(cv2.LUT(red, lut), mask, red)
            cv2.merge((blue, green, red))
            cv2.countNonZero(mask)
        previous = gray


def backend_pipeline(frames: list[np.ndarray], cuda) -> None:
    detector = MotionDetector(build_filters(default_config()), cuda=cuda)
    for frame in frames:
        detector.process(frame)


def pcie_limit(cuda, shape, repeats: int) -> float:
    """Frames per second that PCIe allows for one BGR frame up and one down (pinned, overlapped)."""
    import pycuda.driver as drv

    host_in, host_out = drv.pagelocked_empty(shape, np.uint8), drv.pagelocked_empty(shape, np.uint8)
    dev_in, dev_out = drv.mem_alloc(host_in.nbytes), drv.mem_alloc(host_out.nbytes)
    up, down = drv.Stream(), drv.Stream()
    count = 50

    def run():
        for _ in range(count):
            drv.memcpy_htod_async(dev_in, host_in, up)
            drv.memcpy_dtoh_async(host_out, dev_out, down)
        up.synchronize()
        down.synchronize()

    rate = median_rate(count, run, repeats)
    dev_in.free()
    dev_out.free()
    return rate


def on_device(cuda, frames: list[np.ndarray], repeats: int, config: dict | None = None) -> float:
    """Frames per second of a pipeline's kernels (``config``, the default's when None), one frame
    at a time, on BGR frames already on the device, after the stream's start (its first 16
    frames, and the frames a model tests for ghosts)."""
    import pycuda.driver as drv
    import pycuda.gpuarray as gpuarray

    filters = build_filters(default_config() if config is None else config)
    chroma_from = MotionDetector(filters).chroma_from  # a downscale shrinks the chroma as it is made
    device_frames = [gpuarray.to_gpu(f) for f in frames[:16]]
    reference = gpuarray.to_gpu(cv2.cvtColor(frames[0], cv2.COLOR_BGR2GRAY))
    start, stop = drv.Event(), drv.Event()
    count = 200
    outputs: dict[object, object] = {}

    def run_once(frame):
        # The detector's chain without its transfers: each filter into its own device buffer; the
        # frame's chroma planes (a model that compares colour) through the geometry filters after
        # the stage they start at.
        image, mask, chroma = frame, None, None
        for i, flt in enumerate(filters):
            side = reference if flt.SIDE_INPUT == "reference" else frame if flt.SIDE_INPUT == "frame" else None
            if i not in outputs:
                outputs[i] = gpuarray.empty(flt.output_shape(image.shape, None if side is None else side.shape), np.uint8)
            if i == 0 and any(getattr(f, "needs_chroma", False) for f in filters):
                if ("chroma", 0) not in outputs:
                    outputs["chroma", 0] = gpuarray.empty((2, *filters[chroma_from].output_shape(frame.shape[:2])), np.uint8)
                chroma = outputs["chroma", 0]
                flt.apply_chroma(cuda, frame, chroma)
            if chroma is not None and flt.SIDE_INPUT == "reference":
                flt.apply_kernel(cuda, image, outputs[i], side, chroma=(int(chroma.gpudata), int(image.size)))
                chroma = None
            elif chroma is not None and i > chroma_from:
                key = ("chroma", i)
                if key not in outputs:
                    outputs[key] = gpuarray.empty((2, *flt.output_shape(image.shape)), np.uint8)
                chroma = outputs[key] if flt.apply_with_planes(cuda, image, outputs[i], side, chroma, outputs[key]) else chroma
            else:
                flt.apply(cuda, image, outputs[i], side)
            image = outputs[i]
            if flt.OUTPUT.name == "MASK":
                mask = image
        queue_mask_stats(cuda, mask)

    # Warm up past the stream's start, which a model may run at another pace (the Gaussian
    # model's ghost test waits for each of its first frames: ghost_frames after the bootstrap).
    warm_until = tested_until(filters)
    for n in range(max(len(device_frames), warm_until + 1)):
        run_once(device_frames[n % len(device_frames)])
    rates = []
    for _ in range(repeats):
        start.record(cuda.stream)
        for n in range(count):
            run_once(device_frames[n % len(device_frames)])
        stop.record(cuda.stream)
        stop.synchronize()
        rates.append(count / (stop.time_since(start) / 1000))
    return statistics.median(rates)


def on_device_rows(args, cuda, frames: list[np.ndarray], size: tuple[int, int], cell) -> None:
    """The on-device rows: the default pipeline's against the 25,000 frames/s target at 1080p, then
    each of ``--configs`` and the default's share of its rate. One frame a launch is bound by the
    host queueing the launches, which drifts with the CPU's clock, so the pipelines take turns,
    one run each per round, each rate row is the median of its ``--repeats`` runs, and a share is
    the median of the rounds' shares (each the two rates of one round, measured moments apart)."""
    paths = [p for p in args.configs.split(",") if p]
    configs = [None] + [load_config(p) for p in paths]
    runs: list[list[float]] = [[] for _ in configs]
    for _ in range(args.repeats if cuda else 0):
        for i, config in enumerate(configs):
            runs[i].append(on_device(cuda, frames, 1, config))
    rates = [statistics.median(r) if r else None for r in runs]
    cell("our CUDA backend: on-device kernels (x 25,000 target)", rates[0], 25_000 if cuda and size[0] <= 1920 else None)
    for path, rate, own in zip(paths, rates[1:], runs[1:]):
        cell(f"on-device kernels, {Path(path).name}", rate)
        # Issue 15's speed target: the default keeps at least 50 % of the two-clip default's rate.
        shares = [100 * a / b for a, b in zip(runs[0], own)]
        cell(f"default's share of {Path(path).name}'s on-device rate (%)", statistics.median(shares) if shares else None)
        cell("the same share, its lowest round (%)", min(shares) if shares else None)
        cell("the same share, its highest round (%)", max(shares) if shares else None)


def end_to_end(path: Path, folder: Path, video: bool, backend: str) -> float:
    events = folder / f"e2e_{backend}_{video}.json"
    args = [str(path), "--backend", backend, "-q", "--overwrite", "--events", str(events)]
    args += ["-o", str(folder / "e2e.mp4")] if video else ["--no-video"]
    assert motiondetect_main(args) == 0
    report = json.loads(events.read_text())
    return report["frame_count"] / report["elapsed_seconds"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("clip", nargs="?", default=str(ROOT / "samples" / "highway_traffic_320x240.avi"))
    parser.add_argument("--frames", type=int, default=240)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sizes", default="1920x1080,3840x2160")
    parser.add_argument("--configs", default="", help="comma-separated config files: an on-device row for each, beside the default's")
    parser.add_argument("--on-device-only", action="store_true", help="measure the on-device rows alone")
    args = parser.parse_args()
    sizes = [tuple(int(v) for v in s.split("x")) for s in args.sizes.split(",")]
    with contextlib.ExitStack() as stack:
        cuda = None
        if cuda_device_error() is None:
            from motiondetect.gpu.cuda_handler import CUDAHandler

            cuda = stack.enter_context(CUDAHandler())  # released even when a measurement fails
            print(f"GPU: {cuda.device_name}")
        measure(args, sizes, cuda)


def measure(args, sizes, cuda) -> None:
    """Measure every row at every size and print the table."""
    rows: dict[str, list[str]] = {}

    def cell(name: str, value: float | None, limit: float | None = None) -> None:
        text = "-" if value is None else f"{value:,.0f}" + (f" ({value / limit:.0%})" if limit else "")
        rows.setdefault(name, []).append(text)

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for size in sizes:
            count = args.frames if size[0] <= 1920 else max(60, args.frames // 2)
            path, frames = make_input(Path(args.clip), size, count, folder)
            if args.on_device_only:
                on_device_rows(args, cuda, frames, size, cell)
                continue
            decode = median_rate(count, lambda: decode_only(path), args.repeats)
            transcode = median_rate(count, lambda: decode_encode_only(path, folder / "transcode.mp4"), args.repeats)
            pcie = pcie_limit(cuda, frames[0].shape, args.repeats) if cuda else None
            cell("decode only (limit for --no-video)", decode)
            cell("decode + encode only (limit with video)", transcode)
            cell("PCIe: BGR in + out, pinned, overlapped (limit for processing)", pcie)
            cell("OpenCV CPU pipeline, frames in memory", median_rate(count, lambda: opencv_pipeline(frames), args.repeats))
            cell("our CPU backend, frames in memory", median_rate(count, lambda: backend_pipeline(frames, None), args.repeats))
            cell(
                "our CUDA backend: processing, host -> host (x PCIe limit)",
                median_rate(count, lambda: backend_pipeline(frames, cuda), args.repeats) if cuda else None,
                pcie,
            )
            on_device_rows(args, cuda, frames, size, cell)
            backend = "cuda" if cuda else "cpu"
            cell(
                f"end to end --no-video, {backend} (x decode only)",
                statistics.median(end_to_end(path, folder, False, backend) for _ in range(args.repeats)),
                decode,
            )
            cell(
                f"end to end with video, {backend} (x decode + encode)",
                statistics.median(end_to_end(path, folder, True, backend) for _ in range(args.repeats)),
                transcode,
            )
    print(f"frames per second, median of {args.repeats}; in brackets: share of the row's limit or target")
    print("| measure | " + " | ".join(f"{w}x{h}" for w, h in sizes) + " |")
    print("| --- |" + " --- |" * len(sizes))
    for name, cells in rows.items():
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
