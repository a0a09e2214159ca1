"""Where the CPU time of the NVDEC path goes when several decoder threads share one process.

A chunked run (``--jobs``) scans up to 8 chunks at once on threads of one Dask worker per GPU,
and the Python those threads run shares one interpreter lock (GIL). This script measures, for
``--threads`` 1 and N, each thread decoding the same 1080p H.264 file from its own
:class:`~motiondetect.sources.nvdec.NvdecSource`:

- ``decode``: NVDEC decode only (every frame wrapped as a DeviceFrame, nothing else);
- ``bare``: the same frames through :class:`~motiondetect.pipeline.batch.BatchDetector`
  (default config, no masks, no annotation: what ``--no-video`` runs);

and prints the aggregate frames per second with the CPU time per frame of every thread
(``time.thread_time`` of its main and decode-feed threads: Python holding the GIL plus driver
calls). Measured on an H200 (2026-11-23, 3,000 frames): one thread 653 fps decode, 653 bare
(165 and 200 us of CPU a frame); 8 threads 4,107 decode, 3,926 bare (96 %; 198 and 312 us a
frame per thread). Usage::

    python benchmarks/profile_decode_threads.py [CLIP] [--frames 3000] [--threads 8]
"""

from __future__ import annotations

import argparse
import itertools
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_scale import make_input  # noqa: E402

from motiondetect.gpu.cuda_handler import CUDAHandler  # noqa: E402
from motiondetect.pipeline.batch import BatchDetector  # noqa: E402
from motiondetect.pipeline.config import build_filters, default_config  # noqa: E402
from motiondetect.sources.nvdec import NvdecSource  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


class _TimedBatchDetector(BatchDetector):
    """BatchDetector whose decode-feed thread records its CPU time."""

    feed_cpu = 0.0

    def _fill(self, *args) -> None:
        started = time.thread_time()
        try:
            super()._fill(*args)
        finally:
            self.feed_cpu = time.thread_time() - started


def run_threads(path: Path, threads: int, mode: str) -> tuple[float, list[float]]:
    """(aggregate fps, CPU seconds per frame of each thread) of ``threads`` threads."""
    frames_seen: list[int] = []
    cpu: list[float] = []
    errors: list[BaseException] = []
    lock = threading.Lock()
    barrier = threading.Barrier(threads + 1, timeout=120)

    def work() -> None:
        try:
            measure()
        except BaseException as exc:  # reported by the caller; the barrier lets the others go
            errors.append(exc)
            barrier.abort()

    def measure() -> None:
        with CUDAHandler() as cuda, NvdecSource(str(path), cuda) as source:
            detector = None
            if mode == "bare":
                detector = _TimedBatchDetector(build_filters(default_config()), cuda, annotate=False, masks=False)
                # Compile the kernels and allocate the buffers before the clock starts.
                with NvdecSource(str(path), cuda) as warm:
                    for _ in detector.stream(itertools.islice(warm, 70)):
                        pass
                detector.reset()
            barrier.wait()
            started = time.thread_time()
            if detector is None:
                count = sum(1 for _ in source)
            else:
                count = sum(1 for _ in detector.stream(source))
            cuda.synchronize()
            used = time.thread_time() - started + (detector.feed_cpu if detector is not None else 0.0)
            with lock:
                frames_seen.append(count)
                cpu.append(used / max(count, 1))

    workers = [threading.Thread(target=work) for _ in range(threads)]
    for worker in workers:
        worker.start()
    try:
        barrier.wait()
    except threading.BrokenBarrierError:
        pass
    started = time.perf_counter()
    for worker in workers:
        worker.join()
    elapsed = time.perf_counter() - started
    if errors:
        raise RuntimeError(f"{mode} with {threads} threads failed: {errors[0]!r}") from errors[0]
    return sum(frames_seen) / elapsed, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("clip", nargs="?", default=str(ROOT / "samples" / "highway_traffic_320x240.avi"))
    parser.add_argument("--frames", type=int, default=3000)
    parser.add_argument("--threads", type=int, default=8)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = make_input(Path(args.clip), (1920, 1080), args.frames, Path(tmp))
        print("| threads | work | aggregate fps | CPU us/frame per thread (median) |")
        print("| ---: | --- | ---: | ---: |")
        for threads in sorted({1, args.threads}):
            for mode in ("decode", "bare"):
                rate, cpu = run_threads(path, threads, mode)
                cpu.sort()
                print(f"| {threads} | {mode} | {rate:,.0f} | {cpu[len(cpu) // 2] * 1e6:,.0f} |", flush=True)


if __name__ == "__main__":
    main()
