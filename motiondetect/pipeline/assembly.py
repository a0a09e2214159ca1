"""Assembling a run's path: which masks come back to the host, whether the batched GPU path can
run, which decoder feeds it, and a first pass on the device before any output exists."""

from __future__ import annotations

import importlib.util
import logging
from contextlib import ExitStack
from typing import Any

from motiondetect.core.errors import CudaUnavailable, UsageError
from motiondetect.core.faults import warm_up
from motiondetect.gpu import early_start
from motiondetect.gpu.cuda_handler import CUDAHandler
from motiondetect.pipeline.batch import auto_batch
from motiondetect.pipeline.detector import MotionDetector
from motiondetect.sources.nvdec import NvdecSource, NvdecUnavailable

log = logging.getLogger("motiondetect")


def masks_needed(config: dict[str, Any], wants_frames: bool, mask_outputs: bool) -> bool:
    """Whether the masks must come back to the host: for what reads them there (boxes drawn
    around their regions, frames held over skipped ones and re-blended from them, the preview,
    mask files; ``mask_outputs``). The red blend itself reads them on the device."""
    redraws = wants_frames and (config["overlays"]["boxes"] or config["scan"]["frame_skip"] > 0)
    return redraws or mask_outputs


def batched_path_problem(
    config: dict[str, Any], video, cuda: CUDAHandler | None, detector: MotionDetector, interactive: bool, wants_frames: bool
) -> str | None:
    """Why this run cannot take the batched GPU path (:class:`~motiondetect.pipeline.batch.BatchDetector`),
    or ``None`` when it can: a video file on the CUDA backend, not shown live, every frame
    processed at its own size, and an annotation (if any) that has a Y'CbCr form."""
    if cuda is None:
        return "the CPU backend"
    if not getattr(video, "decodes_pictures", False):
        return "image sequences, cameras and streams come as BGR frames"
    if interactive:
        return "live and preview runs keep one frame at a time for latency"
    if config["scan"]["frame_skip"] or config["scan"]["downscale"] != 1:
        return "frame skip and scan downscale run one frame at a time"
    if wants_frames and not detector.annotate:
        return "unannotated video output"
    if any(f.engine == "cublas" for f in detector.filters):
        return "the cuBLAS engine runs one frame at a time"
    if detector.annotation_filters and not detector.yuv_annotation:
        return "the pipeline's annotation has no Y'CbCr form"
    return None


def decodes_on_cpu(config: dict[str, Any], video) -> bool:
    """Whether the run will read ``video`` with its own decoder (PyAV's CPU threads, OpenCV)
    whatever the device's set-up finds, so decoding may start before it (:func:`choose_decoder`
    with the same config never returns NVDEC): ``--decoder cpu``, the CPU backend, an input
    that is not a video file, or ``--decoder auto`` without PyNvVideoCodec installed. ``False``
    for ``--decoder nvdec``, which decodes on the GPU or fails."""
    requested = config["decoder"]
    if requested == "nvdec":
        return False
    if requested == "cpu" or config["backend"] == "cpu" or not getattr(video, "decodes_pictures", False):
        return True
    return importlib.util.find_spec("PyNvVideoCodec") is None


def choose_decoder(
    requested: str, video, cuda: CUDAHandler | None, batched: str | None, fps: float | None, stack: ExitStack, check: bool = True
):
    """The frame source for the run and its decoder's name: NVDEC for a video file on the GPU
    when ``requested`` allows and it can run, else ``video`` itself (PyAV or OpenCV). With
    ``check``, the source returned has decoded its first frame (``check_decodable``), so an
    input none of whose frames decodes fails here, before any output exists; a chunk task,
    which seeks before it reads, passes ``False`` (the planner has read the file).

    Raises:
        UsageError: ``--decoder nvdec`` on the CPU backend or for an input that is not a video file.
        NvdecUnavailable: ``--decoder nvdec`` where NVDEC cannot run (no PyNvVideoCodec, an
            unsupported stream, no frame it decodes).
        VideoOpenFailure: no frame of the input decodes on the CPU decoder.
    """
    is_file = getattr(video, "decodes_pictures", False)
    cpu_name = "PyAV (CPU threads)" if is_file else "OpenCV"

    def checked(source):
        if check:
            source.check_decodable()
        return source

    if requested == "cpu" or (requested == "auto" and (batched is not None or not is_file)):
        return checked(video), cpu_name
    if not is_file:
        raise UsageError("--decoder nvdec decodes video files; this input is an image sequence, a camera or a stream")
    if cuda is None:
        raise UsageError("--decoder nvdec decodes on the GPU: it needs the CUDA backend (--backend cuda or auto on a machine with a GPU)")
    source = None
    try:
        # Frames timed as the CPU decoder times them (a variable-frame-rate file's own timestamps).
        timestamped = getattr(video, "timestamped", False)
        source = stack.enter_context(NvdecSource(video.source, cuda, fps=fps, host=batched is not None, timestamped=timestamped))
        if requested == "auto" and not source.exact:
            # Only exact codecs under auto: the results must not depend on the decoder.
            source.close()
            return checked(video), cpu_name + f", since {source.inexact_reason}"
        checked(source)
    except NvdecUnavailable as exc:
        if requested == "nvdec":
            raise
        if source is not None:
            source.close()
        log.info("notice: %s; decoding on the CPU", str(exc).split(";")[0])
        return checked(video), cpu_name
    video.close()
    return source, f"NVDEC ({source.codec})"


def batch_size(config: dict[str, Any], source) -> int:
    """Frames per batch on the GPU path: ``scan.batch``, or when it is 0 (auto)
    :func:`~motiondetect.pipeline.batch.auto_batch` for ``source``'s frame size and decoder (the
    source :func:`choose_decoder` returned: NVDEC frames or host-decoded ones)."""
    return config["scan"]["batch"] or auto_batch(source.size, host_decoded=not isinstance(source, NvdecSource))


def checked_on_device(detector: MotionDetector, cuda: CUDAHandler | None, requested: str, size: tuple[int, int]) -> MotionDetector:
    """Run a CUDA detector on blank frames of the input's ``size`` before any output exists
    (:func:`~motiondetect.core.faults.warm_up`: every kernel compiled, every buffer allocated).

    Args:
        detector: the detector, on ``cuda`` (or on the CPU: returned as it is).
        cuda: its entered handler, closed here when the CPU takes over; or ``None``.
        requested: the config's backend (``auto`` falls back, ``cuda`` does not).
        size: (width, height) of the input's frames, pixels.

    Returns:
        ``detector`` when it runs (or is on the CPU); with ``--backend auto`` and a device fault
        (nvcc rejects a kernel, out of GPU memory for this frame size...), a CPU detector with
        the same filters and settings, after a notice that says why (nvcc's message once).

    Raises:
        CudaUnavailable: the fault with ``--backend cuda``, or with a cuBLAS engine selected.
    """
    reason = warm_up(detector, size)
    if reason is None:
        return detector
    if requested != "auto" or any(f.engine == "cublas" for f in detector.filters):
        raise CudaUnavailable(f"the CUDA backend cannot run this pipeline: {reason}")
    log.info("notice: the CUDA backend cannot run this pipeline: %s; using the CPU backend", reason)
    assert cuda is not None  # a device fault means the detector ran on this handler
    cuda.close()  # give the device back now: the handler's buffers, then the context itself
    early_start.finish()
    return MotionDetector(detector.filters, roi=detector.roi, downscale=detector.downscale, annotate=detector.annotate)
