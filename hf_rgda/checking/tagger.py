"""The split's own mention tagger: a small logistic model, trained on the split's tags, that reads each word of a
sentence as inside a mention or not. The checker's ``likely_mention`` rule asks it about the words a row leaves
untagged: a mention new to the split (which ``known_mention`` and ``untagged_mention`` cannot know) still looks like
the split's mentions in its spelling and its neighbours ("... the [task] of entity summarization", "a rare
autosomal disorder, Wolman disease").

The model is a logistic regression over hashed word features (the word, its prefix and suffixes, its shape, the two
words on each side), trained on every token of the split with an L2 penalty; numpy only, deterministic (fixed
feature hashing, full-batch steps from zeros), so the same split gives the same bytes (on one numpy build) and the
datasets fingerprint of an augmenter holding it is stable. Measured against the completeness check's canaries (a mention left untagged,
also one the split nowhere holds): ``docs/decisions/split-tagger.md``.

Example:
    >>> rows = [["Wolman", "disease", "is", "rare", "."], ["We", "treated", "gout", "today", "."]] * 25
    >>> tags = [["B-Disease", "I-Disease", "O", "O", "O"], ["O", "O", "B-Disease", "O", "O"]] * 25
    >>> tagger = MentionTagger.fit(rows, tags)
    >>> word, p = tagger.most_likely(["We", "treated", "gout", "today", "."], ["O"] * 5)
    >>> word, p > 0.5
    (2, True)
"""

from __future__ import annotations

import math
import random
import zlib
from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any

import numpy as np

from ..tags import Span, tags_to_spans
from ..words import FUNCTION_WORDS

__all__ = ["MentionTagger"]

#: feature hashing: 2**BITS weights (float32: 1 MiB); WIDTH features a word (:func:`features`)
BITS, WIDTH = 18, 17
#: full-batch Adam steps, step size and L2 penalty (per token: a penalty of 1/N is scikit-learn's C=1); 50 steps
#: of 0.3 read the canaries as 150 of 0.1 did (docs/decisions/split-tagger.md)
STEPS, RATE, PENALTY = 50, 0.3, 1.0
#: a split with fewer sentences or tagged words than these trains no tagger (the rule then says nothing): its
#: reference, percentiles of its own sentences, would say little
MIN_SENTENCES, MIN_TAGGED = 50, 20
#: the reference: the split's own sentences scored out of fold (two halves, each read by a tagger of the other),
#: kept as the 0th..100th percentiles of their :meth:`MentionTagger.most_likely` probabilities
FOLDS = 2
#: the rows whose probabilities a tagger remembers (:meth:`MentionTagger.most_likely`; emptied when full)
_ROWS = 4096


def _shape(word: str) -> str:
    """The word's character classes, runs collapsed, at most 6: "BRCA1" -> "Xd", "Wolman" -> "Xx", "t-test" -> "x-x"."""
    out: list[str] = []
    for c in word:
        k = "X" if c.isupper() else "x" if c.islower() else "d" if c.isdigit() else c
        if not out or out[-1] != k:
            out.append(k)
    return "".join(out)[:6]


def features(tokens: Sequence[str], i: int) -> list[str]:
    """The names of word ``i``'s features (each present once, with value 1)."""
    w = tokens[i]
    lw = w.lower()

    def at(j: int) -> str:
        return tokens[j].lower() if 0 <= j < len(tokens) else "<s>"

    def shape_at(j: int) -> str:
        return _shape(tokens[j]) if 0 <= j < len(tokens) else "<s>"

    return ["bias", "w=" + lw, "s3=" + lw[-3:], "s2=" + lw[-2:], "p3=" + lw[:3], "sh=" + _shape(w),
            f"first={i == 0}", f"len={min(len(w), 12)}", f"fw={lw in FUNCTION_WORDS}",
            "w-2=" + at(i - 2), "w-1=" + at(i - 1), "w+1=" + at(i + 1), "w+2=" + at(i + 2),
            "sh-1=" + shape_at(i - 1), "sh+1=" + shape_at(i + 1), "s3-1=" + at(i - 1)[-3:], "s3+1=" + at(i + 1)[-3:]]


def _h(name: str) -> int:
    return zlib.crc32(name.encode()) & ((1 << BITS) - 1)


_BIAS = _h("bias")
_FIRST = (_h("first=False"), _h("first=True"))


def _hashed(tokens: Sequence[str]) -> np.ndarray:
    """The sentence's feature indices, one row a word, in :func:`features`' order (stable across processes: CRC-32,
    not ``hash``); each word's hashes are computed once (:func:`_word`) and shared by the words around it."""
    n = len(tokens)
    words = [_word(None), _word(None), *(_word(t) for t in tokens), _word(None), _word(None)]
    rows = []
    for i in range(n):
        own, m2, m1, p1, p2 = words[i + 2][0], words[i][1], words[i + 1][2], words[i + 3][3], words[i + 4][4]
        rows.append((_BIAS, *own[:5], _FIRST[i == 0], own[5], own[6], m2[0], m1[0], p1[0], p2[0], m1[1], p1[1],
                     m1[2], p1[2]))
    return np.array(rows, dtype=np.int64).reshape(n, WIDTH)


@lru_cache(maxsize=1 << 14)
def _word(word: str | None) -> tuple[tuple[int, ...], ...]:
    """A word's feature hashes (None: the padding beyond the sentence): its own (w, s3, s2, p3, sh, len, fw; none for
    the padding), and those it gives the word 2 after it, 1 after it, 1 before it and 2 before it."""
    if word is None:
        low = shape = "<s>"
        own: tuple[int, ...] = ()
    else:
        low, shape = word.lower(), _shape(word)
        own = (_h("w=" + low), _h("s3=" + low[-3:]), _h("s2=" + low[-2:]), _h("p3=" + low[:3]), _h("sh=" + shape),
               _h(f"len={min(len(word), 12)}"), _h(f"fw={low in FUNCTION_WORDS}"))
    return (own, (_h("w-2=" + low),), (_h("w-1=" + low), _h("sh-1=" + shape), _h("s3-1=" + low[-3:])),
            (_h("w+1=" + low), _h("sh+1=" + shape), _h("s3+1=" + low[-3:])), (_h("w+2=" + low),))


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * z))  # no overflow warning for large |z|


@lru_cache(maxsize=1 << 14)
def _candidate(word: str) -> bool:
    """A word the rule asks about: with a letter or digit, not a function word."""
    return any(c.isalnum() for c in word) and word.lower() not in FUNCTION_WORDS


def _asked(tokens: Sequence[str], tags: Sequence[str], skip: Container[str] = frozenset(),
           spans: Sequence[Span] | None = None) -> list[int]:
    """The words a row's reading asks about: untagged content words (:func:`_candidate`) not in ``skip``; ``spans``:
    the row's entities where the caller has them decoded."""
    spans = tags_to_spans(list(tags), strict=False) if spans is None else spans
    tagged = {i for s in spans for i in range(s.start, s.end)}
    return [i for i, t in enumerate(tokens) if i not in tagged and _candidate(t) and (not skip or t.lower() not in skip)]


@dataclass(frozen=True)
class MentionTagger:
    """A trained tagger: its weights (float32 bytes, 2**BITS of them), how many words it was trained on, and its
    reference (the percentiles of the split's own sentences' scores, read out of fold; see :data:`FOLDS`).

    Build it with :meth:`fit`; :meth:`probabilities` reads a sentence, :meth:`most_likely` the untagged word of a row
    most likely inside a mention, :meth:`cutoff` the probability only a given share of the split's sentences reach.
    """

    weights: bytes
    trained_on: int
    reference: tuple[float, ...] = ()

    @classmethod
    def fit(cls, token_rows: Sequence[Sequence[str]], iob2_rows: Sequence[Sequence[str]]) -> MentionTagger | None:
        """Train on a split (IOB2 tags, any types: a word is inside a mention or not) and read the split's own
        sentences out of fold for the reference; None where the split has fewer than :data:`MIN_SENTENCES`
        sentences, tags fewer than :data:`MIN_TAGGED` words or tags every word."""
        if len(token_rows) != len(iob2_rows):
            raise ValueError(f"the split has {len(token_rows)} token rows but {len(iob2_rows)} tag rows")
        rows = []
        for i, (t, g) in enumerate(zip(token_rows, iob2_rows)):
            if len(t) != len(g):
                raise ValueError(f"row {i}: {len(t)} tokens but {len(g)} tags")
            if len(t):
                rows.append((list(t), list(g)))
        tagged = sum(x != "O" for _, g in rows for x in g)
        if len(rows) < MIN_SENTENCES or tagged < MIN_TAGGED or tagged == sum(len(g) for _, g in rows):
            return None
        hashed = [_hashed(t) for t, _ in rows]  # each sentence's features hashed once, for every fit below
        inside = [np.array([x != "O" for x in g]) for _, g in rows]
        asked = [_asked(t, g) for t, g in rows]
        order = list(range(len(rows)))
        random.Random(0).shuffle(order)
        scores: list[float] = []
        for fold in range(FOLDS):
            held = [i for k, i in enumerate(order) if k % FOLDS == fold]
            train = [i for k, i in enumerate(order) if k % FOLDS != fold]
            model = cls(_train([hashed[i] for i in train], [inside[i] for i in train]), 0)
            # a sentence with no word to ask about is none the rule would read: not in the reference
            scores += [max(model._probabilities(rows[i][0], asked[i])) for i in held if asked[i]]
        _word.cache_clear()  # the split's words: not kept for the rows read later
        scores.sort()
        reference = tuple(round(scores[round(q / 100 * (len(scores) - 1))], 4) for q in range(101)) if scores else ()
        return cls(_train(hashed, inside), sum(len(t) for t, _ in rows), reference)

    @classmethod
    def from_weights(cls, weights: Mapping[str, float], reference: Sequence[float] = ()) -> MentionTagger:
        """A tagger with the given feature weights (names as :func:`features` writes them; the rest 0), for
        examples and tests."""
        w = np.zeros(1 << BITS, dtype=np.float32)
        for name, value in weights.items():
            w[zlib.crc32(name.encode()) & ((1 << BITS) - 1)] += value
        return cls(w.tobytes(), 0, tuple(reference))

    def cutoff(self, share: float) -> float:
        """The probability above which a row reads more like it leaves a mention untagged than all but ``share`` of
        the split's own sentences (the reference's (1 - share) quantile, in whole percent); 1.0 without a reference.
        The share is nominal: of other sentences than the split's (the calibration's dev sentences), 2-19% read above
        the 10% cutoff; four folds instead of two move it by under 0.001 (docs/decisions/split-tagger.md)."""
        if not self.reference:
            return 1.0
        return self.reference[min(100, max(0, round((1 - share) * 100)))]

    @cached_property
    def _w(self) -> np.ndarray:
        return np.frombuffer(self.weights, dtype=np.float32)

    def __getstate__(self) -> dict[str, Any]:
        return {"weights": self.weights, "trained_on": self.trained_on,  # the derived values are rebuilt on demand
                "reference": self.reference}

    def __setstate__(self, state: dict[str, Any]) -> None:
        for k, v in state.items():
            object.__setattr__(self, k, v)

    def __repr__(self) -> str:
        return f"MentionTagger(trained_on={self.trained_on}, cutoff(0.1)={self.cutoff(0.1)})"

    def probabilities(self, tokens: Sequence[str]) -> np.ndarray:
        """Each word's probability of standing inside a mention."""
        return np.array(self._probabilities(tokens, range(len(tokens))), dtype=np.float64)

    def most_likely(self, tokens: Sequence[str], tags: Sequence[str], skip: Container[str] = frozenset(),
                    spans: Sequence[Span] | None = None) -> tuple[int, float] | None:
        """The untagged content word (:func:`_candidate`) most likely inside a mention, and its probability; None
        where the row has none. Words in ``skip`` (lower-cased) are not asked about; ``spans``: the row's entities,
        where the caller has them decoded (else read from ``tags``)."""
        asked = _asked(tokens, tags, skip, spans)
        if not asked:
            return None
        p = self._row(tuple(tokens))
        k = max(asked, key=p.__getitem__)
        return k, p[k]

    def _row(self, tokens: tuple[str, ...]) -> list[float]:
        """Every word's probability (:meth:`_probabilities`), remembered (up to :data:`_ROWS` rows, then emptied): a
        run reads one row again after a repair, and the same row written for another seed."""
        got = self._rows.get(tokens)
        if got is None:
            if len(self._rows) >= _ROWS:
                self._rows.clear()
            got = self._rows[tokens] = self._probabilities(tokens, range(len(tokens)))
        return got

    def _probabilities(self, tokens: Sequence[str], at: Sequence[int]) -> list[float]:
        """The probabilities of the words at ``at``. The model is linear: a word's score is the sum of what each word
        around it gives (:func:`_word`'s five groups), each word's sums computed once per tagger."""
        get = self._part_cache.get
        parts = [get(t) or self._parts(t) for t in tokens]
        pad, bias, n = self._parts(None), self._fixed, len(tokens)
        out = []
        for i in at:
            z = (bias[i == 0] + parts[i][0] + (parts[i - 2] if i >= 2 else pad)[1] + (parts[i - 1] if i >= 1 else pad)[2]
                 + (parts[i + 1] if i + 1 < n else pad)[3] + (parts[i + 2] if i + 2 < n else pad)[4])
            out.append(0.5 * (1.0 + math.tanh(0.5 * z)))
        return out

    @cached_property
    def _fixed(self) -> tuple[float, float]:
        """The bias plus ``first=False`` and plus ``first=True``."""
        w = self._w
        return float(w[_BIAS]) + float(w[_FIRST[0]]), float(w[_BIAS]) + float(w[_FIRST[1]])

    @cached_property
    def _part_cache(self) -> dict[str | None, tuple[float, ...]]:
        return {}

    @cached_property
    def _rows(self) -> dict[tuple[str, ...], list[float]]:
        return {}

    def _parts(self, word: str | None) -> tuple[float, ...]:
        """What ``word`` gives the words around it and itself (:func:`_word`'s five groups, each summed)."""
        got = self._part_cache.get(word)
        if got is None:
            w = self._w
            got = self._part_cache[word] = tuple(sum(float(w[j]) for j in group) for group in _word(word))
        return got


def _train(hashed: Sequence[np.ndarray], inside: Sequence[np.ndarray]) -> bytes:
    """The weights of a logistic regression on the words (their hashed features; inside a mention or not): full-batch
    Adam on the mean log-loss plus PENALTY/(2n) |w|^2, from zeros (deterministic), over the features the words use
    (numbered compactly), written back to the 2**BITS hashed slots."""
    used, x = np.unique(np.concatenate(hashed), return_inverse=True)
    x = x.reshape(-1, hashed[0].shape[1])
    y = np.concatenate(inside).astype(np.float64)
    n, dim, flat = len(y), len(used), x.ravel()
    w, m, v = np.zeros(dim), np.zeros(dim), np.zeros(dim)
    for step in range(1, STEPS + 1):
        err = _sigmoid(w[x].sum(axis=1)) - y
        grad = np.bincount(flat, weights=np.repeat(err, x.shape[1]), minlength=dim) / n + PENALTY / n * w
        m = 0.9 * m + 0.1 * grad
        v = 0.999 * v + 0.001 * grad * grad
        w -= RATE * (m / (1 - 0.9 ** step)) / (np.sqrt(v / (1 - 0.999 ** step)) + 1e-8)
    out = np.zeros(1 << BITS, dtype=np.float32)
    out[used] = w
    return out.tobytes()
