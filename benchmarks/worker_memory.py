"""Memory of a ``--jobs`` run's Dask workers over a long scan: the resident size of each worker
process, sampled every few seconds, with Dask's statistical profiler on and off.

Loops a clip ``--copies`` times into one long H.264 file, then for each mode runs the
command on it (``--no-video --backend cpu --jobs N``) in a child process while this script reads
the RSS of the workers (the children of the worker server they are forked from, or of the
command where they are spawned). The profiler is set through Dask's environment variable
``DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED``; ``default`` leaves it unset (what the command
itself chooses). Prints, per mode and worker, the RSS at its first and last sample and the slope
of a least-squares line over the samples after ``--skip`` seconds::

    python benchmarks/worker_memory.py [--clip samples/highway_traffic_320x240.avi] [--copies 24]
        [--jobs 2] [--every 3] [--skip 20] [--modes on,off]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from motiondetect.outputs.writer import VideoWriter  # noqa: E402
from motiondetect.sources.video import VideoHandler  # noqa: E402

MB = 1 << 20


def workers_of(command: psutil.Process) -> list[psutil.Process]:
    """The Dask worker processes of a run: the children of its forkserver, else the command's
    own children that are no resource tracker or server."""
    try:
        children = command.children(recursive=True)
    except psutil.Error:
        return []
    servers = [p for p in children if "forkserver" in " ".join(_cmdline(p))]
    if servers:
        return [p for p in children if p.ppid() in {s.pid for s in servers}]
    return [p for p in children if p.ppid() == command.pid and "resource_tracker" not in " ".join(_cmdline(p))]


def _cmdline(process: psutil.Process) -> list[str]:
    try:
        return process.cmdline()
    except psutil.Error:
        return []


def looped(clip: Path, copies: int, path: Path) -> int:
    """Write ``clip`` ``copies`` times over into ``path`` (H.264, 25 fps, x264 ultrafast); its frames."""
    written = 0
    with VideoWriter(path, 25.0, _size(clip), "ultrafast") as writer:
        for _ in range(copies):
            with VideoHandler(clip) as video:
                for frame in video:
                    writer.write(frame.image)
                    written += 1
    return written


def _size(clip: Path) -> tuple[int, int]:
    with VideoHandler(clip) as video:
        for frame in video:
            return frame.image.shape[1], frame.image.shape[0]
    raise SystemExit(f"{clip}: no frames")


def slope(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of ``(t, y)`` points (0 with fewer than two)."""
    if len(points) < 2:
        return 0.0
    n = len(points)
    mt = sum(t for t, _ in points) / n
    my = sum(y for _, y in points) / n
    var = sum((t - mt) ** 2 for t, _ in points)
    return sum((t - mt) * (y - my) for t, y in points) / var if var else 0.0


def measure(video: Path, jobs: int, mode: str, every: float, folder: Path) -> tuple[float, dict[int, list[tuple[float, float]]]]:
    """Run the command on ``video``; the seconds it took and each worker's ``(t, RSS MB)`` samples."""
    env = dict(os.environ)
    env.pop("DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED", None)
    if mode != "default":
        env["DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED"] = "True" if mode == "on" else "False"
    args = [sys.executable, "-m", "motiondetect", str(video), "--no-video", "--backend", "cpu", "--jobs", str(jobs)]
    args += ["--events", str(folder / f"events_{mode}.json"), "--overwrite", "-q"]
    started = time.perf_counter()
    child = subprocess.Popen(args, cwd=folder, env=env)
    command = psutil.Process(child.pid)
    samples: dict[int, list[tuple[float, float]]] = {}
    while child.poll() is None:
        now = time.perf_counter() - started
        for worker in workers_of(command):
            try:
                samples.setdefault(worker.pid, []).append((now, worker.memory_info().rss / MB))
            except psutil.Error:
                pass
        time.sleep(every)
    if child.returncode:
        raise SystemExit(f"the command failed ({child.returncode}) with the profiler {mode}")
    return time.perf_counter() - started, samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clip", type=Path, default=ROOT / "samples" / "highway_traffic_320x240.avi")
    parser.add_argument("--copies", type=int, default=24, help="copies of the clip joined [24]")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--every", type=float, default=3.0, help="seconds between samples [3]")
    parser.add_argument("--skip", type=float, default=20.0, help="seconds left out of the slope: start-up [20]")
    parser.add_argument("--modes", default="on,off", help="profiler settings to run, of on, off, default [on,off]")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="worker_memory_") as tmp:
        folder = Path(tmp)
        video = folder / "long.mp4"
        frames = looped(args.clip, args.copies, video)
        print(f"{video.name}: {args.clip.name} {args.copies} times, {frames} frames, --jobs {args.jobs}")
        print("| profiler | run s | worker | samples | RSS first MB | RSS last MB | slope MB/s (after skip) |")
        print("|---|---|---|---|---|---|---|")
        for mode in args.modes.split(","):
            seconds, samples = measure(video, args.jobs, mode, args.every, folder)
            for pid, points in sorted(samples.items()):
                late = [(t, y) for t, y in points if t >= args.skip]
                print(
                    f"| {mode} | {seconds:.0f} | {pid} | {len(points)} | {points[0][1]:.1f} "
                    f"(t={points[0][0]:.0f}s) | {points[-1][1]:.1f} (t={points[-1][0]:.0f}s) | {slope(late):.3f} |"
                )
            sys.stdout.flush()


if __name__ == "__main__":
    main()
