"""Scale-out (issue 13): chunked runs on Dask against the rates they are held to, in one run.

Makes one 1080p H.264 file of ``--encode`` frames (a real clip upscaled and looped, written
frame by frame) and, by stream copy, a long file of ``--frames`` frames that repeats it (or
takes ``--input`` as the long file), then measures, each once, whole processes from the shell:

1. NVDEC decode only: ``--threads`` threads in this process, each decoding the short file with
   its own NVDEC decoder (``motiondetect.sources.nvdec.NvdecSource``); the aggregate frames per
   second. Against it: ``motiondetect LONG --no-video --jobs N`` on one GPU (target >= 90 %),
   whole process and the loop alone (the report's ``elapsed_seconds``: Dask and CUDA start-up
   excluded). The long file is what the target is about: a run pays about 3 s of start-up, and
   every chunk decodes the background model's warm-up (500 frames by default) before its own
   frames, so a short file cannot reach the decoders' rate (issue 13's note has the numbers).
2. The CPU backend: ``motiondetect LONG --no-video --backend cpu --jobs auto`` against
   DVR-Scan's scan-only ``dvr-scan -i LONG -so`` (target >= 4x; the row says so when dvr-scan
   is missing). DVR-Scan takes minutes over the default 30,000 frames.
3. ``--files`` copies of the short file (links; ``--files-long``: then of the long file) in one run,
   ``--jobs N``, on one GPU (``CUDA_VISIBLE_DEVICES=0``) and on every GPU (target: all >= 1.8x
   one on two GPUs). The 3,000-frame files take seconds per GPU next to the run's fixed
   start-up (about 3 s), which two GPUs do not halve; long files show the scaling itself.

Before the timed runs one untimed ``--jobs 2`` run on the short file fills PyCUDA's kernel cache
and the bytecode cache, and every process runs with bytecode cached (``bench_gpu_resident``'s
``PROCESS_ENV``), as an installed copy starts: on a fresh machine the first chunk tasks otherwise
spend seconds compiling (measured: 4.6 s of set-up against 0.5-1.3).

Rows whose pieces are missing (no GPU, no PyNvVideoCodec, no Dask, no dvr-scan) say why
instead of failing. Prints one Markdown table. Usage::

    python benchmarks/bench_scale.py [--input FILE | --clip CLIP --encode 3000 --frames 30000]
        [--chunk SECONDS] [--jobs 8] [--threads 8] [--files 8 [--files-long]] [--no-cpu] [--dvr-scan PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import cv2

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench_gpu_resident import NVDEC_ONLY, PROCESS_ENV  # noqa: E402

from motiondetect.core.picture import as_bgr  # noqa: E402
from motiondetect.outputs.writer import VideoWriter, join_videos  # noqa: E402
from motiondetect.sources.video import VideoHandler  # noqa: E402


def make_input(clip: Path, size: tuple[int, int], frames: int, folder: Path) -> Path:
    """Upscale ``clip`` to ``size`` and loop it to ``frames`` frames, written as H.264 (25 fps),
    one frame at a time (memory stays flat)."""
    path = folder / f"scale_{size[0]}x{size[1]}_{frames}.mp4"
    written = 0
    with VideoWriter(path, 25.0, size, "ultrafast") as writer:
        while written < frames:
            with VideoHandler(clip) as video:
                for frame in video:
                    writer.write(cv2.resize(as_bgr(frame.image), size, interpolation=cv2.INTER_LINEAR))
                    written += 1
                    if written == frames:
                        break
    return path


def frame_count(path: Path) -> int:
    """Frames of a file, by decoding it (the container's count may round)."""
    with VideoHandler(path) as video:
        return sum(1 for _ in video)


def nvdec_decode_rate(path: Path, threads: int, frames: int) -> tuple[float | None, str]:
    """Aggregate frames per second of ``threads`` NVDEC decoders decoding ``path`` at once."""
    from motiondetect.sources.nvdec import nvdec_problem

    problem = nvdec_problem()
    if problem:
        return None, f"NVDEC unavailable: {problem}"
    from motiondetect.gpu.cuda_handler import CUDAHandler
    from motiondetect.sources.nvdec import NvdecSource

    errors: list[BaseException] = []

    def decode() -> None:
        try:
            with CUDAHandler() as cuda, NvdecSource(str(path), cuda) as source:
                for _ in source:
                    pass
                cuda.synchronize()
        except BaseException as exc:  # reported in the row
            errors.append(exc)

    workers = [threading.Thread(target=decode) for _ in range(threads)]
    started = time.perf_counter()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    elapsed = time.perf_counter() - started
    if errors:
        return None, f"NVDEC decode failed: {errors[0]}"
    return threads * frames / elapsed, f"{threads} threads, aggregate"


def nvdec_processes_rate(path: Path, processes: int, frames: int, env: dict) -> tuple[float | None, str]:
    """Aggregate frames per second of ``processes`` decode-only processes (``NVDEC_ONLY``, each its
    own CUDA context and decoder) started together, start-up included: the layout of the GPU
    workers, against the one process of threads above."""
    argv = [sys.executable, "-c", NVDEC_ONLY, str(path), str(frames)]
    started = time.perf_counter()
    running = [subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for _ in range(processes)]
    errors = [process.communicate()[1] for process in running]  # read to the end: a full pipe would block its writer
    elapsed = time.perf_counter() - started
    failed = [error for process, error in zip(running, errors) if process.returncode]
    if failed:
        return None, "failed: " + failed[0].decode().strip()[-200:]
    return processes * frames / elapsed, f"{processes} processes, aggregate, start-up included"


def command_rate(command: list[str], frames: int, cwd: Path, env: dict | None = None) -> tuple[float | None, str]:
    """Frames per second of one whole process (start-up and cluster start included), in
    ``env`` or else ``PROCESS_ENV``."""
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env or PROCESS_ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        return None, "failed: " + (done.stderr.strip().splitlines() or ["?"])[-1]
    return frames / elapsed, f"{elapsed:.1f} s"


def scanned(result: tuple[float | None, str], folder: Path, inputs: list[str], frames: int) -> tuple[float | None, str]:
    """``result`` of a motiondetect run over ``inputs`` when its reports (``r_{stem}.json`` in
    ``folder``) count ``frames`` frames each; else no rate and what they counted."""
    if result[0] is None:
        return result
    counted = [json.loads((folder / f"r_{Path(name).stem}.json").read_text())["frame_count"] for name in inputs]
    if any(count != frames for count in counted):
        return None, f"reports count {counted} frames, expected {frames} each"
    return result


def gpu_count() -> int:
    from motiondetect.gpu.platform import cuda_device_error

    if cuda_device_error():
        return 0
    import pycuda.driver as drv

    drv.init()
    return drv.Device.count()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--input", type=Path, help="a long 1080p H.264 file to use [default: made from --clip]")
    parser.add_argument("--clip", type=Path, default=ROOT / "samples" / "highway_traffic_320x240.avi", help="real clip to upscale")
    parser.add_argument("--encode", type=int, default=3000, help="frames of the encoded (short) file [3000]")
    parser.add_argument("--frames", type=int, default=30_000, help="frames of the long file, copies of the short one [30000]")
    parser.add_argument("--chunk", type=float, help="--chunk seconds for the chunked runs [the command's default]")
    parser.add_argument("--jobs", default="8", help="--jobs of the GPU runs [8]")
    parser.add_argument("--threads", type=int, default=8, help="NVDEC decoder threads of the decode-only row [8]")
    parser.add_argument("--files", type=int, default=8, help="files of the many-files rows [8]")
    parser.add_argument("--files-long", action="store_true", help="the many-files rows on copies of the long file too")
    parser.add_argument("--no-cpu", action="store_true", help="leave out the CPU backend's and DVR-Scan's rows (minutes on long files)")
    parser.add_argument("--dvr-scan", default=shutil.which("dvr-scan"), help="the dvr-scan command [default: from PATH]")
    args = parser.parse_args()

    folder = Path(tempfile.mkdtemp(prefix="bench_scale_"))
    try:
        path = make_input(args.clip, (1920, 1080), args.encode, folder)
        frames = frame_count(path)
        if args.input:
            long = args.input.resolve()
        else:
            long = folder / f"long_{path.name}"
            join_videos([path] * max(1, round(args.frames / frames)), long)
        long_frames = frame_count(long)
        md = [sys.executable, "-m", "motiondetect"]
        chunk = ["--chunk", str(args.chunk)] if args.chunk else []
        common = ["--no-video", *chunk, "-q", "--overwrite", "--events", str(folder / "r_{stem}.json")]
        rows: list[tuple[str, float | None, str]] = []
        gpus = gpu_count()
        one_gpu = {**PROCESS_ENV, "CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0]}
        # Untimed: kernels compiled into PyCUDA's cache, modules into bytecode (see the docstring).
        command_rate(md + [str(path), *common, "--backend", "cuda" if gpus else "cpu", "--jobs", "2"], frames, folder)

        decode, note = nvdec_decode_rate(path, args.threads, frames)
        rows.append(("NVDEC decode only", decode, note))
        if decode:
            rate, note = nvdec_processes_rate(path, args.threads, frames, one_gpu)
            rows.append(("NVDEC decode only, separate processes, one GPU", rate, note))
        if gpus:
            run = md + [str(long), *common, "--backend", "cuda", "--jobs", args.jobs]
            rate, note = scanned(command_rate(run, long_frames, folder, one_gpu), folder, [str(long)], long_frames)
            target = f"{rate / decode:.0%} of decode only (target >= 90 %); {note}" if rate and decode else note
            rows.append((f"motiondetect LONG --jobs {args.jobs}, one GPU, whole process", rate, target))
            if rate:
                report = json.loads((folder / f"r_{long.stem}.json").read_text())
                loop = report["frame_count"] / report["elapsed_seconds"]
                rows.append(("  the same, loop only (start-up excluded)", loop, f"{loop / decode:.0%} of decode only" if decode else ""))
        else:
            rows.append((f"motiondetect --jobs {args.jobs}, one GPU", None, "no CUDA device"))

        if not args.no_cpu:
            run = md + [str(long), *common, "--backend", "cpu", "--jobs", "auto"]
            cpu, note = scanned(command_rate(run, long_frames, folder), folder, [str(long)], long_frames)
            rows.append((f"motiondetect LONG --backend cpu --jobs auto ({os.cpu_count()} cores)", cpu, note))
            if args.dvr_scan:
                dvr, note = command_rate([args.dvr_scan, "-i", str(long), "-so"], long_frames, folder)
                rows.append(("dvr-scan -i LONG -so", dvr, f"cpu run {cpu / dvr:.2f}x DVR-Scan (target >= 4x)" if cpu and dvr else note))
            else:
                rows.append(("dvr-scan -i LONG -so", None, "dvr-scan not installed (--dvr-scan PATH): no comparison"))

        copies = [(path, frames)] + ([(long, long_frames)] if args.files_long else [])
        for copied, copied_frames in copies if args.files else []:  # --files 0: no many-files rows
            files = []
            for k in range(args.files):
                link = folder / f"copy{k}_{copied.stem}{path.suffix}"
                os.symlink(copied, link)
                files.append(str(link))
            if gpus:
                run = md + files + [*common, "--backend", "cuda", "--jobs", args.jobs]
                single, note1 = scanned(command_rate(run, copied_frames * len(files), folder, one_gpu), folder, files, copied_frames)
                rows.append((f"{len(files)} files of {copied_frames:,} frames, --jobs {args.jobs}, one GPU", single, note1))
                every, note2 = scanned(command_rate(run, copied_frames * len(files), folder), folder, files, copied_frames)
                ratio = f"{every / single:.2f}x one GPU (target >= 1.8x on 2 GPUs); {note2}" if every and single else note2
                rows.append((f"{len(files)} files of {copied_frames:,} frames, --jobs {args.jobs}, {gpus} GPUs", every, ratio))
            else:
                rows.append((f"{len(files)} files on every GPU vs one", None, "no CUDA device"))

        chunks = f"chunks of {args.chunk:g} s" if args.chunk else "the default chunks"
        print(f"\nSHORT: {path.name}, {frames} frames; LONG: {long.name}, {long_frames} frames; {chunks}; one run each\n")
        print("| measurement | fps | note |")
        print("| --- | ---: | --- |")
        for name, rate, note in rows:
            print(f"| {name} | {'-' if rate is None else f'{rate:,.0f}'} | {note} |")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
