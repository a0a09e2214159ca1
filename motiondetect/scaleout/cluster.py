"""The Dask cluster a chunked run uses: a local one (``--jobs``) or an existing one (``--scheduler``).

Dask distributed is an optional extra (``pip install "motiondetect[dask]"``); dask-cuda, for one
worker per GPU, is installed by hand on GPU machines (``pip install dask-cuda``). Both are
imported only when a chunked run starts.

- CPU backend: ``LocalCluster`` with N worker processes of one thread each (``--jobs N``; ``auto``:
  one per core), so the decoders, the filters and Python itself run side by side.
- CUDA backend: dask-cuda's ``LocalCUDACluster``, one worker process per GPU, each with N threads
  (``--jobs N``; ``auto``: :data:`GPU_THREADS`), each thread scanning a chunk with its own decoder
  and CUDA stream, so the GPU's NVDEC engines and its kernels are all busy.
- ``--scheduler ADDRESS``: the workers of an existing cluster, which must reach the inputs and the
  output folders at the same paths (a shared file system).

A local cluster's *slots*, the chunks it scans at once, are known before it starts
(:func:`local_slots`), so a run balances its chunk length over them
(:mod:`motiondetect.scaleout.balance`); an existing cluster's are not, and its runs keep the
aimed length.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
from typing import Iterator

from motiondetect.core.errors import MotionDetectError, UsageError

log = logging.getLogger("motiondetect")

#: Chunks scanned at once per GPU by default: measured on an H100 at 1080p H.264, 8 decoder
#: threads in one dask-cuda worker decoded 1,842 fps together, 4 threads 1,492 (the issue's
#: measurement; the GPU has 7 NVDEC engines).
GPU_THREADS = 8
#: Seconds to wait for an existing scheduler to answer.
CONNECT_TIMEOUT = 10
#: A scheduler address: optional protocol, a host, a port.
_ADDRESS = re.compile(r"^(?:(?:tcp|tls|ws|wss|ucx|inproc)://)?[A-Za-z0-9_.\-\[\]:]*[A-Za-z0-9\]]:\d{1,5}$")


def jobs_arg(text: str) -> int:
    """argparse ``type`` for ``--jobs``: a whole number >= 1, or ``auto`` (0: chosen here)."""
    import argparse

    if text.strip().lower() == "auto":
        return 0
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of jobs >= 1 or 'auto', got {text!r}")
    return value


def scheduler_arg(text: str) -> str:
    """argparse ``type`` for ``--scheduler``: ``[PROTOCOL://]HOST:PORT``, port 1..65535."""
    import argparse

    text = text.strip()
    match = _ADDRESS.match(text)
    port = int(text.rsplit(":", 1)[1]) if match else 0
    if not match or not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"expected a Dask scheduler address such as tcp://10.0.0.5:8786 (HOST:PORT), got {text!r}")
    return text


def dask_problem() -> str | None:
    """Why Dask distributed cannot be used here, or ``None``."""
    try:
        import distributed  # noqa: F401
    except ImportError as exc:
        return f'Dask distributed is not installed ({exc}); pip install "motiondetect[dask]"'
    return None


def visible_gpus() -> int:
    """CUDA devices this process sees (``CUDA_VISIBLE_DEVICES`` applies), counted with PyCUDA as
    :func:`~motiondetect.gpu.platform.cuda_device_error` does; 1 when it cannot tell."""
    from motiondetect.gpu.platform import cuda_device_error

    if cuda_device_error() is not None:
        return 1
    import pycuda.driver as drv

    try:
        return max(1, drv.Device.count())
    except drv.Error:
        return 1


def _cuda_cluster_class():
    """dask-cuda's ``LocalCUDACluster``, or ``None`` when dask-cuda is not installed."""
    try:
        from dask_cuda import LocalCUDACluster
    except ImportError:
        return None
    return LocalCUDACluster


def local_slots(jobs: int | None, cuda: bool) -> int:
    """Chunks the local cluster of :func:`open_client` scans at once (its worker threads), known
    before it starts, for :func:`~motiondetect.scaleout.balance.balance_chunks`.

    Args:
        jobs: ``--jobs`` (``None``: auto).
        cuda: the run uses the CUDA backend here.

    Returns:
        With ``cuda`` and dask-cuda installed: :func:`visible_gpus` times the threads per worker
        (``jobs``, or :data:`GPU_THREADS`); otherwise the worker processes of one thread each
        (``jobs``, or the CPU cores).
    """
    if cuda and _cuda_cluster_class() is not None:
        return visible_gpus() * (jobs or GPU_THREADS)
    return jobs or os.cpu_count() or 1


@contextlib.contextmanager
def open_client(jobs: int | None, scheduler: str | None, cuda: bool, dashboard: bool = False) -> Iterator:
    """A ``distributed.Client`` on the cluster the run asked for; closes what it started.

    Args:
        jobs: ``--jobs`` (``None``: auto).
        scheduler: ``--scheduler`` address, or ``None`` to start a local cluster.
        cuda: the run uses the CUDA backend here: one dask-cuda worker per GPU.
        dashboard: log the dashboard's link (``-v``).

    Raises:
        UsageError: Dask (or dask-cuda for a local GPU cluster) is not installed.
        MotionDetectError: the scheduler does not answer.
    """
    problem = dask_problem()
    if problem:
        raise UsageError(f"--jobs and --scheduler need Dask: {problem}")
    from distributed import Client, LocalCluster

    for name in ("distributed", "bokeh", "tornado"):  # their INFO lines would bury the command's own
        logging.getLogger(name).setLevel(logging.ERROR)
    # The dashboard on a free port: several runs (and the user's own cluster) may share the machine.
    address = ":0"
    with contextlib.ExitStack() as stack:
        if scheduler is not None:
            try:
                client = stack.enter_context(Client(scheduler, timeout=f"{CONNECT_TIMEOUT}s"))
            except (OSError, TimeoutError) as exc:
                raise MotionDetectError(
                    f"cannot reach the Dask scheduler at {scheduler!r} within {CONNECT_TIMEOUT} s ({type(exc).__name__})"
                ) from None
        else:
            cluster = None
            if cuda:  # the same choice as local_slots
                cuda_cluster = _cuda_cluster_class()
                if cuda_cluster is None:
                    log.info("notice: dask-cuda is not installed (pip install dask-cuda); one worker process per job on the GPU")
                else:
                    cluster = stack.enter_context(cuda_cluster(threads_per_worker=jobs or GPU_THREADS, dashboard_address=address))
            if cluster is None:
                workers = jobs or os.cpu_count() or 1  # local_slots counts them the same way
                cluster = stack.enter_context(
                    LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=address)
                )
            client = stack.enter_context(Client(cluster))
        workers = client.scheduler_info().get("workers", {})
        if dashboard:
            log.info(
                "Dask: %d workers, %d threads; dashboard %s",
                len(workers),
                sum(w.get("nthreads", 0) for w in workers.values()),
                client.dashboard_link,
            )
        yield client
