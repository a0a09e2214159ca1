"""The Dask cluster a chunked run uses: a local one (``--jobs``) or an existing one (``--scheduler``).

Dask distributed is an optional extra (``pip install "motiondetect[dask]"``), imported only when a
chunked run starts.

- CPU backend: ``LocalCluster`` with N worker processes of one thread each (``--jobs N``; ``auto``:
  one per core), so the decoders, the filters and Python itself run side by side.
- CUDA backend: N chunks scanned at once per GPU (``--jobs N``; ``auto``: :data:`GPU_SLOTS`), each
  by a worker process of one thread with its own NVDEC decoder and CUDA stream, pinned to its GPU
  through ``CUDA_VISIBLE_DEVICES`` (a ``SpecCluster`` of nannies; :func:`gpu_worker_specs`). A
  process per chunk, not one process of N threads (dask-cuda's ``LocalCUDACluster``): the
  per-frame Python of N decoders in one process queues on its interpreter lock (measured in
  :func:`gpu_worker_specs`). Each starts its CUDA driver as it comes up (:func:`dask_setup`).
- ``--scheduler ADDRESS``: the workers of an existing cluster, which must reach the inputs and the
  output folders at the same paths (a shared file system).

A local cluster's worker processes are forked (on Linux) from one server process that has already
imported what a chunk task needs (:func:`start_worker_server`), started when the run starts, so its
imports overlap the run's planning; each worker then starts with those modules in place instead
of importing Dask, NumPy, OpenCV, PyAV, PyCUDA and this package afresh as a spawned interpreter
(Dask's default).

A local cluster's *slots*, the chunks it scans at once, are known before it starts
(:func:`local_slots`), so a run balances its chunk length over them
(:mod:`motiondetect.scaleout.balance`); an existing cluster's are not, and its runs keep the
aimed length.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import signal
import sys
import threading
from typing import Iterator

from motiondetect.core.errors import MotionDetectError, UsageError

log = logging.getLogger("motiondetect")

#: Chunks scanned at once per GPU by default: measured on an H100 at 1080p H.264, 8 NVDEC decoder
#: threads decoded 1,842 fps together, 4 threads 1,492 (the issue's measurement; the GPU has 7
#: NVDEC engines); on an H200, 8 threads 3,316 fps and 16 threads 3,486.
GPU_SLOTS = 8
#: glibc malloc settings of a local cluster's workers, set before they start (Dask's
#: ``distributed.nanny.pre-spawn-environ``). Dask's own ``MALLOC_TRIM_THRESHOLD_=65536`` also
#: pins glibc's mmap threshold at 128 KiB, so every larger temporary array (a filter's per-frame
#: scratch) is mapped and its pages faulted in afresh each frame: one CPU chunk task of 1,250
#: 1080p frames took 21.6 s with it, 13.4 s with these and 13.1 s in a plain process (2-core VM).
#: The cost: a worker may keep up to 128 MiB it freed. Variables already in this process's
#: environment win (Dask reads them first), as does a user's own export.
WORKER_MALLOC = {"MALLOC_TRIM_THRESHOLD_": 128 << 20, "MALLOC_MMAP_THRESHOLD_": 32 << 20}
#: Dask settings of a local cluster's workers (their nannies hand them over): no statistical
#: profiler. It samples every thread's stack each 10 ms and keeps a tree per second for
#: ``distributed.admin.low-level-log-length`` (1,000) seconds: a long scan's workers grew by
#: 0.10 MB/s, to about +110 MB each (``benchmarks/worker_memory.py``: 0.003 MB/s without it).
#: Off with ``-v`` too: only the dashboard's Profile page needs it. An existing cluster's
#: (``--scheduler``) settings are its owner's.
WORKER_PROFILE = {"distributed.worker.profile.enabled": False}
#: Modules the server that local workers are forked from imports first (:func:`start_worker_server`):
#: Dask's worker, and what a chunk task imports. The main module of a command started as
#: ``motiondetect`` or ``python -m motiondetect``, which every worker imports again, is the CLI.
WORKER_PRELOAD = (
    "distributed",
    "numpy",
    "cv2",
    "av",
    "motiondetect.apps.cli",
    "motiondetect.scaleout.chunk_task",
    "motiondetect.pipeline.batch",
)
#: Imported too for GPU workers: PyCUDA's modules load the driver library without starting it
#: (``cuInit`` runs in each forked worker, never in the server).
GPU_PRELOAD = ("pycuda.driver", "pycuda.gpuarray", "pycuda.compiler")
#: Local workers are forked from a server (:func:`start_worker_server`): on Linux only. Elsewhere
#: forking after system frameworks have loaded is unsafe, and Dask's spawned workers are kept.
FORK_WORKERS = sys.platform.startswith("linux")
#: Seconds to wait for an existing scheduler to answer.
CONNECT_TIMEOUT = 10
#: Seconds past :data:`CONNECT_TIMEOUT` that :func:`check_scheduler` waits for an answer: Dask's
#: connect retries a refused TCP connection for the whole timeout, so its own error (nothing
#: listens there) comes first and is not taken for a silent server.
ANSWER_GRACE = 1.0
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


def visible_gpus() -> list[str]:
    """The CUDA devices this process sees, as ``CUDA_VISIBLE_DEVICES`` entries that select each
    one alone (its own entries when it is set, else ``"0"``, ``"1"``, ...); counted with PyCUDA
    as :func:`~motiondetect.gpu.platform.cuda_device_error` does; ``["0"]`` when it cannot tell."""
    from motiondetect.gpu.platform import cuda_device_error

    count = 1
    if cuda_device_error() is None:
        import pycuda.driver as drv

        try:
            count = max(1, drv.Device.count())
        except drv.Error:
            pass
    given = os.environ.get("CUDA_VISIBLE_DEVICES")
    if given is not None:  # CUDA counts the entries before the first invalid one
        entries = [entry.strip() for entry in given.split(",")]
        return entries[:count]
    return [str(index) for index in range(count)]


def gpu_worker_specs(slots: int, devices: list[str]) -> dict[str, dict]:
    """``SpecCluster`` worker specifications: for each device, ``slots`` processes of one thread,
    each a ``distributed.Nanny`` whose worker sees only that device (``CUDA_VISIBLE_DEVICES``), on
    the loopback interface as ``LocalCluster`` puts its workers.

    One thread per process: ``--no-video``, 8 slots on one H200 (the default pipeline), a
    30,000-frame 1080p file took 23.4 s in one process of 8 threads (26.8 s in dask-cuda's
    worker), 17.1 s in 2 processes of 4, 14.2-14.4 s in 4 of 2 and 14.4-14.7 s in 8 of 1; a
    90,000-frame file 35.5-35.9 s in 4 of 2 and 34.6-34.7 s in 8 of 1 (``docs/performance.md``).

    Args:
        slots: chunks scanned at once per GPU, >= 1.
        devices: ``CUDA_VISIBLE_DEVICES`` entries, one per GPU (:func:`visible_gpus`).

    Returns:
        ``{name: {"cls": Nanny, "options": {...}}}``, names ``gpu<device>-<n>``.
    """
    from distributed import Nanny

    return {
        f"gpu{device}-{number}": {
            "cls": Nanny,
            "options": {
                "nthreads": 1,
                "env": {"CUDA_VISIBLE_DEVICES": device},
                "host": "127.0.0.1",
                "silence_logs": logging.ERROR,
                "preload": [__name__],  # dask_setup: the driver starts as the worker comes up
            },
        }
        for device in devices
        for number in range(slots)
    }


def dask_setup(worker) -> None:
    """Dask's preload hook, run in each local GPU worker as it starts (:func:`gpu_worker_specs`):
    start the CUDA driver and the device's primary context on a thread
    (:func:`motiondetect.gpu.early_start.start`), as the command does during its imports, so the
    worker's first chunk finds them made. Eight workers of one H200 starting them at once took
    0.8-1.0 s in their first chunk's set-up; a run starts its cluster before it plans the chunks,
    so this overlaps the planning. The worker sees one device (``CUDA_VISIBLE_DEVICES``)."""
    from motiondetect.gpu import early_start

    early_start.start()


def worker_environment() -> dict[str, str]:
    """The environment a local cluster's workers must start with: Dask's
    ``distributed.nanny.pre-spawn-environ`` (one BLAS/OpenMP thread) and :data:`WORKER_MALLOC`, a
    variable already set in this process winning, as Dask reads them."""
    import dask

    wanted = {**dask.config.get("distributed.nanny.pre-spawn-environ", {}), **WORKER_MALLOC}
    return {name: os.environ.get(name, str(value)) for name, value in wanted.items() if value is not None}


def start_worker_server(cuda: bool) -> bool:
    """Start the process a local cluster's worker processes will be forked from (Python's
    ``forkserver``), importing :data:`WORKER_PRELOAD` (and :data:`GPU_PRELOAD` with ``cuda``) while
    the caller goes on; :func:`open_client` then starts its workers from it.

    Dask spawns each worker as a fresh interpreter that imports Dask, then the task's modules. On
    an H200 host with slower cores, ``--no-video --jobs 8`` on a 30,000-frame 1080p file, 4
    interleaved pairs: the 8 workers joined 4.4-5.2 s after the cluster started, and the run took
    17.0-18.1 s; forked from this server, 1.9-3.0 s and 15.2-17.0 s, faster in each pair, with the
    same events (``docs/performance.md``, "Scale-out"). The server
    starts with :func:`worker_environment`, which C libraries read only at a process's start (glibc's
    malloc, OpenBLAS); a forked worker inherits their state. A second call in one process reuses
    the running server, with the environment it started with.

    Returns:
        Whether the server runs (:data:`FORK_WORKERS` and Dask installed); ``False``: workers
        are spawned.
    """
    if not FORK_WORKERS or dask_problem() is not None:
        return False
    import multiprocessing.forkserver

    import distributed.utils

    multiprocessing.get_context("forkserver").set_forkserver_preload(list(WORKER_PRELOAD + (GPU_PRELOAD if cuda else ())))
    # Dask sets its own preload on its first forkserver worker unless told it is set: it imports
    # every package it knows first (pandas among them), in this process too, about 1 s.
    if hasattr(distributed.utils, "_forkserver_preload_set"):
        distributed.utils._forkserver_preload_set = True
    # Only variables this process lacks differ (worker_environment keeps the ones it has).
    added = {name: value for name, value in worker_environment().items() if name not in os.environ}
    os.environ.update(added)
    # The workers forked from the server keep its SIGINT disposition: ignored, so a Ctrl-C at the
    # terminal (sent to the whole process group) stops the run through this process, which closes
    # the cluster, instead of printing a KeyboardInterrupt traceback from every worker.
    main_thread = threading.current_thread() is threading.main_thread()
    before = signal.signal(signal.SIGINT, signal.SIG_IGN) if main_thread else None
    try:
        multiprocessing.forkserver.ensure_running()
    finally:
        if main_thread:
            signal.signal(signal.SIGINT, before)
        for name in added:
            del os.environ[name]
    return True


def local_slots(jobs: int | None, cuda: bool) -> int:
    """Chunks the local cluster of :func:`open_client` scans at once (its worker threads), known
    before it starts, for :func:`~motiondetect.scaleout.balance.balance_chunks`.

    Args:
        jobs: ``--jobs`` (``None``: auto).
        cuda: the run uses the CUDA backend here.

    Returns:
        With ``cuda``: the GPUs (:func:`visible_gpus`) times ``jobs`` or :data:`GPU_SLOTS`;
        otherwise the worker processes of one thread each (``jobs``, or the CPU cores).
    """
    if cuda:
        return len(visible_gpus()) * (jobs or GPU_SLOTS)
    return jobs or os.cpu_count() or 1


def check_scheduler(address: str, timeout: float) -> None:
    """Ask the server at ``address`` what it is (Dask's ``identity`` call), within a hard deadline.

    ``distributed.Client(address, timeout=...)`` bounds only the TCP connection: Dask's handshake
    that follows has no deadline, so a server that accepts the connection and never answers in
    Dask's protocol (the dashboard's port, another HTTP server, a silent socket) kept the
    command waiting forever. The question is asked on a thread of its own, with its own event
    loop, under ``timeout + ANSWER_GRACE`` seconds; its connection is closed when it ends.

    Args:
        address: ``--scheduler`` address (:func:`scheduler_arg`).
        timeout: seconds for the connection and the answer alike (Dask retries a refused
            connection until then).

    Raises:
        UsageError: the address's transport is not usable here (``ucx://`` without its package,
            ``tls://`` without a certificate in Dask's configuration).
        MotionDetectError: nothing accepts the connection within ``timeout`` seconds; the
            server does not answer within ``timeout + ANSWER_GRACE`` seconds, answers in
            another protocol, or is a Dask server other than a scheduler (a worker).
    """
    from distributed.comm import CommClosedError, connect, parse_address
    from distributed.comm.registry import get_backend
    from distributed.core import send_recv
    from distributed.security import Security

    scheme = parse_address(address)[0]
    try:  # ucx:// without its package (a TypeError from Dask, before any connection)
        get_backend(scheme).get_connector()
    except Exception as exc:
        raise UsageError(f"--scheduler {address!r}: Dask's {scheme}:// transport is not usable here ({exc})") from None

    connection_args = Security().get_connection_args("client")  # TLS settings from Dask's configuration, as the Client's
    if scheme in ("tls", "wss") and connection_args.get("ssl_context") is None:
        raise UsageError(f"--scheduler {address!r}: {scheme}:// needs a certificate in Dask's configuration (distributed.comm.tls)")

    async def ask() -> object:
        comm = await connect(address, timeout=timeout, **connection_args)
        try:
            return await send_recv(comm, op="identity", close=True)  # both ends close after the answer
        finally:
            comm.abort()  # on a failure

    outcome: dict[str, object] = {}

    def run() -> None:
        try:
            outcome["identity"] = asyncio.run(asyncio.wait_for(ask(), timeout + ANSWER_GRACE))
        except BaseException as exc:  # reported by the caller's thread
            outcome["error"] = exc

    # A thread, so that no event loop of the caller's is in the way, and so that the caller stops
    # waiting at the deadline even if the loop could not close (a daemon: it never holds up exit).
    thread = threading.Thread(target=run, name="motiondetect-scheduler-check", daemon=True)
    thread.start()
    thread.join(timeout + ANSWER_GRACE + 1)
    error = outcome.get("error")
    identity = outcome.get("identity")
    if isinstance(error, OSError) and not isinstance(error, (CommClosedError, TimeoutError, asyncio.TimeoutError)):
        # Dask's connect gave up: nothing accepted the connection.
        raise MotionDetectError(f"cannot reach the Dask scheduler at {address!r} within {timeout:g} s ({type(error).__name__})")
    if error is None and identity is None or isinstance(error, (TimeoutError, asyncio.TimeoutError)):
        raise MotionDetectError(
            f"{address!r} accepted the connection but did not answer as a Dask scheduler within {timeout:g} s "
            "(is it the scheduler's port, 8786 by default, and not its dashboard's?)"
        )
    if error is not None:  # closed on Dask's handshake, or answered in another protocol
        raise MotionDetectError(
            f"{address!r} did not answer as a Dask scheduler (it closed the connection or answered in another protocol: {type(error).__name__})"
        )
    # A scheduler's identity lists its workers (a subclass of Dask's Scheduler has another type).
    if not isinstance(identity, dict) or "workers" not in identity:
        kind = identity.get("type") if isinstance(identity, dict) else None
        raise MotionDetectError(f"{address!r} did not answer as a Dask scheduler: it is a Dask {kind or 'server of another kind'}")


@contextlib.contextmanager
def open_client(jobs: int | None, scheduler: str | None, cuda: bool, dashboard: bool = False) -> Iterator:
    """A ``distributed.Client`` on the cluster the run asked for; closes what it started.

    Args:
        jobs: ``--jobs`` (``None``: auto).
        scheduler: ``--scheduler`` address, or ``None`` to start a local cluster.
        cuda: the run uses the CUDA backend here: worker processes per GPU (module docstring).
        dashboard: log the dashboard's link (``-v``).

    Raises:
        UsageError: Dask distributed is not installed.
        MotionDetectError: the scheduler does not answer within about :data:`CONNECT_TIMEOUT`
            seconds, or the server there is no Dask scheduler (:func:`check_scheduler`).
    """
    problem = dask_problem()
    if problem:
        raise UsageError(f"--jobs and --scheduler need Dask: {problem}")
    import dask
    from distributed import Client, LocalCluster

    for name in ("distributed", "bokeh", "tornado"):  # their INFO lines would bury the command's own
        logging.getLogger(name).setLevel(logging.ERROR)
    # The dashboard on a free port: several runs (and the user's own cluster) may share the machine.
    address = ":0"
    with contextlib.ExitStack() as stack:
        if scheduler is not None:
            check_scheduler(scheduler, CONNECT_TIMEOUT)  # the Client's own handshake would wait for ever
            try:
                client = stack.enter_context(Client(scheduler, timeout=f"{CONNECT_TIMEOUT}s"))
            except (OSError, TimeoutError) as exc:
                raise MotionDetectError(
                    f"cannot reach the Dask scheduler at {scheduler!r} within {CONNECT_TIMEOUT} s ({type(exc).__name__})"
                ) from None
        else:
            environ = {f"distributed.nanny.pre-spawn-environ.{name}": value for name, value in WORKER_MALLOC.items()}
            # Read as the nannies and the scheduler start. No work stealing: each chunk is pinned
            # to the slot that scans the chunk before it (chunked._run_jobs); a stolen chunk would
            # start afresh and leave its slot's open scan unused.
            settings = {**environ, "distributed.scheduler.work-stealing": False, **WORKER_PROFILE}
            if start_worker_server(cuda):  # already running when the run started it
                settings["distributed.worker.multiprocessing-method"] = "forkserver"
            stack.enter_context(dask.config.set(settings))
            if cuda:  # the same count as local_slots
                from distributed import Scheduler, SpecCluster

                scheduler_spec = {"cls": Scheduler, "options": {"host": "127.0.0.1", "dashboard_address": address}}
                specs = gpu_worker_specs(jobs or GPU_SLOTS, visible_gpus())
                cluster = stack.enter_context(SpecCluster(workers=specs, scheduler=scheduler_spec, silence_logs=logging.ERROR))
            else:
                processes = jobs or os.cpu_count() or 1  # local_slots counts them the same way
                cluster = stack.enter_context(
                    LocalCluster(
                        n_workers=processes, threads_per_worker=1, processes=True, dashboard_address=address, silence_logs=logging.ERROR
                    )
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
