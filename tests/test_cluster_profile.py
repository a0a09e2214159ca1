"""The local cluster of a chunked run starts its workers without Dask's statistical profiler, whose
history grew each worker by about 0.1 MB/s over a long scan (``cluster.WORKER_PROFILE``)."""

from __future__ import annotations

import pytest

pytest.importorskip("distributed", reason="the [dask] extra is not installed")


@pytest.mark.parametrize("cuda", [False, True], ids=["cpu", "gpu"])
@pytest.mark.parametrize("dashboard", [False, True], ids=["quiet", "verbose"])
def test_local_workers_run_without_the_profiler(monkeypatch, cuda, dashboard):
    """The workers read the setting (their nannies hand them the configuration), so they start no
    profiling callbacks, with ``-v`` too; the setting ends with the run in this process."""
    import dask

    from motiondetect.scaleout import cluster

    monkeypatch.setattr(cluster, "visible_gpus", lambda: ["0"])  # one GPU's workers (cuda), none needed
    before = dask.config.get("distributed.worker.profile.enabled")
    with cluster.open_client(1, None, cuda=cuda, dashboard=dashboard) as client:
        enabled = client.run(lambda: dask.config.get("distributed.worker.profile.enabled"))
        callbacks = client.run(lambda dask_worker: sorted(name for name in dask_worker.periodic_callbacks if "profile" in name))
    assert list(enabled.values()) == [False]
    assert list(callbacks.values()) == [[]]
    assert dask.config.get("distributed.worker.profile.enabled") == before
