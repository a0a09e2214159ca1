"""Configuration: defaults, YAML loading, validation and building the filter pipeline.

A config is a mapping::

    backend: auto                 # auto | cuda | cpu
    engine: kernel                # GPU engine for filters that have several: kernel | cublas
    pipeline:                     # filters in order, each {filter: NAME, <param>: value, ...}
      - filter: gray
      - filter: threshold
        threshold: 25
    events:                       # motion events (EVENT_SETTINGS)
      min_area: 0.001             # motion fraction that makes a frame "moving"
    scan:                         # speed knobs (SCAN_SETTINGS): downscale, frame_skip
    tuned_fps: [25, 30]           # frames/s the models' per-frame rates and counts hold for
    overlays:                     # what the annotated video shows (OVERLAY_SETTINGS)
    roi:                          # region of interest: {polygons: [[[x, y], ...], ...]} or {mask: file}

The JSON Schema that validates it is generated from the filter registry and each filter's
``PARAMS``, so there is no hand-kept list of names or ranges. Validation collects every problem
(unknown filter, unknown key, wrong type, out of range, a pipeline that does not chain) with its
key path, the value given and what is allowed, and raises one :class:`ConfigError`.
"""

from __future__ import annotations

import contextlib
import copy
import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from motiondetect.core.errors import ConfigError
from motiondetect.filters import REGISTRY, Filter
from motiondetect.pipeline import presets
from motiondetect.pipeline.detector import pipeline_problems
from motiondetect.pipeline.frame_rate import TUNED_FPS

if TYPE_CHECKING:
    import jsonschema

BACKENDS = ("auto", "cuda", "cpu")
#: GPU engines: each filter's own CUDA kernel, or cuBLAS calls (for the filters that list it).
ENGINES = ("kernel", "cublas")
#: Where video files are decoded: NVDEC on the GPU when PyNvVideoCodec and a device are there
#: and the batched GPU path runs (auto), always NVDEC (nvdec), or PyAV on the CPU threads (cpu).
DECODERS = ("auto", "nvdec", "cpu")
#: x264's presets, fastest first (what libx264 accepts for ``-preset``).
PRESETS = ("ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower", "veryslow")

#: Settings of a section: name -> (JSON Schema, default, help). The help names the unit and the
#: source of the default; the schema, the defaults, ``--help`` and the command-line flags that set
#: them (``--min-area``...) are all derived from these tables.
Settings = dict[str, tuple[dict[str, Any], Any, str]]

_SECONDS = {"type": "number", "minimum": 0.0, "maximum": 86400.0}
_FRACTION = {"type": "number", "minimum": 0.0, "maximum": 1.0}

#: Motion events (see motiondetect.outputs.events for the rules).
EVENT_SETTINGS: Settings = {
    "min_area": (
        _FRACTION,
        0.001,
        "fraction of the pixels that can move (the ROI's, else the frame's) that must move for the "
        "frame to count as motion; 0.001 (0.1 %) is the CDnet frame-level 'has motion' rule used in "
        "this project; DVR-Scan's default is about 0.06 %, Motion's 1500 pixels 0.49 % of 640x480",
    ),
    "min_pixels": (
        {"type": ["integer", "null"], "minimum": 1},
        None,
        "moving pixels (at the input size) that make the frame count as motion, like Motion's "
        "'threshold' (1500); replaces min_area when set; null: use min_area",
    ),
    "min_event_length": (
        _SECONDS,
        0.1,
        "seconds of consecutive moving frames that start an event; 0.1 is DVR-Scan's min-event-length (its docs' '2' is out of date)",
    ),
    "merge_gap": (
        _SECONDS,
        2.0,
        "seconds without motion that end an event (shorter pauses merge); 2.0 is DVR-Scan's "
        "time-post-event, which ends its events the same way; Motion's event_gap of 60 s suits a "
        "recording daemon, not a scanner looking for separate moments; never less than time_after",
    ),
    "time_before": (_SECONDS, 1.5, "seconds of padding before an event's motion; 1.5 is DVR-Scan's time-before-event"),
    "time_after": (_SECONDS, 2.0, "seconds of padding after an event's motion; 2.0 is DVR-Scan's time-post-event"),
    "max_area": (
        _FRACTION,
        1.0,
        "frames whose motion fraction exceeds this are ignored (a light switched on, "
        "auto-exposure), like Motion's lightswitch_percent and DVR-Scan's max-area; 1.0 (off) "
        "is both peers' default, since a close object can fill the frame (the low-sensitivity "
        "preset uses 0.5)",
    ),
}

#: Speed knobs.
SCAN_SETTINGS: Settings = {
    "downscale": (
        {"type": "integer", "minimum": 1, "maximum": 16},
        1,
        "process at 1/N of the width and height (cv2.INTER_AREA on the host); masks and boxes are "
        "mapped back to the input size; 1 (off) is DVR-Scan's default (downscale-factor 0)",
    ),
    "frame_skip": (
        {"type": "integer", "minimum": 0, "maximum": 1000},
        0,
        "process one frame in N+1, each compared with the frame just before it (so the "
        "sensitivity does not change); skipped frames keep the last result, so events stay in "
        "input frames and times; 0 (off) is DVR-Scan's default",
    ),
    "batch": (
        {"type": "integer", "minimum": 0, "maximum": 1024},
        0,
        "frames per batch on the GPU path for video files, 0 to choose by the frame size (one "
        "launch per filter per batch, results equal one frame at a time); 0 (auto): NVDEC frames as many as hold 32 frames of "
        "1080p, at most 32 (32 reached the on-device plateau at 1080p on an H200; 8 at 2160p), "
        "CPU-decoded frames as many as hold 4 frames of 2160p, at most 8 (the CPU decoder sets "
        "the pace; they ran faster so: docs/performance.md); cameras, --live and --preview run "
        "one frame at a time",
    ),
    "chunk": (
        {"type": "number", "minimum": 1.0, "maximum": 86400.0},
        60.0,
        "seconds of video per chunk to aim for when a file is scanned in chunks (--jobs, "
        "--scheduler), cut at the next keyframe; with --jobs the planner adjusts it so the chunks "
        "fill the workers evenly (docs/scale-out.md); 60 (about a minute) keeps the default "
        "pipeline's 500-frame warm-up small next to a chunk while an hour makes 60 tasks",
    ),
}

#: What the annotated video (and the clips) show; boxes and text are drawn on the host.
OVERLAY_SETTINGS: Settings = {
    "blend": ({"type": "boolean"}, True, "run the pipeline's annotation filters (the red blend of the mask)"),
    "boxes": (
        {"type": "boolean"},
        False,
        "draw boxes around motion regions (connected components of the mask, "
        "cv2.connectedComponentsWithStats on the host: a full-mask pass, only when on)",
    ),
    "timecode": ({"type": "boolean"}, False, "draw the frame's timecode (HH:MM:SS.mmm) and number, like DVR-Scan's timecode overlay"),
    "fraction": ({"type": "boolean"}, False, "draw the frame's motion fraction, like Motion's text_changes"),
    "box_min_area": (
        _FRACTION,
        0.0005,
        "smallest region, as a fraction of the frame, that gets a box; 0.0005 is about Frigate's "
        "contour_area 10 on its 100-pixel-high 16:9 detection frame (0.056 %)",
    ),
}

#: Sections of plain settings, by their key in the config.
SECTIONS: dict[str, Settings] = {"events": EVENT_SETTINGS, "scan": SCAN_SETTINGS, "overlays": OVERLAY_SETTINGS}

#: A point [x, y] in whole pixels of the input frame.
_POINT = {
    "type": "array",
    "minItems": 2,
    "maxItems": 2,
    "items": {"type": "integer", "minimum": 0},
    "description": "a point [x, y] in whole pixels >= 0",
}
#: Region of interest: polygons in input pixels, or a mask image (non-zero inside).
ROI_SCHEMA: dict[str, Any] = {
    "type": ["object", "null"],
    "propertyNames": {"enum": ["polygons", "mask"]},
    "minProperties": 1,
    "maxProperties": 1,
    "description": "a region of interest: {polygons: [[[x, y], ...], ...]} or {mask: IMAGE}, one of the two",
    "properties": {
        "polygons": {
            "type": "array",
            "minItems": 1,
            "items": {"type": "array", "minItems": 3, "items": _POINT, "description": "a polygon of at least 3 [x, y] points"},
            "description": "a list of polygons, each a list of at least 3 [x, y] points",
        },
        "mask": {"type": "string", "minLength": 1, "description": "an image file name (relative to the config file)"},
    },
}


#: The default pipeline: filter names in order, each with its parameters' defaults. Chosen by
#: measurement against the CDnet ground truth in the team's samples (README, "Detection
#: quality"; ``motiondetect evaluate``); ``register`` by the jitter study (docs/evaluation-log.md,
#: "Camera jitter"; ``configs/steady.yaml`` leaves it out); ``closing`` by leave-one-clip-out
#: (docs/evaluation-log.md, "A closing after the mask"). The PyCUDA case study's pipeline
#: (gray, difference, threshold, erosion, red_blend) is the preset ``configs/seed.yaml``.
DEFAULT_PIPELINE = (
    "gray",
    "downscale",
    "register",
    "gaussian_background",
    "median",
    "erosion",
    "dilation",
    "closing",
    "upscale",
    "red_blend",
)


def default_config() -> dict[str, Any]:
    """Return the built-in configuration: the :data:`DEFAULT_PIPELINE` filters with their defaults."""
    return {
        "backend": "auto",
        "engine": "kernel",
        "decoder": "auto",
        "preset": "veryfast",
        "tuned_fps": list(TUNED_FPS),
        "pipeline": [{"filter": name, **{p.name: p.default for p in REGISTRY[name].PARAMS}} for name in DEFAULT_PIPELINE],
        **{section: {name: default for name, (_, default, _) in table.items()} for section, table in SECTIONS.items()},
        "roi": None,
    }


def config_schema() -> dict[str, Any]:
    """Return the JSON Schema of the top level (filter entries are checked per filter)."""
    properties: dict[str, Any] = {
        "backend": {"enum": list(BACKENDS)},
        "engine": {"enum": list(ENGINES)},
        "decoder": {"enum": list(DECODERS)},
        "preset": {"enum": list(PRESETS)},
        "tuned_fps": {
            "type": ["array", "null"],
            "items": {"type": "number", "exclusiveMinimum": 0, "maximum": 1000},
            "minItems": 2,
            "maxItems": 2,
        },
        "pipeline": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["filter"],
                "properties": {"filter": {"enum": list(REGISTRY)}},
            },
        },
        **{
            section: {
                "type": "object",
                "propertyNames": {"enum": list(table)},
                "properties": {name: schema for name, (schema, _, _) in table.items()},
            }
            for section, table in SECTIONS.items()
        },
        "roi": ROI_SCHEMA,
    }
    return {"type": "object", "propertyNames": {"enum": list(properties)}, "properties": properties}


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


def _shown(value: Any, limit: int = 60) -> str:
    """``repr(value)``, cut to ``limit`` characters: a problem stays one readable line when the
    value is a whole list of events (a report given as a config)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _describe(error: jsonschema.ValidationError, prefix=()) -> str:
    where = _key_path([*prefix, *error.absolute_path])
    value, rule = error.instance, error.validator
    if "propertyNames" in error.schema_path:  # reported as an enum error on the key itself
        allowed = ", ".join(error.validator_value)
        return f"{where}: unknown key {value!r} (allowed: {allowed})"
    if rule == "enum":
        return f"{where}: {value!r} is not one of {', '.join(map(str, error.validator_value))}"
    if rule == "type":
        expected = error.validator_value
        expected = " or ".join(expected) if isinstance(expected, list) else expected
        hint = ""
        if isinstance(value, str) and "number" in str(expected):
            with contextlib.suppress(ValueError):
                # YAML 1.1 reads 1e-3 as text: its floats need a dot (1.0e-3).
                hint = f" (YAML reads it as text: write {float(value)!r})"
        if where == "roi" and isinstance(value, str):
            hint = " (an image is written as roi: {mask: FILE})"
        return f"{where}: expected {expected}, got {type(value).__name__} {_shown(value)}{hint}"
    if rule in ("minimum", "maximum"):
        low, high = error.schema.get("minimum"), error.schema.get("maximum")
        allowed = f"{low}..{high}" if low is not None and high is not None else (f">= {low}" if low is not None else f"<= {high}")
        return f"{where}: {_shown(value)} is out of range (allowed {allowed})"
    if "description" in error.schema:
        return f"{where}: {_shown(value)} is not {error.schema['description']}"
    return f"{where}: {error.message}"


def schema_problems(schema: dict[str, Any], value: Any, prefix: tuple = ()) -> list[str]:
    """Every way ``value`` breaks the JSON Schema fragment ``schema``, each led by its key path
    (``prefix`` names where ``value`` sits in the config, e.g. ``("roi",)``), not-a-number first."""
    return _non_finite(value, prefix) + [_describe(e, prefix) for e in _validator()(schema).iter_errors(value)]


def _non_finite(value: Any, prefix: tuple = ()) -> list[str]:
    """A problem for each NaN or infinity in ``value`` (nested mappings and lists too), by key
    path. JSON Schema's ``minimum`` and ``maximum`` pass NaN (every comparison with it is false),
    and YAML reads ``.nan`` and ``.inf``, so without this check a NaN setting reaches the run (a
    traceback, or NaN written into the JSON report)."""
    if isinstance(value, float) and not math.isfinite(value):
        return [f"{_key_path(prefix)}: expected a finite number, got {value!r}"]
    if isinstance(value, dict):
        return [p for key, item in value.items() for p in _non_finite(item, (*prefix, key))]
    if isinstance(value, list):
        return [p for i, item in enumerate(value) for p in _non_finite(item, (*prefix, i))]
    return []


def _validator():
    """jsonschema's Draft 2020-12 validator class, imported on first use: a run on the built-in
    config with no settings flags never loads jsonschema (0.05 s of its start-up on the GPU
    machine)."""
    import jsonschema

    return jsonschema.Draft202012Validator


def validate(config: Any) -> list[str]:
    """Return every problem in ``config`` as ``"key.path: what is wrong"`` (empty when valid)."""
    if not isinstance(config, dict):
        return [f"config: expected a mapping of settings, got {type(config).__name__}"]
    validator = _validator()
    problems = _non_finite(config)
    problems += [
        _describe(e) for e in sorted(validator(config_schema()).iter_errors(config), key=lambda e: list(map(str, e.absolute_path)))
    ]
    tuned = config.get("tuned_fps")
    if isinstance(tuned, list) and len(tuned) == 2 and all(isinstance(v, (int, float)) for v in tuned) and tuned[0] > tuned[1]:
        problems.append(f"tuned_fps: expected [low, high] frames/s with low <= high, got {tuned}")
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


def _repeated_key(text: str) -> str | None:
    """Where a mapping of the YAML ``text`` gives a key twice (``"key 'events' at line 3"``), or
    ``None``: ``yaml.safe_load`` keeps the last one without a word (two ``events:`` blocks, the
    first silently lost). Read from the composed nodes, which builds no object."""
    stack = [yaml.compose(text, Loader=yaml.SafeLoader)]
    while stack:
        node = stack.pop()
        if isinstance(node, yaml.MappingNode):
            seen: set[str] = set()
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode):
                    if key.value in seen:
                        return f"key {key.value!r} at line {key.start_mark.line + 1} is given twice"
                    seen.add(key.value)
                stack.append(value)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
    return None


def yaml_problem(exc: yaml.YAMLError) -> str:
    """One line for a ``yaml.safe_load`` failure: where, and what; tags that would build Python
    objects (``!!python/object``...) are named as refused."""
    mark = getattr(exc, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    tag = re.search(r"tag '([^']*)'", problem) if isinstance(exc, yaml.constructor.ConstructorError) else None
    if tag:
        return f"refused YAML tag {tag.group(1).replace('tag:yaml.org,2002:', '!!')!r}{where}: only plain YAML is read (no Python objects)"
    return f"not valid YAML{where}: {problem}"


def load_config(path: str | Path | None = None) -> dict[str, Any]:
    """Load a YAML config with ``yaml.safe_load`` (a key given twice refused), validate it and
    merge it over the defaults.

    Args:
        path: YAML file, or the name of a bundled preset where no such file exists (``outdoor``,
            ``outdoor.yaml`` or ``configs/outdoor.yaml``: :func:`motiondetect.pipeline.presets.resolve`);
            ``None`` returns the defaults. An empty file is an empty mapping.

    Returns:
        The complete configuration (every key present).

    Raises:
        ConfigError: the file cannot be read, is not YAML (Python tags such as
            ``!!python/object`` are refused), or breaks the schema; all problems at once.
    """
    if path is None:
        return default_config()
    try:
        text = presets.resolve(path).read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        names = ", ".join(presets.preset_names()) or "none found: reinstall motiondetect"
        raise ConfigError([f"cannot read config file {str(path)!r}: {exc.strerror or exc}; bundled presets: {names}"]) from None
    except OSError as exc:
        raise ConfigError([f"cannot read config file {str(path)!r}: {exc.strerror or exc}"]) from None
    except UnicodeDecodeError as exc:
        raise ConfigError(
            [f"config file {str(path)!r} is not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset {exc.start})"]
        ) from None
    try:
        data = yaml.safe_load(text)
        repeated = _repeated_key(text)
    except yaml.YAMLError as exc:
        raise ConfigError([f"{path}: {yaml_problem(exc)}"]) from None
    if repeated:
        raise ConfigError([f"{path}: {repeated}"])
    data = {} if data is None else data
    if isinstance(data, dict) and "config" in data and "events" in data and "motiondetect_version" in data:
        raise ConfigError([f"{path} is a motiondetect report: its settings are under its 'config' key; save that part as the config"])
    problems = validate(data)
    if problems:
        raise ConfigError(problems)
    roi = data.get("roi")
    if isinstance(roi, dict) and "mask" in roi:
        data["roi"] = {"mask": str(Path(path).parent / Path(roi["mask"]).expanduser())}  # relative to the file
    return merge(default_config(), data)


def with_overrides(
    config: dict[str, Any],
    backend: str | None = None,
    engine: str | None = None,
    threshold: int | None = None,
    decoder: str | None = None,
    preset: str | None = None,
) -> dict[str, Any]:
    """Apply command-line overrides (they win over the file) and return the new config.

    ``engine`` replaces the global engine and every per-filter ``engine`` setting.

    Raises:
        ConfigError: ``threshold`` is given but the pipeline has no threshold filter.
    """
    config = copy.deepcopy(config)
    if backend is not None:
        config["backend"] = backend
    if decoder is not None:
        config["decoder"] = decoder
    if preset is not None:
        config["preset"] = preset
    if engine is not None:
        config["engine"] = engine
        for entry in config["pipeline"]:
            entry.pop("engine", None)
    if threshold is not None:
        entries = [e for e in config["pipeline"] if e["filter"] == "threshold"]
        if not entries:
            hint = ""
            if any(e["filter"] == "gaussian_background" for e in config["pipeline"]):
                # The default's sensitivity is the model's threshold in standard deviations.
                hint = (
                    " (its background model's threshold is gaussian_background.sigmas, in standard deviations: "
                    "-c high_sensitivity or -c low_sensitivity, or set it in a config)"
                )
            raise ConfigError([f"--threshold: the pipeline has no 'threshold' filter to set{hint}"])
        for entry in entries:
            entry["threshold"] = threshold
    return config


def with_settings(config: dict[str, Any], section: str, values: dict[str, Any]) -> dict[str, Any]:
    """Return ``config`` with ``section``'s settings set from ``values`` (``None`` values skipped).

    Command-line flags use it: they win over the file.

    Raises:
        ConfigError: a value breaks the setting's schema.
    """
    config = copy.deepcopy(config)
    given = {k: v for k, v in values.items() if v is not None}
    problems = schema_problems(config_schema()["properties"][section], given, (section,)) if given else []
    if problems:
        raise ConfigError(problems)
    config[section].update(given)
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
