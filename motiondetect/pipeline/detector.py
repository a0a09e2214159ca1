"""MotionDetector: runs a pipeline of filters on frame pairs, on the CPU or the GPU.

Around the filters the detector can

- restrict motion to a region of interest (ROI): the mask is zeroed outside it (before counting,
  so only motion inside counts), and the frame is cropped to the ROI's bounding box plus the
  pipeline's halo before the filters run, which changes no result inside the ROI;
- run the filters on a downscaled frame (``downscale`` N: 1/N of the width and height,
  ``cv2.INTER_AREA``, on the host before the upload) and map the mask back to the input size
  (``cv2.INTER_NEAREST``), so every output keeps the input's size;
- reduce the mask to its pixel count and bounding box on the device (CUDA backend), so the host
  never scans a mask to find the motion fraction or the box.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass, field
from typing import Sequence

import cv2
import numpy as np

from motiondetect.core.picture import Picture, unpack_planes
from motiondetect.core.types import Box, FrameResult
from motiondetect.filters import Dilation, Erosion, Filter, GaussianBackground, Kind, Median, Upscale
from motiondetect.filters.base import element_count, planes
from motiondetect.filters.downscale import block_bounds
from motiondetect.filters.upscale import block_repeats

#: Grid size cap for the mask-statistics reduction: enough blocks to fill any current GPU.
_COUNT_MAX_BLOCKS = 1024
#: Initial bounding-box accumulator of the statistics kernel: x0, y0 at their largest, x1, y1 at 0.
_BOX_INIT = np.array([0xFFFFFFFF, 0xFFFFFFFF, 0, 0], np.uint32)


def pipeline_problems(filters: Sequence[type[Filter]]) -> list[str]:
    """Check that filters chain into a motion pipeline; return the problems found (empty if none).

    A valid pipeline starts from the BGR frame, each filter's ``INPUT`` kind matches the previous
    ``OUTPUT``, exactly one filter compares the frame with its reference (``SIDE_INPUT ==
    "reference"``), and a mask is produced. A filter that reduces the resolution (``RESAMPLE ==
    "down"``) must be followed by one that restores it (``"up"``) before any filter that needs
    the frame's size (``SIDE_INPUT == "frame"``) and before the end, and the two do not nest.
    A filter that aligns the frame (``ALIGNS``, registration) comes right before the frame-pair
    filter.
    """
    problems = []
    kind = Kind.BGR
    reduced_at: int | None = None  # index of the open "down" filter, if any
    for i, cls in enumerate(filters):
        if cls.INPUT is not kind:
            problems.append(f"pipeline[{i}]: filter '{cls.NAME}' needs a {cls.INPUT.name} input but follows a step giving {kind.name}")
        kind = cls.OUTPUT
        if cls.RESAMPLE == "down":
            if reduced_at is not None:
                problems.append(
                    f"pipeline[{i}]: '{cls.NAME}' follows pipeline[{reduced_at}] '{filters[reduced_at].NAME}' with no upscale between"
                )
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
        problems.append(
            f"pipeline: the mask stays at the reduced size of pipeline[{reduced_at}] '{filters[reduced_at].NAME}'; add 'upscale' after the last mask filter"
        )
    for i, cls in enumerate(filters):
        if cls.ALIGNS and (i + 1 == len(filters) or filters[i + 1].SIDE_INPUT != "reference"):
            following = f"'{filters[i + 1].NAME}'" if i + 1 < len(filters) else "nothing"
            problems.append(f"pipeline[{i}]: '{cls.NAME}' must come right before the frame-pair filter it aligns; {following} follows it")
    pairs = [cls.NAME for cls in filters if cls.SIDE_INPUT == "reference"]
    if len(pairs) != 1:
        problems.append(f"pipeline: needs exactly one frame-pair filter (e.g. 'difference'); got {len(pairs)}")
    if not any(cls.OUTPUT is Kind.MASK for cls in filters):
        problems.append("pipeline: no filter produces a motion mask (e.g. 'threshold')")
    return problems


#: Filters that pass a mask's weak level on, between the model and the dilation.
_KEEPS_LEVELS = (Median, Erosion, Upscale)


def link_growth(filters: Sequence[Filter]) -> None:
    """Set ``weak_level`` on the filters that grow the mask into a model's weak pixels.

    A Gaussian background model with ``grow_sigmas`` above 0 writes the weak level
    (:data:`~motiondetect.filters.base.WEAK`, 128) when a dilation follows it with only medians,
    erosions and upscales between (they pass the level on; the default pipeline's median 9x9,
    erosion 3x3 and dilation 7x7). The model, those erosions (which keep what they remove from
    the foreground as weak) and the first dilation (which grows the foreground into the weak
    pixels and writes 0 or 255) are told so. Without such a dilation the model writes 0 or 255
    and ``grow_sigmas`` has no effect. Run on every pipeline a detector is made of; a list
    linked before is linked afresh.
    """
    for flt in filters:
        if isinstance(flt, (GaussianBackground, Erosion, Dilation)):
            flt.weak_level = False
    start = next((i for i, f in enumerate(filters) if isinstance(f, GaussianBackground)), None)
    if start is None or not filters[start].params["grow_sigmas"]:
        return
    for end in range(start + 1, len(filters)):
        if isinstance(filters[end], Dilation):
            for flt in (filters[start], *filters[start + 1 : end + 1]):
                if isinstance(flt, (GaussianBackground, Erosion, Dilation)):
                    flt.weak_level = True
            return
        if not isinstance(filters[end], _KEEPS_LEVELS):
            return


def _nearest_maps(src_size: tuple[int, int], dst_size: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Source column and row that ``cv2.resize(..., INTER_NEAREST)`` takes for each output pixel.

    Found by resizing images whose values are their own column and row indices (exact in float32
    below 2**24), so the maps are OpenCV's own rounding, not a re-derivation of it.

    Args:
        src_size, dst_size: (width, height) in pixels.

    Returns:
        int32 arrays of length dst width and dst height.
    """
    (sw, sh), (dw, dh) = src_size, dst_size
    if (sw, sh) == (dw, dh):
        return np.arange(dw, dtype=np.int32), np.arange(dh, dtype=np.int32)
    cols = np.broadcast_to(np.arange(sw, dtype=np.float32), (sh, sw))
    rows = np.broadcast_to(np.arange(sh, dtype=np.float32)[:, None], (sh, sw))
    xmap = cv2.resize(np.ascontiguousarray(cols), (dw, dh), interpolation=cv2.INTER_NEAREST)
    ymap = cv2.resize(np.ascontiguousarray(rows), (dw, dh), interpolation=cv2.INTER_NEAREST)
    return xmap[0].astype(np.int32), ymap[:, 0].astype(np.int32)


def _inverse_map(full_map: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """For each work index, the first and last input index that maps to it (maps are monotonic)."""
    inside = np.flatnonzero(full_map >= 0)
    values = full_map[inside]
    wanted = np.arange(size)
    first = inside[np.searchsorted(values, wanted, "left")]
    last = inside[np.searchsorted(values, wanted, "right") - 1]
    return first, last


@dataclass(frozen=True, eq=False)
class Geometry:
    """Where the filters run for frames of one size: the crop, the downscale and the maps back.

    Attributes:
        shape: (H, W) of the input frames, pixels.
        crop: (x0, y0, x1, y1), the half-open rectangle of the frame that the filters see.
        work_size: (w, h) of the image the filters run on (the crop, downscaled).
        roi: (h, w) uint8 ROI at the work size, 0 or 255; ``None`` when the whole image counts.
        area: pixels that can move at the work size (the ROI's count, else w * h); the motion
            fraction's denominator.
        xmap, ymap: int32 (W,) and (H,): for each input column / row, the work column / row its
            mask value comes from (OpenCV's INTER_NEAREST choice), -1 outside the crop.
        key: identifies the contents of ``roi`` and the maps (device copies are cached by it).
    """

    shape: tuple[int, int]
    crop: tuple[int, int, int, int]
    work_size: tuple[int, int]
    roi: np.ndarray | None
    area: int
    xmap: np.ndarray
    ymap: np.ndarray
    key: str
    _cols: tuple[np.ndarray, np.ndarray] = field(repr=False)
    _rows: tuple[np.ndarray, np.ndarray] = field(repr=False)

    @classmethod
    def build(cls, shape: tuple[int, int], roi: np.ndarray | None, downscale: int, halo: int | None) -> Geometry:
        """Plan the processing of (H, W) frames.

        The crop is the ROI's bounding box grown by ``halo * downscale`` pixels (the reach of the
        pipeline's neighbourhood filters), or the whole frame when there is no ROI or a filter's
        halo is unknown. The work size is the crop's size divided by ``downscale``, rounded down,
        at least 1.

        Raises:
            ValueError: the ROI has the wrong shape or covers no pixel at the work size.
        """
        height, width = shape
        if roi is not None and roi.shape != (height, width):
            raise ValueError(f"the region of interest is {roi.shape[1]}x{roi.shape[0]}, the frames are {width}x{height}")
        if roi is not None and halo is not None:
            x, y, w, h = cv2.boundingRect(roi)
            margin = halo * downscale
            crop = (max(0, x - margin), max(0, y - margin), min(width, x + w + margin), min(height, y + h + margin))
        else:
            crop = (0, 0, width, height)
        x0, y0, x1, y1 = crop
        cw, ch = x1 - x0, y1 - y0
        work_size = (max(1, cw // downscale), max(1, ch // downscale))
        work_roi = None
        if roi is not None:
            work_roi = np.ascontiguousarray(roi[y0:y1, x0:x1])
            if work_size != (cw, ch):
                # A work pixel is inside when at least half of the input pixels it covers are.
                work_roi = cv2.resize(work_roi, work_size, interpolation=cv2.INTER_AREA)
            work_roi = np.where(work_roi > 127, 255, 0).astype(np.uint8)
        area = int(cv2.countNonZero(work_roi)) if work_roi is not None else work_size[0] * work_size[1]
        if area == 0:
            raise ValueError("the region of interest covers no pixel of the frame" + (" at the downscaled size" if downscale > 1 else ""))
        cols, rows = _nearest_maps(work_size, (cw, ch))
        xmap = np.full(width, -1, np.int32)
        ymap = np.full(height, -1, np.int32)
        xmap[x0:x1], ymap[y0:y1] = cols, rows
        digest = hashlib.sha1()
        for part in (
            np.array([height, width, *crop, *work_size], np.int64),
            xmap,
            ymap,
            work_roi if work_roi is not None else np.zeros(0, np.uint8),
        ):
            digest.update(part.tobytes())
        return cls(
            (height, width),
            crop,
            work_size,
            work_roi,
            area,
            xmap,
            ymap,
            digest.hexdigest(),
            _inverse_map(xmap, work_size[0]),
            _inverse_map(ymap, work_size[1]),
        )

    @property
    def identity(self) -> bool:
        """The filters see the whole frame at its own size (no crop, no downscale)."""
        height, width = self.shape
        return self.crop == (0, 0, width, height) and self.work_size == (width, height)

    def work_image(self, frame: np.ndarray) -> np.ndarray:
        """The (h, w, 3) BGR image the filters see: the crop of ``frame``, downscaled with INTER_AREA."""
        x0, y0, x1, y1 = self.crop
        image = frame[y0:y1, x0:x1]
        if self.work_size != (x1 - x0, y1 - y0):
            return cv2.resize(image, self.work_size, interpolation=cv2.INTER_AREA)
        return np.ascontiguousarray(image)

    def expand(self, mask: np.ndarray) -> np.ndarray:
        """Map a work-size mask to the input size on the host: ``cv2.resize`` with INTER_NEAREST
        pasted at the crop, 0 elsewhere; the same result as the maps give the GPU kernel."""
        height, width = self.shape
        x0, y0, x1, y1 = self.crop
        if (x1 - x0, y1 - y0) != self.work_size:
            mask = cv2.resize(mask, (x1 - x0, y1 - y0), interpolation=cv2.INTER_NEAREST)
        if (x0, y0, x1, y1) == (0, 0, width, height):
            return mask
        full = np.zeros((height, width), mask.dtype)
        full[y0:y1, x0:x1] = mask
        return full

    def map_box(self, box: Box | None) -> Box | None:
        """Map a work-size bounding box (x, y, w, h) to the bounding box of :meth:`expand`'s mask.

        Exact and O(1): the maps are monotonic and reach every work row and column, so the
        expanded mask's first column is the first input column mapping to the box's first one.
        """
        if box is None:
            return None
        x, y, w, h = box
        (first_col, last_col), (first_row, last_row) = self._cols, self._rows
        left, top = int(first_col[x]), int(first_row[y])
        return (left, top, int(last_col[x + w - 1]) - left + 1, int(last_row[y + h - 1]) - top + 1)


class MotionDetector:
    """Runs a filter pipeline on consecutive frames (previous, current), keeping state between calls.

    The grey image that enters the frame-pair filter is kept as the reference for the next frame
    (on the device with the CUDA backend: its buffer is swapped in, not copied). The first
    frame, which has no predecessor, gets an empty mask and passes through unchanged.

    The filters up to the last mask-producing one (the detection part) run on the work image
    (the frame, cropped to the ROI and downscaled when asked); the ROI is applied to their mask,
    which is then counted, boxed and mapped back to the input size; the filters after it (the
    annotation part, the red blend) run at the input size on the input frame.

    Args:
        filters: filter instances in pipeline order (built from the config; the detector never
            chooses them).
        cuda: an entered :class:`~motiondetect.gpu.cuda_handler.CUDAHandler` to run the kernels, or
            ``None`` for the CPU reference implementations.
        roi: (H, W) uint8 region of interest at the input size, non-zero inside; ``None`` for
            the whole frame (see :func:`motiondetect.pipeline.roi.rasterize`).
        downscale: process at 1/``downscale`` of the width and height (integer >= 1; 1 = full
            size). The resize is ``cv2.INTER_AREA`` on the host.
        annotate: run the annotation filters (the red blend) and return their frame; ``False``
            skips them (and, on the GPU, the frame's download), and ``FrameResult.frame`` is the
            input array itself.
        masks: return the mask; ``False`` (only the motion fraction and box are wanted, as for
            an events-only scan) skips the mask's download from the GPU, and
            ``FrameResult.mask`` is ``None`` on both backends.

    Raises:
        ValueError: the filters do not chain into a motion pipeline, ``roi`` is not 2-D, or
            ``downscale`` < 1.
        TypeError: ``roi`` is not a uint8 array.

    Example:
        >>> from motiondetect.pipeline.config import build_filters, default_config
        >>> detector = MotionDetector(build_filters(default_config()))
        >>> result = detector.process(np.zeros((4, 6, 3), np.uint8))
        >>> result.mask.shape, result.motion_fraction, result.bbox
        ((4, 6), 0.0, None)
    """

    def __init__(
        self,
        filters: Sequence[Filter],
        cuda=None,
        roi: np.ndarray | None = None,
        downscale: int = 1,
        annotate: bool = True,
        masks: bool = True,
    ) -> None:
        problems = pipeline_problems([type(f) for f in filters])
        if problems:
            raise ValueError("; ".join(problems))
        if roi is not None:
            if not isinstance(roi, np.ndarray) or roi.dtype != np.uint8:
                raise TypeError(f"roi must be an (H, W) uint8 array; got {getattr(roi, 'dtype', type(roi).__name__)}")
            if roi.ndim != 2:
                raise ValueError(f"roi must be (H, W); got shape {roi.shape}")
        if int(downscale) != downscale or downscale < 1:
            raise ValueError(f"downscale must be an integer >= 1; got {downscale}")
        self.filters = list(filters)
        link_growth(self.filters)
        last_mask = max(i for i, f in enumerate(self.filters) if f.OUTPUT is Kind.MASK)
        self._detect = self.filters[: last_mask + 1]
        self._annotate = self.filters[last_mask + 1 :]
        #: The annotation is one red blend, which Y'CbCr pictures get in their own colour space.
        self._yuv_annotation = len(self._annotate) == 1 and hasattr(self._annotate[0], "reference_yuv")
        #: The frame-pair filter compares colour too: each frame's chroma planes go with the grey.
        self._chroma = any(getattr(f, "needs_chroma", False) for f in self._detect)
        #: A downscale right after the grey stage can run in the pass that makes the grey image
        #: (or the chroma) from the frame, with the same bits: the stage whose output that pass
        #: writes.
        pair = next((i for i, f in enumerate(self._detect) if f.SIDE_INPUT == "reference"), 0)
        self._grey_to = 1 if pair > 1 and self._detect[1].RESAMPLE == "down" else 0
        #: The chroma is shrunk as it is expanded from 4:2:0 or converted from BGR.
        self._chroma_from = self._grey_to if self._chroma else 0
        halos = [f.halo() for f in self._detect]
        known = [h for h in halos if h is not None]
        self._halo = sum(known) if len(known) == len(halos) else None
        # Non-zero inside, as documented: the geometry shrinks it by area means and keeps the
        # pixels above half, so a mask of 1s (or of 100s) is made 0/255 first.
        self.roi = None if roi is None else np.where(roi != 0, 255, 0).astype(np.uint8)
        self.downscale = int(downscale)
        self.annotate = annotate
        self.masks = masks
        self.backend = "cpu" if cuda is None else "cuda"
        self._executor = _CpuExecutor() if cuda is None else _CudaExecutor(cuda)
        self._geometries: dict[tuple[int, int], Geometry] = {}
        self._shape: tuple[int, ...] | None = None
        self._reference = None

    @property
    def detection_filters(self) -> list[Filter]:
        """The filters up to the last mask-producing one (they run at the work size)."""
        return self._detect

    @property
    def annotation_filters(self) -> list[Filter]:
        """The filters after the mask (the red blend), run at the input size on the frame."""
        return self._annotate

    @property
    def needs_chroma(self) -> bool:
        """The frame-pair filter compares each frame's chroma too (a Gaussian background with
        ``chroma_min_sigma``): the chroma planes go with the grey image through the filters that
        change its geometry (:meth:`Filter.reference_planes
        <motiondetect.filters.base.Filter.reference_planes>`)."""
        return self._chroma

    @property
    def grey_to(self) -> int:
        """The detection stage whose output a pass over the frame can write directly: 1 when a
        downscale follows the grey stage before the frame-pair filter (its blocks are averaged as
        the luma is read, in the batched GPU path), else 0."""
        return self._grey_to

    @property
    def chroma_from(self) -> int:
        """The detection stage whose output size the chroma starts at: 1 when a downscale follows
        the grey stage (it shrinks the chroma as a decoded picture's 4:2:0 samples are expanded,
        or as a BGR frame is converted), else 0 (the grey image's size)."""
        return self._chroma_from

    @property
    def yuv_annotation(self) -> bool:
        """The annotation is one red blend, which decoded pictures get in Y'CbCr."""
        return self._yuv_annotation

    def reset(self) -> None:
        """Forget the reference frame and every filter's state (background models): the next
        frame is treated as the first of a new stream."""
        self._shape = None
        self._reference = None
        for flt in self.filters:
            flt.reset()

    def seek(self) -> None:
        """Go on from another frame of the same stream (a chunk's warm-up, after the file's first
        frame ran): the next frame has no reference and the background models start afresh, but
        what the stream's first frame fixed for good is kept (:meth:`Filter.seek
        <motiondetect.filters.base.Filter.seek>`: registration's anchor)."""
        self._shape = None
        self._reference = None
        for flt in self.filters:
            flt.seek()

    def geometry(self, shape: tuple[int, ...]) -> Geometry:
        """The processing plan for frames of ``shape`` ((H, W) or (H, W, 3)), made once per size.

        Raises:
            ValueError: the ROI does not fit the frame size or covers no pixel at the work size.
        """
        key = (int(shape[0]), int(shape[1]))
        geometry = self._geometries.get(key)
        if geometry is None:
            geometry = Geometry.build(key, self.roi, self.downscale, self._halo)
            self._geometries[key] = geometry
        return geometry

    def process(self, frame: np.ndarray | Picture) -> FrameResult:
        """Run the pipeline on the next frame of the stream.

        Args:
            frame: (H, W, 3) uint8 BGR, or a decoded :class:`~motiondetect.core.picture.Picture`
                (luma first: its grey image is the luma, expanded to full range, and the red
                blend is applied in Y'CbCr, so ``FrameResult.frame`` is a ``Picture`` too); the
                same size as the previous frames.

        Returns:
            The frame's :class:`FrameResult` (arrays owned by the caller).

        Raises:
            TypeError: ``frame`` is not a uint8 NumPy array.
            ValueError: ``frame`` is not (H, W, 3), its size differs from the previous frame's,
                or the ROI does not fit it.
        """
        result = self._process(frame, prime=False)
        assert result is not None  # only priming returns None
        return result

    def prime(self, frame: np.ndarray | Picture) -> None:
        """Make ``frame`` the reference of the next frame without detecting motion in it.

        Runs only the filters before the frame-pair filter (the grey conversion). Frame skip
        primes the frame just before each processed one, so every processed frame is compared
        with its true predecessor: its motion fraction is the full run's, and the sensitivity
        does not change with the skip.

        Raises:
            TypeError, ValueError: as :meth:`process`.
        """
        self._process(frame, prime=True)

    def _process(self, frame: np.ndarray | Picture, prime: bool) -> FrameResult | None:
        picture = frame if isinstance(frame, Picture) else None
        if picture is None:
            if not isinstance(frame, np.ndarray) or frame.dtype != np.uint8:
                got = f"{frame.dtype}" if isinstance(frame, np.ndarray) else type(frame).__name__
                raise TypeError(f"frame must be a (H, W, 3) uint8 BGR array or a Picture; got {got}")
            if frame.ndim != 3 or frame.shape[2] != 3 or 0 in frame.shape:
                raise ValueError(f"frame must be (H, W, 3) BGR with H, W >= 1; got shape {frame.shape}")
            frame = np.ascontiguousarray(frame)
        if self._shape is not None and frame.shape != self._shape:
            raise ValueError(f"frame size changed from {self._shape[1]}x{self._shape[0]} to {frame.shape[1]}x{frame.shape[0]}")
        geo = self.geometry(frame.shape)
        self._shape = frame.shape
        run = self._executor
        chroma = None  # (2, h, w) Cb and Cr beside the grey image, for a model that compares colour
        if picture is not None:
            # Luma first: the grey stage is the decoder's luma, expanded to full range. Filters
            # that read the frame's size (upscale) get it from a stand-in of the work image.
            image, first = run.luma(self._detect[0], picture, geo), 1
            original = SizeOnly((geo.work_size[1], geo.work_size[0], 3))
            if self._chroma and not prime:
                chroma = run.picture_chroma(self._detect[0], picture, geo, self._detect[self._chroma_from])
        else:
            assert isinstance(frame, np.ndarray)  # checked above: no picture means a BGR array
            original = run.upload("frame", frame if geo.identity else geo.work_image(frame))
            image, first = original, 0
            if self._chroma and not prime:
                chroma = run.bgr_chroma(self._detect[0], original, self._detect[self._chroma_from])
        # Only the count and box leave this call: a last upscale need not run, since both follow
        # exactly from the mask before it (each pixel a block of equal pixels).
        counts_only = isinstance(run, _CpuExecutor) and not self.masks and not (self.annotate and self._annotate) and geo.roi is None
        last = len(self._detect) - 1
        for stage in range(first, len(self._detect)):
            flt = self._detect[stage]
            if stage == last and counts_only and (stats := _stats_before_upscale(flt, image, original.shape)) is not None:
                count, box = stats
                return FrameResult(None, frame.copy() if self.annotate else frame, count / geo.area, geo.map_box(box) if count else None)
            if flt.SIDE_INPUT == "reference":
                previous, self._reference = self._reference, run.keep(stage - 1, image)
                if prime:
                    run.synchronize()  # the upload's staging buffer is reused by the next frame
                    return None
                if previous is None:
                    run.synchronize()
                    empty = np.zeros(frame.shape[:2], np.uint8) if self.masks else None
                    return FrameResult(empty, frame.copy() if self.annotate else frame, 0.0, None)
                image, chroma = run.run(stage, flt, image, previous, chroma), None  # the chroma's last use
                if self._detect[stage - 1].ALIGNS:  # the comparison, back onto this frame's pixels
                    image = run.unshift(self._detect[stage - 1], image)
            else:
                side = original if flt.SIDE_INPUT == "frame" else None
                if chroma is not None and stage > self._chroma_from:  # the planes go with the grey image
                    image, chroma = run.run_with_planes(stage, flt, image, side, chroma)
                else:
                    image = run.run(stage, flt, image, side)
        mask = image if geo.roi is None else run.and_mask(image, geo)
        full_mask = mask if geo.identity else run.expand(mask, geo)
        out = None
        if self.annotate and self._annotate:
            if picture is not None and self._yuv_annotation:
                out = run.blend_yuv(self._annotate[0], full_mask, picture)
            else:
                if picture is not None:
                    frame = picture.to_bgr()  # colour only now, for an annotation with no Y'CbCr form
                full_frame = original if geo.identity and picture is None else run.upload("frame_full", frame)
                image = full_mask
                for offset, flt in enumerate(self._annotate, start=len(self._detect)):
                    image = run.run(offset, flt, image, full_frame if flt.SIDE_INPUT == "frame" else None)
                    if flt.OUTPUT is Kind.BGR:
                        out = image
        mask_host, frame_host, moving, box = run.finish(mask, full_mask if self.masks else None, out)
        if frame_host is None:
            frame_host = frame.copy() if self.annotate else frame
        return FrameResult(mask_host, frame_host, moving / geo.area, geo.map_box(box) if moving else None)

    def repeat(self, frame: np.ndarray | Picture, previous: FrameResult) -> FrameResult:
        """The result for a frame that is not processed (frame skip): ``previous`` held over it.

        Keeps ``previous``'s mask (the same array), motion fraction and box; the frame is
        annotated with that mask by the annotation filters' CPU references on the host, so both
        backends give the same bits. Does not change the reference frame.

        Args:
            frame: (H, W, 3) uint8 BGR or a :class:`~motiondetect.core.picture.Picture`, the
                skipped frame.
            previous: the last processed frame's result; it must have a mask when the detector
                annotates (``masks=True``), since the annotation is re-blended from it.
        """
        if not (self.annotate and self._annotate):
            return FrameResult(previous.mask, frame.copy() if self.annotate else frame, previous.motion_fraction, previous.bbox)
        mask = previous.mask
        assert mask is not None, "repeat() re-blends the held mask: annotating detectors need masks=True"
        if isinstance(frame, Picture):
            if self._yuv_annotation:
                blend = self._annotate[0]
                assert hasattr(blend, "reference_yuv")  # what _yuv_annotation checked
                return FrameResult(previous.mask, blend.reference_yuv(mask, frame), previous.motion_fraction, previous.bbox)
            frame = frame.to_bgr()
        image, out = mask, None
        for flt in self._annotate:
            image = flt.reference(image, frame if flt.SIDE_INPUT == "frame" else None)
            if flt.OUTPUT is Kind.BGR:
                out = image
        return FrameResult(previous.mask, frame.copy() if out is None else out, previous.motion_fraction, previous.bbox)


def _work_chroma(picture: Picture, geo: Geometry) -> np.ndarray:
    """A picture's (2, h, w) full-range chroma at the work size: :meth:`Picture.chroma
    <motiondetect.core.picture.Picture.chroma>`, each plane cropped and resized as the luma is."""
    planes = picture.chroma()
    return planes if geo.identity else np.stack([geo.work_image(plane) for plane in planes])


@dataclass(frozen=True)
class SizeOnly:
    """Stands in for the work image where a filter reads only its shape (upscale's ``frame``
    side input) and the image itself is not at hand (luma-first pictures, batches)."""

    shape: tuple[int, int, int]


def _stats_before_upscale(flt: Filter, mask: np.ndarray, side_shape: tuple[int, ...]) -> tuple[int, Box | None] | None:
    """The count and box :func:`mask_stats_reference` would give after ``flt`` when it is an
    upscale, from ``mask`` before it: each pixel becomes a block of
    :func:`~motiondetect.filters.upscale.block_repeats` rows and columns (fy x fx for whole
    factors), and the box's corners become their blocks' outer corners. ``None`` for any other
    filter."""
    if not isinstance(flt, Upscale):
        return None
    (h, w), (out_h, out_w) = mask.shape, flt.output_shape(mask.shape, side_shape)
    count, box = mask_stats_reference(mask)
    if box is None:
        return 0, None
    if out_h % h or out_w % w:  # blocks of unequal sizes: weigh each pixel by its block's area
        count = int(block_repeats(h, out_h) @ (mask != 0).astype(np.int64) @ block_repeats(w, out_w))
    else:
        count *= (out_h // h) * (out_w // w)
    return count, upscale_box(box, (h, w), (out_h, out_w))


@functools.lru_cache(maxsize=8)
def _box_init(frames: int) -> np.ndarray:
    """(frames, 4) uint32 copies of :data:`_BOX_INIT`, made once per batch size: the device copy
    is uploaded once, and building the host table on every call cost 2 us a launch."""
    return np.tile(_BOX_INIT, (frames, 1))


@functools.lru_cache(maxsize=64)
def _bounds(size: int, blocks: int) -> tuple[int, ...]:
    """:func:`~motiondetect.filters.downscale.block_bounds` as Python ints, made once per size:
    the batched path maps up to K boxes a batch, and NumPy's arange and append for each took 9 us
    a frame on a 2-core CPU (0.2 us from the cache), 70 % of handing out a batch's results."""
    return tuple(int(v) for v in block_bounds(size, blocks))


def upscale_box(box: Box, small: tuple[int, int], full: tuple[int, int]) -> Box:
    """The (x, y, w, h) box, in pixels of a ``small`` (h, w) mask, on the ``full`` (H, W) mask
    :class:`~motiondetect.filters.upscale.Upscale` makes of it: from the first pixel of its
    first block to the last pixel of its last block, each way."""
    x, y, width, height = box
    cols, rows = _bounds(full[1], small[1]), _bounds(full[0], small[0])
    return cols[x], rows[y], cols[x + width] - cols[x], rows[y + height] - rows[y]


def mask_stats_reference(mask: np.ndarray) -> tuple[int, Box | None]:
    """Count and bounding box of a mask's non-zero pixels on the CPU.

    Args:
        mask: (H, W) uint8.

    Returns:
        (count, (x, y, w, h)) with ``None`` for the box when the count is 0.
    """
    count = int(cv2.countNonZero(mask))
    if not count:
        return count, None
    x, y, w, h = cv2.boundingRect(mask)
    return count, (int(x), int(y), int(w), int(h))


def queue_mask_stats(cuda, mask, key: str = "mask", upscaled: tuple[int, int] | None = None):
    """Queue the count and bounding box of a device mask, or of each mask of a batch, on
    ``cuda.stream``.

    Runs ``md_mask_stats_u8`` (kernels/mask_count.cu) after resetting its accumulators on the
    stream; a batch is reduced in one launch (one row of blocks per mask).

    Args:
        cuda: an entered :class:`~motiondetect.gpu.cuda_handler.CUDAHandler`.
        mask: (H, W) or (K, H, W) uint8 device array.
        key: names the accumulators among the handler's buffers.
        upscaled: (rows, columns) of the mask an :class:`~motiondetect.filters.upscale.Upscale`
            would make of each: the counts are then that mask's (each pixel weighted by its
            block); the corners stay in ``mask``'s pixels (:func:`upscale_box` maps them).

    Returns:
        (total, box): device arrays, uint64 (K,) = the counts and uint32 (K, 4) = x0, y0, x1, y1
        (inclusive corners; meaningful where the count is > 0), valid once the stream has run;
        K = 1 for a single mask.
    """
    import pycuda.driver as drv

    frames, height, width = planes(mask)
    total = cuda.buffer(f"{key}_total", (frames,), np.uint64)
    box = cuda.buffer(f"{key}_box", (frames, 4), np.uint32)
    drv.memset_d32_async(total.gpudata, 0, 2 * frames, cuda.stream)
    init = cuda.constant(("mask_box_init", frames), _box_init(frames))
    drv.memcpy_dtod_async(box.gpudata, init.gpudata, box.nbytes, cuda.stream)
    fn = cuda.function("mask_count", "md_mask_stats_u8", "PiiPPii")
    n = height * width
    out_h, out_w = upscaled or (height, width)
    cuda.launch_strided(
        fn,
        n,
        _COUNT_MAX_BLOCKS,
        mask.gpudata,
        np.int32(width),
        np.int32(n),
        total.gpudata,
        box.gpudata,
        np.int32(out_w),
        np.int32(out_h),
        frames=frames,
    )
    return total, box


def box_from_corners(count: int, corners) -> Box | None:
    """(x, y, w, h) from inclusive corners (x0, y0, x1, y1), or ``None`` when ``count`` is 0."""
    if not count:
        return None
    x0, y0, x1, y1 = (int(v) for v in corners)
    return (x0, y0, x1 - x0 + 1, y1 - y0 + 1)


def device_and_mask(cuda, mask, geo: Geometry, out):
    """Queue ``mask`` (a work-size (h, w) mask or a batch (K, h, w)) zeroed outside the
    geometry's ROI into the device array ``out`` (same shape); return ``out``."""
    roi_host = geo.roi
    assert roi_host is not None  # called only for a geometry with an ROI
    roi = cuda.constant(("roi", geo.key), roi_host)
    n = element_count(mask)
    fn = cuda.function("mask_ops", "md_and_mask_u8", "PPPii")
    cuda.launch_1d(fn, int(n), mask.gpudata, roi.gpudata, out.gpudata, n, np.int32(roi_host.size))
    return out


def device_expand(cuda, mask, geo: Geometry, out):
    """Queue the input-size version of a work-size mask (or batch of masks) into the device
    array ``out`` ((H, W) or (K, H, W)) (kernel ``md_expand_mask_u8``, OpenCV's INTER_NEAREST
    maps); return ``out``."""
    frames, mask_h, mask_w = planes(mask)
    xmap = cuda.constant(("xmap", geo.key), geo.xmap)
    ymap = cuda.constant(("ymap", geo.key), geo.ymap)
    height, width = geo.shape
    fn = cuda.function("mask_ops", "md_expand_mask_u8", "PiiPPPii")
    cuda.launch_2d(
        fn,
        geo.shape,
        mask.gpudata,
        np.int32(mask_w),
        np.int32(mask_h * mask_w),
        xmap.gpudata,
        ymap.gpudata,
        out.gpudata,
        np.int32(width),
        np.int32(height),
        frames=frames,
    )
    return out


class _CpuExecutor:
    """Runs each filter's NumPy/OpenCV reference; images are host arrays."""

    def upload(self, key, frame):
        return frame

    def luma(self, gray, picture, geo):
        grey = gray.reference_luma(picture)
        return grey if geo.identity else geo.work_image(grey)

    def picture_chroma(self, gray, picture, geo, shrink):
        if geo.identity and shrink is not gray:  # straight from the 4:2:0 samples (not at factor 1)
            planes = shrink.reference_chroma_420(picture)
            if planes is not None:
                return planes
        planes = _work_chroma(picture, geo)
        return planes if shrink is gray else shrink.reference_planes(planes)

    def bgr_chroma(self, gray, image, shrink):
        planes = gray.reference_chroma(image)
        return planes if shrink is gray else shrink.reference_planes(planes)

    def blend_yuv(self, flt, mask, picture):
        return flt.reference_yuv(mask, picture)

    def run(self, stage, flt, src, side, chroma=None):
        return flt.reference(src, side) if chroma is None else flt.reference(src, side, chroma)

    def run_with_planes(self, stage, flt, src, side, planes):
        image = flt.reference(src, side)  # first: a registration moves the planes by its shift
        return image, flt.reference_planes(planes)

    def keep(self, stage, image):
        return image  # filters return new arrays, so no later stage overwrites it

    def unshift(self, flt, image):
        return flt.unshift_reference(image)

    def synchronize(self):
        pass

    def and_mask(self, mask, geo):
        return cv2.bitwise_and(mask, geo.roi)  # roi is 0 or 255: keeps the mask where it is 255

    def expand(self, mask, geo):
        return geo.expand(mask)

    def finish(self, mask, full_mask, out):
        count, box = mask_stats_reference(mask)
        return full_mask, out, count, box


class _CudaExecutor:
    """Runs each filter's kernel; images are device arrays reused from frame to frame.

    Per frame: one page-locked upload of the work image (and of the full frame when the work
    image is cropped or downscaled and the frame is annotated), the kernels, the ROI, the mask
    statistics (count and box), the expansion to the input size, and page-locked downloads of
    the mask, the annotated frame and the statistics, all queued on the handler's stream with a
    single synchronisation at the end.
    """

    def __init__(self, cuda) -> None:
        self.cuda = cuda
        self._yuv_size: tuple[int, int, bool] | None = None  # (H, W, full range) of a blended picture
        self._luma = None  # this frame's Y' plane on the device, when luma() uploaded it whole
        self._chroma_uv = None  # this frame's Cb and Cr planes on the device, once uploaded

    def upload(self, key, frame):
        return self.cuda.upload(key, frame)

    def luma(self, gray, picture, geo):
        cuda = self.cuda
        self._luma = self._chroma_uv = None  # a new picture
        if not geo.identity:  # cropped or downscaled on the host, as BGR work images are
            return cuda.upload(("stage", 0), geo.work_image(gray.reference_luma(picture)))
        luma = self._luma = cuda.upload("luma", np.ascontiguousarray(picture.y))
        dst = cuda.buffer(("stage", 0), picture.y.shape)
        gray.apply_luma(cuda, int(luma.gpudata), picture.y.shape[1], 0, dst, picture.full_range)
        return dst

    def picture_chroma(self, gray, picture, geo, shrink):
        cuda = self.cuda
        if not geo.identity:  # cropped or downscaled on the host, as the luma is
            planes = cuda.upload("chroma_planes", _work_chroma(picture, geo))
            return planes if shrink is gray else self.planes("chroma", shrink, planes)
        u, v = self._uploaded_chroma(picture)
        height, width = picture.y.shape
        dst = cuda.buffer("chroma_planes", (2, *shrink.output_shape((height, width))))
        gray.apply_chroma_420(cuda, (int(u.gpudata), int(v.gpudata)), u.shape[1], 1, 0, (0, 0, width, height), dst, picture.full_range)
        return dst

    def _uploaded_chroma(self, picture):
        """The picture's Cb and Cr planes on the device, uploaded once a frame (the model's chroma
        and the blend both read them)."""
        if self._chroma_uv is None:
            cuda = self.cuda
            self._chroma_uv = (
                cuda.upload("chroma_u", np.ascontiguousarray(picture.u)),
                cuda.upload("chroma_v", np.ascontiguousarray(picture.v)),
            )
        return self._chroma_uv

    def bgr_chroma(self, gray, image, shrink):
        # Shrunk in the conversion's pass (one launch, no full-size planes), the same bits.
        dst = self.cuda.buffer("chroma_planes", (2, *shrink.output_shape(image.shape[:2])))
        gray.apply_chroma(self.cuda, image, dst)
        return dst

    def planes(self, stage, flt, planes):
        count = planes.shape[0]
        dst = self.cuda.buffer(("planes", stage), (count, *flt.output_shape(planes.shape[1:])))
        return dst if flt.apply_planes(self.cuda, planes, dst) else planes

    def blend_yuv(self, flt, mask, picture):
        cuda = self.cuda
        height, width = picture.y.shape
        y = self._luma if self._luma is not None else cuda.upload("luma", np.ascontiguousarray(picture.y))
        u, v = self._uploaded_chroma(picture)
        out = cuda.buffer("yuv_out", (height * width + 2 * u.size,))
        flt.apply_yuv(cuda, mask, int(y.gpudata), width, 0, int(u.gpudata), int(v.gpudata), u.shape[1], 1, 0, out, picture.full_range)
        self._yuv_size = (height, width, picture.full_range)
        return out

    def run(self, stage, flt, src, side, chroma=None):
        dst = self.cuda.buffer(("stage", stage), flt.output_shape(src.shape, None if side is None else side.shape))
        if chroma is None:
            flt.apply(self.cuda, src, dst, side)
        else:
            flt.apply_kernel(self.cuda, src, dst, side, chroma=(int(chroma.gpudata), int(src.size)))
        return dst

    def run_with_planes(self, stage, flt, src, side, planes):
        cuda = self.cuda
        dst = cuda.buffer(("stage", stage), flt.output_shape(src.shape, None if side is None else side.shape))
        planes_dst = cuda.buffer(("planes", stage), (planes.shape[0], *flt.output_shape(planes.shape[1:])))
        moved = flt.apply_with_planes(cuda, src, dst, side, planes, planes_dst)  # one launch for both where it can
        return dst, planes_dst if moved else planes

    def unshift(self, flt, image):
        dst = self.cuda.buffer("unshifted", image.shape)
        flt.unshift(self.cuda, image, dst)
        return dst

    def keep(self, stage, image):
        # The kept image is stage's output buffer: hand it to the reference slot and give that
        # slot's old buffer (the previous reference, now spent) to the stage for the next frame.
        self.cuda.swap_buffers(("stage", stage), "reference")
        return image

    def synchronize(self):
        self.cuda.synchronize()

    def and_mask(self, mask, geo):
        return device_and_mask(self.cuda, mask, geo, self.cuda.buffer("roi_mask", mask.shape))

    def expand(self, mask, geo):
        return device_expand(self.cuda, mask, geo, self.cuda.buffer("full_mask", geo.shape))

    def finish(self, mask, full_mask, out):
        cuda = self.cuda
        total, box = queue_mask_stats(cuda, mask)
        mask_host = None if full_mask is None else cuda.download("mask", full_mask)
        frame_host = None if out is None else cuda.download("frame", out)
        total_host = cuda.download("mask_total", total)
        box_host = cuda.download("mask_box", box)
        cuda.synchronize()
        count = int(total_host[0])
        owned = [None if host is None else host.copy() for host in (mask_host, frame_host)]  # the pinned buffers are reused
        if out is not None and out.ndim == 1:  # a blended picture, planar
            height, width, full_range = self._yuv_size
            owned[1] = unpack_planes(owned[1], height, width, full_range)
        return owned[0], owned[1], count, box_from_corners(count, box_host[0])
