"""Configuration: defaults, YAML loading, validation and building the filter pipeline.

A config is a mapping::

    backend: auto                 # auto | cuda | cpu
    engine: kernel                # GPU engine for filters that have several: kernel | cublas
    pipeline:                     # filters in order, each {filter: NAME, <param>: value, ...}
      - filter: gray
      - filter: threshold
        threshold: 25
    events:
      min_area: 0.001             # motion fraction that makes a frame "moving"

The JSON Schema that validates it is generated from the filter registry and each filter's
``PARAMS``, so there is no hand-kept list of names or ranges. Validation collects every problem
(unknown filter, unknown key, wrong type, out of range, a pipeline that does not chain) with its
key path, the value given and what is allowed, and raises one :class:`ConfigError`.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from motiondetect.detector import pipeline_problems
from motiondetect.errors import ConfigError
from motiondetect.filters import REGISTRY, Filter

BACKENDS = ("auto", "cuda", "cpu")
#: GPU engines: each filter's own CUDA kernel, or cuBLAS calls (for the filters that list it).
ENGINES = ("kernel", "cublas")

#: Event settings: name -> (JSON Schema, default, help). min_area 0.001 (0.1 % of the pixels) is
#: the "frame has motion" rule used for frame-level scores on CDnet in this project; DVR-Scan's
#: default score threshold is about 0.06 % of pixels and Motion's 1500 pixels is 0.49 % of 640x480.
EVENT_SETTINGS = {
    "min_area": (
        {"type": "number", "minimum": 0.0, "maximum": 1.0},
        0.001,
        "fraction of the frame's pixels that must move for the frame to count as motion",
    ),
}


#: The default pipeline: filter names in order, each with its parameters' defaults. Chosen by
#: measurement against the CDnet ground truth in the team's samples (README, "Detection
#: quality"; ``motiondetect evaluate``). The PyCUDA case study's pipeline (gray, difference,
#: threshold, erosion, red_blend) is the preset ``configs/seed.yaml``.
DEFAULT_PIPELINE = ("gray", "downscale", "gaussian_background", "median", "erosion", "dilation", "upscale", "red_blend")


def default_config() -> dict[str, Any]:
    """Return the built-in configuration: the :data:`DEFAULT_PIPELINE` filters with their defaults."""
    return {
        "backend": "auto",
        "engine": "kernel",
        "pipeline": [{"filter": name, **{p.name: p.default for p in REGISTRY[name].PARAMS}} for name in DEFAULT_PIPELINE],
        "events": {name: default for name, (_, default, _) in EVENT_SETTINGS.items()},
    }


def config_schema() -> dict[str, Any]:
    """Return the JSON Schema of the top level (filter entries are checked per filter)."""
    return {
        "type": "object",
        "propertyNames": {"enum": ["backend", "engine", "pipeline", "events"]},
        "properties": {
            "backend": {"enum": list(BACKENDS)},
            "engine": {"enum": list(ENGINES)},
            "pipeline": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "required": ["filter"],
                    "properties": {"filter": {"enum": list(REGISTRY)}},
                },
            },
            "events": {
                "type": "object",
                "propertyNames": {"enum": list(EVENT_SETTINGS)},
                "properties": {name: schema for name, (schema, _, _) in EVENT_SETTINGS.items()},
            },
        },
    }


def filter_schema(cls: type[Filter]) -> dict[str, Any]:
    """Return the JSON Schema of one pipeline entry for filter class ``cls``."""
    return {
        "type": "object",
        "propertyNames": {"enum": ["filter", "engine", *(p.name for p in cls.PARAMS)]},
        "properties": {"engine": {"enum": list(cls.ENGINES)}, **{p.name: p.json_schema() for p in cls.PARAMS}},
    }


def _key_path(parts) -> str:
    path = ""
    for part in parts:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path or "config"


def _describe(error: jsonschema.ValidationError, prefix=()) -> str:
    where = _key_path([*prefix, *error.absolute_path])
    value, rule = error.instance, error.validator
    if "propertyNames" in error.schema_path:  # reported as an enum error on the key itself
        allowed = ", ".join(error.validator_value)
        return f"{where}: unknown key {value!r} (allowed: {allowed})"
    if rule == "enum":
        return f"{where}: {value!r} is not one of {', '.join(map(str, error.validator_value))}"
    if rule == "type":
        return f"{where}: expected {error.validator_value}, got {type(value).__name__} {value!r}"
    if rule in ("minimum", "maximum"):
        bounds = error.schema
        return f"{where}: {value!r} is out of range (allowed {bounds['minimum']}..{bounds['maximum']})"
    return f"{where}: {error.message}"


def validate(config: Any) -> list[str]:
    """Return every problem in ``config`` as ``"key.path: what is wrong"`` (empty when valid)."""
    if not isinstance(config, dict):
        return [f"config: expected a mapping of settings, got {type(config).__name__}"]
    validator = jsonschema.Draft202012Validator
    problems = [_describe(e) for e in sorted(validator(config_schema()).iter_errors(config), key=lambda e: list(map(str, e.absolute_path)))]
    pipeline = config.get("pipeline")
    if isinstance(pipeline, list):
        classes = []
        for i, entry in enumerate(pipeline):
            name = entry.get("filter") if isinstance(entry, dict) else None
            cls = REGISTRY.get(name) if isinstance(name, str) else None
            if cls is None:
                continue  # reported by the top-level schema
            classes.append(cls)
            errors = validator(filter_schema(cls)).iter_errors(entry)
            problems += [_describe(e, ("pipeline", i)) for e in errors]
        if len(classes) == len(pipeline):
            problems += pipeline_problems(classes)
    return problems


def merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """Return ``base`` updated by ``override``: mappings merge key by key, lists are replaced."""
    merged = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def load_config(path: str | Path | None = None) -> dict[str, Any]:
    """Load a YAML config with ``yaml.safe_load``, validate it and merge it over the defaults.

    Args:
        path: YAML file; ``None`` returns the defaults. An empty file is an empty mapping.

    Returns:
        The complete configuration (every key present).

    Raises:
        ConfigError: the file cannot be read, is not YAML (Python tags such as
            ``!!python/object`` are refused), or breaks the schema; all problems at once.
    """
    if path is None:
        return default_config()
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError([f"cannot read config file {str(path)!r}: {exc.strerror or exc}"]) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError([f"{path}: not valid YAML{where}: {problem}"]) from None
    data = {} if data is None else data
    problems = validate(data)
    if problems:
        raise ConfigError(problems)
    return merge(default_config(), data)


def with_overrides(
    config: dict[str, Any], backend: str | None = None, engine: str | None = None, threshold: int | None = None
) -> dict[str, Any]:
    """Apply command-line overrides (they win over the file) and return the new config.

    ``engine`` replaces the global engine and every per-filter ``engine`` setting.

    Raises:
        ConfigError: ``threshold`` is given but the pipeline has no threshold filter.
    """
    config = copy.deepcopy(config)
    if backend is not None:
        config["backend"] = backend
    if engine is not None:
        config["engine"] = engine
        for entry in config["pipeline"]:
            entry.pop("engine", None)
    if threshold is not None:
        entries = [e for e in config["pipeline"] if e["filter"] == "threshold"]
        if not entries:
            raise ConfigError(["--threshold: the pipeline has no 'threshold' filter to set"])
        for entry in entries:
            entry["threshold"] = threshold
    return config


def build_filters(config: dict[str, Any]) -> list[Filter]:
    """Instantiate the pipeline's filters from a validated config, in order.

    A filter's engine is its own ``engine`` setting, else the global ``engine`` where the filter
    has it, else ``kernel`` (threshold, erosion and red_blend have no cuBLAS form).
    """
    filters = []
    for entry in config["pipeline"]:
        cls = REGISTRY[entry["filter"]]
        default_engine = config.get("engine", "kernel") if config.get("engine", "kernel") in cls.ENGINES else "kernel"
        params = {k: v for k, v in entry.items() if k not in ("filter", "engine")}
        filters.append(cls(engine=entry.get("engine", default_engine), **params))
    return filters
