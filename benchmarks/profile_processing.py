"""Where the CUDA backend's per-frame time goes (processing: host frame in, host results out).

Times each step of ``MotionDetector.process`` on the CUDA backend separately, at one frame size:
the host copy into the pinned staging buffer, the host-to-device copy, the kernels (CUDA events,
frames already on the device), the device-to-host copies of the mask and the annotated frame,
the host copies that hand the results to the caller, and one launch of an empty kernel from
Python. Prints microseconds per frame (median of many). Usage::

    python benchmarks/profile_processing.py [--size 1920x1080] [--runs 200]
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import time

import numpy as np

from motiondetect.gpu.cuda_handler import CUDAHandler
from motiondetect.pipeline.config import build_filters, default_config
from motiondetect.pipeline.detector import MotionDetector


def median_us(step, runs: int) -> float:
    step()
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        step()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="1920x1080")
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    width, height = (int(v) for v in args.size.split("x"))
    rng = np.random.default_rng(0)
    frames = [rng.integers(0, 256, (height, width, 3), dtype=np.uint8) for _ in range(4)]
    with CUDAHandler() as cuda:
        import pycuda.driver as drv

        stream = cuda.stream
        pinned_in = cuda.pinned("profile_in", frames[0].shape)
        pinned_out = cuda.pinned("profile_out", frames[0].shape)
        pinned_mask = cuda.pinned("profile_mask", (height, width))
        device_frame = cuda.buffer("profile_frame", frames[0].shape)
        device_mask = cuda.buffer("profile_mask", (height, width))
        steps = {
            "host copy: frame into pinned staging (np.copyto)": lambda: np.copyto(pinned_in, frames[1]),
            "H2D: pinned frame to device": lambda: (device_frame.set_async(pinned_in, stream=stream), stream.synchronize()),
            "D2H: annotated frame to pinned": lambda: (device_frame.get_async(stream=stream, ary=pinned_out), stream.synchronize()),
            "D2H: mask to pinned": lambda: (device_mask.get_async(stream=stream, ary=pinned_mask), stream.synchronize()),
            "host copy: results out of pinned (frame + mask .copy())": lambda: (pinned_out.copy(), pinned_mask.copy()),
        }
        print(f"GPU: {cuda.device_name}; {width}x{height}; median of {args.runs}; microseconds per frame")
        print("| step | us |\n| --- | --- |")
        for name, step in steps.items():
            print(f"| {name} | {median_us(step, args.runs):,.0f} |")

        detector = MotionDetector(build_filters(default_config()), cuda=cuda)
        for frame in frames:
            detector.process(frame)
        cycle = itertools.cycle(frames)
        whole = median_us(lambda: detector.process(next(cycle)), args.runs)

        # Kernels alone: re-run the executor's kernel chain on the frame already on the device.
        device = cuda.buffer("frame", frames[0].shape)
        start, stop = drv.Event(), drv.Event()
        filters = detector.filters
        outputs = [
            cuda.buffer(("profile_stage", i), f.output_shape(frames[0].shape if i == 0 else (height, width))) for i, f in enumerate(filters)
        ]

        def kernels():
            image = device
            for i, flt in enumerate(filters):
                side = outputs[0] if flt.SIDE_INPUT == "reference" else device if flt.SIDE_INPUT == "frame" else None
                flt.apply(cuda, image, outputs[i], side)
                image = outputs[i]

        samples = []
        for _ in range(20):
            start.record(stream)
            for _ in range(50):
                kernels()
            stop.record(stream)
            stop.synchronize()
            samples.append(stop.time_since(start) * 1000 / 50)
        print(f"| kernels of the {len(filters)} filters, back to back on the device (CUDA events) | {statistics.median(samples):,.0f} |")
        host_launch = median_us(lambda: (kernels(), stream.synchronize()), args.runs)
        print(f"| the same launched from Python and synchronised (host clock) | {host_launch:,.0f} |")
        print(f"| whole MotionDetector.process (host frame in, owned results out) | {whole:,.0f} |")


if __name__ == "__main__":
    main()
