"""The entity rules of type evidence: what the split's statistics say of an entity's words (no letter, no capital,
a last word the split uses elsewhere, the generic word of a name), each read for one entity of a
:class:`~hf_rgda.checking.sentence.Sentence`; declared in :data:`hf_rgda.checking.rules.RULES` (group ``type
evidence``), whose examples say what each one fires on."""

from __future__ import annotations

from ..tags import Span
from .sentence import Sentence
from .stats import is_letterless, is_lowercase

__all__ = ["atypical_head", "head_alone", "lowercase_name", "no_letters"]


def no_letters(s: Sentence, span: Span) -> str | None:
    share, text = s.checker.atypical_share, s.text(span)
    if not is_letterless(text) or not s.checker.stats.rarely_ends(span.label, "letterless", share) or s.in_seed(span):
        return None
    return f"{text!r} has no letter; under {share:.0%} of the split's {span.label} mentions end in a word without one"


def lowercase_name(s: Sentence, span: Span) -> str | None:
    stats, share, text = s.checker.stats, s.checker.atypical_share, s.text(span)
    if not stats.rarely_ends(span.label, "lowercase", share) or not is_lowercase(text) or s.in_seed(span):
        return None
    if stats.heads[span.label].get(s.tokens[span.end - 1]):
        return None  # a lowercase word the split itself ends such a mention with passes: FIN tags "lender" as PER
    return (f"{text!r} has no capital letter; under {share:.0%} of the split's {span.label} mentions end in a word "
            "without one")


def atypical_head(s: Sentence, span: Span) -> str | None:
    stats, head = s.checker.stats, s.tokens[span.end - 1]  # a one-word entity is its own head ("BRCA1" as a Disease)
    share, floor = s.checker.atypical_share, s.checker.atypical_min_outside
    if not stats.atypical(head, span.label, share, floor) or s.in_seed(span):
        return None
    form = stats.stats_form(head)
    shown = f"{head!r}" + (f" (as {form!r})" if form != head else "")
    return (f"{s.text(span)!r}: {shown} ends {stats.heads[span.label].get(form, 0)} {span.label} mention(s) in the "
            f"split and is used {stats.context_words[form]} times outside entities")


def head_alone(s: Sentence, span: Span) -> str | None:
    stats, word = s.checker.stats, s.tokens[span.start]
    form = stats.stats_form(word)
    if span.end - span.start != 1 or not stats.mentions.get(span.label) or s.in_seed(span):
        return None
    ends, outside = stats.heads.get(span.label, {}).get(form, 0), stats.context_words.get(form, 0)
    if ends < s.checker.edge_min_count or not outside or stats.tagged_alone(word, span.label):
        return None
    return (f"{word!r} ends {ends} {span.label} mention(s) in the split, stands {outside} times outside entities "
            "and is never tagged by itself")
