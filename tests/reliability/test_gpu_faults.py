"""GPU faults: no device, a device that fails at start, out of memory for a very large frame, a
kernel that does not compile, a device lost mid-run. ``--backend auto`` falls back to the CPU
with a notice; ``--backend cuda`` fails with one clear error; nvcc's message shows once.

On the CPU the device is a stand-in: a stub ``pycuda.driver`` module (its error classes) and an
executor that computes with the CPU references until it is told to fail like a device. The
tests marked ``gpu`` provoke the same faults on a real device (skipped here); run them on the
GPU machine with ``python -m pytest -m gpu tests/reliability/test_gpu_faults.py``.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

import cv2
import numpy as np
import pytest
from conftest import count_frames, error_line, only_line, report, run_main

import motiondetect.apps.cli as cli
import motiondetect.pipeline.detector as detector_module
from motiondetect.core.errors import CudaUnavailable
from motiondetect.gpu.cuda_handler import CUDAHandler

NVCC_SAID = 'kernel.cu(12): error: identifier "md_undefined_marker" is undefined\n1 error detected in the compilation of "kernel.cu".'


def stub_driver() -> types.ModuleType:
    """A ``pycuda.driver`` with PyCUDA's error hierarchy (Error and its subclasses)."""
    drv = types.ModuleType("pycuda.driver")

    class Error(Exception):
        pass

    class CompileError(Error):
        def __init__(self, msg, command_line, stdout=None, stderr=None):
            super().__init__(msg)
            self.msg, self.command_line, self.stdout, self.stderr = msg, command_line, stdout, stderr

        def __str__(self):  # PyCUDA's: message, command, stdout, stderr
            return f"{self.msg}\n[command: {' '.join(self.command_line)}]\n[stderr:\n{self.stderr}]"

    drv.Error, drv.CompileError = Error, CompileError
    drv.MemoryError = type("MemoryError", (Error,), {})
    drv.LogicError = type("LogicError", (Error,), {})
    return drv


class StubGpu:
    """Settings of the stand-in device: ``fail(kind, when)`` makes it raise from then on."""

    def __init__(self, drv):
        self.drv = drv
        self.failure = None
        self.processed = 0
        self.contexts_closed = 0

    def fail(self, exc, pixels_over=0, after_frames=0):
        self.failure = (exc, pixels_over, after_frames)


@pytest.fixture
def stub_gpu(monkeypatch):
    drv = stub_driver()
    gpu = StubGpu(drv)
    monkeypatch.setitem(sys.modules, "pycuda.driver", drv)
    monkeypatch.setattr("motiondetect.gpu.backend.cuda_device_error", lambda: None)  # a device is listed
    monkeypatch.setattr("motiondetect.gpu.backend.cufft_error", lambda: None)  # and cuFFT loads

    class Context:
        def pop(self):
            gpu.contexts_closed += 1

        def detach(self):
            pass

    def enter(self):
        self.context, self.stream = Context(), types.SimpleNamespace(synchronize=lambda: None)
        return self

    monkeypatch.setattr(CUDAHandler, "__enter__", enter)
    monkeypatch.setattr(CUDAHandler, "device_name", property(lambda self: "Stub GPU"))

    class Executor(detector_module._CpuExecutor):
        """The CPU reference, failing like a device when told to."""

        def __init__(self, cuda):
            self.cuda = cuda

        def _device_call(self, shape, new_frame):
            if gpu.failure is not None:
                exc, pixels_over, after = gpu.failure
                if shape[0] * shape[1] > pixels_over and gpu.processed >= after:
                    raise exc
            if new_frame:
                gpu.processed += 1

        def upload(self, key, frame):
            self._device_call(frame.shape, key == "frame")
            return frame

        def luma(self, gray, picture, geo):  # a video file's decoded picture
            self._device_call(picture.shape, True)
            return super().luma(gray, picture, geo)

    monkeypatch.setattr(detector_module, "_CudaExecutor", Executor)
    # The stand-in device runs the frame-at-a-time detector (the batched path needs a real one).
    monkeypatch.setattr(cli, "batched_path_problem", lambda *args: "a stand-in device")
    return gpu


@pytest.fixture
def big_sequence(tmp_path):
    """Three 480x640 frames with a moving block: "very large" for the stand-in device."""
    folder = tmp_path / "big"
    folder.mkdir()
    for i in range(3):
        frame = np.full((480, 640, 3), 30, np.uint8)
        frame[100:200, 50 + 40 * i : 150 + 40 * i] = 220
        cv2.imwrite(str(folder / f"f{i}.png"), frame)
    return folder


def cpu_events(monkeypatch, capsys, tmp_path, source):
    rc, err = run_main(monkeypatch, capsys, tmp_path, source, "--backend", "cpu", "--no-video", "--events", "cpu.json")
    assert rc == 0, err
    return report(tmp_path / "cpu.json")["events"]


# -- no device, or one that fails at start -------------------------------------------------


def test_no_device(tmp_path, monkeypatch, capsys, sequence):
    monkeypatch.setattr("motiondetect.gpu.backend.cuda_device_error", lambda: "no CUDA device found")
    monkeypatch.setattr("motiondetect.gpu.cuda_handler.cuda_device_error", lambda: "no CUDA device found")
    rc, err = run_main(monkeypatch, capsys, tmp_path, sequence, "--no-video")
    assert rc == 0 and "notice: CUDA unavailable (no CUDA device found); using the CPU backend" in err
    assert report(tmp_path / "seq_motion.json")["backend"] == "cpu"
    rc, err = run_main(monkeypatch, capsys, tmp_path, sequence, "--no-video", "--backend", "cuda", "--events", "x.json")
    assert rc == 1 and "no CUDA device found" in only_line(err)
    assert not (tmp_path / "x.json").exists()


def test_device_that_fails_at_start(tmp_path, monkeypatch, capsys, sequence):
    monkeypatch.setattr("motiondetect.gpu.backend.cuda_device_error", lambda: None)  # listed, but no context can be made

    def enter(self):
        raise CudaUnavailable("CUDA backend unavailable: cannot create a context (cuCtxCreate failed: unknown error)")

    monkeypatch.setattr(CUDAHandler, "__enter__", enter)
    rc, err = run_main(monkeypatch, capsys, tmp_path, sequence, "--no-video")
    assert rc == 0 and "cannot create a context" in err and "using the CPU backend" in err
    assert report(tmp_path / "seq_motion.json")["backend"] == "cpu"
    rc, err = run_main(monkeypatch, capsys, tmp_path, sequence, "--no-video", "--backend", "cuda", "--events", "x.json")
    assert rc == 1 and "cannot create a context" in only_line(err)
    assert not (tmp_path / "x.json").exists()


# -- faults found by the warm-up, before any output ----------------------------------------


def test_out_of_memory_for_a_very_large_frame_falls_back(tmp_path, monkeypatch, capsys, stub_gpu, big_sequence):
    expected = cpu_events(monkeypatch, capsys, tmp_path, big_sequence)
    stub_gpu.fail(stub_gpu.drv.MemoryError("cuMemAlloc failed: out of memory"), pixels_over=100_000)
    rc, err = run_main(monkeypatch, capsys, tmp_path, big_sequence, "--backend", "auto")
    assert rc == 0, err
    assert (
        "notice: the CUDA backend cannot run this pipeline: out of GPU memory (cuMemAlloc failed: out of memory); using the CPU backend"
        in err
    )
    events = report(tmp_path / "big_motion.json")
    assert events["backend"] == "cpu" and events["device"] is None and events["frame_count"] == 3
    assert events["events"] == expected  # the CPU took over from the first frame
    assert count_frames(tmp_path / "big_motion.mp4") == 3
    assert stub_gpu.contexts_closed == 1  # the device was given back


def test_out_of_memory_with_backend_cuda_fails_before_any_output(tmp_path, monkeypatch, capsys, stub_gpu, big_sequence):
    stub_gpu.fail(stub_gpu.drv.MemoryError("cuMemAlloc failed: out of memory"), pixels_over=100_000)
    rc, err = run_main(monkeypatch, capsys, tmp_path, big_sequence, "--backend", "cuda")
    assert rc == 1 and "out of GPU memory" in only_line(err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big"]


def test_small_frames_fit_the_stand_in(tmp_path, monkeypatch, capsys, stub_gpu, sequence):
    # The control: below the limit the stand-in runs the whole input as "cuda".
    stub_gpu.fail(stub_gpu.drv.MemoryError("cuMemAlloc failed: out of memory"), pixels_over=100_000)
    rc, err = run_main(monkeypatch, capsys, tmp_path, sequence, "--backend", "auto", "--no-video")
    assert rc == 0 and "notice" not in err
    events = report(tmp_path / "seq_motion.json")
    assert events["backend"] == "cuda" and events["device"] == "Stub GPU" and events["frame_count"] == 6


def test_missing_cufft(tmp_path, monkeypatch, capsys, stub_gpu, sequence):
    """The default pipeline's register filter needs cuFFT: where scikit-cuda does not load,
    ``auto`` runs on the CPU with a notice naming the fix and gives the device back, ``cuda``
    stops with that line before any output, and configs/steady.yaml (no register) runs on the
    device."""
    monkeypatch.setattr(
        "motiondetect.gpu.backend.cufft_error", lambda: "cuFFT unavailable: No module named 'skcuda'; install it with: pip ..."
    )
    rc, err = run_main(monkeypatch, capsys, tmp_path, sequence, "--backend", "auto", "--no-video")
    assert rc == 0, err
    assert "notice: the register filter needs cuFFT, which did not load (No module named 'skcuda'); using the CPU backend" in err
    assert report(tmp_path / "seq_motion.json")["backend"] == "cpu"
    assert stub_gpu.contexts_closed == 1
    rc, err = run_main(monkeypatch, capsys, tmp_path, sequence, "--backend", "cuda", "--events", "x.json")
    line = only_line(err)
    assert rc == 1 and "pip install 'motiondetect[cuda]'" in line and "-c configs/steady.yaml" in line, line
    assert not (tmp_path / "x.json").exists()
    steady = Path(__file__).resolve().parents[2] / "configs" / "steady.yaml"
    rc, err = run_main(monkeypatch, capsys, tmp_path, sequence, "--backend", "cuda", "--no-video", "--overwrite", "-c", str(steady))
    assert rc == 0 and "notice" not in err, err
    assert report(tmp_path / "seq_motion.json")["backend"] == "cuda"


@pytest.mark.parametrize("backend", ["cuda", "auto"])
def test_kernel_compile_error_shows_nvcc_once(tmp_path, monkeypatch, capsys, stub_gpu, sequence, backend):
    drv = stub_gpu.drv
    stub_gpu.fail(
        drv.CompileError("nvcc compilation of /tmp/tmpab12/kernel.cu failed", ["nvcc", "--cubin", "kernel.cu"], stdout="", stderr=NVCC_SAID)
    )
    rc, err = run_main(monkeypatch, capsys, tmp_path, sequence, "--backend", backend, "--no-video")
    assert "Traceback" not in err
    assert err.count("md_undefined_marker") == 1 and err.count("1 error detected") == 1
    assert "nvcc compilation of /tmp/tmpab12/kernel.cu failed" in err and "[command:" not in err
    if backend == "cuda":
        assert rc == 1 and err.startswith("motiondetect: error: the CUDA backend cannot run this pipeline: the CUDA kernels do not compile")
        assert not (tmp_path / "seq_motion.json").exists()
    else:
        assert rc == 0 and "using the CPU backend" in err
        assert report(tmp_path / "seq_motion.json")["backend"] == "cpu"


# -- a fault in the middle of the run ------------------------------------------------------


def test_device_lost_mid_run_keeps_what_was_processed(tmp_path, monkeypatch, capsys, stub_gpu, sample_clip):
    # After the warm-up's 2 blank frames and 40 real ones, the device fails every call.
    stub_gpu.fail(stub_gpu.drv.LogicError("cuLaunchKernel failed: an illegal memory access was encountered"), after_frames=2 + 40)
    rc, err = run_main(monkeypatch, capsys, tmp_path, sample_clip, "--backend", "auto", "--end", "100f")
    assert rc == 1
    line = error_line(err)
    assert "stopped after 40 frames" in line and "illegal memory access" in line
    events = report(tmp_path / "highway_traffic_320x240_motion.json")
    assert events["backend"] == "cuda" and events["complete"] is False and events["frame_count"] == 40
    assert count_frames(tmp_path / "highway_traffic_320x240_motion.mp4") == 40


def test_unexpected_device_error_outside_the_run_is_one_line(tmp_path, monkeypatch, capsys, stub_gpu, sequence):
    def broken(*args, **kwargs):
        raise stub_gpu.drv.LogicError("cuCtxSynchronize failed: unspecified launch failure")

    monkeypatch.setattr(cli, "Overlay", types.SimpleNamespace(from_config=broken))
    rc, err = run_main(monkeypatch, capsys, tmp_path, sequence, "--backend", "cuda")
    assert rc == 1 and "CUDA error (cuCtxSynchronize failed: unspecified launch failure)" in only_line(err)


# -- on a real device (GPU machine) --------------------------------------------------------


@pytest.mark.gpu
def test_gpu_out_of_memory_for_a_very_large_frame(cuda, tmp_path, monkeypatch, capsys):
    import pycuda.driver as drv

    # 16000 x 16000 frames need over 1 GB of device buffers (a 768 MB BGR upload alone); leave
    # 512 MB free by holding the rest. The command works in the same (primary) context, so no
    # context of its own needs room.
    folder = tmp_path / "huge"
    folder.mkdir()
    for i in range(2):
        frame = np.zeros((16000, 16000, 3), np.uint8)
        frame[1000:2000, 1000 + 500 * i : 2000 + 500 * i] = 255
        cv2.imwrite(str(folder / f"f{i}.png"), frame)
    free, _ = drv.mem_get_info()
    hog = drv.mem_alloc(free - 512 * 2**20)
    try:
        rc, err = run_main(monkeypatch, capsys, tmp_path, folder, "--backend", "cuda", "--no-video", "--events", "cuda.json")
        assert rc == 1 and "out of GPU memory" in only_line(err)
        # Frame pairs (the case-study preset): two frames are enough for an event, where the
        # default background model would still be warming up.
        seed = str(Path(__file__).resolve().parents[2] / "configs" / "seed.yaml")
        rc, err = run_main(
            monkeypatch,
            capsys,
            tmp_path,
            folder,
            "--backend",
            "auto",
            "--no-video",
            "--events",
            "auto.json",
            "-c",
            seed,
            "--min-event-length",
            "0",
        )
        assert rc == 0 and "out of GPU memory" in err and "using the CPU backend" in err
        events = report(tmp_path / "auto.json")
        assert events["backend"] == "cpu" and events["frame_count"] == 2 and events["events"]
    finally:
        hog.free()


@pytest.mark.gpu
def test_gpu_device_that_fails_at_start(cuda, tmp_path, monkeypatch, capsys, sequence):
    import pycuda.driver as drv

    monkeypatch.setenv("CUDA_DEVICE", str(drv.Device.count()))  # an ordinal with no device
    rc, err = run_main(monkeypatch, capsys, tmp_path, sequence, "--backend", "cuda", "--no-video", "--events", "cuda.json")
    assert rc == 1 and "cannot create a context" in only_line(err)
    rc, err = run_main(monkeypatch, capsys, tmp_path, sequence, "--backend", "auto", "--no-video", "--events", "auto.json")
    assert rc == 0 and "using the CPU backend" in err and report(tmp_path / "auto.json")["backend"] == "cpu"


@pytest.mark.gpu
@pytest.mark.parametrize("backend", ["cuda", "auto"])
def test_gpu_kernel_compile_error_shows_nvcc_once(cuda, tmp_path, monkeypatch, capsys, sequence, backend):
    import motiondetect.gpu.cuda_handler as handler_module

    real = handler_module.kernel_source
    marker = "md_broken_kernel_marker"
    # gray is the first kernel of every pipeline, the default one included.
    monkeypatch.setattr(handler_module, "kernel_source", lambda name: real(name) + (f"\n#error {marker}\n" if name == "gray" else ""))
    rc, err = run_main(monkeypatch, capsys, tmp_path, sequence, "--backend", backend, "--no-video")
    # nvcc's diagnostic once (it quotes the source line too, so count the diagnostic itself).
    assert "Traceback" not in err and err.count(f"error: #error {marker}") == 1 and "nvcc said" in err
    if backend == "cuda":
        assert rc == 1 and err.startswith("motiondetect: error: the CUDA backend cannot run this pipeline: the CUDA kernels do not compile")
    else:
        assert rc == 0 and report(tmp_path / "seq_motion.json")["backend"] == "cpu"


@pytest.mark.gpu
def test_gpu_no_device_memory_leaks_across_inputs(cuda, tmp_path, monkeypatch, capsys, sequence):
    import pycuda.driver as drv

    inputs = []
    for i in range(8):
        copy = tmp_path / f"in{i}"
        copy.mkdir()
        for image in sequence.iterdir():
            (copy / image.name).write_bytes(image.read_bytes())
        inputs.append(copy)
    run_main(monkeypatch, capsys, tmp_path, *inputs, "--backend", "cuda", "--no-video", "--events", "w{stem}.json")  # warm caches
    free_before, _ = drv.mem_get_info()
    for round_ in range(3):
        rc, err = run_main(
            monkeypatch,
            capsys,
            tmp_path,
            *inputs,
            "--backend",
            "cuda",
            "--events",
            f"r{round_}_{{stem}}.json",
            "-o",
            f"r{round_}_{{stem}}.mp4",
        )
        assert rc == 0, err
    free_after, _ = drv.mem_get_info()
    assert free_before - free_after < 16 * 2**20  # every context and buffer was released
