"""The GPU-resident path against its limits, at 1920x1080 and 3840x2160, in one run.

Makes H.264 inputs by upscaling a real clip (bench_throughput.make_input), then measures, each
as the median of ``--repeats`` after a warm-up, next to its reference:

- NVDEC decode-only (one decoder) and ``motiondetect --no-video`` end to end through NVDEC;
- the on-device pipeline: batches already on the GPU through BatchDetector (default config),
  for several batch sizes K;
- host frames in (yuv420p pictures in memory) -> annotated frames + masks out, against the PCIe
  limit of the same bytes (pinned, both directions);
- with the annotated video, end to end, against libx264 alone on yuv420p input, same preset;
- CPU-decoded ``--no-video`` (PyAV) against PyAV decode-only to the Y plane;
- GPU memory over ``--long`` frames after warm-up.

Prints a Markdown table. Usage::

    python benchmarks/bench_gpu_resident.py [CLIP] [--frames 600] [--sizes 1920x1080,3840x2160]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_throughput import make_input, median_rate  # noqa: E402

from motiondetect.batch import BatchDetector  # noqa: E402
from motiondetect.cli import main as motiondetect_main  # noqa: E402
from motiondetect.config import build_filters, default_config  # noqa: E402
from motiondetect.cuda_handler import CUDAHandler  # noqa: E402
from motiondetect.nvdec import NvdecSource, nvdec_problem  # noqa: E402
from motiondetect.picture import Picture  # noqa: E402
from motiondetect.video import Frame, VideoHandler, VideoWriter  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def cli_seconds(*argv: str) -> float:
    """Wall time of one in-process ``motiondetect`` run (quiet)."""
    started = time.perf_counter()
    with contextlib.redirect_stderr(io.StringIO()):
        rc = motiondetect_main([*argv, "-q", "--overwrite"])
    assert rc == 0, argv
    return time.perf_counter() - started


def cli_rate(count: int, repeats: int, *argv: str) -> float:
    cli_seconds(*argv)
    return count / float(np.median([cli_seconds(*argv) for _ in range(repeats)]))


def pictures_of(path: Path) -> list[Picture]:
    with VideoHandler(str(path)) as video:
        return [frame.image.copy() for frame in video]


def on_device_rate(cuda, pictures: list[Picture], batch: int, repeats: int, config: dict | None = None) -> float:
    """Frames per second of BatchDetector on batches already on the device (no decode, no
    upload: one slot is filled once and run again and again), with ``config``'s pipeline
    (default: the default config)."""
    detector = BatchDetector(build_filters(config or default_config()), cuda, annotate=False, masks=False, batch=batch)
    frames = [Frame(i, i / 25, p) for i, p in enumerate(pictures[:batch])]
    geo = detector.plan.geometry(pictures[0].shape)
    slot = detector._make_ring(geo, "planar")[0]
    import pycuda.driver as drv

    stream = drv.Stream()
    for k, frame in enumerate(frames):
        detector._copy_in(slot, k, frame.image, stream)
    detector._hand_over(slot, frames, stream, _Sink())
    detector._run(slot, geo)  # the first batch of a stream
    rounds = max(2, 2000 // batch)

    def run():
        for _ in range(rounds):
            detector._run(slot, geo)

    return median_rate(rounds * batch, run, repeats)


class _Sink:
    def put(self, item):
        pass


def host_to_host_rate(cuda, pictures: list[Picture], batch: int, repeats: int) -> float:
    """Pictures in host memory -> annotated pictures + masks in host memory, through the ring."""
    detector = BatchDetector(build_filters(default_config()), cuda, annotate=True, masks=True, batch=batch)
    frames = [Frame(i, i / 25, p) for i, p in enumerate(pictures)]

    def run():
        detector.reset()
        for _ in detector.stream(frames):
            pass

    return median_rate(len(frames), run, repeats)


def pcie_rate(cuda, size: tuple[int, int], repeats: int, count: int = 200) -> float:
    """Frames per second of the same bytes over PCIe: a yuv420p frame up, a yuv420p frame and a
    mask down, pinned memory, the directions on two streams."""
    import pycuda.driver as drv

    width, height = size
    up, down = height * width * 3 // 2, height * width * 5 // 2
    host_up, host_down = drv.pagelocked_empty(up * 8, np.uint8), drv.pagelocked_empty(down * 8, np.uint8)
    dev_up, dev_down = drv.mem_alloc(up * 8), drv.mem_alloc(down * 8)
    streams = drv.Stream(), drv.Stream()

    def run():
        for i in range(0, count, 8):
            drv.memcpy_htod_async(dev_up, host_up, streams[0])
            drv.memcpy_dtoh_async(host_down, dev_down, streams[1])
        streams[0].synchronize()
        streams[1].synchronize()

    return median_rate(count, run, repeats)


def nvdec_decode_rate(cuda, path: Path, count: int, repeats: int) -> float:
    def run():
        with NvdecSource(str(path), cuda) as source:
            for _ in source:
                pass
        cuda.synchronize()

    return median_rate(count, run, repeats)


def pyav_decode_rate(path: Path, count: int, repeats: int) -> float:
    def run():
        with VideoHandler(str(path)) as video:
            for frame in video:
                frame.image.y  # the Y plane, in place
    return median_rate(count, run, repeats)


def x264_rate(pictures: list[Picture], folder: Path, preset: str, repeats: int) -> float:
    def run():
        with VideoWriter(folder / f"x264_{preset}.mp4", 25.0, pictures[0].size, preset) as writer:
            for picture in pictures:
                writer.write(picture)
    return median_rate(len(pictures), run, repeats)


def memory_over(cuda, pictures: list[Picture], frames: int, batch: int) -> tuple[int, int]:
    """Free device memory after the warm-up batch and after ``frames`` frames (bytes)."""
    import pycuda.driver as drv

    detector = BatchDetector(build_filters(default_config()), cuda, annotate=True, masks=True, batch=batch)
    samples = []

    def looped():
        for i in range(frames):
            if i == 2 * batch:
                cuda.synchronize()
                samples.append(drv.mem_get_info()[0])
            yield Frame(i, i / 25, pictures[i % len(pictures)])

    for _ in detector.stream(looped()):
        pass
    cuda.synchronize()
    return samples[0], drv.mem_get_info()[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("clip", nargs="?", default=str(ROOT / "samples" / "highway_traffic_320x240.avi"))
    parser.add_argument("--frames", type=int, default=600)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sizes", default="1920x1080,3840x2160")
    parser.add_argument("--batches", default="1,8,32,64")
    parser.add_argument("--long", type=int, default=10_000, help="frames for the memory check")
    args = parser.parse_args()
    sizes = [tuple(int(v) for v in s.split("x")) for s in args.sizes.split(",")]
    rows = []
    with tempfile.TemporaryDirectory() as tmp, CUDAHandler() as cuda:
        folder = Path(tmp)
        print(f"GPU: {cuda.device_name}; NVDEC: {nvdec_problem() or 'PyNvVideoCodec'}", flush=True)
        for size in sizes:
            count = args.frames if size[0] <= 1920 else args.frames // 2
            path, _ = make_input(Path(args.clip), size, count, folder)
            label = f"{size[0]}x{size[1]}"
            pictures = pictures_of(path)
            out = str(folder / "out.mp4")

            decode_nv = nvdec_decode_rate(cuda, path, count, args.repeats)
            nv_scan = cli_rate(count, args.repeats, str(path), "--no-video", "--events", str(folder / "e.json"), "--decoder", "nvdec", "--backend", "cuda")
            rows.append((label, "--no-video, NVDEC, one decoder", nv_scan, "NVDEC decode-only", decode_nv))

            for k in [int(b) for b in args.batches.split(",")]:
                rows.append((label, f"on-device pipeline, default config, K={k}", on_device_rate(cuda, pictures, k, args.repeats), "target", 25_000 if size[0] <= 1920 else 6_000))

            rows.append((label, "host pictures in -> annotated + masks out", host_to_host_rate(cuda, pictures, 32, args.repeats), "PCIe, same bytes", pcie_rate(cuda, size, args.repeats)))

            for preset in ("veryfast", "ultrafast"):
                video = cli_rate(count, args.repeats, str(path), "-o", out, "--events", str(folder / "e.json"), "--preset", preset, "--backend", "cuda")
                rows.append((label, f"annotated video, {preset}", video, f"libx264 alone on yuv420p, {preset}", x264_rate(pictures, folder, preset, args.repeats)))

            cpu_scan = cli_rate(count, args.repeats, str(path), "--no-video", "--events", str(folder / "e.json"), "--decoder", "cpu", "--backend", "cuda")
            rows.append((label, "--no-video, CPU decoder (PyAV)", cpu_scan, "PyAV decode-only to the Y plane", pyav_decode_rate(path, count, args.repeats)))
            print(f"{label} done", flush=True)
        before, after = memory_over(cuda, pictures_of(path)[:64], args.long, 32)
        print(f"\nGPU memory free after warm-up {before / 2**20:.1f} MiB, after {args.long} frames {after / 2**20:.1f} MiB (change {(after - before) / 2**20:+.1f} MiB)")
    print("\n| size | measure | fps | reference | fps | share |\n| --- | --- | ---: | --- | ---: | ---: |")
    for label, what, rate, ref, ref_rate in rows:
        print(f"| {label} | {what} | {rate:,.0f} | {ref} | {ref_rate:,.0f} | {100 * rate / ref_rate:.0f} % |")


if __name__ == "__main__":
    main()
