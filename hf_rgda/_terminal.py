"""What the command line prints besides its results: the log level (``-v``, ``-q``) and the one line a missing extra
ends in."""

from __future__ import annotations

import logging
import sys
from typing import Any

__all__ = ["EXTRAS", "missing_extra", "set_logging"]


class _Stderr(logging.StreamHandler):  # type: ignore[type-arg]
    """A handler that writes to ``sys.stderr`` as it is when a record comes (``main`` run in-process may outlive the
    stream it started with: a test's captured stderr)."""

    @property  # type: ignore[override]
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass


def set_logging(verbose: int = 0, quiet: bool = False) -> None:
    """Warnings and errors by default (no per-request lines: the HTTP clients log each request at INFO); ``-v``:
    the library's INFO; ``-vv``: everything at DEBUG, the HTTP requests included; ``-q``: errors only, no progress
    bars."""
    level = logging.ERROR if quiet else logging.DEBUG if verbose >= 2 else logging.WARNING
    handler = _Stderr()
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=level, handlers=[handler], force=True)
    logging.getLogger("hf_rgda").setLevel(logging.INFO if verbose == 1 and not quiet else logging.NOTSET)
    if quiet:
        from datasets import disable_progress_bars

        disable_progress_bars()


#: the extra that installs a module the optional features import (top-level name -> extra)
EXTRAS = {"llama_cpp": "local", "openai": "openai", "anthropic": "anthropic", "google": "gemini",
          "transformers": "train", "torch": "train", "accelerate": "train", "evaluate": "train", "seqeval": "train",
          "bert_score": "train", "captum": "attribution", "gradio": "demo"}


def missing_extra(err: ImportError) -> str:
    """One line for a missing optional dependency: the backends' own message when it names the extra (``pip install
    'hf_rgda[...]'``), else the module and the extra that installs it."""
    if "pip install" in str(err):
        return str(err)
    module = (err.name or "").split(".")[0]
    extra = EXTRAS.get(module)
    return (f"{module or 'a module'} is not installed" + (f": pip install 'hf_rgda[{extra}]'" if extra else "")
            + f" ({str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__})")
