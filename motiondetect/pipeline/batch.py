"""BatchDetector: the GPU-resident pipeline, K frames per launch, fed through a ring of batches.

The frame-at-a-time :class:`~motiondetect.pipeline.detector.MotionDetector` launches a dozen kernels
from Python per frame and waits for each frame: on the GPU that is launch-bound. Here a decode
thread fills ring slots of K frames while the main thread runs the previous batch:

- NVDEC frames (:class:`~motiondetect.sources.nvdec.DeviceFrame`) are copied device to device into the
  slot by the decode thread, on the decoder's own stream. Host-decoded pictures whose planes lie
  in a decoder's pooled frame buffers (H.264 and HEVC through PyAV) are copied by DMA straight
  from there, each buffer registered as pinned memory once
  (:mod:`~motiondetect.gpu.registered_buffers`), queued by the decode thread on a stream of their
  own. Other host pictures are copied into the slot's page-locked (pinned) buffers by a pool of
  staging threads, each as soon as it is decoded (fresh in the CPU's caches), while the main
  thread hands out earlier results, and uploaded once the slot is full with one asynchronous
  copy per plane on an upload stream of their own. The kernels run on the handler's stream
  after the copies' events: decode, copies, kernels and downloads overlap.
- The grey stage reads the luma in place (``md_luma_to_gray_u8``, cropped to the ROI's box by
  addressing, and shrunk in the same pass when a downscale follows it), every filter runs once
  per batch on a (K, H, W) grid (``BATCHED`` filters; the others frame by frame on views), the
  background model carries its state through the batch in registers, and the mask statistics
  of all K frames come from one reduction.
- Only what is needed comes back, once per batch: the K motion counts and boxes; the masks when
  an output needs them; the annotated frames as yuv420p pictures (the red blend applied in
  Y'CbCr on the device) when video is written. Masks and pictures are handed out as views of
  the page-locked buffers they were downloaded into (no host copy); a buffer is used again only
  once no view of it is left (:class:`PinnedPool`).
- Batch n + 1 is uploaded and queued before batch n's results are handed out, so the host's
  staging copies and the upload of one batch overlap the kernels and the download of the one
  before (one batch of latency; files only).

Results with any K equal K = 1 and equal :class:`MotionDetector`'s, bit for bit (GPU tests).
One synchronisation per batch; device buffers are allocated once (memory stays flat).
"""

from __future__ import annotations

import os
import queue
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Sequence

import numpy as np

from motiondetect.core.picture import Picture, chroma_shape, unpack_planes
from motiondetect.core.types import Frame, FrameResult
from motiondetect.filters import Filter, Upscale
from motiondetect.filters.base import frames_view
from motiondetect.gpu.registered_buffers import RegisteredBuffers
from motiondetect.pipeline.detector import (
    Geometry,
    MotionDetector,
    SizeOnly,
    box_from_corners,
    device_and_mask,
    device_expand,
    queue_mask_stats,
    upscale_box,
)
from motiondetect.sources.nvdec import DeviceFrame

#: Frames per batch at 1080p and below. Measured on an H200 at 1080p
#: (benchmarks/bench_throughput.py --batches): 32 reaches the on-device plateau; larger batches
#: only add latency and memory.
DEFAULT_BATCH = 32
#: Pixels per batch that :func:`auto_batch` aims at for NVDEC frames: DEFAULT_BATCH frames of
#: 1080p. Larger frames take fewer per batch: at 2160p the on-device rate is the same at K = 8 and
#: K = 32 (11,143 and 11,082 fps on an H200), and 8 holds a quarter of the device memory.
BATCH_PIXELS = DEFAULT_BATCH * 1920 * 1080
#: Batches in flight: one being filled by the decode thread, one queued on the GPU, one whose
#: results are being handed out, one spare.
RING_SLOTS = 4
#: Threads copying host-decoded pictures into pinned memory (NumPy copies without the GIL).
#: Measured on the GPU machine (H200, 16 cores), 1080p pictures in -> annotated pictures + masks
#: out, K = 32, copies of a batch started as it filled: 4 threads 4,424 fps, 8 threads
#: 5,642-6,792, 12 threads 6,277, 16 threads 5,985 (PCIe for the same bytes: about 10,000);
#: copies started frame by frame (now), 8 threads: 5,481-6,094. Fewer where there are fewer cores.
STAGING_THREADS = max(1, min(8, os.cpu_count() or 1))
#: Frames per batch for host-decoded video (the CPU decoder), at most :data:`HOST_BATCH` and
#: :data:`HOST_BATCH_PIXELS`: 8 at 1080p, 4 at 2160p. Their pinned ring is then a quarter or a
#: half of the on-device one (66 MB at 1080p instead of 265 MB), allocated and freed in a few
#: milliseconds. Measured on an H200 (16 cores), `--no-video --decoder cpu`, whole processes,
#: three runs each: 1080p K = 32 934-979 fps, 16 959-1,027, 8 1,007-1,184, 4 1,019-1,177 (PyAV
#: decode-only processes 1,354-1,497); 2160p K = 32 163, 16 197, 8 241, 4 257 (decode-only 317).
HOST_BATCH = 8
HOST_BATCH_PIXELS = 4 * 3840 * 2160
_END = object()


def auto_batch(size: tuple[int, int], host_decoded: bool = False) -> int:
    """Frames per batch for frames of ``size`` (width, height in pixels) when the config leaves
    it to the program (``scan.batch`` 0).

    Frames decoded on the device (NVDEC) take as many as hold :data:`BATCH_PIXELS`, 1 to
    :data:`DEFAULT_BATCH` (32 at 1080p and below, 8 at 2160p): the on-device rate grows with K.
    Host-decoded frames (``host_decoded``) take as many as hold :data:`HOST_BATCH_PIXELS`, 1 to
    :data:`HOST_BATCH` (8 at 1080p and below, 4 at 2160p): the CPU decoder is the limit there,
    and smaller batches start sooner and pin less memory.
    """
    width, height = size
    most, pixels = (HOST_BATCH, HOST_BATCH_PIXELS) if host_decoded else (DEFAULT_BATCH, BATCH_PIXELS)
    return max(1, min(most, pixels // max(1, width * height)))


class _Lease:
    """One hand-out of a pooled buffer, as an object NumPy makes an array of (its array
    interface): the array's views all refer to that array, which refers to this."""

    def __init__(self, buffer: np.ndarray) -> None:
        self.__array_interface__ = buffer.__array_interface__
        self.buffer = buffer  # the memory stays while the lease does


class PinnedPool:
    """Page-locked (pinned) host buffers of one shape, handed out as arrays callers may keep.

    :meth:`take` returns a fresh array over a free buffer; the buffer goes back to the pool when
    that array and every view of it (slices, reshapes, the planes of a picture) are gone
    (``weakref.finalize`` on the array, which all its views refer to). The pool grows only while
    callers keep results (an encoder's queue, a clip's pre-roll), so memory stays flat once that
    is filled.

    Args:
        shape: each buffer's shape.
        dtype: their dtype.
        allocate: makes one buffer from (shape, dtype); default ``pycuda.driver.pagelocked_empty``
            (the tests without a GPU pass ``numpy.empty``).
    """

    def __init__(self, shape: tuple[int, ...], dtype=np.uint8, allocate=None) -> None:
        self.shape, self.dtype = tuple(shape), np.dtype(dtype)
        self.allocated = 0  # buffers made so far
        self._allocate = allocate
        self._free: list[np.ndarray] = []

    def take(self) -> np.ndarray:
        """An array of :attr:`shape` over a free buffer (allocated when none is); its contents
        are undefined."""
        if self._free:
            buffer = self._free.pop()
        else:
            if self._allocate is None:
                import pycuda.driver as drv

                self._allocate = drv.pagelocked_empty
            buffer = self._allocate(self.shape, self.dtype)
            self.allocated += 1
        lease = np.asarray(_Lease(buffer))
        weakref.finalize(lease, self._free.append, buffer)
        return lease


@dataclass
class _Slot:
    """One batch of the ring: the frames' planes on the device (and their pinned host staging
    for host-decoded pictures that cannot go by DMA, allocated when the first one comes)."""

    luma: object  # (K, H, W) uint8 device
    chroma: object | None  # NV12: (K, ch, 2 cw); planar: (K, 2, ch, cw); None when colour is not needed
    #: The slot's place in the ring (the key of its buffers).
    index: int = 0
    luma_host: np.ndarray | None = None
    chroma_host: np.ndarray | None = None
    frames: list | None = None
    #: The staging threads' copies of the batch's pictures into the pinned buffers (futures).
    staging: list | None = None
    #: Images of the batch staged in the pinned buffers (the others went by DMA).
    staged: list[int] = field(default_factory=list)
    #: Event after the DMA copies of the batch's pictures, or ``None`` when none went by DMA.
    dma_done: object | None = None
    layout: str = "nv12"
    full_range: bool = False
    geo: Geometry | None = None


@dataclass
class _Queued:
    """A batch whose work is queued on the GPU: what :meth:`BatchDetector._collect` needs to
    hand out its results once ``done`` has fired."""

    slot: _Slot
    geo: Geometry
    skip: int
    done: object  # pycuda.driver.Event recorded after the batch's downloads
    totals: np.ndarray | None = None
    boxes: np.ndarray | None = None
    masks: np.ndarray | None = None
    pictures: np.ndarray | None = None
    #: ((h, w), (H, W)) when the counts and boxes were taken on (h, w) masks before a last upscale
    #: to (H, W): the counts are the upscaled masks' already, the corners are mapped.
    upscale: tuple[tuple[int, int], tuple[int, int]] | None = None


class BatchDetector:
    """Runs a filter pipeline on batches of K frames on the GPU; the results equal
    :class:`~motiondetect.pipeline.detector.MotionDetector`'s frame by frame.

    Args:
        filters: filter instances in pipeline order (as for ``MotionDetector``).
        cuda: an entered :class:`~motiondetect.gpu.cuda_handler.CUDAHandler`.
        roi: (H, W) uint8 region of interest, non-zero inside, or ``None``.
        annotate: return annotated frames (the red blend, applied in Y'CbCr) as
            :class:`~motiondetect.core.picture.Picture` s; ``False``: ``FrameResult.frame`` is the
            input frame's image.
        masks: return the masks; ``False``: ``FrameResult.mask`` is ``None`` and only the counts
            and boxes come back from the device.
        batch: frames per batch, K >= 1 (:data:`DEFAULT_BATCH`).

    Raises:
        ValueError: the filters do not chain into a motion pipeline, ``batch`` < 1, or the
            annotation has no Y'CbCr form.
    """

    backend = "cuda"
    downscale = 1

    def __init__(
        self,
        filters: Sequence[Filter],
        cuda,
        roi: np.ndarray | None = None,
        annotate: bool = True,
        masks: bool = True,
        batch: int = DEFAULT_BATCH,
    ) -> None:
        if int(batch) != batch or batch < 1:
            raise ValueError(f"batch must be a whole number of frames >= 1; got {batch}")
        self.plan = MotionDetector(filters, cuda=cuda, roi=roi, annotate=annotate, masks=masks)
        self.filters = self.plan.filters
        self.roi = self.plan.roi  # 0/255, as the plan made it
        self.cuda = cuda
        self.batch = int(batch)
        self.annotate = annotate and bool(self.plan.annotation_filters)
        self.masks = masks
        if self.annotate and not self.plan.yuv_annotation:
            raise ValueError("the batched GPU path blends in Y'CbCr: the annotation must be one 'red_blend'")
        detect = self.plan.detection_filters
        self._pair = next(i for i, f in enumerate(detect) if f.SIDE_INPUT == "reference")
        #: The frames' chroma goes to the device for the background model, not only for the blend.
        self._chroma = self.plan.needs_chroma
        self._started = False  # the stream's first frame has been seen
        #: Threads that copy host pictures into the pinned ring, while a stream of them runs.
        self._stagers: ThreadPoolExecutor | None = None
        #: Pinned buffers the results are downloaded into and handed out from, by what they hold.
        self._pools: dict[tuple, PinnedPool] = {}
        self._upload_stream = None  # host pictures' uploads, beside the kernels' stream
        self._dma_stream = None  # the decode thread's copies from registered decoder buffers
        #: Decoder buffers registered for DMA while a stream of host pictures runs.
        self._registered: RegisteredBuffers | None = None
        #: Host pictures copied to the device by DMA from their decoder's buffers, and staged
        #: through the pinned buffers, since the detector was made.
        self.host_pictures = {"dma": 0, "staged": 0}

    def reset(self) -> None:
        """Start a new stream: the next frame has no predecessor, every model starts afresh."""
        self._started = False
        for flt in self.filters:
            flt.reset()

    # -- buffers -------------------------------------------------------------------------------
    def _buffer(self, key, shape, dtype=np.uint8):
        return self.cuda.buffer(("batch", key), shape, dtype)

    def _pinned(self, key, shape, dtype=np.uint8):
        return self.cuda.pinned(("batch", key), shape, dtype)

    def _pooled(self, key, shape, dtype=np.uint8) -> np.ndarray:
        """A free pinned buffer of ``shape`` from the pool ``key`` (:class:`PinnedPool`)."""
        pool = self._pools.get(key)
        if pool is None or pool.shape != tuple(shape) or pool.dtype != np.dtype(dtype):
            pool = self._pools[key] = PinnedPool(shape, dtype)
        return pool.take()

    def _make_ring(self, geo: Geometry, layout: str) -> list[_Slot]:
        height, width = geo.shape
        ch, cw = chroma_shape(height, width)
        k = self.batch
        slots = []
        for s in range(RING_SLOTS):
            chroma_shape_ = (k, ch, 2 * cw) if layout == "nv12" else (k, 2, ch, cw)
            slot = _Slot(
                self._buffer(("luma", s), (k, height, width)),
                self._buffer(("chroma", s), chroma_shape_) if self.annotate or self._chroma else None,
                index=s,
                layout=layout,
            )
            slots.append(slot)
        return slots

    def _pin_staging(self, slot: _Slot) -> None:
        """Give a planar slot its pinned staging buffers, the shapes of its device planes. Made
        on the first picture that needs them, not with the ring: pictures that go by DMA never
        do, and pinning 66 MB at 1080p (K = 8) took 0.02-0.04 s of a run's start-up and about
        0.01 s more at its end (H200, timers around ``_make_ring`` and the handler's close)."""
        slot.luma_host = self._pinned(("luma", slot.index), slot.luma.shape)
        if slot.chroma is not None:
            slot.chroma_host = self._pinned(("chroma", slot.index), slot.chroma.shape)

    # -- the decode thread ---------------------------------------------------------------------
    def _fill(
        self, frames: Iterator[Frame], slots: list[_Slot], free: threading.Semaphore, ready: queue.Queue, stop: threading.Event
    ) -> None:
        """Decode thread: fill ring slots with K frames each, then hand them over."""
        self.cuda.context.push()
        try:
            turn = 0
            batch: list[Frame] = []
            slot = None
            for frame in frames:
                if slot is None:
                    while not free.acquire(timeout=0.1):
                        if stop.is_set():
                            return
                    slot = slots[turn % RING_SLOTS]
                    slot.staging, slot.staged, slot.dma_done = [], [], None
                    turn += 1
                    batch = []
                self._copy_in(slot, len(batch), frame.image)
                batch.append(Frame(frame.index, frame.time, None if isinstance(frame.image, DeviceFrame) else frame.image))
                if len(batch) == self.batch:
                    self._hand_over(slot, batch, ready)
                    slot = None
                if stop.is_set():
                    return
            if slot is not None and batch:
                self._hand_over(slot, batch, ready)
            ready.put(_END)
        except BaseException as exc:  # re-raised on the main thread after the batches before it
            ready.put(exc)
        finally:
            self.cuda.context.pop()

    def _copy_in(self, slot: _Slot, k: int, image) -> None:
        """Decode thread: copy frame ``k``'s planes into the slot as soon as it is decoded.

        NVDEC frames are copied device to device on the decoder's stream, after its writes.
        Host pictures in registered decoder buffers are copied by DMA, queued here on the DMA
        stream (:meth:`_dma_copy`). Others are copied into the slot's pinned buffers by a
        staging thread, started now, while the picture is fresh in the CPU's caches; the decode
        thread goes back to the decoder at once (:meth:`_upload` waits for the copies). Without
        staging threads (:meth:`load_batch`) the copy is made here.
        """
        if isinstance(image, DeviceFrame):
            stream = image.stream
            width, height = image.size
            _copy_2d(int(slot.luma.gpudata) + k * width * height, width, image.luma, image.luma_pitch, width, height, stream)
            if slot.chroma is not None:
                ch, row = slot.chroma.shape[1:]
                _copy_2d(int(slot.chroma.gpudata) + k * ch * row, row, image.chroma, image.chroma_pitch, row, ch, stream)
            slot.full_range = image.full_range
            # The decoder reuses the frame's surface once the next frame is decoded: the copy
            # must be done before the decode thread asks for it (a wait of microseconds).
            stream.synchronize()
            return
        if not isinstance(image, Picture):
            raise TypeError(f"the batched GPU path takes decoded video pictures; got {type(image).__name__}")
        slot.full_range = image.full_range
        if self._registered is not None and self._dma_copy(slot, k, image):
            self.host_pictures["dma"] += 1
            return
        self.host_pictures["staged"] += 1
        slot.staged.append(k)
        if slot.luma_host is None:
            self._pin_staging(slot)
        if self._stagers is None:
            _stage(slot, k, image)
        else:
            slot.staging.append(self._stagers.submit(_stage, slot, k, image))

    def _dma_copy(self, slot: _Slot, k: int, picture: Picture) -> bool:
        """Decode thread: queue the copies of a picture's planes into image ``k`` of the slot
        straight from the decoder's buffers, when they are (now) registered; ``False`` when
        the picture must be staged. The slot's frames keep the pictures, hence their buffers,
        until the batch's results are handed out, long after these copies."""
        planes = [(picture.y, int(slot.luma.gpudata) + k * picture.y.size)]
        if slot.chroma is not None:
            ch, cw = picture.u.shape
            base = int(slot.chroma.gpudata) + k * 2 * ch * cw
            planes += [(picture.u, base), (picture.v, base + ch * cw)]
        registered = self._registered
        assert registered is not None
        sources = [registered.source(plane, picture.pool) for plane, _ in planes]
        if any(source is None for source in sources):
            return False
        for (plane, target), source in zip(planes, sources):
            _copy_2d_from_host(target, plane, source, self._dma_stream)
        return True

    def _hand_over(self, slot: _Slot, batch: list[Frame], ready: queue.Queue) -> None:
        import pycuda.driver as drv

        if len(slot.staged) < len(batch) and slot.layout == "planar":  # some went by DMA
            done = drv.Event()
            done.record(self._dma_stream)
            slot.dma_done = done
        slot.frames = batch
        ready.put(slot)

    def _upload(self, slot: _Slot) -> None:
        """Main thread: wait for a slot's staged host pictures to be in its pinned buffers, then
        queue one asynchronous upload per plane (per picture when others of the batch went by
        DMA); the kernels' stream waits for these uploads and for the DMA copies."""
        import pycuda.driver as drv

        n = len(slot.frames)
        for copy in slot.staging or ():
            copy.result()  # re-raises a failed copy here
        slot.staging = None
        if slot.dma_done is not None:
            self.cuda.stream.wait_for_event(slot.dma_done)
        if not slot.staged:
            return
        if self._upload_stream is None:
            self._upload_stream = drv.Stream()
        # On a stream of their own, so they overlap the kernels and the download of the batch
        # before; the kernels' stream waits for them.
        runs = [(0, n)] if len(slot.staged) == n else [(k, k + 1) for k in slot.staged]
        for start, stop in runs:
            for host, device in ((slot.luma_host, slot.luma), (slot.chroma_host, slot.chroma)):
                if host is not None:
                    per = host[0].nbytes
                    drv.memcpy_htod_async(int(device.gpudata) + start * per, host[start:stop], self._upload_stream)
        uploaded = drv.Event()
        uploaded.record(self._upload_stream)
        self.cuda.stream.wait_for_event(uploaded)

    # -- the main thread -----------------------------------------------------------------------
    def stream(self, frames: Iterable[Frame]) -> Iterator[tuple[Frame, FrameResult]]:
        """Process ``frames`` in batches; yield each frame (its ``image`` is ``None`` for NVDEC
        frames, which never leave the device) with its result, in order.

        Frames before a failure of the input are processed and yielded before the failure is
        raised. Stopping the iteration early (a signal) stops the decode thread.

        Raises:
            VideoOpenFailure: from the input, after the frames before it.
            TypeError: a frame is neither a DeviceFrame nor a Picture.
        """
        frames = iter(frames)
        first = next(frames, None)
        if first is None:
            return
        layout = "nv12" if isinstance(first.image, DeviceFrame) else "planar"
        geo = self.plan.geometry(first.image.shape)
        slots = self._make_ring(geo, layout)
        free = threading.Semaphore(RING_SLOTS)
        ready: queue.Queue = queue.Queue()
        stop = threading.Event()

        def chained():
            yield first
            yield from frames

        thread = threading.Thread(
            target=self._fill, args=(chained(), slots, free, ready, stop), name="motiondetect-batch-feed", daemon=True
        )
        if layout == "planar":
            import pycuda.driver as drv

            self._stagers = ThreadPoolExecutor(STAGING_THREADS, thread_name_prefix="motiondetect-stage")
            self._dma_stream = self._dma_stream or drv.Stream()
            self._registered = RegisteredBuffers(self._dma_stream)
        thread.start()
        try:
            # Batch n + 1 is queued before batch n's results are handed out (module docstring).
            waiting: _Queued | None = None
            while True:
                item = ready.get()
                if item is _END or isinstance(item, BaseException):
                    break
                if item.layout == "planar":
                    self._upload(item)
                queued = self._queue(item, geo)
                if waiting is not None:
                    yield from self._collect(waiting, free)
                waiting = queued
            if waiting is not None:
                yield from self._collect(waiting, free)
            if isinstance(item, BaseException):
                raise item
        finally:
            stop.set()
            thread.join(timeout=5.0)
            if self._stagers is not None:
                self._stagers.shutdown()
                self._stagers = None
            if self._registered is not None:  # before the decoder that owns the buffers closes
                self._registered.release()
                self._registered = None

    def load_batch(self, frames: Sequence[Frame]) -> _Slot:
        """Put up to K host-decoded frames (:class:`~motiondetect.core.picture.Picture` images) on
        the device as one batch that :meth:`process_batch` can run again and again: the
        on-device rate without decode or upload (``benchmarks/bench_gpu_resident.py``).

        Raises:
            ValueError: no frames, or more than K.
            TypeError: an image is not a Picture.
        """
        if not 0 < len(frames) <= self.batch:
            raise ValueError(f"a batch holds 1..{self.batch} frames; got {len(frames)}")
        geo = self.plan.geometry(frames[0].image.shape)
        slot = self._make_ring(geo, "planar")[0]
        for k, frame in enumerate(frames):
            self._copy_in(slot, k, frame.image)
        slot.frames, slot.geo = list(frames), geo
        self._upload(slot)
        self._upload_stream.synchronize()
        return slot

    def process_batch(self, batch: _Slot) -> list[tuple[Frame, FrameResult]]:
        """Run the pipeline on a batch from :meth:`load_batch`, continuing the stream (the
        first call has no previous frame); return each frame with its result."""
        return list(self._collect(self._queue(batch, batch.geo)))

    def _queue(self, slot: _Slot, geo: Geometry) -> _Queued:
        """Queue the pipeline on one batch, its downloads and an event after them; nothing
        waits here."""
        import pycuda.driver as drv

        cuda = self.cuda
        batch, k = slot.frames, self.batch
        n = len(batch)
        skip = 0 if self._started else 1  # the stream's first frame has no predecessor
        self._started = True
        height, width = geo.shape
        x0, y0, x1, y1 = geo.crop
        detect = self.plan.detection_filters
        w_h, w_w = geo.work_size[1], geo.work_size[0]

        # The grey stage: the luma read in place (cropped by addressing) and shrunk by a downscale
        # that follows it, into the pair buffer when the frame-pair filter comes next, whose
        # slot 0 holds the previous batch's last.
        gray, grey_to = detect[0], self.plan.grey_to
        pair_buffer = self._buffer(("pair",), (k + 1, *self._single_shape(self._pair - 1, geo)))
        into_pair = self._pair == grey_to + 1
        out = pair_buffer if into_pair else self._buffer(("stage", grey_to), (k, *self._single_shape(grey_to, geo)))
        dst = frames_view(out, 1, n + 1) if into_pair else frames_view(out, 0, n)
        gray.apply_luma(cuda, int(slot.luma.gpudata) + y0 * width + x0, width, width * height, dst, slot.full_range, size=(w_h, w_w))
        image = dst
        chroma = self._queue_chroma(gray, slot, geo, n) if self._chroma else None
        chroma_from = self.plan.chroma_from  # the stage whose output size the chroma starts at
        upscale = self._counts_before_upscale(geo)
        for stage in range(grey_to + 1, len(detect) - (upscale is not None)):
            flt = detect[stage]
            shape = self._single_shape(stage, geo)
            if flt.SIDE_INPUT == "reference":
                src, side = frames_view(pair_buffer, 1 + skip, n + 1), frames_view(pair_buffer, skip, n)
                m = n - skip
                target = self._buffer(("stage", stage), (k, *shape))
                if m and chroma is not None:  # the frames compared: skip..n-1 of each plane's n
                    count = shape[0] * shape[1]
                    image = frames_view(target, 0, m)
                    flt.apply_kernel(cuda, src, image, side, chroma=(int(chroma.gpudata) + skip * count, n * count))
                else:
                    image = self._apply(flt, src, frames_view(target, 0, m), side) if m else None
                if m and detect[stage - 1].ALIGNS:  # the comparisons, back onto their frames' pixels
                    unshifted = frames_view(self._buffer(("unshifted",), (k, *shape)), 0, m)
                    detect[stage - 1].unshift(cuda, image, unshifted, offset=skip)
                    image = unshifted
                per = pair_buffer.nbytes // (k + 1)
                drv.memcpy_dtod_async(
                    pair_buffer.gpudata, int(pair_buffer.gpudata) + n * per, per, cuda.stream
                )  # the last frame is the next batch's reference
                if m == 0:
                    break
                continue
            m = image.shape[0]
            target_shape = (k + 1, *shape) if stage == self._pair - 1 else (k, *shape)
            target = pair_buffer if stage == self._pair - 1 else self._buffer(("stage", stage), target_shape)
            dst = frames_view(target, 1, m + 1) if stage == self._pair - 1 else frames_view(target, 0, m)
            side = SizeOnly((w_h, w_w, 3)) if flt.SIDE_INPUT == "frame" else None
            if chroma is not None and chroma_from < stage < self._pair:  # the planes go with the grey images
                planes_out = frames_view(self._buffer(("planes", stage), (2 * k, *shape)), 0, 2 * m)
                if flt.BATCHED:  # in one launch where the filter can
                    moved = flt.apply_with_planes(cuda, image, dst, side, chroma, planes_out, frames=m)
                    image = dst
                else:
                    image = self._apply(flt, image, dst, side)
                    moved = flt.apply_planes(cuda, chroma, planes_out, frames=m)
                chroma = planes_out if moved else chroma
            else:
                image = self._apply(flt, image, dst, side)
        m = n - skip
        queued = _Queued(slot, geo, skip, drv.Event(), upscale=upscale)
        if m:
            mask = image
            if geo.roi is not None:
                mask = device_and_mask(cuda, mask, geo, frames_view(self._buffer(("roi",), (k, w_h, w_w)), 0, m))
            total, box = queue_mask_stats(cuda, mask, key="batch", upscaled=upscale[1] if upscale else None)
            # Pooled: the next batch downloads its counts before these are read.
            queued.totals = self._pooled(("totals",), total.shape, total.dtype)
            queued.boxes = self._pooled(("boxes",), box.shape, box.dtype)
            drv.memcpy_dtoh_async(queued.totals, total.gpudata, cuda.stream)  # not get_async: its
            drv.memcpy_dtoh_async(queued.boxes, box.gpudata, cuda.stream)  # checks cost 20 us each
        full = None
        if self.masks or self.annotate:
            full_all = self._buffer(("full",), (k, height, width))
            if skip:
                drv.memset_d8_async(full_all.gpudata, 0, height * width, cuda.stream)
            if m:
                full = frames_view(full_all, skip, n)
                if geo.identity:
                    drv.memcpy_dtod_async(full.gpudata, mask.gpudata, mask.nbytes, cuda.stream)
                else:
                    device_expand(cuda, mask, geo, full)
            full = frames_view(full_all, 0, n)
            if self.masks:
                queued.masks = self._pooled(("masks",), (k, height, width))[:n]
                drv.memcpy_dtoh_async(queued.masks, full.gpudata, cuda.stream)
        if self.annotate:
            ch, cw = chroma_shape(height, width)
            planar = height * width + 2 * ch * cw
            out_all = self._buffer(("yuv",), (k, planar))
            if slot.layout == "nv12":
                chroma, c_pitch, c_step, c_image, cr = int(slot.chroma.gpudata), 2 * cw, 2, 2 * ch * cw, 1
            else:
                chroma, c_pitch, c_step, c_image, cr = int(slot.chroma.gpudata), cw, 1, 2 * ch * cw, ch * cw
            self.plan.annotation_filters[0].apply_yuv(
                cuda,
                full,
                int(slot.luma.gpudata),
                width,
                height * width,
                chroma,
                chroma + cr,
                c_pitch,
                c_step,
                c_image,
                out_all,
                slot.full_range,
            )
            queued.pictures = self._pooled(("yuv",), (k, planar))[:n]
            drv.memcpy_dtoh_async(queued.pictures, out_all.gpudata, cuda.stream)
        queued.done.record(cuda.stream)
        return queued

    def _counts_before_upscale(self, geo: Geometry) -> tuple[tuple[int, int], tuple[int, int]] | None:
        """((h, w), (H, W)) when only the counts and boxes leave the device (no masks, no
        annotation, no ROI) and the last detection filter is an upscale from (h, w) to (H, W):
        its output follows exactly from its input (each pixel a block of
        :func:`~motiondetect.filters.upscale.block_repeats`), so it is not run; the counts weigh
        each pixel by its block and the corners are mapped (as the CPU path does,
        :func:`~motiondetect.pipeline.detector.MotionDetector`'s ``_stats_before_upscale``).
        ``None`` otherwise: the upscale runs."""
        detect = self.plan.detection_filters
        if self.masks or self.annotate or geo.roi is not None or not isinstance(detect[-1], Upscale) or len(detect) < 2:
            return None
        small = self._single_shape(len(detect) - 2, geo)
        return (small[0], small[1]), (geo.work_size[1], geo.work_size[0])

    def _queue_chroma(self, gray, slot: _Slot, geo: Geometry, n: int):
        """Queue the batch's chroma as full-range planes, plane-major: a (2 * n, h, w) device
        view, the n frames' Cb planes then their Cr planes
        (:meth:`Gray.apply_chroma_420 <motiondetect.filters.gray.Gray.apply_chroma_420>`), at the
        size of the output of the detector's ``chroma_from`` stage (a downscale's, in the pass
        that expands the 4:2:0 samples, else the crop's)."""
        height, width = geo.shape
        ch, cw = chroma_shape(height, width)
        w_h, w_w = self._single_shape(self.plan.chroma_from, geo)
        base = int(slot.chroma.gpudata)
        if slot.layout == "nv12":  # (K, ch, 2 cw): Cb and Cr interleaved
            addresses, pitch, step = (base, base + 1), 2 * cw, 2
        else:  # (K, 2, ch, cw): the Cb plane, then the Cr plane
            addresses, pitch, step = (base, base + ch * cw), cw, 1
        planes = frames_view(self._buffer(("chroma_planes",), (2 * self.batch, w_h, w_w)), 0, 2 * n)
        gray.apply_chroma_420(self.cuda, addresses, pitch, step, 2 * ch * cw, geo.crop, planes, slot.full_range)
        return planes

    def _collect(self, queued: _Queued, free: threading.Semaphore | None = None) -> Iterator[tuple[Frame, FrameResult]]:
        """Wait for a queued batch (the one synchronisation per batch), give its ring slot back
        to the decode thread (``free``), then yield each frame with its result: the masks and
        pictures are views of the pinned buffers they were downloaded into (:class:`PinnedPool`
        keeps a buffer while any view of it lives)."""
        queued.done.synchronize()
        slot, geo, skip = queued.slot, queued.geo, queued.skip
        batch, full_range = slot.frames, slot.full_range  # the decode thread refills the slot
        if free is not None:
            free.release()
        height, width = geo.shape
        for j, frame in enumerate(batch):
            at = j - skip
            count = int(queued.totals[at]) if j >= skip else 0
            box = box_from_corners(count, queued.boxes[at]) if count else None
            if box is not None and queued.upscale is not None:  # corners of the mask before it
                box = upscale_box(box, *queued.upscale)
            mask_j = queued.masks[j] if queued.masks is not None else None
            image_j = unpack_planes(queued.pictures[j], height, width, full_range) if queued.pictures is not None else frame.image
            yield frame, FrameResult(mask_j, image_j, count / geo.area, geo.map_box(box) if count else None)

    def _single_shape(self, stage: int, geo: Geometry) -> tuple[int, ...]:
        """Output shape of detection stage ``stage`` for one frame at the work size."""
        shape: tuple[int, ...] = (geo.work_size[1], geo.work_size[0])
        for flt in self.plan.detection_filters[1 : stage + 1]:
            shape = flt.output_shape(shape, (geo.work_size[1], geo.work_size[0], 3) if flt.SIDE_INPUT == "frame" else None)
        return shape

    def _apply(self, flt: Filter, src, dst, side):
        """Run ``flt`` on a batch: in one call when it is ``BATCHED``, else frame by frame."""
        if flt.BATCHED:
            flt.apply(self.cuda, src, dst, side)
            return dst
        for j in range(src.shape[0]):
            one_side = (
                None if side is None else (side if flt.SIDE_INPUT == "frame" else frames_view(side, j, j + 1).reshape(side.shape[1:]))
            )
            flt.apply(
                self.cuda, frames_view(src, j, j + 1).reshape(src.shape[1:]), frames_view(dst, j, j + 1).reshape(dst.shape[1:]), one_side
            )
        return dst


def _stage(slot: _Slot, k: int, picture: Picture) -> None:
    """Copy the planes of a host picture into image ``k`` of a slot's pinned buffers."""
    slot.luma_host[k] = picture.y
    if slot.chroma_host is not None:
        slot.chroma_host[k, 0] = picture.u
        slot.chroma_host[k, 1] = picture.v


def _copy_2d_from_host(dst: int, plane: np.ndarray, source: np.ndarray, stream) -> None:
    """Queue a copy of a host plane (a 2-D uint8 view with unit column stride) to ``dst``, rows
    packed on the device, from ``source``: the registered memory it lies in, from its first
    pixel (:meth:`RegisteredBuffers.source`)."""
    import pycuda.driver as drv

    rows, cols = plane.shape
    copy = drv.Memcpy2D()
    copy.set_src_host(source)
    copy.src_pitch = plane.strides[0]
    copy.set_dst_device(dst)
    copy.dst_pitch = copy.width_in_bytes = cols
    copy.height = rows
    copy(stream)


def _copy_2d(dst: int, dst_pitch: int, src: int, src_pitch: int, width: int, height: int, stream) -> None:
    """Queue a pitched device-to-device copy of ``height`` rows of ``width`` bytes."""
    import pycuda.driver as drv

    copy = drv.Memcpy2D()
    copy.set_src_device(src)
    copy.src_pitch = src_pitch
    copy.set_dst_device(dst)
    copy.dst_pitch = dst_pitch
    copy.width_in_bytes = width
    copy.height = height
    copy(stream)
