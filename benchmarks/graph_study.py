"""CUDA graphs (a feasibility study, not a feature): what replaying a batch of the GPU-resident
path as a graph would save, in GPU time and in the host's time to queue it.

One BatchDetector batch of 1080p pictures already on the device (``bench_gpu_resident``'s
``resident_batch``) is captured with the driver's stream capture (``cuStreamBeginCapture_v2``,
relaxed mode; ``cuStreamEndCapture``; ``cuGraphInstantiateWithFlags``), called through ctypes
since PyCUDA 2026.1 has no graph API, and replayed with ``cuGraphLaunch``. Against it, the same
batch queued from Python. GPU time: the batches queued behind a 25 ms hold, CUDA events around
them once the GPU reaches them (``held_times``); host time: the queueing of one batch. The
replay repeats the captured arguments (the model's pair number, the ring slot), so it measures
time, not a correct stream: docs/performance.md, "CUDA graphs". Prints a Markdown table.
Usage (on a CUDA machine)::

    python benchmarks/graph_study.py [--configs configs/default.yaml,benchmarks/two_clip_default.yaml] [--batches 1,8,32]
"""

from __future__ import annotations

import argparse
import ctypes
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_gpu_resident import held_times, pictures_of, resident_batch  # noqa: E402
from bench_throughput import make_input  # noqa: E402

from motiondetect.gpu.cuda_handler import CUDAHandler  # noqa: E402
from motiondetect.pipeline.config import load_config  # noqa: E402

CLIP = Path(__file__).resolve().parent.parent / "samples" / "highway_traffic_320x240.avi"
CAPTURE_RELAXED = 2  # CUstreamCaptureMode: other threads' calls (PyCUDA's) are not checked


class Driver:
    """The CUDA driver's graph calls through ctypes; each raises RuntimeError on a failed CUresult."""

    def __init__(self) -> None:
        self._lib = ctypes.CDLL("libcuda.so.1")

    def _call(self, name: str, *args) -> None:
        result = getattr(self._lib, name)(*args)
        if result != 0:
            raise RuntimeError(f"{name} returned CUresult {result}")

    def capture(self, stream, queue) -> tuple[ctypes.c_void_p, int]:
        """Run ``queue()`` under capture on the PyCUDA ``stream``; return the instantiated graph
        and its number of nodes."""
        handle = ctypes.c_void_p(stream.handle)
        self._call("cuStreamBeginCapture_v2", handle, CAPTURE_RELAXED)
        queue()
        graph, executable, nodes = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_size_t()
        self._call("cuStreamEndCapture", handle, ctypes.byref(graph))
        self._call("cuGraphInstantiateWithFlags", ctypes.byref(executable), graph, ctypes.c_ulonglong(0))
        self._call("cuGraphGetNodes", graph, None, ctypes.byref(nodes))
        return executable, nodes.value

    def launch(self, executable: ctypes.c_void_p, stream) -> None:
        self._call("cuGraphLaunch", executable, ctypes.c_void_p(stream.handle))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--configs", default="configs/default.yaml,benchmarks/two_clip_default.yaml")
    parser.add_argument("--batches", default="1,8,32", help="batch sizes K, comma-separated")
    args = parser.parse_args()
    driver = Driver()
    with CUDAHandler() as cuda, tempfile.TemporaryDirectory() as tmp:
        batches = [int(k) for k in args.batches.split(",")]
        path, _ = make_input(CLIP, (1920, 1080), max(batches), Path(tmp))
        pictures = pictures_of(path)
        print(f"GPU: {cuda.device_name}, 1920x1080, median of 3")
        print(
            "| pipeline | K | graph nodes | GPU µs a batch, Python / graph | host µs a batch, Python / graph | frames/s of kernels, Python / graph |"
        )
        print("| --- | ---: | ---: | --- | --- | --- |")
        for name in args.configs.split(","):
            for k in batches:
                detector, loaded = resident_batch(cuda, pictures, k, load_config(name), warm=3)

                def queue(detector=detector, loaded=loaded):
                    return detector._queue(loaded, loaded.geo)

                def finish(queued, detector=detector):
                    list(detector._collect(queued))

                executable, nodes = driver.capture(cuda.stream, queue)
                gpu_py, host_py = held_times(cuda, queue, finish)
                gpu_graph, host_graph = held_times(cuda, lambda executable=executable: driver.launch(executable, cuda.stream))
                print(
                    f"| {Path(name).stem} | {k} | {nodes} | {gpu_py * 1e6:,.0f} / {gpu_graph * 1e6:,.0f} | "
                    f"{host_py * 1e6:,.0f} / {host_graph * 1e6:,.0f} | {k / gpu_py:,.0f} / {k / gpu_graph:,.0f} |"
                )


if __name__ == "__main__":
    main()
