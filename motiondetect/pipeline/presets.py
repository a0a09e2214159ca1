"""The bundled presets (``configs/*.yaml``), found installed or in the source tree, by name.

The wheel maps the top-level ``configs/`` folder into the package as ``motiondetect/configs``
(``force-include`` in ``pyproject.toml``), as it does the kernels; a source checkout has it beside
the package. So ``-c outdoor`` works wherever motiondetect is installed, and so does the
``-c configs/outdoor.yaml`` of the docs outside a checkout.
"""

from __future__ import annotations

import functools
from pathlib import Path

from motiondetect.core.bundled import bundled_folder

#: The folders under which the docs and the presets' own headers give a preset's path.
_PRESET_FOLDERS = (Path("."), Path("configs"))


@functools.lru_cache(maxsize=None)
def preset_dir() -> Path | None:
    """The folder holding the bundled ``*.yaml`` presets: the installed package's first, then the
    source tree's; ``None`` where neither has them (a broken install)."""
    return bundled_folder("configs", "*.yaml")


def preset_names() -> list[str]:
    """The bundled presets' names (file stems: ``default``, ``outdoor``...), sorted."""
    folder = preset_dir()
    return [] if folder is None else sorted(path.stem for path in folder.glob("*.yaml"))


def resolve(path: str | Path) -> Path:
    """The file a ``-c`` argument names: ``path`` itself where it exists, else the bundled preset
    it names (``outdoor``, ``outdoor.yaml`` or ``configs/outdoor.yaml``), else ``path`` unchanged
    (reading it then fails with the usual error)."""
    given = Path(path)
    if given.is_file():  # a folder of the preset's name in the current one is not it
        return given
    folder = preset_dir()
    name = given.stem if given.suffix in ("", ".yaml") else None
    if folder is not None and name in preset_names() and given.parent in _PRESET_FOLDERS:
        return folder / f"{name}.yaml"
    return given


def config_help() -> str:
    """The ``-c``/``--config`` option's help, naming the bundled presets."""
    names = ", ".join(preset_names()) or "none found"
    return f"YAML config (see configs/default.yaml), or a bundled preset's name: {names} [default: built-in defaults]"
