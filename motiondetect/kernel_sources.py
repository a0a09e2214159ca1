"""Locate the CUDA kernel sources (``kernels/*.cu``) installed or in the source tree.

The wheel maps the top-level ``kernels/`` folder into the package as ``motiondetect/kernels``
(``force-include`` in ``pyproject.toml``); a source checkout has it beside the package.
"""

from __future__ import annotations

import functools
from importlib import resources
from pathlib import Path


@functools.lru_cache(maxsize=None)
def kernel_dir() -> Path:
    """Return the folder holding the ``.cu`` files: the installed package's first, then the tree's.

    Raises:
        FileNotFoundError: neither location holds the kernels (a broken install).
    """
    installed = Path(str(resources.files("motiondetect"))) / "kernels"
    source_tree = Path(__file__).resolve().parent.parent / "kernels"
    for candidate in (installed, source_tree):
        if any(candidate.glob("*.cu")):
            return candidate
    raise FileNotFoundError(f"CUDA kernel sources not found in {installed} or {source_tree}; reinstall motiondetect")


def kernel_source(stem: str) -> str:
    """Return the text of ``kernels/<stem>.cu``.

    Raises:
        FileNotFoundError: no such kernel file.
    """
    return (kernel_dir() / f"{stem}.cu").read_text(encoding="utf-8")
