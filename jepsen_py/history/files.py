"""Which files are histories: the extensions of each format, and what a directory holds.

A file named on the command line is checked whatever its name (its format comes from
``--format``, its extension, or its first line). In a directory (searched recursively;
names starting with ``.`` or ``_`` are left out, as Spark and Hadoop leave them out),
only these count as histories:

- ``*.jsonl``, ``*.ndjson`` (this project's JSON Lines), ``*.parquet``, ``*.pq`` (its
  Parquet), each possibly ``.gz``-compressed (read by Spark);
- ``*.edn`` and ``*.txt`` whose first 4 KiB mention ``:process`` (a Jepsen/Knossos op map;
  Jepsen's ``results.edn`` does not), and ``*.log`` whose first 4 KiB hold a Jepsen
  ``jepsen.util`` event (Porcupine's etcd logs, Jepsen's ``jepsen.log``).

Everything else is skipped and named as skipped: a store directory's ``test.json``,
``results.json``, ``timeline.html`` and plots are not histories. A file reached twice is
checked once: a symbolic link to a file already listed (the store's ``latest`` points at
its newest run) is skipped; links to directories are not followed inside a directory.
"""

from __future__ import annotations

import glob
import os
from pathlib import Path

import attrs

EXTENSIONS: dict[str, str] = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".edn": "edn",
}
"""A file's format by its extension (a ``.gz`` suffix is looked through)."""

HISTORY_EXTENSIONS = frozenset({".jsonl", ".ndjson", ".parquet", ".pq"})
"""Extensions that make a file in a directory a history without looking inside (the only
ones that count in a remote directory, where files are not opened to be listed)."""
_ALWAYS = HISTORY_EXTENSIONS
_SNIFFED = {".edn": b":process", ".txt": b":process", ".log": b"jepsen.util"}
_SNIFF_BYTES = 4096


def extension(name: str) -> str:
    """The extension of a file name, lower-case, with a ``.gz`` suffix looked through."""
    name = name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    return os.path.splitext(name)[1]


def format_by_name(name: str) -> str | None:
    """The format a file's name says (`EXTENSIONS`, through a ``.gz`` suffix), or None."""
    return EXTENSIONS.get(extension(name.rsplit("/", 1)[-1]))


def is_remote_history_name(name: str) -> bool:
    """Whether a file found in a remote directory (``hdfs://``, ``s3a://``, ...) counts
    as a history: by its extension alone (`HISTORY_EXTENSIONS`), as files there are not
    opened to be listed."""
    return extension(name.rsplit("/", 1)[-1]) in HISTORY_EXTENSIONS


def is_hidden(name: str) -> bool:
    """A path component Spark and Hadoop leave out of a directory (``.x``, ``_x``)."""
    return name.startswith((".", "_"))


def is_history_name(path: str | os.PathLike[str]) -> bool:
    """Whether a file found in a directory counts as a history (see the module docstring)."""
    suffix = extension(os.fspath(path))
    if suffix in _ALWAYS:
        return True
    marker = _SNIFFED.get(suffix)
    if marker is None:
        return False
    try:
        with open(path, "rb") as handle:
            return marker in handle.read(_SNIFF_BYTES)
    except OSError:
        return True  # let the reader say what is wrong with it


@attrs.frozen
class Listing:
    """The histories under some paths, each once, and what was skipped (path, why);
    ``missing`` are paths that name nothing (path, why)."""

    files: tuple[str, ...]
    skipped: tuple[tuple[str, str], ...] = ()
    missing: tuple[tuple[str, str], ...] = ()


def list_histories(paths: list[str] | tuple[str, ...]) -> Listing:
    """The history files of local ``paths`` (files, directories, globs), in the order of
    the paths, each directory's sorted."""
    files: list[str] = []
    skipped: list[tuple[str, str]] = []
    missing: list[tuple[str, str]] = []
    seen: dict[str, str] = {}  # real path -> the name it was listed under

    def add(name: str, *, named: bool) -> None:
        real = os.path.realpath(name)
        if real in seen:
            if not named or os.path.islink(name):
                skipped.append((name, f"the same file as {seen[real]}"))
            return
        seen[real] = name
        files.append(name)

    def walk(root: str) -> None:
        found = sorted(
            p
            for p in Path(root).rglob("*")
            if not any(is_hidden(part) for part in p.relative_to(root).parts)
        )
        # real files first: a link to one of them is then the duplicate, not the file
        for p in sorted(found, key=lambda p: (p.is_symlink(), str(p))):
            if p.is_symlink() and p.is_dir():
                continue  # the store's `latest`: its run is listed under its own name
            if not p.is_file():
                continue
            if is_history_name(p):
                add(str(p), named=False)
            else:
                skipped.append((str(p), "not a history file name"))

    for path in paths:
        if any(c in path for c in "*?["):
            matches = sorted(glob.glob(path, recursive=True))
            if not matches:
                missing.append((path, "no file matches this pattern"))
            for match in matches:
                if os.path.isdir(match):
                    walk(match)
                elif os.path.isfile(match):
                    add(match, named=True)
            continue
        if os.path.isdir(path):
            before = len(files)
            walk(path)
            if len(files) == before:
                missing.append((path, "the directory holds no history file"))
        elif os.path.isfile(path):
            add(path, named=True)
        else:
            missing.append((path, "no such file or directory"))
    return Listing(tuple(files), tuple(skipped), tuple(missing))
