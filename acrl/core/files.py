"""Atomic file writes, the one place for them: a reader never sees half a file, and a write that
fails or is interrupted part-way leaves the previous file as it was.

Each writes to the hidden temporary file `.NAME.tmp` beside the target (same directory, so the
rename stays on one file system), then moves it into place with `os.replace`, which is atomic
on POSIX and Windows. A process killed mid-write may leave the `.tmp` file, which nothing reads
(the sweep's file shipping skips `*.tmp`) and the next write replaces.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path for a writer that takes a file name (`torch.save`, h5py, ffmpeg,
    `savefig`) or fills a new directory there (a Minari dataset); when the block ends without an
    exception it replaces `path` (a directory only where `path` does not exist or is an empty one),
    otherwise it is removed, file or directory, and `path` is untouched. The parent directory is created.

    The temporary name does not end in the target's suffix: writers that infer a format from
    the name need it given (`savefig(..., format="png")`).

    Raises:
        OSError: the directory cannot be created or written; whatever the block raises.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    if tmp.is_dir():  # left by a directory writer that was killed: start empty
        shutil.rmtree(tmp)
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:  # an error or a signal (KeyboardInterrupt) in the block: no partial file
        with contextlib.suppress(OSError):
            if tmp.is_dir():
                shutil.rmtree(tmp)
            else:
                tmp.unlink()
        raise


def write_bytes_atomic(path: str | Path, data: bytes) -> None:
    """Write `data` to `path` atomically (see the module docstring), creating its directory."""
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def write_text_atomic(path: str | Path, text: str) -> None:
    """Write `text` (UTF-8) to `path` atomically (see the module docstring), creating its directory."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


SIGNIFICANT_DIGITS = 10
"""Floats in the JSON acrl writes keep this many significant digits: 0.7300000000000005 (0.1 + 0.63,
float noise) is written 0.73, while a float32 statistic (7 digits) or a learning rate keeps all of its."""


def rounded(data: Any) -> Any:
    """`data` with every float (in dicts, lists and tuples, at any depth) rounded to `SIGNIFICANT_DIGITS`
    significant digits, for people to read; ints, bools, strings and None as they are, tuples as lists.
    NaN and infinities stay as they are. The numbers acrl computes with are never these copies."""
    if isinstance(data, float):
        return float(f"{data:.{SIGNIFICANT_DIGITS}g}")
    if isinstance(data, dict):
        return {key: rounded(value) for key, value in data.items()}
    if isinstance(data, list | tuple):
        return [rounded(value) for value in data]
    return data


def json_text(data: Any, **dumps: Any) -> str:
    """`data` as indented JSON (2 spaces), its floats `rounded`.

    `dumps` are further `json.dumps` options, e.g. `default=float` (whose results are rounded too).

    Raises:
        TypeError: `data` holds something JSON cannot encode.
    """
    default = dumps.pop("default", None)
    if default is not None:
        dumps["default"] = lambda value: rounded(default(value))
    return json.dumps(rounded(data), indent=2, **dumps)


def write_json_atomic(path: str | Path, data: Any, **dumps: Any) -> None:
    """Write `data` as `json_text` (indented, floats rounded to 10 significant digits) with a final
    newline to `path` atomically: eval.json, a sweep's results.json, the experiments' JSON.

    `dumps` are further `json.dumps` options, e.g. `default=float`.

    Raises:
        TypeError: `data` holds something JSON cannot encode (nothing is written).
    """
    write_text_atomic(path, json_text(data, **dumps) + "\n")
