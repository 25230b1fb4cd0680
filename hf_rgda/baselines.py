"""Rule-based baselines: EDA and mention replacement (MR), with tags kept aligned.

Both are ``datasets.map`` callables (``batched=True``) returning the seed rows (``rgda_status="original"``) and
their augmented rows (``"accepted"``), with the same ``tokens``/``ner_tags`` columns and ``rgda_source`` keys as
:class:`~hf_rgda.RGDAAugmenter`, so every method feeds the same training code.

- **EDA** (Wei & Zou, 2019) on non-entity tokens only: synonym replacement from WordNet, random insertion of a
  synonym, random swap, random deletion. Entity tokens are never edited, moved or deleted. WordNet is read from
  the database files of Debian's ``wordnet-base`` package (``/usr/share/wordnet``) or ``$WNHOME``/``$WORDNET_DIR``.
- **MR**: every entity is replaced by another mention of the same type drawn from the seeds' own inventory.

Example:
    >>> mr = MentionReplacement({"Disease": [["gout"], ["lung", "cancer"]]}, num_augmented=1, seed=0)
    >>> out = mr({"tokens": [["Gout", "hurts", "."]], "ner_tags": [["B-Disease", "O", "O"]]})
    >>> out["tokens"][1]
    ['lung', 'cancer', 'hurts', '.']
"""

from __future__ import annotations

import abc
import os
import random
from collections import defaultdict
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from ._exceptions import ConfigError
from ._source import hash_extras
from .checking import entity_inventory
from .records import seed_key
from .tags import Span, spans_to_tags, tag_name, tags_to_spans
from .words import STOP_WORDS

__all__ = ["EDA", "MentionReplacement", "WordNet", "mention_inventory"]



class WordNet:
    """Synonym look-up over WordNet's database files (``index.*`` and ``data.*``), without NLTK."""

    POS = ("noun", "verb", "adj", "adv")

    def __init__(self, folder: str | os.PathLike[str] | None = None) -> None:
        found = folder or os.environ.get("WNHOME") or os.environ.get("WORDNET_DIR") or "/usr/share/wordnet"
        self.folder = Path(found)
        if not (self.folder / "index.noun").is_file():
            raise ConfigError(f"WordNet database not found in {self.folder}: install Debian's wordnet-base "
                              "(apt-get install wordnet-base) or set $WNHOME to a folder with index.noun, data.noun, ...")
        self._index: dict[str, dict[str, list[int]]] = {p: self._read_index(p) for p in self.POS}

    def _read_index(self, pos: str) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        with open(self.folder / f"index.{pos}", encoding="latin-1") as fh:
            for line in fh:
                if line.startswith(" "):
                    continue
                f = line.split()
                n_synsets, n_ptrs = int(f[2]), int(f[3])
                out[f[0]] = [int(x) for x in f[6 + n_ptrs : 6 + n_ptrs + n_synsets]]
        return out

    def _lemmas(self, pos: str, offset: int) -> list[str]:
        with open(self.folder / f"data.{pos}", "rb") as fh:
            fh.seek(offset)
            f = fh.readline().decode("latin-1").split()
        count = int(f[3], 16)
        return [f[4 + 2 * i].split("(")[0] for i in range(count)]

    def synonyms(self, word: str) -> list[str]:
        """Single-word synonyms of ``word`` across parts of speech, most frequent senses first, without the word."""
        key, seen, out = word.lower(), {word.lower()}, []
        for pos in self.POS:
            for offset in self._index[pos].get(key, [])[:3]:
                for lemma in self._lemmas(pos, offset):
                    syn = lemma.replace("_", " ")
                    if " " not in syn and syn.lower() not in seen:
                        seen.add(syn.lower())
                        out.append(syn)
        return out


@cache
def _wordnet(folder: str | None) -> WordNet:
    return WordNet(folder)


class _Baseline(abc.ABC):
    method = ""

    def __init__(self, *, num_augmented: int = 3, seed: int = 0, tokens_column: str = "tokens",
                 tags_column: str = "ner_tags", label_names: Sequence[str] | None = None,
                 keep_originals: bool = True) -> None:
        if num_augmented < 1:
            raise ConfigError(f"num_augmented={num_augmented} must be at least 1")
        self.num_augmented, self.seed = num_augmented, seed
        self.tokens_column, self.tags_column = tokens_column, tags_column
        self.label_names = list(label_names) if label_names else None
        self.keep_originals = keep_originals

    def __getstate__(self) -> dict[str, Any]:
        # hashed by datasets with the package's code: an edited baseline never reuses the old one's cached rows
        return {**self.__dict__, "_hash_extras": hash_extras()}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update({k: v for k, v in state.items() if k != "_hash_extras"})

    @abc.abstractmethod
    def _variants(self, tokens: list[str], tags: list[str], rng: random.Random) -> list[tuple[list[str], list[str]]]:
        """The augmented (tokens, tags) pairs of one seed row."""

    def __call__(self, batch: Mapping[str, list[Any]], indices: Sequence[int] | None = None) -> dict[str, list[Any]]:
        """Augment one batch; ``indices`` (``with_indices=True``) is accepted as by every augmenter, and unused."""
        out: dict[str, list[Any]] = defaultdict(list)
        others = [c for c in batch if c not in (self.tokens_column, self.tags_column)]
        for k, (tokens, raw_tags) in enumerate(zip(batch[self.tokens_column], batch[self.tags_column])):
            ids = bool(raw_tags) and not isinstance(raw_tags[0], str)
            if ids and not self.label_names:
                raise ConfigError("tags are ids: pass label_names")
            tags = [tag_name(t, self.label_names) for t in raw_tags] if ids else list(raw_tags)
            key = seed_key(tokens, tags)
            rng = random.Random(f"{self.seed}:{key}")  # per row, independent of batching and num_proc
            rows = [(list(tokens), tags, "original")] if self.keep_originals else []
            rows += [(t, g, "accepted") for t, g in self._variants(list(tokens), tags, rng)]
            for toks, tgs, status in rows:
                for c in others:
                    out[c].append(batch[c][k])
                out[self.tokens_column].append(toks)
                out[self.tags_column].append([self.label_names.index(t) for t in tgs] if ids else tgs)
                out["rgda_status"].append(status)
                out["rgda_method"].append(self.method)
                out["rgda_source"].append(key)
        return dict(out)


class EDA(_Baseline):
    """EDA on non-entity tokens (Wei & Zou, 2019), one operation per variant, cycling through the four.

    Args:
        alpha: share of the sentence's tokens changed by one operation (at least one).
        wordnet: a WordNet database folder (default: Debian's location or ``$WNHOME``).
        **kw: ``num_augmented``, ``seed``, column names, ``label_names``, ``keep_originals``.
    """

    method = "eda"
    OPS = ("synonym_replacement", "random_insertion", "random_swap", "random_deletion")

    def __init__(self, *, alpha: float = 0.1, wordnet: str | None = None, **kw: Any) -> None:
        super().__init__(**kw)
        if not 0 < alpha <= 1:
            raise ConfigError(f"alpha={alpha} must be in (0, 1]")
        self.alpha, self.wordnet = alpha, wordnet
        _wordnet(wordnet)  # fail early with the install hint

    def _variants(self, tokens: list[str], tags: list[str], rng: random.Random) -> list[tuple[list[str], list[str]]]:
        out, seen = [], {tuple(tokens)}
        for i in range(self.num_augmented * 3):  # a few extra tries for sentences where an op changes nothing
            if len(out) == self.num_augmented:
                break
            op = self.OPS[i % len(self.OPS)]
            toks, tgs = getattr(self, "_" + op)(list(tokens), list(tags), rng)
            if tuple(toks) not in seen:
                seen.add(tuple(toks))
                out.append((toks, tgs))
        return out

    def _n(self, tokens: Sequence[str]) -> int:
        return max(1, round(self.alpha * len(tokens)))

    @staticmethod
    def _free(tokens: Sequence[str], tags: Sequence[str]) -> list[int]:
        return [i for i, (t, g) in enumerate(zip(tokens, tags)) if g == "O" and t.isalpha() and t.lower() not in STOP_WORDS]

    def _synonym_replacement(self, tokens: list[str], tags: list[str], rng: random.Random) -> tuple[list[str], list[str]]:
        wn, free = _wordnet(self.wordnet), self._free(tokens, tags)
        rng.shuffle(free)
        done = 0
        for i in free:
            syns = wn.synonyms(tokens[i])
            if syns:
                tokens[i] = rng.choice(syns[:5])
                done += 1
                if done == self._n(tokens):
                    break
        return tokens, tags

    def _random_insertion(self, tokens: list[str], tags: list[str], rng: random.Random) -> tuple[list[str], list[str]]:
        wn = _wordnet(self.wordnet)
        for _ in range(self._n(tokens)):
            free = self._free(tokens, tags)
            syns = [s for i in rng.sample(free, min(5, len(free))) for s in wn.synonyms(tokens[i])[:3]]
            if not syns:
                break
            # insert only at a boundary that does not split an entity (the next tag is not I-)
            slots = [p for p in range(len(tokens) + 1) if p == len(tokens) or not tags[p].startswith("I-")]
            p = rng.choice(slots)
            tokens.insert(p, rng.choice(syns))
            tags.insert(p, "O")
        return tokens, tags

    def _random_swap(self, tokens: list[str], tags: list[str], rng: random.Random) -> tuple[list[str], list[str]]:
        free = [i for i, g in enumerate(tags) if g == "O"]
        for _ in range(self._n(tokens)):
            if len(free) < 2:
                break
            a, b = rng.sample(free, 2)
            tokens[a], tokens[b] = tokens[b], tokens[a]
        return tokens, tags

    def _random_deletion(self, tokens: list[str], tags: list[str], rng: random.Random) -> tuple[list[str], list[str]]:
        drop = {i for i, g in enumerate(tags) if g == "O" and rng.random() < self.alpha}
        if len(drop) >= len(tokens) - 1:
            return tokens, tags
        keep = [i for i in range(len(tokens)) if i not in drop]
        return [tokens[i] for i in keep], [tags[i] for i in keep]


def mention_inventory(token_rows: Sequence[Sequence[str]],
                      tag_rows: Sequence[Sequence[str]]) -> dict[str, list[list[str]]]:
    """Distinct entity mentions per type (as token lists) over a split, in first-seen order (the split's
    :func:`~hf_rgda.checking.entity_inventory`)."""
    return {label: [list(m) for m in mentions] for label, mentions in entity_inventory(token_rows, tag_rows).items()}


class MentionReplacement(_Baseline):
    """Each variant replaces every entity by another mention of the same type from ``inventory``.

    Args:
        inventory: ``{type: [mention tokens, ...]}``, e.g. :func:`mention_inventory` over the seeds.
        **kw: ``num_augmented``, ``seed``, column names, ``label_names``, ``keep_originals``.
    """

    method = "mr"

    def __init__(self, inventory: Mapping[str, Sequence[Sequence[str]]], **kw: Any) -> None:
        super().__init__(**kw)
        self.inventory = {t: [list(m) for m in ms] for t, ms in inventory.items()}

    def _variants(self, tokens: list[str], tags: list[str], rng: random.Random) -> list[tuple[list[str], list[str]]]:
        spans = tags_to_spans(tags, strict=False)
        if not spans:
            return []
        out, seen = [], {tuple(tokens)}
        for _ in range(self.num_augmented * 3):
            if len(out) == self.num_augmented:
                break
            new_tokens: list[str] = []
            new_spans = []
            pos = 0
            for s in spans:
                new_tokens += tokens[pos : s.start]
                choices = [m for m in self.inventory.get(s.label, []) if m != tokens[s.start : s.end]]
                mention = rng.choice(choices) if choices else tokens[s.start : s.end]
                new_spans.append((len(new_tokens), len(new_tokens) + len(mention), s.label))
                new_tokens += mention
                pos = s.end
            new_tokens += tokens[pos:]
            if tuple(new_tokens) not in seen:
                seen.add(tuple(new_tokens))
                out.append((new_tokens, spans_to_tags([Span(a, b, t) for a, b, t in new_spans], len(new_tokens))))
        return out
