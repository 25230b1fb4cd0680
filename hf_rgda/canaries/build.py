"""Canaries: tagged sentences built deterministically from labelled sentences, each ``good`` or carrying one known
defect (:mod:`.defects`), at the level of the judge that reads them.

- **entity** (the entity verifier): a sentence with one span under test, ``good`` (a gold mention with its gold
  type) or ``wrong_type``, ``ordinary_phrase``, ``name_like``, ``boundary_cut``, ``boundary_extended``.
- **row** (the AC judge, the debate reviewers, the checker): the entity classes applied to a whole row, plus
  ``mention_untagged``, ``seed_copy``, ``looped``, ``garbled``, ``truncated``, ``off_domain`` (a sentence of
  another dataset; only where several are built together), ``novel_untagged`` (a mention left untagged whose text the
  augmenter's source split nowhere holds, another mention kept tagged: what the split's lexicon cannot catch) and
  two classes of fluent nonsense with right tags: ``entity_swapped`` (a mention and another part of the sentence
  change places) and ``clauses_spliced`` (the opening of one sentence and the rest of another, joined at a shared
  word). Each row comes with the seed it was "written from": the nearest sentence before it that has an entity, or
  itself for ``seed_copy``.
- **guide** (the GR judge): a guide built from the sentence (:func:`~.defects.build_guide`) with one injected
  defect: ``guide_wrong_type``, ``guide_missing_entity``, ``guide_entity_not_in_sentence``, ``guide_empty_context``.

Per dataset and level, each defect class gets up to ``per_class`` canaries and ``good`` as many as all defect
classes together (fewer where too few sentences can serve). Each class draws its sentences in a shuffled order fixed
by ``seed``, the dataset, the level and the class, so adding a class changes no other class. :func:`cap` keeps a
balanced prefix of them.
"""

from __future__ import annotations

import bisect
import random
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from .._exceptions import ConfigError
from ..tags import detokenize, tags_to_spans
from .defects import BUILDERS, LEVELS, Context, Sentence, build_guide, fits, guide_defect

__all__ = ["Canary", "Gold", "build_canaries", "cap", "class_counts", "gold_from"]


@dataclass(frozen=True)
class Gold:
    """The labelled sentences canaries are built from.

    Attributes:
        name: the dataset's name.
        sentences: the calibration sentences (tokens, IOB2 tags) in file order.
        types: the dataset's entity types, sorted.
        mentions: lower-cased texts of every gold mention in every split: never used as a wrongly tagged span.
        source: where the sentences come from.
        domain: the data's domain (a guide's context).
        source_text: the augmenter's source split, the one its statistics are computed from (``train`` without the
            calibration sentences; none when they are the train split), lower-cased, one sentence a line with a space
            at each end: what ``novel_untagged`` canaries avoid.
    """

    name: str
    sentences: list[Sentence]
    types: tuple[str, ...]
    mentions: frozenset[str]
    source: str = "dev split"
    domain: str = ""
    source_text: str = field(default="", repr=False)


@dataclass(frozen=True)
class Canary:
    """One canary: a tagged sentence and its label.

    Attributes:
        id: ``dataset/level/label/k``.
        label: ``good`` or the defect class.
        tokens, tags: the sentence (IOB2; an entity canary's span may carry a confuser type).
        source: index of the gold sentence in :attr:`Gold.sentences` it was built from (-1: another dataset's).
        span: entity level: ``(start, end, type presented)`` of the span under test.
        seed_tokens, seed_tags: row level: the seed sentence shown with the row.
        guide: guide level: the guide under test (``tokens``/``tags`` are the sentence it abstracts).
    """

    id: str
    dataset: str
    level: str
    label: str
    tokens: tuple[str, ...]
    tags: tuple[str, ...]
    source: int
    span: tuple[int, int, str] | None = None
    seed_tokens: tuple[str, ...] = ()
    seed_tags: tuple[str, ...] = ()
    guide: dict[str, Any] | None = field(default=None, hash=False)

    @property
    def good(self) -> bool:
        """Whether the canary is correct (for an entity canary: whether its span under test is)."""
        return self.label == "good"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "good": self.good}


def gold_from(name: str, splits: Mapping[str, Sequence[Sentence]], *, split: str | None = None,
              holdout: float | None = None, seed: int = 0, domain: str = "") -> Gold:
    """The calibration sentences of a dataset given as ``{split: [(tokens, IOB2 tags), ...]}``.

    Args:
        split: the labelled split to build from (e.g. ``dev``).
        holdout: instead, this share of ``train``, drawn with ``seed`` (the rest stays for the statistics).
        domain: the data's domain; default: the name with spaces.

    Raises:
        ConfigError: the split is missing, the share is not in (0, 1), or the data has no entity.
    """
    if holdout is not None:
        if not 0 < holdout < 1 or "train" not in splits:
            raise ConfigError(f"holdout={holdout} needs a 'train' split and a share between 0 and 1; splits are "
                              f"{list(splits)}")
        train = list(splits["train"])
        k = max(1, round(holdout * len(train)))
        keep = sorted(random.Random(f"{seed}/{name}/dev").sample(range(len(train)), k))
        sentences = [train[i] for i in keep]
        source = (f"no dev split: {k} of {len(train)} train sentences ({holdout:.0%}, fixed seed {seed}) carved as "
                  "dev")
    elif split in splits:
        sentences, source = list(splits[split]), f"{split} split"
    else:
        raise ConfigError(f"split {split!r} not found; splits are {list(splits)} (or hold back part of train)")
    spans = [(t, s) for rows in splits.values() for t, g in rows for s in tags_to_spans(list(g), strict=False)]
    types = sorted({s.label for _, s in spans})
    if not types:
        raise ConfigError(f"{name}: no entity is tagged in any split; calibration needs labelled sentences")
    mentions = frozenset(detokenize(t[s.start : s.end]).lower() for t, s in spans)
    held = {tuple(t) for t, _ in sentences}
    train = [t for t, _ in splits.get("train", ()) if tuple(t) not in held]  # as calibration's statistics
    text = "".join(f" {' '.join(str(w) for w in t).lower()} \n" for t in train)
    return Gold(name, sentences, tuple(types), mentions, source, domain or name.replace("_", " "), text)


# ---------------------------------------------------------------- assembly
def build_canaries(golds: Sequence[Gold], per_class: int, seed: int = 0,
                   levels: Sequence[str] = tuple(LEVELS)) -> list[Canary]:
    """Every canary of every dataset and level, in a fixed order; the same inputs give the same canaries."""
    out: list[Canary] = []
    for gold in golds:
        others = [s for g in sorted(golds, key=lambda g: g.name) if g.name != gold.name for s in g.sentences]
        for level in levels:
            ctx = Context(gold.name, gold.types, gold.mentions, gold.sentences, level, others, gold.domain,
                          gold.source_text)
            defects = [c for label in LEVELS[level] for c in _draw(ctx, label, per_class, seed)]
            out += _draw(ctx, "good", len(defects), seed) + defects
    return out


def cap(canaries: Sequence[Canary], n: int) -> list[Canary]:
    """At most ``n`` of ``canaries``, balanced: round after round, the next canary of each defect class (the levels'
    first classes, then their second ones, ...) with one good canary of its level beside it; kept in their order."""
    queues: dict[tuple[str, str, str], list[Canary]] = {}
    for c in canaries:
        queues.setdefault((c.dataset, c.level, c.label), []).append(c)
    groups = list(dict.fromkeys(k[:2] for k in queues))  # (dataset, level), in order
    keys = [k for k in queues if k[2] != "good"]
    position = {k: [x for x in keys if x[:2] == k[:2]].index(k) for k in keys}
    keys.sort(key=lambda k: (position[k], groups.index(k[:2])))
    picked: list[Canary] = []
    while len(picked) < n and any(queues[k] for k in keys):
        for key in keys:
            if not queues[key] or len(picked) >= n:
                continue
            picked.append(queues[key].pop(0))
            goods = queues.get((*key[:2], "good"))
            if goods and len(picked) < n:
                picked.append(goods.pop(0))
    chosen = {id(c) for c in picked}
    return [c for c in canaries if id(c) in chosen]


def _draw(ctx: Context, label: str, n: int, seed: int) -> list[Canary]:
    """Up to ``n`` canaries of class ``label``, from distinct gold sentences in an order fixed by the class."""
    rng = random.Random(f"{seed}/{ctx.name}/{ctx.level}/{label}")
    order = list(range(len(ctx.sentences)))
    rng.shuffle(order)
    starts = [i for i, (_, tags) in enumerate(ctx.sentences) if any(t != "O" for t in tags)]
    out: list[Canary] = []
    for i in order:
        if len(out) >= n:
            break
        tokens, tags = ctx.sentences[i]
        if not fits(tokens) or (ctx.level == "guide" and not 0 < len(tags_to_spans(tags)) <= 10):
            continue
        made = _make(ctx, label, i, rng, starts)
        if made is not None:
            out.append(Canary(id=f"{ctx.name}/{ctx.level}/{label}/{len(out)}", dataset=ctx.name, level=ctx.level,
                              label=label, source=-1 if label == "off_domain" else i, **made))
    return out


def _make(ctx: Context, label: str, i: int, rng: random.Random, starts: list[int]) -> dict[str, Any] | None:
    tokens, tags = ctx.sentences[i]
    if ctx.level == "guide":
        guide = build_guide(tokens, tags, ctx.domain)
        guide = guide if label == "good" else guide_defect(ctx, label, guide, tokens, rng)
        return None if guide is None else {"tokens": tokens, "tags": tags, "guide": guide}
    built = BUILDERS[label](ctx, tokens, tags, rng)
    if built is None or not fits(built[0]):
        return None
    new_tokens, new_tags, span = tuple(built[0]), tuple(built[1]), built[2]
    if ctx.level == "entity":
        return {"tokens": new_tokens, "tags": new_tags, "span": tuple(span)} if span is not None else None
    seed = i if label == "seed_copy" else _neighbour(ctx.sentences, i, starts)
    if seed is None or (span is not None and label == "novel_untagged" and _mentions(ctx.sentences[seed], span, tokens)):
        return None  # a mention the seed tags is no novel one (the checker's untagged_mention reads the seed)
    return {"tokens": new_tokens, "tags": new_tags, "seed_tokens": ctx.sentences[seed][0],
            "seed_tags": ctx.sentences[seed][1]}


def _mentions(seed: Sentence, span: Any, tokens: Sequence[str]) -> bool:
    """Whether ``seed`` tags the text of ``span`` in ``tokens`` (lower-cased)."""
    text = [t.lower() for t in tokens[span.start : span.end]]
    return any([t.lower() for t in seed[0][s.start : s.end]] == text for s in tags_to_spans(list(seed[1])))


def class_counts(canaries: Sequence[Canary]) -> dict[str, dict[str, int]]:
    """``{level: {label: count}}`` in the canaries' order."""
    out: dict[str, dict[str, int]] = {}
    for c in canaries:
        level = out.setdefault(c.level, {})
        level[c.label] = level.get(c.label, 0) + 1
    return out


def _neighbour(sentences: Sequence[Sentence], i: int, starts: list[int]) -> int | None:
    """The nearest sentence before ``i`` (else after it) that has an entity and other tokens."""
    k = bisect.bisect_left(starts, i)
    for j in [*reversed(starts[:k]), *starts[k:]]:
        if j != i and sentences[j][0] != sentences[i][0] and fits(sentences[j][0]):
            return j
    return None
