"""The CUDA driver started on a thread during the imports (motiondetect.gpu.early_start), and
the lazy package namespace that lets it start first."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import textwrap
import weakref
from contextlib import ExitStack
from pathlib import Path

import pytest

import motiondetect
from motiondetect.gpu import backend, early_start
from motiondetect.sources.nvdec import NvdecSource


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["video.mp4"], True),
        (["video.mp4", "--backend", "cuda", "--no-video"], True),
        (["--camera", "0"], True),
        (["--help"], False),
        (["-h"], False),
        (["--version"], False),
        (["evaluate", "samples/dev"], False),
        (["video.mp4", "--backend", "cpu"], False),
        (["video.mp4", "--backend=cpu"], False),
        (["video.mp4", "--jobs", "8"], False),
        (["video.mp4", "--jobs=auto"], False),
        (["video.mp4", "--scheduler", "tcp://10.0.0.1:8786"], False),
    ],
)
def test_wanted_only_where_this_process_may_enter_a_cuda_handler(argv, expected):
    assert early_start.wanted(argv) is expected


class FakeDriver:
    """libcuda's four calls, recorded; ``fail`` names one that returns an error."""

    def __init__(self, fail: str | None = None) -> None:
        self.calls: list[str] = []
        self.fail = fail

    def __getattr__(self, name: str):
        if not name.startswith("cuDevicePrimaryCtx") and name not in ("cuInit", "cuDeviceGet"):
            raise AttributeError(name)

        def call(*args) -> int:
            self.calls.append(name)
            return 1 if name == self.fail else 0

        return call


@pytest.fixture
def fresh(monkeypatch):
    """early_start as in a new process, with ctypes.CDLL answering ``driver``."""
    monkeypatch.setattr(early_start, "_thread", None)
    monkeypatch.setattr(early_start, "_retained", None)
    monkeypatch.setattr(early_start, "_kept", False)
    monkeypatch.setattr(early_start, "_left_to_exit", None)

    def use(driver) -> None:
        def cdll(name):
            if driver is None:
                raise OSError(f"{name}: cannot open shared object file")
            return driver

        monkeypatch.setattr(ctypes, "CDLL", cdll)

    return use


def test_the_retain_is_released_once_by_finish(fresh):
    driver = FakeDriver()
    fresh(driver)
    early_start.start(0)
    early_start.start(0)  # once per process
    early_start.finish()
    early_start.finish()
    assert driver.calls == ["cuInit", "cuDeviceGet", "cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRelease_v2"]


def test_a_kept_retain_lasts_until_finish(fresh):
    driver = FakeDriver()
    fresh(driver)
    early_start.start(0)
    early_start.keep()  # a handler took the context
    assert early_start.holding()
    assert "cuDevicePrimaryCtxRelease_v2" not in driver.calls
    early_start.finish()  # the run went to the CPU after all
    assert not early_start.holding()
    assert driver.calls[-1] == "cuDevicePrimaryCtxRelease_v2"


def test_nothing_is_held_without_an_early_context(fresh):
    fresh(FakeDriver("cuDevicePrimaryCtxRetain"))
    early_start.keep()  # never started
    assert not early_start.holding()
    early_start.start(0)
    early_start.keep()  # started, but the driver failed
    assert not early_start.holding()


class Decoder:
    """Stands for PyNvVideoCodec's decoder: what its release does is seen through a weak reference."""


def closed_nvdec_source(decoder: Decoder) -> None:
    """An NvdecSource holding ``decoder`` (made without PyNvVideoCodec), closed."""
    source = NvdecSource.__new__(NvdecSource)
    source._pending, source._decoder, source._demuxer, source._local = [], decoder, object(), None
    source.close()
    assert source._decoder is None and source._demuxer is None


def test_a_closed_nvdec_decoder_is_left_to_the_exit_one_at_a_time(monkeypatch):
    """In the command's process (it keeps its context and leaves with os._exit) a closed
    source's decoder stays until the exit, where the driver reclaims it faster; the next file's
    releases it, so one is kept at most."""
    monkeypatch.setattr(early_start, "_kept", True)
    monkeypatch.setattr(early_start, "_left_to_exit", None)
    first, second = Decoder(), Decoder()
    first_ref, second_ref = weakref.ref(first), weakref.ref(second)
    closed_nvdec_source(first)
    del first
    assert first_ref() is not None
    closed_nvdec_source(second)
    del second
    assert first_ref() is None and second_ref() is not None


def test_a_closed_nvdec_decoder_goes_at_once_where_no_context_is_kept(monkeypatch):
    monkeypatch.setattr(early_start, "_kept", False)
    monkeypatch.setattr(early_start, "_left_to_exit", None)
    decoder = Decoder()
    ref = weakref.ref(decoder)
    closed_nvdec_source(decoder)
    del decoder
    assert ref() is None


def test_finish_releases_what_was_left_to_the_exit_before_the_context(fresh):
    """A run that goes to the CPU after a file's decoder was left to the exit: the decoder is
    destroyed while its context still lives, not at the interpreter's exit after it."""
    driver = FakeDriver()
    fresh(driver)

    class Recorded(Decoder):
        def __del__(self):
            driver.calls.append("decoder released")

    early_start.start(0)
    early_start.keep()
    early_start.leave_to_exit(Recorded())
    assert "decoder released" not in driver.calls
    early_start.finish()
    assert driver.calls[-2:] == ["decoder released", "cuDevicePrimaryCtxRelease_v2"]


@pytest.mark.parametrize("holding", [True, False])
def test_the_command_leaves_with_its_code_and_its_output_flushed(holding):
    """Where the process keeps a CUDA context, ``motiondetect.__main__.main`` ends it with
    ``os._exit`` (no atexit handler runs) after flushing the log and stdout."""
    script = textwrap.dedent(
        f"""
        import atexit, logging, sys
        import motiondetect.__main__ as entry
        from motiondetect.gpu import early_start

        def command():
            logging.basicConfig(stream=sys.stderr, format="%(message)s", level=logging.INFO)
            logging.getLogger("motiondetect").info("a log line")
            sys.stdout.write("a report with no newline")
            return 3

        entry._main = command
        early_start.holding = lambda: {holding}
        atexit.register(print, "atexit ran", file=sys.stderr)
        sys.exit(entry.main())
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 3
    assert done.stdout == "a report with no newline"
    assert "a log line" in done.stderr
    assert ("atexit ran" in done.stderr) is not holding


@pytest.mark.parametrize("fail", ["cuInit", "cuDeviceGet", "cuDevicePrimaryCtxRetain"])
def test_a_driver_that_fails_is_never_released(fresh, fail):
    driver = FakeDriver(fail)
    fresh(driver)
    early_start.start(0)
    early_start.finish()
    assert driver.calls[-1] == fail and "cuDevicePrimaryCtxRelease_v2" not in driver.calls


def test_no_driver_no_error(fresh):
    fresh(None)
    early_start.start()
    early_start.finish()
    assert early_start._retained is None


def test_the_cpu_backend_drops_an_early_context(fresh, monkeypatch):
    finished = []
    monkeypatch.setattr(early_start, "finish", lambda: finished.append(True))
    with ExitStack() as stack:
        assert backend.open_backend("cpu", [], stack) is None
    assert finished == [True]


def test_import_motiondetect_loads_no_heavy_module():
    probe = "import sys, motiondetect; print(sorted(m for m in ('numpy', 'cv2', 'av', 'pycuda', 'jsonschema') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


_OPENBLAS_THREADS = """
import ctypes, os, sys
import motiondetect.__main__  # the entry point's module, before anything else imports NumPy
import numpy
libs = sorted({line.split()[-1] for line in open("/proc/self/maps") if "openblas" in line.lower()})
getters = [getattr(ctypes.CDLL(lib), name, None) for lib in libs
           for name in ("scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads", "openblas_get_num_threads")]
getters = [g for g in getters if g is not None]
print(os.environ["OPENBLAS_NUM_THREADS"], getters[0]() if getters else "none")
"""


def _openblas_threads(env: dict[str, str]) -> list[str]:
    if not Path("/proc/self/maps").exists():
        pytest.skip("needs /proc/self/maps to find NumPy's OpenBLAS")
    run = subprocess.run([sys.executable, "-c", _OPENBLAS_THREADS], capture_output=True, text=True, check=True, env=env)
    return run.stdout.split()


def test_the_command_holds_numpys_openblas_to_one_thread():
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    setting, threads = _openblas_threads(env)
    assert setting == "1"
    if threads == "none":
        pytest.skip("NumPy is not linked to OpenBLAS here")
    assert threads == "1"


def test_a_users_openblas_setting_wins():
    setting, _ = _openblas_threads({**os.environ, "OPENBLAS_NUM_THREADS": "2"})
    assert setting == "2"


def test_public_names_load_on_first_use():
    from motiondetect.pipeline.detector import MotionDetector

    assert motiondetect.MotionDetector is MotionDetector
    assert set(motiondetect.__all__) <= set(dir(motiondetect))
    for name in motiondetect.__all__:
        assert getattr(motiondetect, name) is not None
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        motiondetect.Nope  # noqa: B018


@pytest.mark.gpu
def test_the_early_context_is_the_handlers_and_outlives_it_until_finish():
    """In a fresh process: the driver started early, a handler entered and closed; the primary
    context is active inside the handler and after it (kept for the next handler, which runs
    in it), and inactive after :func:`early_start.finish` (no retain left behind)."""
    from motiondetect.gpu.platform import cuda_device_error

    if cuda_device_error():
        pytest.skip(f"no CUDA: {cuda_device_error()}")
    script = textwrap.dedent(
        """
        import ctypes
        from motiondetect.gpu import early_start
        from motiondetect.gpu.cuda_handler import CUDAHandler

        def active():
            cuda = ctypes.CDLL("libcuda.so.1")
            flags, state, device = ctypes.c_uint(), ctypes.c_int(), ctypes.c_int()
            assert cuda.cuInit(0) == 0 and cuda.cuDeviceGet(ctypes.byref(device), 0) == 0
            assert cuda.cuDevicePrimaryCtxGetState(device, ctypes.byref(flags), ctypes.byref(state)) == 0
            return state.value

        early_start.start(0)
        with CUDAHandler(0) as handler:
            inside = active()
        assert early_start.holding()
        after = active()
        with CUDAHandler(0) as handler:  # a second input's handler
            import numpy as np

            uploaded = handler.upload("x", np.arange(6, dtype=np.uint8))
            handler.stream.synchronize()
            assert uploaded.get().tolist() == list(range(6))
        early_start.finish()
        print(inside, after, active(), early_start.holding())
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["1", "1", "0", "False"]
