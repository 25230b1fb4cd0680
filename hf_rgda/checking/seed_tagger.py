"""The rule of the tagger gate inside the pipeline: ``seed_tagger_mention`` asks a token tagger fine-tuned on the
seeds (:class:`~hf_rgda.TaggerGate`, the augmenter's ``tagger_gate``) to tag each generated sentence, and rejects one
in which it tags a mention the sentence leaves untagged. Read by the checker, the rejection comes before the
composer's top-up, which asks again for the seed it left short; the same gate run over finished rows
(``out.map(gate)``) can only drop them. Declared in :data:`hf_rgda.checking.rules.RULES` after ``likely_mention``
(the split tagger's linear reading of the same fault)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ..tagger_gate import missed_mentions
from .sentence import Sentence

__all__ = ["ListedWords", "MentionModel", "seed_tagger_mention"]


class MentionModel(Protocol):
    """What the rule asks of a tagger: a sentence's tags, as IOB2 names (:meth:`TaggerGate.predict
    <hf_rgda.TaggerGate.predict>`)."""

    def predict(self, tokens: Sequence[str]) -> Sequence[str]: ...


@dataclass(frozen=True, eq=False)  # hashed as itself (a Checker holding it is hashable)
class ListedWords:
    """A stand-in tagger that tags each listed word (lower-cased) as a one-word mention of its type: the rule
    table's example, and a model for tests that need no fine-tuned one."""

    words: Mapping[str, str] = field(default_factory=dict)

    def predict(self, tokens: Sequence[str]) -> list[str]:
        return [f"B-{self.words[t.lower()]}" if t.lower() in self.words else "O" for t in tokens]


def seed_tagger_mention(s: Sentence) -> str | None:
    model: MentionModel | None = s.checker.tagger_gate
    if model is None:
        return None
    missed = missed_mentions(s.tags, list(model.predict(s.tokens)))
    if not missed:
        return None
    texts = ", ".join(f"{' '.join(s.tokens[a:b])!r} ({label})" for a, b, label in missed)
    return f"{texts} left untagged; the tagger trained on the seeds tags it"
