"""MotionDetector: runs a pipeline of filters on frame pairs, on the CPU or the GPU."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from motiondetect.filters import Filter, Kind

#: Grid size cap for the mask-count reduction: enough blocks to fill any current GPU.
_COUNT_MAX_BLOCKS = 1024


@dataclass(frozen=True)
class FrameResult:
    """What the detector returns for one frame.

    Attributes:
        mask: (H, W) uint8 motion mask, values 0 or 255.
        frame: (H, W, 3) uint8 BGR annotated frame (the red blend), or the input when the
            pipeline has no BGR-producing filter.
        motion_fraction: share of mask pixels set, in [0, 1].
    """

    mask: np.ndarray
    frame: np.ndarray
    motion_fraction: float


def pipeline_problems(filters: Sequence[type[Filter]]) -> list[str]:
    """Check that filters chain into a motion pipeline; return the problems found (empty if none).

    A valid pipeline starts from the BGR frame, each filter's ``INPUT`` kind matches the previous
    ``OUTPUT``, exactly one filter compares the frame with its reference (``SIDE_INPUT ==
    "reference"``), and a mask is produced. A filter that reduces the resolution (``RESAMPLE ==
    "down"``) must be followed by one that restores it (``"up"``) before any filter that needs
    the frame's size (``SIDE_INPUT == "frame"``) and before the end, and the two do not nest.
    """
    problems = []
    kind = Kind.BGR
    reduced_at: int | None = None  # index of the open "down" filter, if any
    for i, cls in enumerate(filters):
        if cls.INPUT is not kind:
            problems.append(
                f"pipeline[{i}]: filter '{cls.NAME}' needs a {cls.INPUT.name} input but follows a step "
                f"giving {kind.name}"
            )
        kind = cls.OUTPUT
        if cls.RESAMPLE == "down":
            if reduced_at is not None:
                problems.append(f"pipeline[{i}]: '{cls.NAME}' follows pipeline[{reduced_at}] '{filters[reduced_at].NAME}' with no upscale between")
            reduced_at = i
        elif cls.RESAMPLE == "up":
            if reduced_at is None:
                problems.append(f"pipeline[{i}]: '{cls.NAME}' has no earlier 'downscale' to undo")
            reduced_at = None
        elif cls.SIDE_INPUT == "frame" and reduced_at is not None:
            problems.append(
                f"pipeline[{i}]: filter '{cls.NAME}' needs the frame's size but follows pipeline[{reduced_at}] "
                f"'{filters[reduced_at].NAME}'; add 'upscale' before it"
            )
    if reduced_at is not None:
        problems.append(f"pipeline: the mask stays at the reduced size of pipeline[{reduced_at}] '{filters[reduced_at].NAME}'; add 'upscale' after the last mask filter")
    pairs = [cls.NAME for cls in filters if cls.SIDE_INPUT == "reference"]
    if len(pairs) != 1:
        problems.append(f"pipeline: needs exactly one frame-pair filter (e.g. 'difference'); got {len(pairs)}")
    if not any(cls.OUTPUT is Kind.MASK for cls in filters):
        problems.append("pipeline: no filter produces a motion mask (e.g. 'threshold')")
    return problems


class MotionDetector:
    """Runs a filter pipeline on consecutive frames (previous, current), keeping state between calls.

    The grey image that enters the frame-pair filter is kept as the reference for the next frame
    (on the device with the CUDA backend: its buffer is swapped in, not copied). The first
    frame, which has no predecessor, gets an empty mask and passes through unchanged.

    Args:
        filters: filter instances in pipeline order (built from the config; the detector never
            chooses them).
        cuda: an entered :class:`~motiondetect.cuda_handler.CUDAHandler` to run the kernels, or
            ``None`` for the CPU reference implementations.

    Raises:
        ValueError: the filters do not chain into a motion pipeline.

    Example:
        >>> from motiondetect.config import build_filters, default_config
        >>> detector = MotionDetector(build_filters(default_config()))
        >>> result = detector.process(np.zeros((4, 6, 3), np.uint8))
        >>> result.mask.shape, result.motion_fraction
        ((4, 6), 0.0)
    """

    def __init__(self, filters: Sequence[Filter], cuda=None) -> None:
        problems = pipeline_problems([type(f) for f in filters])
        if problems:
            raise ValueError("; ".join(problems))
        self.filters = list(filters)
        self.backend = "cpu" if cuda is None else "cuda"
        self._executor = _CpuExecutor() if cuda is None else _CudaExecutor(cuda)
        self._shape: tuple[int, ...] | None = None
        self._reference = None

    def reset(self) -> None:
        """Forget the reference frame and every filter's state (background models): the next
        frame is treated as the first of a new stream."""
        self._shape = None
        self._reference = None
        for flt in self.filters:
            flt.reset()

    def process(self, frame: np.ndarray) -> FrameResult:
        """Run the pipeline on the next frame of the stream.

        Args:
            frame: (H, W, 3) uint8 BGR, the same size as the previous frames.

        Returns:
            The frame's :class:`FrameResult` (arrays owned by the caller).

        Raises:
            TypeError: ``frame`` is not a uint8 NumPy array.
            ValueError: ``frame`` is not (H, W, 3), or its size differs from the previous frame's.
        """
        if not isinstance(frame, np.ndarray) or frame.dtype != np.uint8:
            got = f"{frame.dtype}" if isinstance(frame, np.ndarray) else type(frame).__name__
            raise TypeError(f"frame must be a (H, W, 3) uint8 BGR array; got {got}")
        if frame.ndim != 3 or frame.shape[2] != 3 or 0 in frame.shape:
            raise ValueError(f"frame must be (H, W, 3) BGR with H, W >= 1; got shape {frame.shape}")
        if self._shape is not None and frame.shape != self._shape:
            raise ValueError(f"frame size changed from {self._shape[1]}x{self._shape[0]} to {frame.shape[1]}x{frame.shape[0]}")
        self._shape = frame.shape
        run = self._executor
        original = run.upload(np.ascontiguousarray(frame))
        image, mask, out = original, None, None
        for stage, flt in enumerate(self.filters):
            if flt.SIDE_INPUT == "reference":
                previous, self._reference = self._reference, run.keep(stage - 1, image)
                if previous is None:
                    run.synchronize()
                    return FrameResult(np.zeros(frame.shape[:2], np.uint8), frame.copy(), 0.0)
                image = run.run(stage, flt, image, previous)
            else:
                image = run.run(stage, flt, image, original if flt.SIDE_INPUT == "frame" else None)
            if flt.OUTPUT is Kind.MASK:
                mask = image
            elif flt.OUTPUT is Kind.BGR:
                out = image
        mask_host, frame_host, moving = run.finish(mask, out)
        if out is None:
            frame_host = frame.copy()
        return FrameResult(mask_host, frame_host, moving / mask_host.size)


class _CpuExecutor:
    """Runs each filter's NumPy/OpenCV reference; images are host arrays."""

    def upload(self, frame):
        return frame

    def run(self, stage, flt, src, side):
        return flt.reference(src, side)

    def keep(self, stage, image):
        return image  # filters return new arrays, so no later stage overwrites it

    def synchronize(self):
        pass

    def finish(self, mask, out):
        return mask, out, int(np.count_nonzero(mask))


class _CudaExecutor:
    """Runs each filter's kernel; images are device arrays reused from frame to frame.

    Per frame: one page-locked upload of the BGR frame, the kernels, a mask-count reduction, and
    page-locked downloads of the mask, the annotated frame and the count, all queued on the
    handler's stream with a single synchronisation at the end.
    """

    def __init__(self, cuda) -> None:
        self.cuda = cuda

    def upload(self, frame):
        return self.cuda.upload("frame", frame)

    def run(self, stage, flt, src, side):
        dst = self.cuda.buffer(("stage", stage), flt.output_shape(src.shape, None if side is None else side.shape))
        flt.apply(self.cuda, src, dst, side)
        return dst

    def keep(self, stage, image):
        # The kept image is stage's output buffer: hand it to the reference slot and give that
        # slot's old buffer (the previous reference, now spent) to the stage for the next frame.
        self.cuda.swap_buffers(("stage", stage), "reference")
        return image

    def synchronize(self):
        self.cuda.synchronize()

    def finish(self, mask, out):
        import pycuda.driver as drv

        cuda = self.cuda
        total = cuda.buffer("mask_count", (1,), np.uint64)
        drv.memset_d32_async(total.gpudata, 0, 2, cuda.stream)
        count_fn = cuda.function("mask_count", "md_count_nonzero_u8", "PiP")
        n = mask.size
        blocks = min(_COUNT_MAX_BLOCKS, max(1, math.ceil(n / 256)))
        count_fn.prepared_async_call((blocks, 1), (256, 1, 1), cuda.stream, mask.gpudata, np.int32(n), total.gpudata)
        mask_host = cuda.download("mask", mask)
        frame_host = None if out is None else cuda.download("frame", out)
        count_host = cuda.download("mask_count", total)
        cuda.synchronize()
        return mask_host.copy(), (None if frame_host is None else frame_host.copy()), int(count_host[0])
