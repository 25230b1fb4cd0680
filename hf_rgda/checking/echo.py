"""Rules for the prompt written back as content: words for the text itself (:func:`meta_text`), an entity the
output-format prompt marks in its example (:func:`format_example`), and the type names themselves as text
(:func:`placeholder`). Each is a row of
:data:`~hf_rgda.checking.rules.RULES`.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from functools import cache, lru_cache

from .. import prompts
from ..tags import parse_inline, tags_to_spans, tokenize
from .sentence import Sentence, seed_facts

__all__ = ["example_form", "format_example", "format_example_forms", "markup_debris", "meta_text", "placeholder"]


#: words for the text itself rather than its subject: a small model told the domain ("biomedical research abstracts")
#: and the task ("write a sentence") writes them back as content ("the sentence describes ...")
#: ("text", "passage", "paragraph" left out: a contract's "the passage of time", "paragraph (a) of Section 5")
_META_WORDS = frozenset(["sentence", "sentences", "abstract", "abstracts", "excerpt", "excerpts"])


def meta_text(s: Sentence) -> str | None:
    context = s.checker.stats.context_words
    if not context:  # without the split's statistics no word is known to be rare there
        return None
    for i, word in enumerate(s.low):
        if word in _META_WORDS and word not in s.of_seed.counts and s.tags[i] == "O" and (
                context.get(word, 0) + context.get(word.capitalize(), 0) == 0):
            return (f"{s.tokens[i]!r} speaks of the text itself, a word the split (almost) never uses outside "
                    "entities: the prompt written back as content")
    return None


#: the characters of :func:`markup_debris`'s tokens
_MARKUP = frozenset("{}[]")


def markup_debris(s: Sentence) -> str | None:
    """A token made only of braces or brackets that the split never writes: the answer's JSON (or a list of the
    request's) written into the sentence ("AGU , VWS , C7 deficiency } , {")."""
    context = s.checker.stats.context_words
    if not context:
        return None
    text = "".join(s.tokens)  # the common case first: no brace or bracket anywhere (four scans in C)
    if "{" not in text and "}" not in text and "[" not in text and "]" not in text:
        return None
    for tok in s.tokens:
        if tok and set(tok) <= _MARKUP and not context.get(tok) and tok not in s.of_seed.counts:
            return f"{tok!r}: markup written into the sentence, a token the split never writes"
    return None


def format_example(s: Sentence) -> str | None:
    """An entity that is the output-format prompt's example entity, its numbers aside ("type 3 diabetes" for the
    inline format's "type 2 diabetes"), where neither the seed, a sentence the prompt showed nor the split has such
    an entity: the prompt's example written back as a row (the local 1.5B did in up to a third of its rows; the
    silver tagger scores them right, being a real disease name)."""
    examples = format_example_forms(s.checker.representation)
    if not examples:  # a representation without such a prompt (or not known): nothing to compare with
        return None
    for span in s.spans:
        form = example_form(s.low[span.start : span.end])
        if form not in examples:
            continue
        if any(example_form(m) == form for seed in (s.seed, *s.shown) for m in seed_facts(seed).mention_words):
            continue
        stats = s.checker.stats
        known = (t.lower() for t in itertools.chain(stats.lexicon, *stats.mentions.values()))
        words = [w for w in form if w != "#"]  # a cheap test first: the split holds thousands of mentions
        if any(all(w in text for w in words) and example_form(tokenize(text, split_hyphens=True)) == form
               for text in known):
            continue
        return (f"{s.text(span)!r} is an entity the output format prompt marks in its example, and neither the seed "
                "nor the split has one")
    return None


_NUMERAL = re.compile(r"\d+|x{0,3}(ix|iv|v?i{0,3})")  # a number, arabic or roman up to 39 ("type II diabetes")


def example_form(words: Sequence[str]) -> tuple[str, ...]:
    """Lower-cased words with every number as ``#``: the form in which a row's entity is compared with the format
    prompts' example entities.

    Example:
        >>> example_form(["Type", "3", "diabetes"])
        ('type', '#', 'diabetes')
    """
    return tuple("#" if w and _NUMERAL.fullmatch(w.lower()) else w.lower() for w in words)


@cache
def format_example_forms(representation: str = "") -> frozenset[tuple[str, ...]]:
    """The :func:`example_form` of every entity the output-format prompt of ``representation`` marks
    (``[...](Type)``: its example, and the inline format's pattern "[entity words](Type)"); none for a
    representation without such a prompt ("": the checker was not told what the prompts showed).

    Example:
        >>> sorted(format_example_forms("inline")), format_example_forms("entities"), format_example_forms("")
        ([('entity', 'words'), ('type', '#', 'diabetes')], frozenset(), frozenset())
    """
    name = f"{representation}_format"
    if name not in prompts.names():
        return frozenset()
    tokens, tags = parse_inline(prompts.template(name))  # the prompt read as a marked sentence: its marks are entities
    return frozenset(example_form(tokens[span.start : span.end]) for span in tags_to_spans(tags))


def placeholder(s: Sentence) -> str | None:
    names, low, where = _lower_names(tuple(s.checker.types)), s.low, s.where
    for i in sorted(where("<") + where("[") + where("{")):  # where an opening bracket is
        if i < len(low) - 2 and low[i + 1] in names and low[i + 2] in (">", "]", "}"):
            return f"{' '.join(s.tokens[i : i + 3])!r} is a placeholder, not text"
    for span in s.spans:  # a bare type name counts unless the split ends such mentions with it (SciERC's "method")
        words = low[span.start : span.end]
        if len(words) == 2 and words[1].isdigit() and (words[0] in names or words[0] == "type") and not s.in_seed(span):
            # "[disease 1]", the format example's "[Type 2]"
            return f"entity {s.text(span)!r} is a numbered placeholder"
        bare = "".join(words)
        if bare.strip("<>[]{}") in names and (bare != bare.strip("<>[]{}")
                                              or not s.checker.stats.ends_mention(bare, span.label)):
            return f"entity {s.text(span)!r} is a type name"
        first = s.tokens[span.start]  # "[Disease R408Q](Disease)": the type, as spelled, written into the entity
        if (len(words) > 1 and first in s.checker.types and first not in s.seed.tokens
                and not any(first in opened for opened in s.checker.stats.starts.values())):
            return f"entity {s.text(span)!r} opens with the type name {first!r}"
    for i in sorted([i for name in names for i in where(name)]):  # "... at the RNA level Disease ." (the 1.5B, inline)
        word = s.tokens[i]
        if i and i < len(s.tags) and s.tags[i] == "O" and word in s.checker.types and word not in s.seed.tokens:
            return f"{word!r}, a type name, stands as a word"  # NCBI's train split: once in 5,432 sentences
    return None


@lru_cache(maxsize=16)
def _lower_names(types: tuple[str, ...]) -> frozenset[str]:
    """The type names lower-cased (:func:`placeholder` reads them for every sentence)."""
    return frozenset(t.lower() for t in types)
