"""A run on a Ray cluster: the seeds in blocks of one batch, an actor pool of :class:`RayAugmenter` on the worker
nodes, the rows back in the seeds' order with their Hugging Face features, and the same :class:`~hf_rgda.recipe.Run`
as :func:`hf_rgda.recipe.augment`.

What must hold as on one machine, and how it does:

* the rows: each block is one map batch of ``batch_size`` seeds, cut as ``datasets.map`` cuts them; every row
  carries its seed's position through the augmenter (a pass-through column) and the rows are put back in that order
  (a stable sort), so they equal ``seeds.map(aug, batched=True, batch_size=...)``'s, traces aside (they hold times);
  the features (``ClassLabel`` names included) are the seeds' where a column keeps its type.
* no seed is lost: Ray Data re-runs the batch of a worker that died (its actors restart, ``max_errored_blocks`` is
  0), the response cache serving the calls that worker had paid for; and every seed's batch must have come back
  with a receipt (a store actor call from the worker), else the run raises.
* what stops a run on one machine stops it here, with the same exception (:class:`~hf_rgda.AuthenticationError`,
  :class:`~hf_rgda.ConfigError`...): the worker hands it to the store before Ray Data fails the run, and the driver
  raises it.
* the response cache, the failure ledger, the ``rpm``/``tpm`` limits and the secrets given in code are served from
  the driver's node (:mod:`hf_rgda.scale.services`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import ray

from .._exceptions import ConfigError, RGDAError
from ..recipe import Run, summarise
from ..recipe import augment as augment_here
from .services import ClusterServices

__all__ = ["ROW_COLUMN", "RayAugmenter", "augment", "connect", "map_batches_args"]

log = logging.getLogger(__name__)

#: the pass-through column that carries each seed's position through a run (dropped from the rows returned)
ROW_COLUMN = "_hf_rgda_row"


class RayAugmenter:
    """The callable class ``ray.data.Dataset.map_batches`` runs in an actor pool: a pyarrow batch of seeds in, the
    augmenter's rows out (a pyarrow table, more rows than it got: ``udf_modifying_row_count=True``).

    Use :func:`map_batches_args` to build its arguments, or :func:`augment` for a whole run.

    Args:
        augmenter: an :class:`~hf_rgda.RGDAAugmenter` (or a baseline of :mod:`hf_rgda.baselines`).
        services: the run's actors (:meth:`ClusterServices.start <hf_rgda.scale.services.ClusterServices.start>`);
            None: the worker uses its own node's cache, ledger and limits.
    """

    def __init__(self, augmenter: Any, services: ClusterServices | None = None) -> None:
        self.augmenter, self.services = augmenter, services
        if services is not None:
            services.attach(augmenter)

    def __call__(self, batch: pa.Table) -> pa.Table:
        columns = batch.to_pydict()
        rows = columns.get(ROW_COLUMN)
        try:
            out = self.augmenter(columns, rows)
        except RGDAError as err:  # what stops a run (a rejected key, a bad configuration): the driver raises it
            if self.services is not None:
                self.services.stopped(err)
            raise
        if rows is not None and self.services is not None:
            self.services.done(rows)
        return out


def map_batches_args(augmenter: Any, *, workers: int, batch_size: int = 8, num_cpus: float = 1.0,
                     services: ClusterServices | None = None) -> dict[str, Any]:
    """The keyword arguments of ``ray.data.Dataset.map_batches`` that augment a Ray dataset of seed rows.

    Example:
        >>> out = ray.data.from_huggingface(seeds).map_batches(**map_batches_args(aug, workers=4))  # doctest: +SKIP

    Args:
        workers: the actor pool's size: batches augmented at once across the cluster (each its seeds' calls at
            once, up to the backend's ``max_concurrency``).
        batch_size: seeds per batch.
        num_cpus: CPUs each worker reserves (1: as many workers as a node has CPUs).
        services: the run's actors; default: started now on this node (call it on the driver, connected to the
            cluster), living as long as this driver.
    """
    import ray.data

    if workers < 1:
        raise ConfigError(f"workers={workers} must be at least 1")
    services = services or ClusterServices.start(augmenter)
    # one batch per worker at a time: a batch waits for a free worker rather than in a busy one's queue
    pool = ray.data.ActorPoolStrategy(size=workers, max_tasks_in_flight_per_actor=1)
    return {"fn": RayAugmenter, "fn_constructor_args": (augmenter, services), "batch_format": "pyarrow",
            "batch_size": batch_size, "compute": pool, "num_cpus": num_cpus, "udf_modifying_row_count": True}


def connect(address: str | None = "auto") -> None:
    """Connect this process to the Ray cluster at ``address`` (``"auto"``: the one this machine belongs to; None:
    ``RAY_ADDRESS``, else a new local one), unless it already is connected."""
    if ray.is_initialized():
        return
    try:
        ray.init(address=address, logging_level="WARNING")
    except ConnectionError as err:  # no cluster at that address
        first = (str(err).strip().splitlines() or [type(err).__name__])[0]
        raise ConfigError(f"no Ray cluster at {address or 'RAY_ADDRESS'}: {first}") from None


def augment(seeds: Any, augmenter: Any, *, workers: int | None = None, batch_size: int = 8,
            address: str | None = "auto", num_cpus: float = 1.0, desc: str | None = None) -> Run:
    """:func:`hf_rgda.recipe.augment` on a Ray cluster: the same rows, summary, failures and ``Run``.

    Example:
        >>> run = augment(seeds, aug, workers=8, address="auto")  # doctest: +SKIP
        >>> run.save("out/ncbi-rgda", source="ncbi_disease", split="train")  # doctest: +SKIP

    Args:
        seeds: the seed rows (a ``datasets.Dataset``, see :func:`hf_rgda.recipe.sample_seeds`).
        augmenter: an :class:`~hf_rgda.RGDAAugmenter` (or a baseline).
        workers: batches augmented at once across the cluster (default: the cluster's CPUs over ``num_cpus``).
        batch_size: seeds per batch, as for ``datasets.map``.
        address: the cluster (see :func:`connect`); ignored when this process is connected already.
        num_cpus: CPUs each worker reserves.
        desc: names the run in errors.

    Raises:
        RGDAError: what stops a run on one machine (a rejected key, a bad configuration), as raised by the worker.
        RuntimeError: a batch came back without its receipt (never expected: Ray Data fails a run that loses one).
    """
    import ray.data

    if len(seeds) == 0:  # nothing to spread: the run on one machine, as it is
        return augment_here(seeds, augmenter, batch_size=batch_size, desc=desc)
    connect(address)
    table = _seed_table(seeds)
    n = table.num_rows
    workers = workers or max(1, int(ray.cluster_resources().get("CPU", 1) // num_cpus))
    start = time.perf_counter()
    services = ClusterServices.start(augmenter)
    try:
        blocks = [table.slice(i, batch_size) for i in range(0, n, batch_size)]
        out = ray.data.from_blocks(blocks).map_batches(**map_batches_args(
            augmenter, workers=min(workers, len(blocks)), batch_size=batch_size, num_cpus=num_cpus,
            services=services))
        tables = _gather(out, services)
        done, workers_seen, _ = services.outcome()
    finally:
        services.stop()
    missing = sorted(set(range(n)) - set(done))
    if missing:
        raise RuntimeError(f"{desc or 'augment'}: {len(missing)} of {n} seeds came back from no batch (first: row "
                           f"{missing[0]})")
    log.info("%s: %d seeds, %d batches at once on %d nodes (%d worker processes)", desc or "augment", n,
             min(workers, len(blocks)), len(set(workers_seen.values())), len(workers_seen))
    rows = _rows(tables, seeds.features)
    summary = summarise(rows, augmenter, time.perf_counter() - start, desc)
    return Run(rows, summary, augmenter, n)


def _seed_table(seeds: Any) -> pa.Table:
    """The seed rows as one Arrow table (a selection applied), with each row's position in :data:`ROW_COLUMN`."""
    if ROW_COLUMN in seeds.column_names:
        raise ConfigError(f"the seeds have a column {ROW_COLUMN!r}, which a run on Ray uses for itself")
    table = seeds.with_format("arrow")[:]
    return table.append_column(ROW_COLUMN, pa.array(range(table.num_rows), pa.int64()))


def _gather(out: Any, services: ClusterServices) -> list[pa.Table]:
    """Run ``out`` and fetch its blocks; what stopped a worker's batch is raised as the worker raised it."""
    out.context.max_errored_blocks = 0  # every block, or an error: never a block dropped silently
    try:
        return ray.get(out.to_arrow_refs())
    except ray.exceptions.RayError:
        stop = services.outcome()[2]
        if stop is not None:
            raise stop from None
        raise


def _rows(tables: list[pa.Table], features: Mapping[str, Any]) -> Any:
    """The rows of ``tables`` in their seeds' order, without :data:`ROW_COLUMN`, as a ``datasets.Dataset`` with the
    seeds' features where a column keeps its type."""
    from datasets import Dataset, DatasetInfo, Features
    from datasets.table import InMemoryTable

    table = pa.concat_tables(tables, promote_options="default")
    table = table.take(pc.sort_indices(table, sort_keys=[(ROW_COLUMN, "ascending")]))  # stable: a seed's rows in order
    table = table.drop_columns([ROW_COLUMN])
    inferred = Features.from_arrow_schema(table.schema)

    def arrow_type(feature: Any) -> pa.DataType:
        return Features({"x": feature}).arrow_schema.field("x").type

    kept = {name: features[name] if name in features and arrow_type(features[name]) == table.schema.field(name).type
            else inferred[name] for name in table.column_names}
    return Dataset(InMemoryTable(table), info=DatasetInfo(features=Features(kept)))
