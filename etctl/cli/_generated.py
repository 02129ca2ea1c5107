"""Generated files kept in a directory: written from a rendering, and checked against it.

A rendering maps paths relative to a directory to the text each file must hold. Every generated
file starts with a header that marks it as generated, which is how a file the generator wrote once
and no longer renders is told from a file someone else put there.

Invariant: checking reports every rendered file that is missing or whose text differs, and every
header-marked file the rendering no longer holds; files without the header are never reported.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

__all__ = ["check_files", "write_files"]


def write_files(out_dir: Path, files: Mapping[str, str]) -> list[Path]:
    """Write ``files`` (relative path -> text) under ``out_dir``; returns the paths written."""
    written = []
    for relative, text in files.items():
        path = out_dir / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


def check_files(
    out_dir: Path,
    files: Mapping[str, str],
    *,
    header: str,
    pattern: str,
    differs: str,
    stale: str,
) -> list[str]:
    """How ``out_dir`` differs from ``files``, one ``<path>: <problem>`` line per file.

    Args:
        out_dir: the directory the files were written to.
        files: the rendering (relative path -> text).
        header: how a generated file starts.
        pattern: the glob (relative to ``out_dir``) of the files that may be stale.
        differs: the problem of a file whose text is not the rendered one.
        stale: the problem of a generated file that is no longer rendered.
    """
    problems = []
    for relative, text in files.items():
        path = out_dir / relative
        if not path.exists():
            problems.append(f"{path}: missing")
        elif path.read_text(encoding="utf-8") != text:
            problems.append(f"{path}: {differs}")
    for path in sorted(out_dir.glob(pattern)) if out_dir.is_dir() else []:
        relative = path.relative_to(out_dir).as_posix()
        if relative not in files and path.read_text(encoding="utf-8").startswith(header):
            problems.append(f"{path}: {stale}")
    return problems
