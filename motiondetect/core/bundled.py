"""Folders the wheel maps into the package (``kernels/``, ``configs/``), installed or in the
source tree.

``pyproject.toml``'s ``force-include`` puts the top-level ``kernels/`` and ``configs/`` folders
into the package as ``motiondetect/kernels`` and ``motiondetect/configs``; a source checkout has
them beside the package.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def bundled_folder(name: str, pattern: str) -> Path | None:
    """The folder ``name`` that holds files matching ``pattern`` (``"*.cu"``, ``"*.yaml"``): the
    installed package's ``motiondetect/<name>`` first, then the source tree's ``<name>``; ``None``
    where neither has such files (a broken install)."""
    installed = Path(str(resources.files("motiondetect"))) / name
    source_tree = Path(__file__).resolve().parents[2] / name  # motiondetect/core/ -> the checkout
    return next((folder for folder in (installed, source_tree) if any(folder.glob(pattern))), None)
