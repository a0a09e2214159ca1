"""Per-filter GPU time of the kernel engine against the cuBLAS engine, at 1080p and 2160p.

Each filter runs on device-resident random frames; the time of one ``apply`` is measured with
CUDA events around ``--runs`` back-to-back launches, after ``--warmup`` launches, and the median
of ``--repeats`` such measurements is printed as a Markdown table. Usage::

    python benchmarks/bench_engines.py [--runs 50] [--repeats 7]
"""

from __future__ import annotations

import argparse
import statistics

import numpy as np

from motiondetect.filters import REGISTRY, Kind
from motiondetect.gpu.cuda_handler import CUDAHandler

SIZES = {"1920x1080": (1080, 1920), "3840x2160": (2160, 3840)}


def device_image(rng, kind, size):
    import pycuda.gpuarray as gpuarray

    shape = (*size, 3) if kind is Kind.BGR else size
    return gpuarray.to_gpu(rng.integers(0, 256, shape, dtype=np.uint8))


def time_filter(cuda, flt, size, runs, warmup, repeats) -> float:
    """Median microseconds of one ``flt.apply`` on a frame of ``size`` (H, W)."""
    import pycuda.driver as drv
    import pycuda.gpuarray as gpuarray

    rng = np.random.default_rng(0)
    src = device_image(rng, flt.INPUT, size)
    side = {"reference": Kind.GRAY, "frame": Kind.BGR}.get(flt.SIDE_INPUT)
    side = None if side is None else device_image(rng, side, size)
    dst = gpuarray.empty(flt.output_shape(src.shape, None if side is None else side.shape), np.uint8)
    for _ in range(warmup):
        flt.apply(cuda, src, dst, side)
    start, stop = drv.Event(), drv.Event()
    samples = []
    for _ in range(repeats):
        start.record(cuda.stream)
        for _ in range(runs):
            flt.apply(cuda, src, dst, side)
        stop.record(cuda.stream)
        stop.synchronize()
        samples.append(stop.time_since(start) * 1000 / runs)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    with CUDAHandler() as cuda:
        print(f"GPU: {cuda.device_name}; median of {args.repeats} x {args.runs} launches, CUDA events, microseconds per frame")
        print("| filter | engine | " + " | ".join(SIZES) + " |")
        print("| --- | --- |" + " --- |" * len(SIZES))
        for name, cls in REGISTRY.items():
            for engine in cls.ENGINES:
                flt = cls(engine=engine)
                cells = [f"{time_filter(cuda, flt, size, args.runs, args.warmup, args.repeats):,.1f}" for size in SIZES.values()]
                print(f"| {name} | {engine} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
