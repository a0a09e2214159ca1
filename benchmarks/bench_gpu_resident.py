"""The GPU-resident path against its limits, at 1920x1080 and 3840x2160, in one run.

Makes H.264 inputs by upscaling a real clip (bench_throughput.make_input), then measures, each
as the median of ``--repeats`` after a warm-up, next to its reference:

- ``motiondetect --no-video`` through NVDEC as a whole process, against a process that only
  decodes the file with PyNvVideoCodec (one decoder): both pay their start-up (CUDA context,
  decoder creation), so the share is what a user sees; the loop's own rate
  (``elapsed_seconds`` in the report: start-up excluded) is printed beside it;
- the on-device pipeline: batches already on the GPU through BatchDetector (default config),
  for several batch sizes K;
- host frames in (yuv420p pictures in memory) -> annotated frames + masks out, against the PCIe
  limit of the same bytes (pinned, both directions);
- with the annotated video, end to end, against libx264 alone on yuv420p input, same preset
  (in process: no start-up, no exit), and against a plain transcoding process: NVDEC decoding,
  each NV12 picture copied to host memory and encoded by libx264 with the writer's settings,
  one thread, no detection. That one pays a process's start-up and exit as the command does,
  but it does not overlap its copies with the encoder, so it is a peer, not a limit;
- CPU-decoded ``--no-video`` (PyAV) against a process that only decodes with PyAV (threads
  on, every frame's Y plane touched), both whole processes;
- GPU memory over ``--long`` frames after warm-up;
- with ``--long-file N``, the two ``--no-video`` process rows and the annotated video at
  ``--long-file-presets`` again on a file of N frames (the input's packets repeated by stream
  copy; libx264's reference encodes the same pictures as often), where the fixed start-up
  weighs as it does on the footage the tool scans.

Bytecode: the package is compiled first (``compileall``), and every process, reference or ours,
runs with ``PYTHONPYCACHEPREFIX`` set and ``PYTHONDONTWRITEBYTECODE`` unset, so modules are
compiled once as an installed Python has them. The GPU machine's image sets
``PYTHONDONTWRITEBYTECODE`` and ships NumPy without bytecode: ``import numpy`` took 0.23 s there
against 0.10 s with it, so without this each run's first process of the kind paid its compilation.

Prints a Markdown table. Usage::

    python benchmarks/bench_gpu_resident.py [CLIP] [--frames 3000] [--sizes 1920x1080,3840x2160]
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_throughput import make_input, median_rate  # noqa: E402

from motiondetect.core.picture import Picture  # noqa: E402
from motiondetect.core.types import Frame
from motiondetect.filters.ghosts import tested_until  # noqa: E402
from motiondetect.gpu.cuda_handler import CUDAHandler  # noqa: E402
from motiondetect.outputs.writer import VideoWriter, join_videos  # noqa: E402
from motiondetect.pipeline.batch import BatchDetector, auto_batch  # noqa: E402
from motiondetect.pipeline.config import build_filters, default_config  # noqa: E402
from motiondetect.sources.nvdec import NvdecSource, nvdec_problem  # noqa: E402
from motiondetect.sources.video import VideoHandler  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


#: The processes' environment: bytecode cached as an installed Python has it (module docstring).
PROCESS_ENV = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
PROCESS_ENV["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / "motiondetect-bench-pycache")


def process_rate(count: int, repeats: int, argv: list[str], warm_up: bool = True) -> float:
    """Frames per second of a whole process (start-up included), median of ``repeats`` after
    one untimed run (which fills the kernel cache, the bytecode cache and the page cache;
    ``warm_up=False`` skips it where earlier rows filled them)."""

    def once() -> float:
        started = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=PROCESS_ENV)
        return time.perf_counter() - started

    if warm_up:
        once()
    return count / float(np.median([once() for _ in range(repeats)]))


def motiondetect_process(count: int, repeats: int, events: Path, *argv: str, warm_up: bool = True) -> tuple[float, float]:
    """(whole-process fps, the loop's own fps from the report) of ``motiondetect ARGV``."""
    command = [sys.executable, "-m", "motiondetect", *argv, "--events", str(events), "-q", "--overwrite"]
    rate = process_rate(count, repeats, command, warm_up)
    report = json.loads(events.read_text())
    return rate, report["frame_count"] / report["elapsed_seconds"]


#: Decode-only processes: the limits the --no-video rows are held against.
NVDEC_ONLY = """import sys, PyNvVideoCodec as nvc
demuxer = nvc.CreateDemuxer(sys.argv[1])
decoder = nvc.CreateDecoder(gpuid=0, codec=demuxer.GetNvCodecId(), usedevicememory=True)
frames = sum(len(decoder.Decode(packet)) for packet in demuxer) + len(decoder.Decode(nvc.PacketData()))
assert frames == int(sys.argv[2]), frames
"""
#: A plain transcoding process to set the annotated video beside: NVDEC decoding, each NV12
#: picture copied to host memory and handed to libx264 (x264's own input format: no conversion)
#: with the writer's settings (crf 20, frame threads, faststart), no detection, one thread.
#: argv: input, frames, output, preset.
NVDEC_X264 = """import sys, av, numpy as np, PyNvVideoCodec as nvc, pycuda.driver as drv
drv.init()
context = drv.Device(0).retain_primary_context()
context.push()
stream = drv.Stream()
demuxer = nvc.CreateDemuxer(sys.argv[1])
decoder = nvc.CreateDecoder(gpuid=0, codec=demuxer.GetNvCodecId(), cudacontext=context.handle,
                            cudastream=stream.handle, usedevicememory=True)
output = av.open(sys.argv[3], "w", options={"movflags": "+faststart"})
encoder = None
frames = 0
def encode(decoded):
    global encoder, host, frames
    luma, chroma = (plane.__cuda_array_interface__ for plane in decoded.cuda())
    height, width = luma["shape"][:2]
    if encoder is None:
        encoder = output.add_stream("libx264", rate=25)
        encoder.width, encoder.height, encoder.pix_fmt = width, height, "nv12"
        encoder.options = {"crf": "20", "preset": sys.argv[4]}
        encoder.codec_context.thread_type = "AUTO"
        host = drv.pagelocked_empty((height * 3 // 2, width), np.uint8)
    for plane, rows, target in ((luma, height, host[:height]), (chroma, height // 2, host[height:])):
        copy = drv.Memcpy2D()
        copy.set_src_device(plane["data"][0])
        copy.src_pitch = plane["strides"][0]
        copy.set_dst_host(target)
        copy.dst_pitch = copy.width_in_bytes = width
        copy.height = rows
        copy(stream)
    stream.synchronize()
    output.mux(encoder.encode(av.VideoFrame.from_ndarray(host, format="nv12")))
    frames += 1
for packet in demuxer:
    for decoded in decoder.Decode(packet):
        encode(decoded)
for decoded in decoder.Decode(nvc.PacketData()):
    encode(decoded)
output.mux(encoder.encode())
output.close()
context.pop()
assert frames == int(sys.argv[2]), frames
"""
PYAV_ONLY = """import sys, av
with av.open(sys.argv[1]) as container:
    stream = container.streams.video[0]
    stream.thread_type = "AUTO"
    frames = sum(1 for frame in container.decode(stream) if frame.planes[0])
assert frames == int(sys.argv[2]), frames
"""


def pictures_of(path: Path) -> list[Picture]:
    with VideoHandler(str(path)) as video:
        return [frame.image.copy() for frame in video]


def resident_batch(cuda, pictures: list[Picture], batch: int, config: dict | None, warm: int = 1):
    """A BatchDetector with ``config``'s pipeline (default: the default config) and a slot loaded
    once with the first ``batch`` pictures, run ``warm`` times (the stream's start, compilation,
    buffers), and at least until the stream is past the frames a model runs one a launch (the
    Gaussian model's ghost test, ``ghost_frames`` after the bootstrap); the measurements below run
    that slot again and again (no decode, no upload)."""
    filters = build_filters(config or default_config())
    start = tested_until(filters)
    detector = BatchDetector(filters, cuda, annotate=False, masks=False, batch=batch)
    loaded = detector.load_batch([Frame(i, i / 25, p) for i, p in enumerate(pictures[:batch])])
    for _ in range(max(warm, -(-start // batch) + 1)):
        detector.process_batch(loaded)
    return detector, loaded


def on_device_rate(cuda, pictures: list[Picture], batch: int, repeats: int, config: dict | None = None) -> float:
    """Frames per second of BatchDetector on batches already on the device (no decode, no
    upload: one slot is filled once and run again and again), with ``config``'s pipeline
    (default: the default config)."""
    detector, loaded = resident_batch(cuda, pictures, batch, config)
    rounds = max(2, 2000 // batch)

    def run():
        for _ in range(rounds):
            detector.process_batch(loaded)

    return median_rate(rounds * batch, run, repeats)


def host_times(cuda, pictures: list[Picture], batch: int, config: dict | None = None, batches: int = 200) -> tuple[float, float]:
    """Median milliseconds of the host's two halves of a batch on the device, as
    :func:`on_device_rate` runs it: queueing its launches, and handing out its results once the
    GPU is done. At K = 32 and 1080p the kernels take about 1 ms: host time beyond that is the
    rate's limit (a per-frame NumPy call in the hand-out once cost a third of it)."""
    detector, loaded = resident_batch(cuda, pictures, batch, config)
    queue, results = [], []
    for _ in range(batches):
        started = time.perf_counter()
        queued = detector._queue(loaded, loaded.geo)
        queued_at = time.perf_counter()
        queued.done.synchronize()
        done = time.perf_counter()
        list(detector._collect(queued))
        queue.append(queued_at - started)
        results.append(time.perf_counter() - done)
    return statistics.median(queue) * 1e3, statistics.median(results) * 1e3


def held_times(cuda, queue_one, finish=None, batches: int = 20, rounds: int = 3) -> tuple[float, float]:
    """Median seconds per batch of the GPU's own work and of the host's queueing, with the host
    out of the way: the stream is held by device-side work (memsets of a 4 GiB scratch buffer,
    20 to start with, about 25 ms) while ``batches`` calls of ``queue_one`` queue their work
    behind it, and CUDA events time the batches once the GPU reaches them. A round whose hold
    ended before the queueing did is run again with twice the hold and half the batches (at
    least 2): a slow host queued 20 batches of the default's in 25 ms, and once the driver's
    queue of pending launches is full, queueing waits for the GPU, whatever the hold (20 batches
    of ``subsense`` at K = 32, two launches a frame, took as long as a 0.3 s hold). ``finish``,
    when given, is called on each call's result once the GPU is done. Returns the medians of
    ``rounds`` rounds.

    Raises:
        RuntimeError: the hold did not outlast the queueing after 4 retries.
    """
    import pycuda.driver as drv
    import pycuda.gpuarray as gpuarray

    hold = gpuarray.empty(4 << 30, np.uint8)
    held, start, stop = drv.Event(), drv.Event(), drv.Event()
    gpu, host, memsets, retries = [], [], 20, 0
    while len(gpu) < rounds:
        held.record(cuda.stream)
        for _ in range(memsets):
            drv.memset_d8_async(hold.gpudata, 0, hold.size, cuda.stream)
        start.record(cuda.stream)
        began = time.perf_counter()
        results = [queue_one() for _ in range(batches)]
        queueing = time.perf_counter() - began
        stop.record(cuda.stream)
        stop.synchronize()
        for result in results if finish else ():
            finish(result)
        if start.time_since(held) * 1e-3 > queueing:
            gpu.append(stop.time_since(start) * 1e-3 / batches)
            host.append(queueing / batches)
        elif retries < 4:
            retries, memsets, batches = retries + 1, 2 * memsets, max(2, batches // 2)
        else:
            raise RuntimeError(f"the hold ({start.time_since(held):.1f} ms) did not outlast the queueing ({queueing * 1e3:.1f} ms)")
    hold.gpudata.free()
    return statistics.median(gpu), statistics.median(host)


def kernel_rate(cuda, pictures: list[Picture], batch: int, config: dict | None = None, batches: int = 20) -> float:
    """Frames per second of the GPU's own work on batches already on the device, with the host
    out of the way (:func:`held_times`). :func:`on_device_rate` waits for each batch before
    queueing the next, so where the host's queueing (Python, a few hundred microseconds a batch)
    exceeds the kernels' time, it measures the host; this measures the kernels.

    Raises:
        RuntimeError: as :func:`held_times`.
    """
    detector, loaded = resident_batch(cuda, pictures, batch, config, warm=3)
    gpu, _ = held_times(cuda, lambda: detector._queue(loaded, loaded.geo), lambda queued: list(detector._collect(queued)), batches)
    return batch / gpu


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


def x264_rate(pictures: list[Picture], folder: Path, preset: str, repeats: int, times: int = 1) -> float:
    """Frames per second of libx264 alone (PyAV, ``preset``) encoding ``pictures`` ``times``
    over into one file: median of ``repeats`` after a warm-up, or one timed run when ``times``
    > 1 (the long-file rows, whose encoder is already warm)."""

    def run():
        with VideoWriter(folder / f"x264_{preset}.mp4", 25.0, pictures[0].size, preset) as writer:
            for _ in range(times):
                for picture in pictures:
                    writer.write(picture)

    if times == 1:
        return median_rate(len(pictures), run, repeats)
    started = time.perf_counter()
    run()
    return len(pictures) * times / (time.perf_counter() - started)


#: The memory check's batch size; its warm-up is ten batches, after which every buffer is made.
MEMORY_BATCH = 32
MEMORY_WARM_UP = 10 * MEMORY_BATCH


def memory_over(cuda, pictures: list[Picture], frames: int, batch: int) -> tuple[int, int]:
    """Free device memory after ten batches (every buffer made) and after ``frames`` frames (bytes)."""
    import pycuda.driver as drv

    detector = BatchDetector(build_filters(default_config()), cuda, annotate=True, masks=True, batch=batch)
    samples = []

    def looped():
        for i in range(frames):
            if i == 10 * batch:
                cuda.synchronize()
                samples.append(drv.mem_get_info()[0])
            yield Frame(i, i / 25, pictures[i % len(pictures)])

    for _ in detector.stream(looped()):
        pass
    cuda.synchronize()
    return samples[0], drv.mem_get_info()[0]


def add_long_file_rows(add, label: str, path: Path, pictures: list[Picture], frames: int, presets: list[str], folder: Path) -> None:
    """The process rows on a file of about ``frames`` frames: ``path`` repeated by stream copy
    (:func:`~motiondetect.outputs.writer.join_videos`), each timed once: the
    two ``--no-video`` rows, and the annotated video at each of ``presets`` against libx264
    alone encoding the same pictures as often (the same content, so the same encoding cost)."""
    count = len(pictures)
    times = max(1, round(frames / count))
    long_path = folder / f"long_{path.name}"
    join_videos([path] * times, long_path)
    total = count * times
    events = folder / "long.json"
    for decoder, reference, name in (("nvdec", NVDEC_ONLY, "NVDEC"), ("cpu", PYAV_ONLY, "PyAV")):
        # The short file's rows warmed the caches; the long file's first read warms the page cache.
        ours, _ = motiondetect_process(
            total, 1, events, str(long_path), "--no-video", "--decoder", decoder, "--backend", "cuda", warm_up=False
        )
        only = process_rate(total, 1, [sys.executable, "-c", reference, str(long_path), str(total)], warm_up=False)
        add((label, f"--no-video, {name} decoder, {total:,}-frame file (process)", ours, f"{name} decode-only (process)", only))
    for preset in presets:
        argv = [str(long_path), "-o", str(folder / "long_out.mp4"), "--preset", preset, "--backend", "cuda"]
        ours, _ = motiondetect_process(total, 1, events, *argv, warm_up=False)
        only = x264_rate(pictures, folder, preset, 1, times)
        add((label, f"annotated video, {preset}, {total:,}-frame file (process)", ours, f"libx264 alone on yuv420p, {preset}", only))


def table_row(label: str, what: str, rate: float, ref: str, ref_rate: float) -> str:
    return f"| {label} | {what} | {rate:,.0f} | {ref} | {ref_rate:,.0f} | {100 * rate / ref_rate:.0f} % |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("clip", nargs="?", default=str(ROOT / "samples" / "highway_traffic_320x240.avi"))
    parser.add_argument("--frames", type=int, default=3000, help="frames of the 1080p input (2160p: a quarter)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sizes", default="1920x1080,3840x2160")
    parser.add_argument("--batches", default="1,8,32,64")
    parser.add_argument(
        "--long", type=int, default=10_000, help=f"frames for the memory check (more than its {MEMORY_WARM_UP}-frame warm-up)"
    )
    parser.add_argument("--long-file", type=int, default=0, help="frames of a long input for the process rows (0: none)")
    parser.add_argument("--long-file-presets", default="ultrafast", help="x264 presets of the long file's annotated rows [ultrafast]")
    args = parser.parse_args()
    if args.long <= MEMORY_WARM_UP:
        parser.error(f"--long must be more than the memory check's {MEMORY_WARM_UP}-frame warm-up, got {args.long}")
    sizes = [tuple(int(v) for v in s.split("x")) for s in args.sizes.split(",")]
    rows: list[tuple] = []

    def add(row: tuple) -> None:
        # Printed as measured too, so a run cut short by a time limit still reports its rows.
        rows.append(row)
        print(table_row(*row), flush=True)

    compileall.compile_dir(str(ROOT / "motiondetect"), quiet=1)  # as an installed copy starts
    with tempfile.TemporaryDirectory() as tmp, CUDAHandler() as cuda:
        folder = Path(tmp)
        print(f"GPU: {cuda.device_name}; NVDEC: {nvdec_problem() or 'PyNvVideoCodec'}", flush=True)
        for size in sizes:
            count = args.frames if size[0] <= 1920 else args.frames // 4
            path, _ = make_input(Path(args.clip), size, count, folder)
            label = f"{size[0]}x{size[1]}"
            pictures = pictures_of(path)
            out = str(folder / "out.mp4")

            events = folder / "e.json"
            decode_nv = process_rate(count, args.repeats, [sys.executable, "-c", NVDEC_ONLY, str(path), str(count)])
            nv_scan, nv_loop = motiondetect_process(
                count, args.repeats, events, str(path), "--no-video", "--decoder", "nvdec", "--backend", "cuda"
            )
            add((label, "--no-video, NVDEC, one decoder (process)", nv_scan, "NVDEC decode-only (process)", decode_nv))
            add(
                (
                    label,
                    "  the same, loop only (start-up excluded)",
                    nv_loop,
                    "NVDEC decode-only, in process",
                    nvdec_decode_rate(cuda, path, count, args.repeats),
                )
            )

            for k in [int(b) for b in args.batches.split(",")]:
                add(
                    (
                        label,
                        f"on-device pipeline, default config, K={k}",
                        on_device_rate(cuda, pictures, k, args.repeats),
                        "target",
                        25_000 if size[0] <= 1920 else 6_000,
                    )
                )

            add(
                (
                    label,
                    f"host pictures in -> annotated + masks out, K={auto_batch(size)}",
                    host_to_host_rate(cuda, pictures, auto_batch(size), args.repeats),
                    "PCIe, same bytes",
                    pcie_rate(cuda, size, args.repeats),
                )
            )

            for preset in ("veryfast", "ultrafast"):
                video, video_loop = motiondetect_process(
                    count, args.repeats, events, str(path), "-o", out, "--preset", preset, "--backend", "cuda"
                )
                x264 = x264_rate(pictures, folder, preset, args.repeats)
                add((label, f"annotated video, {preset} (process)", video, f"libx264 alone on yuv420p, {preset}", x264))
                plain = process_rate(
                    count, args.repeats, [sys.executable, "-c", NVDEC_X264, str(path), str(count), str(folder / "plain.mp4"), preset]
                )
                add(
                    (
                        label,
                        "  the same, against a plain transcoding process",
                        video,
                        "NVDEC -> libx264, no detection (process)",
                        plain,
                    )
                )
                add(
                    (
                        label,
                        "  the same, loop only (start-up and encoder flush excluded)",
                        video_loop,
                        f"libx264 alone on yuv420p, {preset}",
                        x264,
                    )
                )

            decode_cpu = process_rate(count, args.repeats, [sys.executable, "-c", PYAV_ONLY, str(path), str(count)])
            cpu_scan, cpu_loop = motiondetect_process(
                count, args.repeats, events, str(path), "--no-video", "--decoder", "cpu", "--backend", "cuda"
            )
            add((label, "--no-video, CPU decoder (PyAV) (process)", cpu_scan, "PyAV decode-only (process)", decode_cpu))
            add(
                (
                    label,
                    "  the same, loop only (start-up excluded)",
                    cpu_loop,
                    "PyAV decode-only, in process",
                    pyav_decode_rate(path, count, args.repeats),
                )
            )
            if args.long_file:
                presets = [p for p in args.long_file_presets.split(",") if p]
                add_long_file_rows(add, label, path, pictures, args.long_file, presets, folder)
            print(f"{label} done", flush=True)
        before, after = memory_over(cuda, pictures_of(path)[:64], args.long, MEMORY_BATCH)
        print(
            f"\nGPU memory free after warm-up {before / 2**20:.1f} MiB, after {args.long} frames {after / 2**20:.1f} MiB (change {(after - before) / 2**20:+.1f} MiB)"
        )
    print("\n| size | measure | fps | reference | fps | share |\n| --- | --- | ---: | --- | ---: | ---: |")
    for row in rows:
        print(table_row(*row))


if __name__ == "__main__":
    main()
