"""Contract test: every filter in REGISTRY keeps the promises the rest of the package relies on."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import numpy as np
import pytest
from helpers import chroma_for

from motiondetect.filters import REGISTRY, Filter, Kind, Param

ROOT = Path(__file__).resolve().parents[2]
FILTERS = list(REGISTRY.items())
IDS = list(REGISTRY)


def test_registry_lists_the_filters_in_pipeline_order():
    assert list(REGISTRY) == [
        "gray",
        "equalize",
        "blur",
        "downscale",
        "register",
        "difference",
        "running_average",
        "gaussian_background",
        "subsense",
        "threshold",
        "dispersion_threshold",
        "median",
        "erosion",
        "dilation",
        "closing",
        "upscale",
        "red_blend",
    ]


def test_names_unique_and_match_keys():
    names = [cls.NAME for cls in REGISTRY.values()]
    assert len(names) == len(set(names))
    for key, cls in FILTERS:
        assert key == cls.NAME
        assert issubclass(cls, Filter)
        assert key.isidentifier() and key == key.lower()


@pytest.mark.parametrize("name, cls", FILTERS, ids=IDS)
def test_kernel_file_exists(name, cls):
    path = ROOT / "kernels" / f"{cls.KERNEL}.cu"
    assert path.is_file(), f"{name}: missing {path}"
    assert path.read_text(encoding="utf-8").strip()
    from motiondetect.gpu.kernel_sources import kernel_source

    text, source = path.read_text(encoding="utf-8"), kernel_source(cls.KERNEL)
    expected = text
    for name in ("batch.cuh", "blocks.cuh"):  # the headers are written in place: nvcc sees no include
        header = (ROOT / "kernels" / name).read_text(encoding="utf-8").replace("#pragma once\n", "")
        expected = expected.replace(f'#include "{name}"', header)
    assert source == expected
    assert "#include" not in source


@pytest.mark.parametrize("name, cls", FILTERS, ids=IDS)
def test_declarations(name, cls):
    assert isinstance(cls.INPUT, Kind) and isinstance(cls.OUTPUT, Kind)
    assert cls.SIDE_INPUT in (None, "reference", "frame")
    assert cls.RESAMPLE in (None, "down", "up")
    if cls.RESAMPLE == "up":
        assert cls.SIDE_INPUT == "frame", "an upscale reads the frame's size from its side input"
    assert cls.__doc__ and cls.__doc__.strip(), "--help uses the first docstring line"
    param_names = [p.name for p in cls.PARAMS]
    assert len(param_names) == len(set(param_names))
    assert "filter" not in param_names and "engine" not in param_names  # reserved YAML keys
    assert "kernel" in getattr(cls, "ENGINES", ("kernel",))


@pytest.mark.parametrize("name, cls", FILTERS, ids=IDS)
def test_param_defaults_within_range(name, cls):
    for p in cls.PARAMS:
        assert isinstance(p, Param)
        assert p.type in (int, float)
        assert isinstance(p.default, p.type) and not isinstance(p.default, bool)
        assert p.minimum <= p.default <= p.maximum, f"{name}.{p.name}"
        if p.odd:
            assert p.default % 2 == 1 and p.type is int
        assert p.help and p.unit
        # The generated schema accepts the default and the bounds, rejects values just outside.
        schema = p.json_schema()
        jsonschema.validate(p.default, schema)
        for outside in (p.minimum - 1, p.maximum + 1):
            with pytest.raises(jsonschema.ValidationError):
                jsonschema.validate(p.type(outside), schema)
        assert str(p.default) in p.describe()
        # Constructing with no arguments takes the defaults.
        assert cls().params[p.name] == p.default


@pytest.mark.parametrize("name, cls", FILTERS, ids=IDS)
def test_unknown_parameter_is_a_type_error(name, cls):
    with pytest.raises(TypeError, match=name):
        cls(no_such_parameter=1)


def make_input(rng, kind: Kind, shape):
    if kind is Kind.BGR:
        return rng.integers(0, 256, (*shape, 3), dtype=np.uint8)
    if kind is Kind.MASK:
        return np.where(rng.random(shape) < 0.5, 255, 0).astype(np.uint8)
    return rng.integers(0, 256, shape, dtype=np.uint8)


@pytest.mark.parametrize("name, cls", FILTERS, ids=IDS)
@pytest.mark.parametrize("shape", [(1, 1), (1, 7), (6, 1), (7, 13), (48, 64)])
def test_reference_output_shape_dtype_kind(rng, name, cls, shape):
    flt = cls()
    src = make_input(rng, cls.INPUT, shape)
    side = {None: None, "reference": make_input(rng, Kind.GRAY, shape), "frame": make_input(rng, Kind.BGR, shape)}[cls.SIDE_INPUT]
    src0 = src.copy()
    side0 = None if side is None else side.copy()
    chroma = chroma_for(flt, src)
    out = flt.reference(src, side) if chroma is None else flt.reference(src, side, chroma)
    assert isinstance(out, np.ndarray)
    assert out.dtype == np.uint8
    assert out.shape == flt.output_shape(src.shape, None if side is None else side.shape)
    if cls.RESAMPLE == "down":
        assert out.shape == flt.output_shape(src.shape) and out.shape <= shape
    else:
        assert out.shape == ((*shape, 3) if cls.OUTPUT is Kind.BGR else shape)
    assert out.flags.c_contiguous
    if cls.OUTPUT is Kind.MASK:
        assert set(np.unique(out).tolist()) <= {0, 255}
    # References return new images and leave their inputs alone.
    assert not np.shares_memory(out, src)
    np.testing.assert_array_equal(src, src0)
    if side is not None:
        np.testing.assert_array_equal(side, side0)


def _random_input(rng, kind, shape):
    if kind is Kind.BGR:
        return rng.integers(0, 256, (*shape, 3), dtype=np.uint8)
    if kind is Kind.MASK:
        return ((rng.random(shape) < 0.7) * 255).astype(np.uint8)
    return rng.integers(0, 256, shape, dtype=np.uint8)


@pytest.mark.parametrize("name, cls", FILTERS, ids=IDS)
def test_halo_is_declared_and_true(name, cls, rng):
    """The detector crops frames to a region of interest plus the pipeline's halo; a filter that
    reaches further than it declares would change results at the crop's edge."""
    flt = cls()
    halo = flt.halo()
    if halo is None:
        pytest.skip(f"{name} declares no halo: the detector never crops around it")
    assert isinstance(halo, int) and halo >= 0, f"{name}: halo() must be an int >= 0 or None"
    shape = (41, 53)
    for _ in range(5):
        src = _random_input(rng, cls.INPUT, shape)
        side = None if cls.SIDE_INPUT is None else _random_input(rng, Kind.BGR if cls.SIDE_INPUT == "frame" else Kind.GRAY, shape)
        y, x = int(rng.integers(0, shape[0])), int(rng.integers(0, shape[1]))
        changed = src.copy()
        changed[y, x] = 255 - changed[y, x]
        diff = np.any(np.atleast_3d(flt.reference(changed, side) != flt.reference(src, side)), axis=2)
        ys, xs = np.nonzero(diff)
        if ys.size:
            assert max(np.abs(ys - y).max(), np.abs(xs - x).max()) <= halo, name


def test_erosion_halo_is_its_reach():
    from motiondetect.filters import Erosion

    assert Erosion(kernel_size=5, iterations=2).halo() == 4
    assert Erosion(kernel_size=1).halo() == 0


@pytest.mark.parametrize("name, cls", FILTERS, ids=IDS)
def test_reset_is_safe_and_stateless_filters_repeat(rng, name, cls):
    # Every filter can be reset; a stateless one gives the same output for the same input.
    flt = cls()
    shape = (9, 11)
    src = make_input(rng, cls.INPUT, shape)
    side = {None: None, "reference": make_input(rng, Kind.GRAY, shape), "frame": make_input(rng, Kind.BGR, shape)}[cls.SIDE_INPUT]
    chroma = chroma_for(flt, src)
    run = (lambda: flt.reference(src, side)) if chroma is None else (lambda: flt.reference(src, side, chroma))
    first = run()
    flt.reset()
    np.testing.assert_array_equal(run(), first)  # after a reset: as new
