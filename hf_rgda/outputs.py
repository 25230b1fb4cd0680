"""The output folder of a run: checked before the first call is paid, written whole or not at all.

- :func:`check_out` (the CLI, before it builds the backend): ``--out`` must be a folder this process can create or
  write in, and not the input (the folder holding the source's files, or the source folder itself: the next run
  would read the output as its input).
- :func:`write_outputs`: every file of a run is written into a hidden staging folder beside the others and moved into
  place only when all of them are written (``os.replace``; a folder is swapped for the old one). A full disk or a
  folder turned read-only mid-run raises :class:`~hf_rgda.ConfigError` naming the folder and the cause; nothing half
  written is left, and as the run's answers are in the response cache a rerun pays nothing again.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from ._exceptions import ConfigError

__all__ = ["check_out", "write_outputs"]

Writer = Callable[[Path], None]


def _nearest_existing(path: Path) -> Path:
    for folder in (path, *path.parents):
        if folder.exists():
            return folder
    return Path(path.anchor or ".")


def check_out(out: str | os.PathLike[str], sources: Sequence[str] = ()) -> None:
    """Raise :class:`ConfigError` when ``out`` cannot take a run's files (see the module docstring).

    Args:
        out: the output folder (``--out``); it need not exist.
        sources: the run's sources (``augment``'s positional arguments): files, folders or Hub ids.
    """
    out = Path(out).expanduser()
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out}: is a file; give a folder (created when missing)")
    target = out.resolve()
    for source in sources:
        src = Path(source).expanduser()
        if not src.exists():
            continue
        folder = src.resolve() if src.is_dir() else src.resolve().parent
        if target == folder:
            raise ConfigError(f"--out {out}: is the input's own folder ({source}); the next run would read the "
                              "output as its input: give another folder")
    base = _nearest_existing(out)
    if not base.is_dir():
        raise ConfigError(f"--out {out}: {base} is a file, so the folder cannot be created")
    try:
        fd, probe = tempfile.mkstemp(prefix=".hf_rgda-probe-", dir=base)
        os.close(fd)
        os.unlink(probe)
    except OSError as err:
        raise ConfigError(f"--out {out}: cannot write in {base} ({err.strerror or err})") from None


def write_outputs(out: str | os.PathLike[str], writers: Mapping[str, Writer]) -> None:
    """Write a run's files under ``out``, all of them or none: ``writers`` maps each file or folder name to a
    function that writes it at the path it is given (in a staging folder under ``out``); once every one is written,
    the entries of an earlier run under those names are moved aside, the new ones moved in, and the old ones
    removed. A move that fails puts back what was there (the new entries out, the old ones in).

    Raises:
        ConfigError: the folder could not be written (a full disk, no permission); nothing of this call is left, and
            ``out`` holds what it held before (the message names the folder where old entries wait if putting them
            back failed too).
    """
    out = Path(out)
    stage: Path | None = None
    created = not out.exists()
    try:
        out.mkdir(parents=True, exist_ok=True)
        stage = Path(tempfile.mkdtemp(prefix=".hf_rgda-writing-", dir=out))
        for name, write in writers.items():
            write(stage / name)
        _move_in(stage, out, list(writers))
    except OSError as err:
        if stage is not None:
            shutil.rmtree(stage, ignore_errors=True)
        if created and out.is_dir() and not any(out.iterdir()):
            out.rmdir()
        raise ConfigError(f"could not write {out} ({err.strerror or err}); nothing was written, and the run's "
                          "answers are in the response cache: rerun once it can be written, no call is paid "
                          "again") from None
    finally:
        if stage is not None:
            shutil.rmtree(stage, ignore_errors=True)


def _move_in(stage: Path, out: Path, names: list[str]) -> None:
    """Move ``names`` from ``stage`` into ``out``, the entries they replace moved aside first and removed after;
    on an error, the moves done are undone before it is raised again."""
    aside = Path(tempfile.mkdtemp(prefix=".hf_rgda-old-", dir=out))
    moved_aside: list[str] = []
    moved_in: list[str] = []
    try:
        for name in names:
            if os.path.lexists(out / name):
                os.replace(out / name, aside / name)
                moved_aside.append(name)
        for name in names:
            os.replace(stage / name, out / name)
            moved_in.append(name)
    except OSError as err:
        try:
            for name in reversed(moved_in):
                os.replace(out / name, stage / name)
            for name in reversed(moved_aside):
                os.replace(aside / name, out / name)
        except OSError:
            raise OSError(err.errno, f"{err.strerror or err}; the earlier entries could not all be put back: "
                                     f"they are in {aside}") from None
        shutil.rmtree(aside, ignore_errors=True)
        raise
    shutil.rmtree(aside, ignore_errors=True)
