"""Scale out on Ray Data: :func:`augment` runs the run recipe on a Ray cluster's worker nodes, and
:class:`RayAugmenter` (with :func:`map_batches_args`) is the callable for ``ray.data.Dataset.map_batches``.

Install the extra: ``pip install "hf_rgda[ray]"``. This package is imported only when used; ``import hf_rgda`` never
imports Ray.

Example:
    >>> import ray
    >>> from hf_rgda.scale import augment
    >>> ray.init(address="auto")  # doctest: +SKIP
    >>> run = augment(seeds, aug, workers=8)  # doctest: +SKIP
"""

from __future__ import annotations

try:
    import ray  # noqa: F401
except ImportError as err:  # pragma: no cover - depends on the environment
    raise ImportError("hf_rgda.scale needs Ray Data: pip install 'hf_rgda[ray]'") from err

from .run import ROW_COLUMN, RayAugmenter, augment, connect, map_batches_args
from .services import ClusterServices

__all__ = ["ROW_COLUMN", "ClusterServices", "RayAugmenter", "augment", "connect", "map_batches_args"]
