"""On-device rate of the background models side by side: the default pipeline (Gaussian model)
against presets with another model (``configs/subsense.yaml``), at 1920x1080 on the GPU.

The same measurement as ``bench_gpu_resident.py``'s "on-device pipeline" row (BatchDetector on
a batch already on the device, no decode or upload, median of ``--repeats`` after a warm-up),
for each config and batch size K; the share is against the default pipeline at the same K. That
rate waits for each batch before queueing the next, so at 1080p it measures the host's queueing
(Python, about as long as the kernels) as much as the GPU. A second table gives the kernels'
own rate (``bench_gpu_resident.kernel_rate``: the host queues up to 20 batches while the GPU is held,
then events time the GPU's run of them), and a third the host's time per batch (queueing the
launches, handing out the results), so a change that makes the host the limit shows as such.
Issue 15's target for a new default: at least 50 % of the on-device rate at 1080p of the default
it was written against, kept as ``benchmarks/two_clip_default.yaml``. Usage::

    python benchmarks/bench_models.py [CLIP] [--configs configs/subsense.yaml] [--batches 1,32] [--size 1920x1080]
    python benchmarks/bench_models.py --configs benchmarks/two_clip_default.yaml,configs/subsense.yaml --batches 1,8,32
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_gpu_resident import host_times, kernel_rate, on_device_rate, pictures_of  # noqa: E402
from bench_throughput import make_input  # noqa: E402

from motiondetect.gpu.cuda_handler import CUDAHandler  # noqa: E402
from motiondetect.pipeline.config import default_config, load_config  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("clip", nargs="?", default=str(ROOT / "samples" / "highway_traffic_320x240.avi"))
    parser.add_argument(
        "--configs", default=str(ROOT / "configs" / "subsense.yaml"), help="comma-separated presets to compare with the default"
    )
    parser.add_argument("--batches", default="1,32", help="batch sizes K [default: 1,32]")
    parser.add_argument("--size", default="1920x1080")
    parser.add_argument("--frames", type=int, default=64, help="frames of the upscaled clip (at least the largest K)")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    size = tuple(int(v) for v in args.size.split("x"))
    batches = [int(k) for k in args.batches.split(",")]
    configs = {"default (gaussian_background)": default_config(), **{Path(p).name: load_config(p) for p in args.configs.split(",") if p}}
    with CUDAHandler() as cuda, tempfile.TemporaryDirectory() as tmp:
        print(f"GPU: {cuda.device_name}")
        path, _ = make_input(Path(args.clip), size, max(args.frames, max(batches)), Path(tmp))
        pictures = pictures_of(path)
        rates = {(name, k): on_device_rate(cuda, pictures, k, args.repeats, config) for name, config in configs.items() for k in batches}
        hosts = {(name, k): host_times(cuda, pictures, k, config) for name, config in configs.items() for k in batches}
        kernels = {(name, k): kernel_rate(cuda, pictures, k, config) for name, config in configs.items() for k in batches}
    print(f"on-device frames per second at {size[0]}x{size[1]}, median of {args.repeats}; in brackets: share of the default at the same K")
    print("| pipeline | " + " | ".join(f"K = {k}" for k in batches) + " |")
    print("| --- |" + " --- |" * len(batches))
    default = next(iter(configs))
    for name in configs:
        cells = [f"{rates[name, k]:,.0f}" + ("" if name == default else f" ({rates[name, k] / rates[default, k]:.0%})") for k in batches]
        print(f"| {name} | " + " | ".join(cells) + " |")
    print("\nkernels alone, frames per second: the host queues up to 20 batches while the GPU is held, then the GPU runs them")
    print("| pipeline | " + " | ".join(f"K = {k}" for k in batches) + " |")
    print("| --- |" + " --- |" * len(batches))
    for name in configs:
        cells = [
            f"{kernels[name, k]:,.0f}" + ("" if name == default else f" ({kernels[name, k] / kernels[default, k]:.0%})") for k in batches
        ]
        print(f"| {name} | " + " | ".join(cells) + " |")
    print("\nhost milliseconds per batch (median of 200): queueing the launches / handing out the results")
    print("| pipeline | " + " | ".join(f"K = {k}" for k in batches) + " |")
    print("| --- |" + " --- |" * len(batches))
    for name in configs:
        print(f"| {name} | " + " | ".join(f"{hosts[name, k][0]:.2f} / {hosts[name, k][1]:.2f}" for k in batches) + " |")


if __name__ == "__main__":
    main()
