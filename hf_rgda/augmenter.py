"""``RGDAAugmenter``: the ``datasets.map`` entry point.

Example:
    >>> from datasets import Dataset
    >>> from hf_rgda import RGDAAugmenter, ScriptedLLM
    >>> ds = Dataset.from_dict({"tokens": [["Aspirin", "treats", "fever", "."]],
    ...                         "ner_tags": [["O", "O", "B-Disease", "O"]]})
    >>> aug = RGDAAugmenter(llm=ScriptedLLM([]), label_names=["O", "B-Disease", "I-Disease"], cache=False)
    >>> out = ds.map(aug, batched=True)  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from ._exceptions import ConfigError, InputError, SchemaError
from ._source import hash_extras
from .cache import ResponseCache, default_cache_path
from .calls import run_sync
from .canaries.thresholds import load_calibration
from .checking import Checker, SplitStats
from .checking.sentence import Sentence
from .checking.variety import Ledger
from .columns import META_COLUMNS
from .config import DEFAULT_LLM, AugmentConfig
from .failures import FailureLedger, identity, ledger_folder
from .inputs import check_batched, check_columns, check_split, seed_tags
from .llm import LLM, load_llm
from .pipeline import Pipeline
from .records import JUDGE_KEYS, Seed, SeedResult, SeedTrace, seed_key
from .stages.categories import check_questions
from .summary import RunSummary
from .tags import SCHEMES, convert_tags, entity_types

__all__ = ["RGDAAugmenter"]

log = logging.getLogger(__name__)


class RGDAAugmenter:
    """Augments NER batches; use with ``ds.map(aug, batched=True)``.

    Returns every input column (values of the seed row copied to its augmented rows), the tokens and tags in
    the input's own form (``ClassLabel`` ids stay ids) and the :data:`META_COLUMNS`.

    Args:
        llm: ``"<backend>:<model>"`` or an :class:`~hf_rgda.llm.LLM`; the embedded local model by default.
        label_names: the tag names (``["O", "B-PER", ...]``); required unless built with :meth:`from_dataset`.
        scheme: tag scheme of the input (and output) tags.
        tokens_column, tags_column: column names.
        cache: True for the default response cache, a path, or False for none.
        type_descriptions: optional ``{type: description}`` shown to the generating stages and in the entity
            verifier's options (``verify_entities``).
        confusers: the entity verifier's contrast categories (e.g. ``["the name of a gene or protein"]``) instead of
            its defaults for the dataset's types; "an ordinary word or phrase, not a name" is always offered too
            (see :mod:`hf_rgda.stages.categories`).
        llm_options: passed to :func:`~hf_rgda.llm.load_llm` (``base_url``, ``n_ctx``, ...).
        attribution_model: folder or Hub id of a token-classification model for WHERE (``biorda``, ``where=True``);
            see :func:`hf_rgda.attribution.fit_seed_model` to train one on the seeds.
        debate_llms: backends of the debate agents (agent k uses ``debate_llms[k % len]``); default: ``llm``.
        calibration: a ``calibration.json`` path or its content (:func:`hf_rgda.calibrate`): its thresholds replace
            ``config``'s; options given as keywords here win over both.
        tagger_gate: a :class:`~hf_rgda.TaggerGate` (or its folder): a token tagger fine-tuned on the seeds; a
            generated sentence in which it tags a mention the sentence leaves untagged is rejected
            (``seed_tagger_mention``) as the checker reads it, so the composer's top-up asks again for the seed.
            :meth:`TaggerGate.fit <hf_rgda.TaggerGate.fit>` trains one (minutes on a CPU). None: off.
        stats: the seed split's statistics (:class:`~hf_rgda.checking.SplitStats`: the checker's evidence, entity
            length limits, lexicon and hyphen style, and the pool of the composer's entity hints);
            :meth:`from_dataset` computes them. None: no statistics (the rules that need them do nothing, and the
            entity hints come from each batch's seeds).
        **config: fields of :class:`~hf_rgda.config.AugmentConfig` (``method``, ``num_augmented``, ...).

    Attributes:
        summary: totals of the batches this object augmented in this process: ``seeds in: 0`` when ``datasets``
            served the map from its cache, and without the batches of ``num_proc`` workers. The totals of a map's
            output, however it ran: :meth:`RunSummary.from_dataset(out) <hf_rgda.summary.RunSummary.from_dataset>`.
        calibration: the calibration applied (its source and thresholds, for ``summary.json``), or None.
    """

    def __init__(self, llm: str | LLM = DEFAULT_LLM, *, label_names: Sequence[str] | None = None,
                 scheme: str = "IOB2", tokens_column: str = "tokens", tags_column: str = "ner_tags",
                 cache: bool | str | Path = True, stats: SplitStats | None = None,
                 type_descriptions: Mapping[str, str] | None = None, confusers: Sequence[str] | None = None,
                 llm_options: Mapping[str, Any] | None = None,
                 attribution_model: str | None = None, debate_llms: Sequence[str | LLM] = (),
                 config: AugmentConfig | None = None, calibration: str | Path | Mapping[str, Any] | None = None,
                 tagger_gate: Any = None, **config_fields: Any) -> None:
        if scheme not in SCHEMES:
            raise ConfigError(f"scheme={scheme!r}; choose one of {', '.join(SCHEMES)}")
        if not label_names:
            raise ConfigError("label_names is required (or build the augmenter with RGDAAugmenter.from_dataset)")
        unknown = set(config_fields) - {f.name for f in dataclasses.fields(AugmentConfig)}
        if unknown:
            raise ConfigError(f"unknown option(s) {sorted(unknown)}; see hf_rgda.AugmentConfig")
        cal = load_calibration(calibration) if calibration is not None else None
        config = cal.apply(config or AugmentConfig()) if cal else config  # the options given here win over it
        self.config = dataclasses.replace(config, **config_fields) if config else AugmentConfig(**config_fields)
        self.llm = load_llm(llm, **dict(llm_options or {}))
        self.config = self.config.for_backend(self.llm)  # representation "auto": the backend's own
        self.calibration = cal.summary() if cal else None
        if cal and cal.llm and cal.llm != self.llm.identity():
            log.warning("%s was measured with %s, not with this run's %s", cal.source, cal.llm, self.llm.identity())
        self.label_names = list(label_names)
        self.types = entity_types(self.label_names)
        if not self.types:
            raise ConfigError(f"label_names {self.label_names} contain no entity type")
        self.scheme = scheme
        self.tokens_column, self.tags_column = tokens_column, tags_column
        self.cache_path = "" if cache is False else str(cache) if not isinstance(cache, bool) else "default"
        if self.cache_path:  # a cache no call can use stops the run now, not as every seed's failure
            ResponseCache(None if self.cache_path == "default" else self.cache_path).check()
        self.stats = stats
        self.type_descriptions = dict(type_descriptions or {})
        self.confusers = None if confusers is None else [str(c) for c in confusers]
        if self.config.verify_entities:  # the verifier's questions, checked before any call is paid
            check_questions(self.types, self.type_descriptions, self.confusers)
        self.attribution_model = str(attribution_model) if attribution_model else None
        self.config.check_attribution(self.attribution_model)
        self.debate_llms = [load_llm(x) for x in debate_llms]
        self.tagger_gate = _tagger_gate(tagger_gate, self.types)
        self._selector: Any = None
        self._stores: tuple[ResponseCache | None, FailureLedger] | None = None
        self.summary = RunSummary()
        self._ledger_of_rows = Ledger(self.config.max_entity_repeats)  # the variety pass's scope: this object here
        self._remembered = ""  # a digest of the rows :meth:`remember` entered in it (none: "")
        self._memo: dict[str, Any] = {}  # what the stages keep across this object's batches (Run.memo)

    @classmethod
    def from_dataset(cls, ds: Any, *, tokens_column: str = "tokens", tags_column: str = "ner_tags",
                     scheme: str = "IOB2", label_names: Sequence[str] | None = None, **kwargs: Any) -> RGDAAugmenter:
        """Build an augmenter whose label set and statistics (:class:`~hf_rgda.checking.SplitStats`) come from
        dataset split ``ds``, every row of it checked first (:func:`hf_rgda.inputs.check_split`).

        Args:
            label_names: the label set; default: the ``ClassLabel`` names, else the split's string tags (an entity
                type that looks like a typo of another then fails).

        Raises:
            InputError: a missing column, or an invalid row, named by its index in ``ds``.
        """
        names, iob2 = check_split(ds, tokens_column=tokens_column, tags_column=tags_column, scheme=scheme,
                                  label_names=label_names)
        if "stats" not in kwargs:  # [:]: one read from Arrow; the tagger only where its rule is on
            share = kwargs.get("likely_mention_quantile", (kwargs.get("config") or AugmentConfig()).likely_mention_quantile)
            kwargs["stats"] = SplitStats.from_split(ds[tokens_column][:], iob2, tagger=bool(share))
        return cls(label_names=names, scheme=scheme, tokens_column=tokens_column, tags_column=tags_column, **kwargs)

    # ---------------------------------------------------------------- hashing and pickling
    def __getstate__(self) -> dict[str, Any]:
        state = {k: v for k, v in self.__dict__.items()
                 if k not in ("summary", "_selector", "_ledger_of_rows", "_stores", "_memo", "_remembered")}
        if self._remembered:  # rows remembered change what a map accepts: not one cached without them
            state["_remembered"] = self._remembered
        state["_hash_extras"] = hash_extras()
        state["_failed_token"] = self._ledger().token(self._identity())  # a rerun after failures misses the cache
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        state = dict(state)
        state.pop("_hash_extras", None)
        state.pop("_failed_token", None)
        state.pop("_remembered", None)
        self.__dict__.update(state)
        self._selector = None
        self._stores = None
        self.summary = RunSummary()
        self._ledger_of_rows = Ledger(self.config.max_entity_repeats)
        self._remembered = ""
        self._memo = {}

    def remember(self, rows: Any) -> int:
        """Count rows accepted elsewhere in this augmenter's variety pass, as if it had accepted them itself: an earlier
        run's output, or the chunks of a run made in processes of their own. A later row near-copying one of them,
        or carrying a new entity of theirs that ``max_entity_repeats`` rows carry already, is then rejected.

        Args:
            rows: an augmented dataset (or a mapping of its columns) as this library writes it: its ``accepted``
                rows are entered, each against its seed, which must be among its ``original`` rows
                (``keep_originals``, the default); a later batch of the same seeds replaces them, as does the
                same seed's rows remembered again.

        Returns:
            How many rows were entered. They count in this process: a pickled copy (``num_proc`` workers) starts
            empty, as the pass itself does; the ``datasets`` fingerprint of a later ``map`` changes with them.

        Raises:
            InputError: a missing column, an accepted row whose seed is not among the originals, or an invalid row,
                named by its index in ``rows``.
        """
        columns = [self.tokens_column, self.tags_column, "rgda_status", "rgda_source"]
        if not isinstance(rows, Mapping) and all(c in rows.column_names for c in columns):
            rows = rows.select_columns(columns)  # not the traces
        cols = rows if isinstance(rows, Mapping) else rows[:]
        check_columns(list(cols), self.tokens_column, self.tags_column)
        for needed in ("rgda_status", "rgda_source"):
            if needed not in cols:
                raise InputError(f"rows without the {needed!r} column are no augmenter's output")
        table = list(zip(cols[self.tokens_column], cols[self.tags_column], cols["rgda_status"], cols["rgda_source"]))

        def iob2(i: int, tokens: Any, tags: Any) -> list[str]:
            try:
                return seed_tags(tokens, tags, self.label_names, self.types, self.scheme)
            except SchemaError as err:
                raise InputError(str(err), row=i) from None

        seeds = {source: Seed(source, tuple(t), tuple(iob2(i, t, g)))
                 for i, (t, g, status, source) in enumerate(table) if status == "original"}
        entered = []
        for i, (tokens, tags, status, source) in enumerate(table):
            if status != "accepted":
                continue
            if source not in seeds:
                raise InputError(f"an accepted row of seed {source!r}, which is not among the rows' originals (an "
                                 "augmenter with keep_originals=True writes them)", row=i)
            entered.append((source, list(tokens), iob2(i, tokens, tags)))
        for source in dict.fromkeys(source for source, _, _ in entered):  # a seed remembered again: its rows replaced
            self._ledger_of_rows.forget(source)
        for source, tokens, tags in entered:
            self._ledger_of_rows.add(source, Sentence(tokens, tags, seeds[source], None))  # type: ignore[arg-type]
        self._remembered = hashlib.sha256(json.dumps([self._remembered, entered]).encode()).hexdigest()[:16]
        return len(entered)

    def serve_from(self, cache: ResponseCache | None, ledger: FailureLedger) -> None:
        """Ask ``cache`` for answers and record failed seeds in ``ledger`` instead of the files the ``cache`` option
        names in this process: :mod:`hf_rgda.scale` has a cluster's workers do so, both being served from the
        driver's node. Live state: a pickled copy uses its files again."""
        self._stores = (cache, ledger)

    def checker(self, *, salvage: bool | None = None) -> Checker:
        """The deterministic quality floor this augmenter applies to every generated sentence (its split statistics,
        lexicon and tokenization), e.g. to see what it would say of sentences written by hand; ``salvage`` overrides
        the configuration's."""
        return Checker(tuple(self.types), self.stats or SplitStats(), self.config.near_copy_ratio,
                       salvage=self.config.salvage if salvage is None else salvage,
                       representation=self.config.representation, tokens=self.config.token_style,
                       likely_mention_quantile=self.config.likely_mention_quantile, tagger_gate=self.tagger_gate)

    def _identity(self) -> str:
        """What the failure ledger (:mod:`hf_rgda.failures`) keys this augmenter's failures on."""
        return identity({"config": self.config.to_dict(), "llm": self.llm.identity(),
                         "debate": [x.identity() for x in self.debate_llms], "labels": self.label_names,
                         "scheme": self.scheme, "columns": [self.tokens_column, self.tags_column],
                         "cache": self.cache_path, "descriptions": self.type_descriptions,
                         "confusers": self.confusers, "attribution": self.attribution_model,
                         **({"tagger_gate": getattr(self.tagger_gate, "digest", repr(self.tagger_gate))}
                            if self.tagger_gate is not None else {})})

    def _ledger(self) -> FailureLedger:
        """The failure ledger beside the response cache (the default cache's place with ``cache=False``)."""
        if self._stores is not None:
            return self._stores[1]
        path = default_cache_path() if self.cache_path in ("", "default") else Path(self.cache_path)
        return FailureLedger(ledger_folder(path))

    def _pipeline(self, *, cache: ResponseCache | None | bool = True, progress: bool | None = None) -> Pipeline:
        """The pipeline of a batch; ``cache`` True: this augmenter's response cache (else the one given, or None),
        ``progress`` None: ``datasets``' progress-bar setting."""
        checker = self.checker()
        if cache is True and self._stores is not None:  # a Ray worker's: the cluster's store (hf_rgda.scale)
            cache = self._stores[0]
        elif cache is True:
            cache = None if not self.cache_path else ResponseCache(None if self.cache_path == "default"
                                                                   else self.cache_path)
        if self.config.uses_attribution and self._selector is None:
            from .attribution import AttributionSelector

            self._selector = AttributionSelector(self.attribution_model, type_descriptions=self.type_descriptions,
                                                 top_n=self.config.attribution_top_n)
        return Pipeline(self.config, self.llm, checker, cache=cache, type_descriptions=self.type_descriptions,
                        confusers=self.confusers, attribution=self._selector,
                        debate_llms=self.debate_llms, mentions=self.stats.mentions if self.stats else None,
                        progress=_progress_bars() if progress is None else progress, ledger=self._ledger_of_rows,
                        memo=self._memo)

    # ---------------------------------------------------------------- input
    def _seeds(self, batch: Mapping[str, list[Any]], indices: Sequence[int] | None) -> list[Seed]:
        """The batch's rows as seeds.

        Raises:
            InputError: a column is missing or a row's tags are invalid; it names the dataset's row when ``map``
                passes the indices (``with_indices=True``), else the row of the batch.
            ConfigError: the batch is one row (``ds.map(aug)`` without ``batched=True``).
        """
        check_columns(list(batch), self.tokens_column, self.tags_column)
        check_batched(batch, self.tokens_column)
        seeds = []
        for k, (tokens, tags) in enumerate(zip(batch[self.tokens_column], batch[self.tags_column])):
            try:
                iob2 = seed_tags(tokens, tags, self.label_names, self.types, self.scheme)
            except SchemaError as err:
                msg = f"{err} (tokens: {' '.join(map(str, (tokens or [])[:12]))!r})"
                if indices is not None:
                    raise InputError(msg, row=indices[k]) from None
                raise InputError(f"{msg}; map with with_indices=True to have the dataset's row number here",
                                 row=f"{k} of this batch") from None
            seeds.append(Seed(seed_key(tokens, iob2), tuple(tokens), tuple(iob2)))
        return seeds

    # ---------------------------------------------------------------- output
    def _out_tags(self, iob2: Sequence[str], as_ids: bool) -> list[Any]:
        tags = convert_tags(iob2, "IOB2", self.scheme) if self.scheme != "IOB2" else list(iob2)
        missing = [t for t in tags if t not in self.label_names]
        if missing:  # e.g. BIOES output but the label set lacks S-/E- labels
            raise SchemaError(f"label set has no {missing[0]!r}")
        return [self.label_names.index(t) for t in tags] if as_ids else tags

    def _emit(self, batch: Mapping[str, list[Any]], results: list[SeedResult], traces: list[SeedTrace]) -> pa.Table:
        as_ids = any(isinstance(t, int) for tags in batch[self.tags_column] for t in tags)
        others = [c for c in batch if c not in (self.tokens_column, self.tags_column) and c not in META_COLUMNS]
        cols: dict[str, list[Any]] = {c: [] for c in [*others, self.tokens_column, self.tags_column, *META_COLUMNS]}

        def add(k: int, tokens: Sequence[str], tags: list[Any], status: str, reason: str, r: SeedResult, trace: str) -> None:
            for c in others:
                cols[c].append(batch[c][k])
            cols[self.tokens_column].append(list(tokens))
            cols[self.tags_column].append(tags)
            cols["rgda_status"].append(status)
            cols["rgda_method"].append(self.config.method)
            cols["rgda_source"].append(r.seed.key)
            cols["rgda_reason"].append(reason)
            for stage, key in JUDGE_KEYS.items():  # rgda_gr_scores, rgda_ac_scores (another judge's: in the trace)
                if f"rgda_{key}_scores" in cols:
                    cols[f"rgda_{key}_scores"].append([j.score for j in r.judgements.get(stage, [])])
            cols["rgda_trace"].append(trace)

        for k, (r, seed_trace) in enumerate(zip(results, traces)):
            trace = json.dumps(seed_trace.to_json(), ensure_ascii=False)
            if self.config.keep_originals:
                add(k, r.seed.tokens, batch[self.tags_column][k], "original", "", r, trace)
                trace = ""
            for c in r.accepted:
                add(k, c.tokens, self._out_tags(c.tags, as_ids), "accepted", "; ".join(c.salvaged), r, trace)
                trace = ""
            if self.config.keep_rejected:
                for stage, c in r.rejected:
                    add(k, [], [], "rejected", f"{stage}/{c.reason}", r, json.dumps({"raw": c.raw, "detail": c.detail}))
                if r.failure:
                    add(k, [], [], "failed", r.failure, r, trace)
        types = {self.tokens_column: pa.list_(pa.string()),
                 self.tags_column: pa.list_(pa.int64() if as_ids else pa.string()), **META_COLUMNS}
        arrays = {c: pa.array(v, type=types.get(c)) if c in types else _passthrough(v, batch[c]) for c, v in cols.items()}
        return pa.table(arrays)

    # ---------------------------------------------------------------- entry points
    async def acall(self, batch: Mapping[str, list[Any]], indices: Sequence[int] | None = None) -> pa.Table:
        """Async form of :meth:`__call__`, for ``ds.map(aug.acall, batched=True, with_indices=True)``."""
        seeds = self._seeds(batch, indices)
        if hasattr(self.tagger_gate, "ready"):  # loaded before any call is paid (a folder this worker cannot read)
            self.tagger_gate.ready()
        start = time.perf_counter()
        try:
            results = await self._pipeline().run(seeds)
        finally:
            await self.llm.aclose()
        self.summary.wall_seconds += time.perf_counter() - start
        self.summary.note_backend(self.llm)  # the option reading and any adapted request parameters (remote backends)
        traces = [SeedTrace.of(r, self.config.method) for r in results]
        for r, trace in zip(results, traces):
            self.summary.add(trace)
            if r.failure:
                log.warning("seed %s failed: %s", r.seed.key, r.failure)
        failed = [r.seed.key for r in results if r.failure]
        if failed:  # these rows must not be datasets' final answer: the next map's fingerprint differs
            self._ledger().record(self._identity(), failed)
        return self._emit(batch, results, traces)

    def __call__(self, batch: Mapping[str, list[Any]], indices: Sequence[int] | None = None) -> pa.Table:
        """Augment one batch (a dict of columns).

        Args:
            batch: the columns of the batch.
            indices: the rows' indices in the dataset (``ds.map(aug, batched=True, with_indices=True)`` passes
                them): an invalid row is then named by its dataset index.
        """
        return run_sync(self.acall(batch, indices))


def _progress_bars() -> bool:
    """Per-stage bars inside a batch follow datasets' own setting (``datasets.disable_progress_bars()``); a process
    that never imported ``datasets`` (a Ray worker of :mod:`hf_rgda.scale`, whose console is the driver's) shows
    none, and does not import it to ask."""
    if "datasets" not in sys.modules:
        return False
    try:
        from datasets.utils.tqdm import are_progress_bars_disabled
    except ImportError:  # pragma: no cover - older datasets
        return True
    return not are_progress_bars_disabled()


def _passthrough(values: list[Any], source: list[Any]) -> pa.Array:
    try:
        return pa.array(values, type=pa.array(source).type)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return pa.array(values)


def _tagger_gate(gate: Any, types: Sequence[str]) -> Any:
    """The ``tagger_gate`` argument: a folder is loaded as a :class:`~hf_rgda.TaggerGate`; a tagger of other entity
    types than the data's is refused (every sentence would miss its mentions)."""
    if gate is None:
        return None
    if isinstance(gate, (str, Path)):
        from .tagger_gate import TaggerGate

        gate = TaggerGate.load(gate)
    if not callable(getattr(gate, "predict", None)):
        raise ConfigError(f"tagger_gate={gate!r}: give a TaggerGate, its folder, or an object with predict(tokens)")
    labels = getattr(gate, "tagger_labels", None)
    if labels is not None and not set(entity_types(labels)) <= set(types):
        raise ConfigError(f"tagger_gate {gate!r} tags {sorted(entity_types(labels))}, the data's types are "
                          f"{sorted(types)}: train it on these seeds (TaggerGate.fit)")
    return gate
