"""The cuBLAS engine (scikit-cuda) against the CPU reference, and against the kernel engine.

Tolerance: none. Gray is an SGEMV of whole-number pixels by the integer BT.601 weights scaled
by 2**-16, and Difference an SGEAM of whole numbers: every intermediate is k / 65536 with an
integer k < 2**24, which float32 holds exactly in any summation order (FMA included), so the
engine is bit-exact by construction. These tests would show the first pixel where it is not.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from helpers import same_image

from motiondetect.filters import REGISTRY
from motiondetect.pipeline.config import build_filters, load_config, with_overrides
from motiondetect.pipeline.detector import MotionDetector
from tests.test_gpu import GPU_SIZES, random_image, run_on_gpu, side_input

pytestmark = pytest.mark.gpu

CUBLAS_FILTERS = [name for name, cls in REGISTRY.items() if "cublas" in cls.ENGINES]
#: The case study's pipeline: gray and difference, the two filters with a cuBLAS form, both in it.
SEED_YAML = Path(__file__).resolve().parent.parent / "configs" / "seed.yaml"


@pytest.fixture(scope="module")
def blas_cuda(cuda):
    from motiondetect.gpu.platform import cublas_error

    if cublas_error():
        pytest.skip(cublas_error())
    cuda.blas  # create the handle once for the module
    return cuda


def test_gray_and_difference_have_the_cublas_engine():
    assert CUBLAS_FILTERS == ["gray", "difference"]


@pytest.mark.parametrize("size", GPU_SIZES, ids=lambda s: f"{s[1]}x{s[0]}")
@pytest.mark.parametrize("name", CUBLAS_FILTERS)
def test_cublas_engine_matches_reference(blas_cuda, rng, name, size):
    flt = REGISTRY[name](engine="cublas")
    src = random_image(rng, flt.INPUT, size)
    side = side_input(rng, flt, size)
    expected = flt.reference(src, side)
    got = run_on_gpu(blas_cuda, flt, src, side)
    mismatches = int(np.count_nonzero(got != expected))
    assert mismatches == 0, f"{mismatches} of {expected.size} values differ (max {np.abs(got.astype(int) - expected).max()})"


def test_cublas_gray_on_every_colour(blas_cuda):
    """All 2**24 BGR colours at once: the worst cases of the float32 argument included."""
    values = np.arange(1 << 24, dtype=np.uint32)
    frame = np.stack([values & 255, (values >> 8) & 255, values >> 16], axis=-1).astype(np.uint8).reshape(4096, 4096, 3)
    gray = REGISTRY["gray"](engine="cublas")
    assert np.array_equal(run_on_gpu(blas_cuda, gray, frame, None), gray.reference(frame))


def test_cublas_handle_uses_the_handler_stream(blas_cuda):
    lib = blas_cuda.blas._lib
    assert lib.cublasGetStream(blas_cuda.blas.handle) == blas_cuda.stream.handle


def test_pipeline_on_real_clip_same_events_as_kernel_engine(blas_cuda, sample_clip, tmp_path, monkeypatch):
    from motiondetect.apps.cli import main
    from motiondetect.sources.video import VideoHandler

    config = with_overrides(load_config(SEED_YAML), engine="cublas")
    assert [f.engine for f in build_filters(config)][:2] == ["cublas", "cublas"]
    cublas = MotionDetector(build_filters(config), cuda=blas_cuda)
    cpu = MotionDetector(build_filters(load_config(SEED_YAML)))
    with VideoHandler(sample_clip) as video:
        for frame in video:
            want, got = cpu.process(frame.image), cublas.process(frame.image)
            assert np.array_equal(got.mask, want.mask), f"mask differs at frame {frame.index}"
            assert same_image(got.frame, want.frame)

    monkeypatch.chdir(tmp_path)
    events = {}
    for engine in ("kernel", "cublas"):
        assert (
            main(
                [
                    str(sample_clip),
                    "-c",
                    str(SEED_YAML),
                    "--backend",
                    "cuda",
                    "--engine",
                    engine,
                    "--no-video",
                    "--events",
                    f"{engine}.json",
                    "-q",
                ]
            )
            == 0
        )
        report = json.loads((tmp_path / f"{engine}.json").read_text())
        assert report["config"]["engine"] == engine
        events[engine] = report["events"]
    assert events["cublas"] == events["kernel"] and events["kernel"]
