"""Chunk tasks side by side in one process, without Dask: how far the chunks of one file scale.

A ``--jobs`` run on one GPU is a few worker processes whose threads each run
:func:`motiondetect.scaleout.chunk_task.run_chunk`. This script runs the same tasks on plain
threads of one process, so Dask's and CUDA's start-up are out of the figures and what remains is the tasks' own
cost: opening the file, seeking to the chunk's warm-up keyframe (NVDEC or PyAV), decoding the
warm-up and the chunk, the pipeline. It makes a 1080p H.264 file of ``--encode`` frames (the
bundled clip upscaled), joins copies of it by stream copy into one of ``--frames`` frames, plans
``--chunk``-second chunks, runs one task to warm up (kernel cache, first decoder), then for each
thread count runs that many chunks from the middle of the file at once.

Prints a Markdown table: the chunks' own frames per second (what a run delivers) and the frames
decoded per second (the chunk and its warm-up, what the decoders do). Usage::

    python benchmarks/bench_chunk_tasks.py [--encode 3000] [--frames 30000] [--chunk 20] [--threads 1,4,8] [--backend auto]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_scale import ROOT, frame_count, make_input  # noqa: E402

from motiondetect.outputs.writer import join_videos  # noqa: E402
from motiondetect.pipeline.config import build_filters, default_config  # noqa: E402
from motiondetect.scaleout.chunk_task import ChunkJob, run_chunk  # noqa: E402
from motiondetect.scaleout.chunks import plan_chunks, warmup_frames  # noqa: E402


def run_at_once(jobs: list[ChunkJob]) -> float:
    """Seconds for ``jobs`` run on one thread each, all started together."""
    errors: list[BaseException] = []

    def one(job: ChunkJob) -> None:
        try:
            run_chunk(job)
        except BaseException as exc:  # reported after the join
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(job,)) for job in jobs]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clip", type=Path, default=ROOT / "samples" / "highway_traffic_320x240.avi")
    parser.add_argument("--encode", type=int, default=3000, help="frames encoded [3000]")
    parser.add_argument("--frames", type=int, default=30_000, help="frames of the joined file [30000]")
    parser.add_argument("--chunk", type=float, default=20.0, help="chunk length, seconds [20]")
    parser.add_argument("--threads", default="1,4,8", help="thread counts [1,4,8]")
    parser.add_argument("--backend", default="auto", choices=("auto", "cuda", "cpu"))
    args = parser.parse_args()
    config = {**default_config(), "backend": args.backend}
    warmup = warmup_frames(build_filters(config))
    counts = [int(n) for n in args.threads.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        short = make_input(args.clip, (1920, 1080), args.encode, Path(tmp))
        path = Path(tmp) / "long.mp4"
        join_videos([short] * max(1, round(args.frames / frame_count(short))), path)
        chunks = plan_chunks(str(path), 25.0, args.chunk, warmup)
        jobs = [ChunkJob(c, config, None, warmup or 1, c.first_index, path.stem) for c in chunks]
        middle = jobs[len(jobs) // 4 :]
        if len(middle) < 1 + max(counts):
            sys.exit(f"{len(chunks)} chunks: too few for {max(counts)} threads; give a longer --frames or a shorter --chunk")
        first = run_chunk(middle[0])
        print(
            f"{path.name}: {frame_count(path)} frames, {len(chunks)} chunks of {args.chunk:g} s, warm-up {warmup} frames;"
            f" {first.backend}, decoder {first.decoder}\n"
        )
        print("| threads | chunk frames/s | decoded frames/s | seconds |\n| ---: | ---: | ---: | ---: |")
        for n in counts:
            batch = middle[1 : 1 + n]
            seconds = run_at_once(batch)
            own = sum(job.chunk.frames for job in batch)
            decoded = own + sum(job.chunk.warmup for job in batch)
            print(f"| {n} | {own / seconds:,.0f} | {decoded / seconds:,.0f} | {seconds:.2f} |", flush=True)


if __name__ == "__main__":
    main()
