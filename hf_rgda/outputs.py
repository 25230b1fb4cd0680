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
    """Write a run's files under ``out`` at once: ``writers`` maps each file or folder name to a function that
    writes it at the path it is given (in a staging folder); all are moved into place once every one is written.

    Raises:
        ConfigError: the folder could not be written (a full disk, no permission); nothing of this call is left.
    """
    out = Path(out)
    stage: Path | None = None
    created = not out.exists()
    try:
        out.mkdir(parents=True, exist_ok=True)
        stage = Path(tempfile.mkdtemp(prefix=".hf_rgda-writing-", dir=out))
        for name, write in writers.items():
            write(stage / name)
        for name in writers:
            _swap(stage / name, out / name)
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


def _swap(new: Path, dest: Path) -> None:
    """Put ``new`` at ``dest``: a file by ``os.replace``; a folder by renaming the old one aside first."""
    if new.is_dir() and dest.exists():
        old = dest.with_name(f".{dest.name}.old-{os.getpid()}")
        os.replace(dest, old)
        os.replace(new, dest)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(new, dest)
