"""The filter seam: one class, one kernel, one name.

A :class:`Filter` is one step of the motion pipeline. Each subclass declares

- ``NAME``: the key used in YAML (``filter: threshold``) and on the command line;
- ``KERNEL``: the stem of its CUDA source, ``kernels/<KERNEL>.cu``;
- ``PARAMS``: typed parameters with defaults and valid ranges (:class:`Param`);
- ``INPUT`` / ``OUTPUT``: the :class:`Kind` of image it reads and writes, so a pipeline can be
  checked before it runs;
- ``SIDE_INPUT``: the second image it needs, if any: ``"reference"`` (the grey frame it is
  compared with, i.e. the previous frame) or ``"frame"`` (the original BGR frame);
- ``ENGINES``: the GPU engines it has: ``"kernel"`` (its own CUDA kernel) and, where the
  arithmetic is linear algebra, ``"cublas"`` (BLAS calls through scikit-cuda);
- ``POINTWISE``: each output pixel depends only on the same pixel of the inputs (see
  :meth:`Filter.halo`, which filters with a neighbourhood override).
- ``RESAMPLE``: ``"down"`` for a filter whose output is smaller than its input, ``"up"`` for the
  one that brings a mask back to the frame's size, ``None`` (most filters) for same-size output.
- ``ALIGNS``: it moves the frame onto a reference before the frame-pair filter that must follow
  it (registration, :class:`~motiondetect.filters.register.Register`); the detector moves that
  filter's output back with the filter's ``unshift`` (``unshift_reference`` on the CPU).
- ``BATCHED``: its GPU engine also takes a batch, images with a leading frame axis ``(K, H, W)``
  (``(K, H, W, 3)`` for BGR), in one launch per pass, with the same bits as K single calls;
  filters without it are run frame by frame on views of the batch
  (:class:`~motiondetect.pipeline.batch.BatchDetector`).

A filter may keep state from frame to frame (a background model): it then overrides
:meth:`Filter.reset`, which the detector calls when a new stream starts, and names the
parameters that are its learning rates in ``LEARNING_RATES`` (how fast it forgets its start,
which sets the warm-up of a chunk scanned on its own: :meth:`Filter.chunk_warmup`, which a model
that forgets otherwise overrides). A filter whose state is fixed by the stream's first frame for
good (registration's anchor) sets ``ANCHORED``: a chunk scanned on its own first runs the file's
first frame through the pipeline, then :meth:`Filter.seek` keeps that state and forgets the rest.

and implements the same function on the CPU with NumPy/OpenCV (:meth:`Filter.reference`) and on
the GPU through a :class:`~motiondetect.gpu.cuda_handler.CUDAHandler` (:meth:`Filter.apply_kernel`,
and :meth:`Filter.apply_cublas` for the cuBLAS engine).
The registry, config schema, CLI help and error messages are all derived from these declarations.
"""

from __future__ import annotations

import enum
import itertools
import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import cv2
import numpy as np

if TYPE_CHECKING:
    from motiondetect.gpu.cuda_handler import CUDAHandler

#: Serial numbers of filter instances: device buffers holding a filter's state are keyed on them
#: (unlike ``id()``, a number is never reused by a later instance).
_SERIALS = itertools.count()


class Kind(enum.Enum):
    """What an image in the pipeline holds. All are uint8 and C-contiguous."""

    BGR = "BGR frame (H, W, 3) uint8, channels B, G, R"
    GRAY = "grey image (H, W) uint8, grey levels 0-255"
    MASK = "motion mask (H, W) uint8, values 0 or 255"


#: A mask's weak level: a pixel a background model found off its background by less than the
#: motion threshold but more than ``grow_sigmas`` (:class:`~motiondetect.filters.GaussianBackground`).
#: It is written only when a dilation follows the model to grow into it
#: (:func:`~motiondetect.pipeline.detector.link_growth`). The median between votes on the two
#: binary planes, ``> 128`` and ``!= 0`` (threshold decomposition: a rank filter of a three-level
#: image is the rank filter of each plane), the erosion erodes both and keeps the foreground it
#: removes as weak, and that dilation grows the foreground into the weak pixels and writes 0 or
#: 255 again.
WEAK = 128


def foreground(mask: np.ndarray, value: int = 255) -> np.ndarray:
    """The foreground plane of a mask with the weak level: ``value`` where a pixel of ``mask``
    ((H, W) uint8) lies above :data:`WEAK`, else 0 ((H, W) uint8). A 0/255 mask's own 255s."""
    return cv2.threshold(mask, WEAK, value, cv2.THRESH_BINARY)[1]


def set_pixels(mask: np.ndarray, value: int = 255) -> np.ndarray:
    """The set plane of a mask: ``value`` where a pixel of ``mask`` ((H, W) uint8) is not 0 (the
    foreground and the weak level), else 0 ((H, W) uint8)."""
    return cv2.threshold(mask, 0, value, cv2.THRESH_BINARY)[1]


@dataclass(frozen=True)
class Param:
    """A typed filter parameter with its default and valid range.

    Attributes:
        name: key in YAML and in the filter's constructor.
        type: ``int`` or ``float``.
        default: value used when the config omits it.
        minimum, maximum: inclusive bounds.
        unit: what the number counts (``"grey levels"``, ``"pixels"``...).
        help: one sentence, including where the default comes from.
        odd: the value must be odd (structuring element sizes).
    """

    name: str
    type: type
    default: Any
    minimum: float
    maximum: float
    unit: str
    help: str
    odd: bool = False

    def json_schema(self) -> dict:
        """Return the JSON Schema fragment that validates this parameter."""
        if self.odd:
            choices = list(range(int(self.minimum) | 1, int(self.maximum) + 1, 2))
            return {"enum": choices}
        return {
            "type": "integer" if self.type is int else "number",
            "minimum": self.minimum,
            "maximum": self.maximum,
        }

    def describe(self) -> str:
        """One line for ``--help`` and the config reference."""
        allowed = f"odd {self.minimum}..{self.maximum}" if self.odd else f"{self.minimum}..{self.maximum}"
        return f"{self.name}={self.default} ({self.unit}, {allowed}): {self.help}"


class Filter(ABC):
    """One pipeline step with a GPU kernel and a CPU reference of the same function.

    Construct with keyword parameters named in ``PARAMS``; omitted ones take their defaults.
    Values are assumed valid here (the config layer validates user input and reports every
    problem at once); a wrong name still raises ``TypeError``.

    Raises:
        TypeError: an unknown parameter name.
    """

    NAME: ClassVar[str]
    KERNEL: ClassVar[str]
    PARAMS: ClassVar[tuple[Param, ...]] = ()
    INPUT: ClassVar[Kind]
    OUTPUT: ClassVar[Kind]
    SIDE_INPUT: ClassVar[str | None] = None
    ENGINES: ClassVar[tuple[str, ...]] = ("kernel",)
    POINTWISE: ClassVar[bool] = False
    RESAMPLE: ClassVar[str | None] = None
    BATCHED: ClassVar[bool] = False
    ALIGNS: ClassVar[bool] = False
    #: Its GPU engine calls cuFFT (scikit-cuda), which the backend loads before the first frame.
    CUFFT: ClassVar[bool] = False
    #: Keeps state taken from the stream's first frame for good, which :meth:`seek` keeps.
    ANCHORED: ClassVar[bool] = False
    #: Parameters that are per-frame learning rates (fractions in [0, 1]) of a background model.
    LEARNING_RATES: ClassVar[tuple[str, ...]] = ()
    #: Parameters that count frames of a background model's time (how long something must stay
    #: still, how long a warm-up lasts). With ``LEARNING_RATES`` they are rescaled to a source's
    #: frame rate (:func:`motiondetect.pipeline.frame_rate.at_frame_rate`).
    FRAME_COUNTS: ClassVar[tuple[str, ...]] = ()
    #: Parameters that are real-valued periods in frames (something happens with probability
    #: 1 / period each frame, as a sample model's update). Rescaled with the others, to
    #: ``period / k`` (:func:`motiondetect.pipeline.frame_rate.rescaled_period`).
    FRAME_PERIODS: ClassVar[tuple[str, ...]] = ()
    #: Parameters that are amounts added each frame (a count's decay, a threshold's drift),
    #: rescaled to ``step * k`` (:func:`motiondetect.pipeline.frame_rate.rescaled_step`).
    FRAME_STEPS: ClassVar[tuple[str, ...]] = ()
    #: Parameters whose value for an inter-coded video (H.264, HEVC...) another parameter gives,
    #: ``{"still_frames": "still_frames_inter"}``: that codec's skip blocks repeat still pixels
    #: exactly (:func:`motiondetect.pipeline.coding.for_coding`).
    INTER_CODED: ClassVar[dict[str, str]] = {}
    #: The parameter that sets how much change counts as motion, and the step the preview's
    #: ``+``/``-`` keys move it by (higher = less sensitive); ``None`` for filters without one.
    SENSITIVITY: ClassVar[tuple[str, float] | None] = None

    def __init__(self, engine: str = "kernel", **params: Any) -> None:
        known = {p.name: p for p in self.PARAMS}
        unknown = set(params) - set(known)
        if unknown:
            raise TypeError(f"{self.NAME}: unknown parameter(s) {sorted(unknown)}; expected {sorted(known)}")
        if engine not in self.ENGINES:
            raise ValueError(f"{self.NAME}: engine must be one of {', '.join(self.ENGINES)}; got {engine!r}")
        self.engine = engine
        self.params = {name: p.type(params.get(name, p.default)) for name, p in known.items()}
        self.serial = next(_SERIALS)

    @classmethod
    def param(cls, name: str) -> Param:
        """The :class:`Param` called ``name``.

        Raises:
            KeyError: the filter has no such parameter.
        """
        for param in cls.PARAMS:
            if param.name == name:
                return param
        raise KeyError(f"{cls.NAME} has no parameter {name!r}")

    @classmethod
    def entry_value(cls, entry: dict[str, Any], name: str) -> Any:
        """Parameter ``name`` of a config's pipeline entry for this filter (``{"filter": NAME,
        ...}``, validated): the entry's value, or the default where it leaves the parameter out."""
        return entry[name] if name in entry else cls.param(name).default

    def __repr__(self) -> str:
        args = [f"{k}={v!r}" for k, v in self.params.items()]
        if self.engine != "kernel":
            args.append(f"engine={self.engine!r}")
        return f"{type(self).__name__}({', '.join(args)})"

    def output_shape(self, input_shape: tuple[int, ...], side_shape: tuple[int, ...] | None = None) -> tuple[int, ...]:
        """Shape of the output image for an input of ``input_shape`` (same H, W by default).

        Args:
            input_shape: shape of the input image, (H, W) or (H, W, 3).
            side_shape: shape of the side input, where the filter has one (a filter that
                resizes to the frame's size reads it from there); ``None`` otherwise.
        """
        height, width = input_shape[:2]
        return (height, width, 3) if self.OUTPUT is Kind.BGR else (height, width)

    def halo(self) -> int | None:
        """How far, in pixels, an output pixel reaches into its input's neighbourhood.

        0 for per-pixel filters (``POINTWISE``), the structuring element's reach for erosion, and
        ``None`` when unknown (a filter that declares nothing). The detector crops frames to a
        region of interest plus the pipeline's total halo only when every filter declares one, so
        cropping never changes a result inside the region.
        """
        return 0 if self.POINTWISE else None

    def reference_planes(self, planes: np.ndarray) -> np.ndarray:
        """Apply this filter's change of geometry to planes that go with its grey input.

        The chroma a colour background model compares (:attr:`GaussianBackground.needs_chroma
        <motiondetect.filters.gaussian_background.GaussianBackground.needs_chroma>`) goes with the
        grey image through the filters before the model: :class:`~motiondetect.filters.Downscale`
        shrinks it with the same blocks, :class:`~motiondetect.filters.register.Register` moves it
        by the frame's shift (call after the filter ran on the grey image); the other filters
        change grey levels only (a blur, an equalization) and pass it through unchanged.

        Args:
            planes: (P, H, W) uint8, the grey input's size.

        Returns:
            (P, h, w) uint8 at this filter's output size (``planes`` itself when unchanged).
        """
        return planes

    def apply_planes(self, cuda: CUDAHandler, src, dst, frames: int = 1) -> bool:
        """Enqueue :meth:`reference_planes` on the device for ``frames`` consecutive frames.

        Args:
            cuda: the entered handler.
            src: device planes (P, K, H, W) uint8 (plane-major: each plane's K frames together)
                as a (P * K, H, W) array, K = ``frames``.
            dst: device array (P * K, h, w) for the result.
            frames: K.

        Returns:
            ``True`` when ``dst`` was written; ``False`` when the filter passes the planes
            through (use ``src``).
        """
        return False

    def apply_with_planes(self, cuda: CUDAHandler, src, dst, side, planes_src, planes_dst, frames: int = 1) -> bool:
        """:meth:`apply` on the grey image, then :meth:`apply_planes` on the planes that go with
        it (arguments as theirs); a filter that can do both in one launch overrides it.

        Returns:
            :meth:`apply_planes`' answer: whether ``planes_dst`` was written.
        """
        self.apply(cuda, src, dst, side)
        return self.apply_planes(cuda, planes_src, planes_dst, frames)

    def reset(self) -> None:
        """Forget any state kept from earlier frames (no-op for stateless filters).

        Filters with a background model override this; :meth:`MotionDetector.reset
        <motiondetect.pipeline.detector.MotionDetector.reset>` calls it so that the next frame starts a
        new stream on both backends.
        """

    def seek(self) -> None:
        """The stream goes on from another frame (a chunk's warm-up, after the file's first frame
        ran): forget the state that follows the frames, keep what the stream's first frame fixed
        for good (``ANCHORED`` filters). Without such state: :meth:`reset`."""
        self.reset()

    def chunk_warmup(self) -> int | None:
        """Frames this filter needs before a chunk's first frame so its state is a sequential
        run's (:func:`motiondetect.scaleout.chunks.warmup_frames` takes the pipeline's largest).

        Returns:
            0 for a filter without state; for one with ``LEARNING_RATES``, its slowest time
            constant ``ceil(1 / a)`` frames for the smallest rate ``a`` (an exponential average
            forgets its start as ``(1 - a)**n``), and at least its own ``warmup`` and
            ``bootstrap`` + ``ghost_frames`` parameters + 1 (the frame pairs its start changes);
            ``None`` when a rate is 0 (its state keeps the stream's first frame for good).
            Filters whose state forgets otherwise override this.
        """
        if not self.LEARNING_RATES:
            return 0
        rates = [float(self.params[name]) for name in self.LEARNING_RATES]
        if min(rates) <= 0:
            return None
        start = max(int(self.params.get("warmup", 0)), int(self.params.get("bootstrap", 0)) + int(self.params.get("ghost_frames", 0)))
        return max(math.ceil(1 / min(rates) - 1e-9), start + 1)

    def state_key(self, name: str) -> tuple:
        """Key of this instance's device buffer ``name`` in :meth:`CUDAHandler.buffer
        <motiondetect.gpu.cuda_handler.CUDAHandler.buffer>` (per instance, so two detectors sharing a
        handler keep separate background models)."""
        return ("state", self.NAME, self.serial, name)

    @abstractmethod
    def reference(self, src: np.ndarray, side: np.ndarray | None = None) -> np.ndarray:
        """Apply the filter on the CPU.

        Args:
            src: image of kind ``INPUT``.
            side: image named by ``SIDE_INPUT`` (same H, W), or ``None`` when it has none.

        Returns:
            A new image of kind ``OUTPUT``.
        """

    def apply(self, cuda: CUDAHandler, src, dst, side=None) -> None:
        """Enqueue the filter on ``cuda.stream`` with its engine (kernel or cuBLAS).

        Args:
            cuda: the handler owning the context, compiled kernels and scratch buffers.
            src: device image (``pycuda.gpuarray.GPUArray``) of kind ``INPUT``.
            dst: preallocated device image of kind ``OUTPUT``, shape ``output_shape(src.shape)``.
            side: device image named by ``SIDE_INPUT``, or ``None``.

        Raises:
            CudaUnavailable: the cuBLAS engine is selected but scikit-cuda cannot be loaded.
        """
        if self.engine == "cublas":
            self.apply_cublas(cuda, src, dst, side)
        else:
            self.apply_kernel(cuda, src, dst, side)

    @abstractmethod
    def apply_kernel(self, cuda: CUDAHandler, src, dst, side=None) -> None:
        """Enqueue the filter's own CUDA kernel (arguments as :meth:`apply`)."""

    def apply_cublas(self, cuda: CUDAHandler, src, dst, side=None) -> None:
        """Enqueue the filter as cuBLAS calls (arguments as :meth:`apply`); filters listing
        ``"cublas"`` in ``ENGINES`` override this."""
        raise NotImplementedError(f"{self.NAME} has no cuBLAS engine")

    @staticmethod
    def is_available() -> bool:
        """Whether the GPU path can run here (PyCUDA importable and a device present)."""
        from motiondetect.gpu.platform import cuda_device_error

        return cuda_device_error() is None


def planes(image, kind: Kind = Kind.GRAY) -> tuple[int, int, int]:
    """(frames, height, width) of a host or device image of ``kind``, single or batched.

    A grey or mask image is (H, W) or a batch (K, H, W); a BGR frame is (H, W, 3) or (K, H, W, 3).
    """
    shape = tuple(image.shape)
    if kind is Kind.BGR:
        shape = shape[:-1]
    return (1, *shape) if len(shape) == 2 else shape


def launch_square_element(cuda, flt: Filter, src, dst, rows: str, cols: str, radius: int, weak_level: bool) -> None:
    """Enqueue a square structuring element of ``radius`` as its two separable passes, kernels
    ``rows`` and ``cols`` of ``flt.KERNEL``, on a mask ``src`` (H, W) or a batch (K, H, W) into
    ``dst``, through a scratch buffer: the row pass takes ``(src, scratch, width, height, radius,
    weak_level)``, the column pass ``(scratch, src or NULL, dst, width, height, radius)``, the
    mask itself where it reads the weak level (erosion and dilation, kernels/erosion.cu and
    kernels/dilation.cu)."""
    frames, height, width = planes(src)
    scratch = cuda.buffer((f"{flt.NAME}_rows", src.shape), src.shape)
    args = (np.int32(width), np.int32(height), np.int32(radius))
    cuda.launch_2d(
        cuda.function(flt.KERNEL, rows, "PPiiii"), (height, width), src.gpudata, scratch.gpudata, *args, np.int32(weak_level), frames=frames
    )
    levels = src.gpudata if weak_level else 0  # NULL: the plain pass
    cuda.launch_2d(cuda.function(flt.KERNEL, cols, "PPPiii"), (height, width), scratch.gpudata, levels, dst.gpudata, *args, frames=frames)


def frames_view(array, start: int, stop: int):
    """A device view of images ``start:stop`` of a batch (K, ...) GPUArray (no copy)."""
    import pycuda.gpuarray as gpuarray

    per = math.prod(array.shape[1:]) * array.dtype.itemsize
    return gpuarray.GPUArray((stop - start, *array.shape[1:]), array.dtype, gpudata=int(array.gpudata) + start * per, base=array)


def element_count(image) -> np.int32:
    """Number of elements of a host or device image, as the kernels' ``int`` argument."""
    return np.int32(math.prod(image.shape))  # math.prod: a tenth of np.prod's time on a tuple
