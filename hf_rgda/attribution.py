"""WHERE (BioRDA): leave-one-out word attribution with Captum, to choose which words of a seed to replace.

A token-classification model scores every word by leave-one-out: Captum ``FeatureAblation`` with one feature group
per word (its sub-words grouped by ``word_ids``), the ``[MASK]`` id as baseline with special tokens kept, and all
ablations of a sentence batched into one forward pass (``perturbations_per_eval``). Two maps:

- **entity map**: how much masking the word lowers the model's log-probability of the sentence's entity tags
  (context words the entity decision leans on);
- **description map**: how much masking the word lowers the cosine similarity between the sentence's pooled
  encoding and the encoding of its entity types' descriptions (words that carry the type's meaning).

The words high in both (each map min-max scaled over candidate words, combined by the minimum) are the positions
worth replacing. Entity words, punctuation and function words are never chosen.

Example:
    >>> # selector = AttributionSelector("models/ncbi-minilm", type_descriptions={"Disease": "an illness"})
    >>> # result = selector.attribute(tokens, tags); result.selected
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ._exceptions import ConfigError, InputError
from .tags import tags_to_spans
from .words import FUNCTION_WORDS

__all__ = ["AttributionSelector", "WordAttribution", "fit_seed_model"]


@dataclass(frozen=True)
class WordAttribution:
    """Per-word leave-one-out scores of one sentence and the chosen replacement positions."""

    tokens: list[str]
    entity_map: list[float]
    description_map: list[float]
    combined: list[float]
    selected: list[int]
    protected: list[int] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"tokens": self.tokens, "entity_map": self.entity_map, "description_map": self.description_map,
                "combined": self.combined, "selected": self.selected, "protected": self.protected}


class AttributionSelector:
    """Leave-one-out attribution over a token-classification model.

    Args:
        model: a folder or Hub id of a token-classification model (e.g. trained by :func:`hf_rgda.train.train_ner`
            on the seeds), or a loaded ``PreTrainedModel``.
        tokenizer: its tokenizer (loaded from ``model`` when a name is given).
        type_descriptions: ``{type: description}`` for the description map (default: the type names).
        top_n: positions to select per sentence.
        batched: all ablations of a sentence in one forward (False: one ablation per forward, for comparison).
    """

    def __init__(self, model: Any, tokenizer: Any = None, *, type_descriptions: Mapping[str, str] | None = None,
                 top_n: int = 2, batched: bool = True, max_length: int = 256) -> None:
        try:
            import torch  # noqa: F401
            from captum.attr import FeatureAblation  # noqa: F401
        except ImportError as err:
            raise ImportError("attribution needs captum and torch: pip install 'hf_rgda[attribution]'") from err
        from transformers import AutoModelForTokenClassification, AutoTokenizer

        if isinstance(model, str):
            from .provision import resolve_model

            path = resolve_model(model)
            model = AutoModelForTokenClassification.from_pretrained(path)
            tokenizer = tokenizer or AutoTokenizer.from_pretrained(path)
        if tokenizer is None:
            raise ConfigError("give the tokenizer with a loaded model")
        if tokenizer.mask_token_id is None:
            raise ConfigError("the tokenizer has no [MASK] token for the ablation baseline")
        if top_n < 1:
            raise ConfigError(f"top_n={top_n} must be at least 1")
        self.model, self.tokenizer = model.eval(), tokenizer
        self.label2id = {v: int(k) for k, v in model.config.id2label.items()}
        self.type_descriptions = dict(type_descriptions or {})
        self.top_n, self.batched, self.max_length = top_n, batched, max_length
        self._desc_cache: dict[tuple[str, ...], Any] = {}

    # ---------------------------------------------------------------- forward functions (one scalar per example)
    def _hidden_and_logits(self, ids: Any, mask: Any) -> tuple[Any, Any]:
        out = self.model(input_ids=ids, attention_mask=mask, output_hidden_states=True)
        return out.hidden_states[-1], out.logits

    def _scores(self, ids: Any, mask: Any, positions: Sequence[int], labels: Any, target: Any) -> Any:
        """Both maps' quantities from one forward pass: (batch, 2) = [entity log-prob, description similarity]."""
        import torch

        hidden, logits = self._hidden_and_logits(ids, mask)
        if positions:
            logp = torch.log_softmax(logits, dim=-1)[:, list(positions), :]  # (batch, entity words, labels)
            ent = logp.gather(-1, labels.expand(logp.shape[0], -1).unsqueeze(-1)).squeeze(-1).sum(-1)
        else:
            ent = torch.zeros(ids.shape[0])
        keep = (ids != self.tokenizer.mask_token_id) & mask.bool()  # masked words do not count in the pooled vector
        pooled = (hidden * keep.unsqueeze(-1)).sum(1) / keep.sum(1, keepdim=True).clamp(min=1)
        desc = torch.nn.functional.cosine_similarity(pooled, target.expand_as(pooled), dim=-1)
        return torch.stack([ent, desc], dim=1)

    def _description_vector(self, types: Sequence[str]) -> Any:
        import torch

        key = tuple(sorted(set(types)))
        if key not in self._desc_cache:
            text = "; ".join(f"{t}: {self.type_descriptions.get(t, t)}" for t in key) or "entity"
            enc = self.tokenizer(text, return_tensors="pt", truncation=True, max_length=self.max_length)
            with torch.no_grad():
                hidden, _ = self._hidden_and_logits(enc["input_ids"], enc["attention_mask"])
            self._desc_cache[key] = hidden.mean(1)
        return self._desc_cache[key]

    # ---------------------------------------------------------------- attribution
    def attribute(self, tokens: Sequence[str], tags: Sequence[str]) -> WordAttribution:
        """Both maps for one sentence and the selected positions.

        Raises:
            InputError: tokens and tags differ in length or a tag is unknown to the model.
        """
        import torch
        from captum.attr import FeatureAblation

        if len(tokens) != len(tags) or not tokens:
            raise InputError(f"{len(tokens)} tokens and {len(tags)} tags")
        enc = self.tokenizer(list(tokens), is_split_into_words=True, truncation=True, max_length=self.max_length,
                             return_tensors="pt")
        word_ids = enc.word_ids()
        n_words = len(tokens)
        ids, mask = enc["input_ids"], enc["attention_mask"]
        groups = torch.tensor([[w if w is not None else n_words for w in word_ids]])  # specials: one extra group
        special = torch.tensor([[w is None for w in word_ids]])
        baseline = torch.where(special, ids, torch.full_like(ids, self.tokenizer.mask_token_id))
        per_eval = n_words + 1 if self.batched else 1
        spans = tags_to_spans(list(tags), strict=False)
        entity_words = {i for s in spans for i in range(s.start, s.end)}
        first = {}
        for pos, w in enumerate(word_ids):
            if w is not None and w not in first:
                first[w] = pos
        ent_positions = [first[w] for w in sorted(entity_words) if w in first]
        unknown = [tags[w] for w in sorted(entity_words) if tags[w] not in self.label2id]
        if unknown:
            raise InputError(f"tag {unknown[0]!r} is not a label of the attribution model")
        with torch.no_grad():
            labels = torch.tensor([[self.label2id[tags[w]] for w in sorted(entity_words) if w in first]])
            target = self._description_vector([s.label for s in spans])
            fa = FeatureAblation(lambda x, m: self._scores(x, m, ent_positions, labels, target))
            both = fa.attribute(ids, baselines=baseline, feature_mask=groups, additional_forward_args=(mask,),
                                perturbations_per_eval=per_eval)  # (2, sequence): one row per map
        ent, desc = both[0:1], both[1:2]
        ent_map = _per_word(ent[0], word_ids, n_words)
        desc_map = _per_word(desc[0], word_ids, n_words)
        protected = sorted(entity_words | {i for i, t in enumerate(tokens) if _structural(t)})
        combined, selected = _select(ent_map, desc_map, protected, self.top_n)
        return WordAttribution(list(tokens), ent_map, desc_map, combined, selected, protected)


def _per_word(values: Any, word_ids: Sequence[int | None], n_words: int) -> list[float]:
    """FeatureAblation gives every sub-word its group's score: read it off the word's first sub-word."""
    out = [0.0] * n_words
    seen = set()
    for pos, w in enumerate(word_ids):
        if w is not None and w not in seen:
            seen.add(w)
            out[w] = float(values[pos])
    return out


def _structural(token: str) -> bool:
    return not any(c.isalnum() for c in token) or token.lower() in FUNCTION_WORDS


def _select(ent: Sequence[float], desc: Sequence[float], protected: Sequence[int], top_n: int) -> tuple[list[float], list[int]]:
    """Min-max scale both maps over the candidate words, combine by the minimum, take the top ``top_n``."""
    cand = [i for i in range(len(ent)) if i not in set(protected)]
    combined = [-math.inf] * len(ent)
    if not cand:
        return [0.0] * len(ent), []

    def scale(vals: Sequence[float]) -> dict[int, float]:
        lo, hi = min(vals[i] for i in cand), max(vals[i] for i in cand)
        return {i: (vals[i] - lo) / (hi - lo) if hi > lo else 0.0 for i in cand}

    se, sd = scale(ent), scale(desc)
    for i in cand:
        combined[i] = min(se[i], sd[i])
    ranked = sorted(cand, key=lambda i: (-combined[i], i))
    return [c if c != -math.inf else 0.0 for c in combined], sorted(ranked[:top_n])


def fit_seed_model(seeds: Any, output_dir: str, *, encoder: str | None = None, epochs: float = 10.0,
                   **train_overrides: Any) -> str:
    """Fine-tune the attribution model on the seed sentences themselves (the default WHERE model); returns its folder.

    Args:
        seeds: a split with ``tokens`` and ``ner_tags``.
        output_dir: where the model goes.
        encoder: base encoder (default: MiniLM, provisioned offline by ``hf-rgda provision minilm``).
        epochs, **train_overrides: see :class:`hf_rgda.train.TrainConfig`.
    """
    from .train import DEFAULT_ENCODER, train_ner

    train_ner(seeds, output_dir=output_dir, model=encoder or DEFAULT_ENCODER, epochs=epochs, **train_overrides)
    return str(output_dir)
