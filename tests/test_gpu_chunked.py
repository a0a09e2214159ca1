"""Chunked runs on the GPU: chunk tasks on the CUDA backend (the batched GPU path, PyAV decoding)
against the sequential CPU run, and ``--jobs`` with a local GPU cluster (worker processes pinned to the GPU).

Marker ``gpu``; skipped without a CUDA device (the ``cuda`` fixture) or without Dask.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers import SEED_YAML, run_cli
from test_chunked import BUNDLED, SAMPLES, _chunked, _config, _quarter, _registered, _sequential

from motiondetect.sources.nvdec import nvdec_problem

pytestmark = pytest.mark.gpu

distributed = pytest.importorskip("distributed", reason="the [dask] extra is not installed")


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_cuda_chunks_equal_the_sequential_cpu_run(cuda, path):
    config = _config("seed")
    fractions, boxes, _ = _sequential(path, config)
    config["backend"] = "cuda"
    _, results = _chunked(path, config, 1.0)
    assert {r.backend for r in results} == {"cuda"}
    if path.suffix == ".mp4" and nvdec_problem() is None:  # H.264: NVDEC, seeking to each keyframe
        assert {r.decoder for r in results} == {"NVDEC (H264)"}
    assert np.array_equal(np.concatenate([r.fractions for r in results]), fractions)
    assert [r.box(j) for r in results for j in range(r.frames)] == boxes


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_cuda_chunks_scanned_in_a_row_equal_the_sequential_cpu_run(cuda, path):
    """One slot's consecutive CUDA chunk tasks (NVDEC on H.264, the batched path) continue one
    scan, its decoder and the background model's device state: the stitched results are the
    sequential CPU run's exactly."""
    config = _config("fast")
    fractions, boxes, _ = _sequential(path, config)
    config["backend"] = "cuda"
    chunks, results = _chunked(path, config, _quarter(path), continued=True)
    assert len(chunks) >= 3 and {r.backend for r in results} == {"cuda"}
    if path.suffix == ".mp4" and nvdec_problem() is None:
        assert {r.decoder for r in results} == {"NVDEC (H264)"}
    assert np.array_equal(np.concatenate([r.fractions for r in results]), fractions)
    assert [r.box(j) for r in results for j in range(r.frames)] == boxes


def test_registered_cuda_chunks_equal_the_sequential_cpu_run(cuda, jittered_video):
    """register + frame pairs on a jittered H.264 file: each CUDA chunk task (NVDEC, batched path)
    anchors on the file's first frame, so the stitched results equal the sequential CPU run's."""
    config = _registered(_config("seed"))
    fractions, boxes, _ = _sequential(jittered_video, config)
    config["backend"] = "cuda"
    chunks, results = _chunked(jittered_video, config, 1.0)
    assert len(chunks) >= 3 and {r.backend for r in results} == {"cuda"}
    if nvdec_problem() is None:
        assert {r.decoder for r in results} == {"NVDEC (H264)"}
    assert np.array_equal(np.concatenate([r.fractions for r in results]), fractions)
    assert [r.box(j) for r in results for j in range(r.frames)] == boxes


def test_jobs_on_the_gpu_equals_the_sequential_run(cuda, monkeypatch, capsys, tmp_path):
    args = [BUNDLED, "-c", SEED_YAML, "--no-video", "--chunk", "5", "--events", "report.json", "-q"]
    for name, extra in (("seq", ["--backend", "cpu"]), ("gpu", ["--backend", "cuda", "--jobs", "2"])):
        (tmp_path / name).mkdir()
        rc, _, err = run_cli(monkeypatch, capsys, tmp_path / name, *args, *extra)
        assert rc == 0, err
    seq, gpu = (json.loads((tmp_path / n / "report.json").read_text()) for n in ("seq", "gpu"))
    assert gpu["backend"] == "cuda"
    assert gpu["events"] == seq["events"] and gpu["frame_count"] == seq["frame_count"]


@pytest.mark.parametrize("path", [p for p in SAMPLES if p.suffix == ".mp4"], ids=lambda p: p.name)
def test_nvdec_seek_equals_the_cpu_decoders(cuda, path):
    """From every keyframe of the plan, NVDEC yields the pictures, numbers and timestamps the
    CPU decoder yields after its own seek."""
    if nvdec_problem():
        pytest.skip(f"NVDEC unavailable: {nvdec_problem()}")
    from motiondetect.scaleout.chunks import packet_timestamps
    from motiondetect.sources.nvdec import NvdecSource
    from motiondetect.sources.video import VideoHandler

    stamps, keyframes = packet_timestamps(str(path))
    keys = [(stamps.index(pts), pts) for pts in keyframes[1:4]]
    assert keys, "the sample has no keyframe after the first"
    for index, pts in keys:
        with VideoHandler(str(path)) as cpu, NvdecSource(str(path), cuda, host=True) as nv:
            cpu.seek(pts, index)
            nv.seek(pts, index)
            for (a, b), _ in zip(zip(cpu, nv), range(30)):
                assert (a.index, a.time) == (b.index, b.time) and cpu.pts == nv.pts
                assert np.array_equal(a.image.y, b.image.y) and np.array_equal(a.image.u, b.image.u)
