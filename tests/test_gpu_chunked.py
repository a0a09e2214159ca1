"""Chunked runs on the GPU: chunk tasks on the CUDA backend (the batched GPU path, PyAV decoding)
against the sequential CPU run, and ``--jobs`` with a local GPU cluster (dask-cuda).

Marker ``gpu``; skipped without a CUDA device (the ``cuda`` fixture) or without Dask.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from helpers import SEED_YAML, run_cli
from test_chunked import BUNDLED, SAMPLES, _chunked, _config, _sequential

pytestmark = pytest.mark.gpu

distributed = pytest.importorskip("distributed", reason="the [dask] extra is not installed")


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_cuda_chunks_equal_the_sequential_cpu_run(cuda, path):
    config = _config("seed")
    fractions, boxes, _ = _sequential(path, config)
    config["backend"] = "cuda"
    _, results = _chunked(path, config, 1.0)
    assert {r.backend for r in results} == {"cuda"}
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
