"""Locate the CUDA kernel sources (``kernels/*.cu``) installed or in the source tree.

The wheel maps the top-level ``kernels/`` folder into the package as ``motiondetect/kernels``
(``force-include`` in ``pyproject.toml``); a source checkout has it beside the package.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from motiondetect.core.bundled import bundled_folder


@functools.lru_cache(maxsize=None)
def kernel_dir() -> Path:
    """Return the folder holding the ``.cu`` files: the installed package's first, then the tree's.

    Raises:
        FileNotFoundError: neither location holds the kernels (a broken install).
    """
    folder = bundled_folder("kernels", "*.cu")
    if folder is None:
        raise FileNotFoundError("CUDA kernel sources not found in the installed package or the source tree; reinstall motiondetect")
    return folder


#: A quoted include of one of the project's headers, on a line of its own.
_LOCAL_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]+"([\w.]+)"[ \t]*$', re.MULTILINE)
_PRAGMA_ONCE = re.compile(r"^[ \t]*#[ \t]*pragma[ \t]+once[ \t]*\n", re.MULTILINE)


def kernel_source(stem: str) -> str:
    """Return the text of ``kernels/<stem>.cu`` with the project's own headers
    (``#include "batch.cuh"``) written in place.

    Inlined because PyCUDA keys its compile cache on the source: a source that still says
    ``#include`` is run through ``nvcc --preprocess`` on every load (about 0.1 s a module,
    measured on the GPU machine), which a cache hit then throws away.

    Raises:
        FileNotFoundError: no such kernel file or header.
    """
    folder = kernel_dir()

    def header(match: re.Match) -> str:  # its "#pragma once" would draw a warning in a main file
        return _PRAGMA_ONCE.sub("", (folder / match.group(1)).read_text(encoding="utf-8"))

    return _LOCAL_INCLUDE.sub(header, (folder / f"{stem}.cu").read_text(encoding="utf-8"))
