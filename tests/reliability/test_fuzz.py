"""Fuzzing with Hypothesis: every config document and every frame shape either runs or fails
with the documented error class (ConfigError / UsageError: exit 2 and one line; TypeError or
ValueError from the detector for arrays it does not take)."""

from __future__ import annotations

import math

import cv2
import numpy as np
import pytest
import yaml
from conftest import only_line, report, run_main
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from motiondetect.core.errors import ConfigError
from motiondetect.filters import REGISTRY
from motiondetect.pipeline.config import SECTIONS, build_filters, config_schema, default_config, load_config, validate
from motiondetect.pipeline.detector import MotionDetector

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

# -- config documents -------------------------------------------------------------------------

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(["auto", "cpu", "cuda", "kernel", "cublas", "gray", "threshold", "1e3", "0x10"]),
)
KEYS = sorted(
    {
        *config_schema()["properties"],
        *(k for table in SECTIONS.values() for k in table),
        "filter",
        "threshold",
        "polygons",
        "mask",
        "engine",
        "bogus",
    }
)
values = st.recursive(
    scalars, lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(KEYS), inner, max_size=4)), max_leaves=12
)


def near_valid_entry(draw_filter):
    """A pipeline entry: a real filter with its parameters at, inside or beyond their ranges."""
    cls = REGISTRY[draw_filter]
    params = {
        p.name: st.one_of(st.integers(int(p.minimum) - 2, int(p.maximum) + 2), st.floats(p.minimum - 1, p.maximum + 1), scalars)
        for p in cls.PARAMS
    }
    return st.fixed_dictionaries({"filter": st.just(draw_filter)}, optional=params)


section_values = {
    section: st.fixed_dictionaries(
        {}, optional={name: st.one_of(st.floats(-1, 100, allow_nan=False), st.integers(-2, 20), scalars) for name in table}
    )
    for section, table in SECTIONS.items()
}
near_valid = st.fixed_dictionaries(
    {},
    optional={
        "backend": st.sampled_from(["auto", "cpu", "cuda", "gpu", 3]),
        "engine": st.sampled_from(["kernel", "cublas", None]),
        "pipeline": st.lists(st.sampled_from(list(REGISTRY)).flatmap(near_valid_entry), max_size=6),
        **section_values,
        "roi": st.one_of(
            st.none(),
            st.fixed_dictionaries(
                {"polygons": st.lists(st.lists(st.lists(st.integers(-5, 40), min_size=2, max_size=2), min_size=2, max_size=5), max_size=2)}
            ),
            values,
        ),
    },
)


def valid_setting(schema):
    types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    if "boolean" in types:
        return st.booleans()
    if "integer" in types:
        whole = st.integers(int(schema.get("minimum", 0)), int(schema.get("maximum", 5000)))
        return st.one_of(st.none(), whole) if "null" in types else whole
    return st.floats(schema["minimum"], min(schema["maximum"], 10.0))


def valid_param(p):
    if p.odd:
        return st.sampled_from(range(int(p.minimum) | 1, int(p.maximum) + 1, 2))
    return st.integers(int(p.minimum), int(p.maximum)) if p.type is int else st.floats(p.minimum, p.maximum)


#: Configs the schema accepts: the registry's pipeline with parameters in range, settings in range.
valid = st.fixed_dictionaries(
    {},
    optional={
        "pipeline": st.tuples(
            *(
                st.fixed_dictionaries({"filter": st.just(name)}, optional={p.name: valid_param(p) for p in cls.PARAMS})
                for name, cls in REGISTRY.items()
            )
        ).map(list),
        **{
            section: st.fixed_dictionaries({}, optional={name: valid_setting(schema) for name, (schema, _, _) in table.items()})
            for section, table in SECTIONS.items()
        },
    },
)
documents = st.one_of(
    valid.map(lambda doc: yaml.safe_dump(doc)),
    near_valid.map(lambda doc: yaml.safe_dump(doc, sort_keys=False)),
    values.map(lambda doc: yaml.safe_dump(doc)),
    st.text(max_size=80),  # anything at all, YAML or not
    st.binary(max_size=40).map(lambda b: b.decode("latin-1")),
)


@FAST
@given(text=documents)
def test_any_config_document_loads_or_is_a_config_error(tmp_path, text):
    path = tmp_path / "fuzz.yaml"
    path.write_text(text, encoding="utf-8")
    try:
        config = load_config(path)
    except ConfigError as exc:
        assert exc.problems and "\n" not in str(exc)  # one line, every problem in it
        event("refused")
        return
    event("loaded")
    assert validate(config) == []
    build_filters(config)  # a loaded config always builds


@pytest.fixture(scope="module")
def tiny_sequence(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fuzz") / "seq"
    folder.mkdir()
    for i in range(4):
        frame = np.full((12, 16, 3), 30, np.uint8)
        frame[2:8, 2 + 3 * i : 6 + 3 * i] = 220
        cv2.imwrite(str(folder / f"f{i}.png"), frame)
    return folder


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(doc=st.one_of(valid, near_valid))
def test_any_config_runs_or_exits_2_with_one_line(tmp_path_factory, monkeypatch, capsys, tiny_sequence, doc):
    folder = tmp_path_factory.mktemp("run")
    (folder / "c.yaml").write_text(yaml.safe_dump(doc), encoding="utf-8")
    rc, err = run_main(monkeypatch, capsys, folder, tiny_sequence, "-c", "c.yaml", "--backend", "cpu", "--no-video", "-q")
    event(f"exit {rc}")  # --hypothesis-show-statistics: how many ran, how many were refused
    if rc == 0:
        events = report(folder / "seq_motion.json")
        assert events["frame_count"] == 4 and events["complete"] is True
    else:
        assert rc == 2, err
        only_line(err)
        assert not (folder / "seq_motion.json").exists()


# -- frame shapes ----------------------------------------------------------------------------


@FAST
@given(
    height=st.integers(1, 20),
    width=st.integers(1, 20),
    channels=st.sampled_from([1, 3, 4]),
    depth=st.sampled_from([np.uint8, np.uint16]),
    seed=st.integers(0, 2**16),
)
def test_any_image_shape_runs(tmp_path_factory, monkeypatch, capsys, height, width, channels, depth, seed):
    folder = tmp_path_factory.mktemp("shape")
    images = folder / "seq"
    images.mkdir()
    rng = np.random.default_rng(seed)
    shape = (height, width) if channels == 1 else (height, width, channels)
    for i in range(3):
        assert cv2.imwrite(str(images / f"f{i}.png"), rng.integers(0, np.iinfo(depth).max, shape, dtype=depth, endpoint=True))
    rc, err = run_main(monkeypatch, capsys, folder, images, "--backend", "cpu", "--no-video", "--masks", "m", "-q")
    assert rc == 0, err
    assert report(folder / "seq_motion.json")["frame_count"] == 3
    for mask in (folder / "m").iterdir():
        assert cv2.imread(str(mask), cv2.IMREAD_UNCHANGED).shape == (height, width)


arrays = st.builds(
    lambda shape, dtype: np.zeros(shape, dtype),
    st.lists(st.integers(0, 9), min_size=0, max_size=4).map(tuple),
    st.sampled_from([np.uint8, np.uint16, np.int8, np.float32, np.float64, bool]),
)


@FAST
@given(first=arrays, second=arrays)
def test_detector_takes_a_frame_or_raises_type_or_value_error(first, second):
    detector = MotionDetector(build_filters(default_config()))
    for frame in (first, second):
        try:
            result = detector.process(frame)
        except (TypeError, ValueError):
            continue
        assert frame.dtype == np.uint8 and frame.ndim == 3 and frame.shape[2] == 3 and 0 not in frame.shape
        assert result.mask.shape == frame.shape[:2] and result.frame.shape == frame.shape
        assert 0.0 <= result.motion_fraction <= 1.0 and not math.isnan(result.motion_fraction)
