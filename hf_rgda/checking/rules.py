"""The checker's rules: an ordered table of named functions, each returning why a sentence fails it, or None.

:data:`RULES` is the table :class:`~hf_rgda.checking.Checker` runs, in order; the first rule that fires rejects the
sentence, its ``name`` the reason. A sentence rule reads the whole :class:`Sentence`; an entity rule reads one
entity of it, and consecutive entity rules of one ``group`` run entity by entity (each entity in order, through
every rule of the group). A rule with a ``repair`` (a :class:`Repair`: its words and its code) is fixed instead
under ``salvage=True`` (see :meth:`Checker._salvage <hf_rgda.checking.Checker>`). Each entry's ``example`` is a seed
and a sentence it fires on;
``tests/test_checking.py`` runs every example, so the table (and the README's, generated from it) cannot rot.

Example:
    >>> [r.name for r in RULES][:3]
    ['too_short', 'no_entity', 'garbled']
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Sequence

from ..records import Candidate
from ..tags import Span, spans_to_tags, tags_to_spans
from ..words import FUNCTION_WORDS
from .echo import format_example, markup_debris, meta_text, placeholder
from .evidence import atypical_head, head_alone, lowercase_name, no_letters
from .repairs import (
    head_ends_another_type,
    head_typical_elsewhere,
    keep_one_sentence,
    letterless_elsewhere,
    sentence_breaks,
    swap_entities,
    untag,
)
from .seed_tagger import ListedWords, seed_tagger_mention
from .sentence import SeedFacts, Sentence, seed_facts
from .stats import SplitStats, is_letterless
from .stutter import keep_one_copy, stutter
from .table import Example, Finding, Repair, Rule, first_failure
from .tagger import MentionTagger
from .variety import cross_seed_duplicate, near_duplicate, repeated_entity, same_entities, similar

__all__ = ["LOOPING", "RULES", "UNTAG_RULES", "VARIETY_RULES", "known_untagged", "repeats_phrase", "tag_known"]


# ---------------------------------------------------------------- sentence rules
def too_short(s: Sentence) -> str | None:
    return f"{len(s.tokens)} tokens" if len(s.tokens) < s.checker.min_tokens else None


def no_entity(s: Sentence) -> str | None:
    return "the seed has entities but this sentence tags none" if s.of_seed.spans and not s.spans else None


def garbled(s: Sentence) -> str | None:
    bad = next((t for t in s.tokens if "\ufffd" in t), None)
    if bad is None or any("\ufffd" in t for t in s.seed.tokens):
        return None  # a lone half of a surrogate pair in the answer (see decode), or a byte the model mangled
    return f"{bad!r} holds U+FFFD, the mark of a character lost in decoding"


def several_sentences(s: Sentence) -> str | None:
    cut = sentence_breaks(s.tokens)
    return f"a sentence ends at token {cut[0]} and another begins" if cut else None


#: what a sentence cut off mid-clause stops at: articles, prepositions, conjunctions, "that", and a comma (1 of FIN's
#: 1,164 train sentences ends so, none of NCBI-disease's or SciERC's; the 1.5B's cut-off lists do:
#: "... sell , assign ,")
_DANGLING = frozenset(["a", "an", "the", "of", "in", "on", "at", "to", "for", "from", "by", "with", "and", "or", "but",
                       "than", "into", "as", "nor", "that", ","])


def truncated(s: Sentence) -> str | None:
    # the very last token, as written: a finished sentence ends in punctuation ("... tested for ." is a stranded
    # preposition, not a cut), "AS" (ankylosing spondylitis) is a name; a seed ending the same way (FIN's list
    # items "...; and") licenses it
    last = s.tokens[-1] if s.tokens else ""
    if last not in _DANGLING or (s.seed.tokens and s.seed.tokens[-1] == last):
        return None
    return f"stops at {last!r} without finishing: the sentence was cut off"


def no_context(s: Sentence) -> str | None:
    context = len(s.tokens) - sum(span.end - span.start for span in s.spans)
    return f"only {context} token(s) outside the entities" if context < s.checker.min_context else None


def untagged_mention(s: Sentence) -> str | None:
    low, context_words = s.low, s.checker.stats.context_words
    taken = {i for span in s.spans for i in range(span.start, span.end)}
    own = {tuple(low[span.start : span.end]) for span in s.spans}
    for m in own | set(s.of_seed.mention_words):
        for i in s.where(m[0]):
            if tuple(low[i : i + len(m)]) == m and not all(j in taken for j in range(i, i + len(m))):
                if m not in own and len(m) == 1 and (s.tokens[i] in context_words or low[i] in context_words):
                    continue  # a seed's one-word mention the split often leaves untagged ("it" as Generic)
                return f"{' '.join(s.tokens[i : i + len(m)])!r} is an entity elsewhere but is not tagged here"
    return None


def known_mention(s: Sentence) -> str | None:
    known = s.memo("known_untagged", known_untagged)
    if known is None:
        return None
    return f"{s.text(known)!r} is left untagged but the split tags it as {known.label}"


def likely_mention(s: Sentence) -> str | None:
    tagger, share = s.checker.stats.tagger, s.checker.likely_mention_quantile
    if tagger is None or not share:
        return None
    found = tagger.most_likely(s.tokens, s.tags, skip=s.of_seed.untagged_at, spans=s.spans)
    cutoff = tagger.cutoff(share)
    if found is None or found[1] <= cutoff:
        return None
    i, p = found
    return (f"{s.tokens[i]!r} is left untagged but reads as part of a mention (the split's tagger: {p:.2f}, above "
            f"{cutoff:.2f}, what {share:.0%} of the split's own sentences reach)")


def seed_entity_reused(s: Sentence) -> str | None:
    if not s.forbid_seed_entities:
        return None
    seed = set(s.of_seed.mention_words)
    reused = [" ".join(s.low[span.start : span.end]) for span in s.spans if tuple(s.low[span.start : span.end]) in seed]
    return f"reuses {reused[0]!r}" if reused else None


def near_copy_of_seed(s: Sentence) -> str | None:
    return "too similar to the seed sentence" if _near_copy(s.of_seed, s) else None


def near_copy_of_shown(s: Sentence) -> str | None:
    """A near copy of another sentence of the dataset that the prompt showed (the composer's example item): the
    seed test, against what the writer had in view besides its seed."""
    copied = next((seed for seed in s.shown if _near_copy(seed_facts(seed), s)), None)
    return f"too similar to a sentence of the dataset the prompt showed: {copied.text!r}" if copied else None


def _near_copy(seed: SeedFacts, s: Sentence) -> bool:
    return similar(seed.low, seed.occurrences, s.low, s.checker.near_copy_ratio, s.occurrences)


def looping(s: Sentence) -> str | None:
    """A 4-word phrase three times, or an 8-word phrase twice. (A 4-word phrase twice is ordinary prose, "the
    matrices in M ... the matrices in M" in SciERC: see ``benchmarks/checker_gold.py``.)"""
    return LOOPING if repeats_phrase([t for t in s.low if t.isalnum() or _ALNUM(t)]) else None  # most are words


#: :func:`looping`'s finding
LOOPING = "a phrase repeats (4 words three times, or 8 words twice)"


def repeats_phrase(words: Sequence[str]) -> bool:
    """Whether ``words`` (lower-cased) hold a 4-word phrase three times or an 8-word phrase twice."""
    counts = Counter(words).values()
    if sum(c for c in counts if c > 1) < 6:
        return False  # a phrase's words come again: 4 words three times cover 6 places or more, 8 words twice 9
    for n, times in ((4, 3), (8, 2)):
        grams = list(zip(*(words[i:] for i in range(n))))
        if len(set(grams)) < len(grams) and max(Counter(grams).values()) >= times:  # counted only if one repeats
            return True
    return False


def self_coordinated(s: Sentence) -> str | None:
    low = s.low
    for a, b in itertools.pairwise(s.spans):  # "David Fischer and David Fischer will repay ..." (the 1.5B, FIN)
        # joined by "and"/"or"/"&" only: "New York , New York" (city, state) is a FIN address
        if low[a.start : a.end] == low[b.start : b.end] and low[a.end : b.start] in (["and"], ["or"], ["&"]):
            return f"{' '.join(s.tokens[a.start : b.end])!r} coordinates an entity with itself"
    return None


def duplicate(s: Sentence) -> str | None:
    same = s.low in s.accepted_low
    return "same as another output for this seed" if same else None


# ---------------------------------------------------------------- entity rules
def tagged_seed_context(s: Sentence, span: Span) -> str | None:
    m, seed = s.low[span.start : span.end], s.of_seed
    if is_letterless("".join(m)):
        return None
    # the seed's untagged context, word for word or with up to 2 words dropped from inside it ("N -
    # acetylgalactosamine - 6 - sulfatase" from the seed's untagged "... - 6 - sulfate sulfatase")
    for i in seed.untagged_at.get(m[0], ()):  # where the seed has the entity's first word untagged
        for w in range(len(m), len(m) + 3 if len(m) > 1 else len(m) + 1):
            win = seed.low[i : i + w]
            if len(win) == w and all(seed.untagged[i : i + w]) and win[-1] == m[-1] and _subsequence(m, win):
                return f"{s.text(span)!r} is untagged context in the seed sentence"
    return None


def known_mention_type(s: Sentence, span: Span) -> str | None:
    # names only (every word capitalized): a common noun's type shifts with its use ("machine translation" is a
    # Task or a Method in SciERC), a name's does not
    known = s.checker.stats.lexicon.get(" ".join(s.low[span.start : span.end]))
    name = all(t[:1].isupper() for t in s.tokens[span.start : span.end] if t[:1].isalpha())
    if not known or known == span.label or not name or s.in_seed(span):
        return None
    return f"{s.text(span)!r} is tagged {span.label} but the split tags it as {known}"


def boundary_extended(s: Sentence, span: Span) -> str | None:
    stats, first = s.checker.stats, s.tokens[span.start]
    # as written: a capitalized "Will" or "May" opens a name
    if span.end - span.start < 2 or first not in FUNCTION_WORDS or s.in_seed(span) or not stats.opens_rarely(
            first, span.label, s.checker.atypical_share, s.checker.atypical_min_outside):
        return None
    form = stats.stats_form(first)
    return (f"{s.text(span)!r} opens with {first!r}, which opens {stats.starts[span.label].get(form, 0)} "
            f"{span.label} mention(s) in the split and is used {stats.context_words[form]} times outside entities")


def boundary_cut(s: Sentence, span: Span) -> str | None:
    stats = s.checker.stats
    after = s.tokens[span.end] if span.end < len(s.tokens) and s.tags[span.end] == "O" else None
    if after is None or after.lower() in FUNCTION_WORDS or is_letterless(after) or s.in_seed(span):
        return None  # the split does not count letterless words outside entities ("2", ")"): no evidence
    form = stats.stats_form(after)
    ends, outside = stats.heads.get(span.label, {}).get(form, 0), stats.context_words.get(form, 0)
    if ends < s.checker.edge_min_count or ends < 2 * outside:
        return None
    return (f"{s.text(span)!r} stops before {after!r}, which ends {ends} {span.label} mention(s) in the split and is "
            f"used {outside} times outside entities")


def long_form_untagged(s: Sentence, span: Span) -> str | None:
    # "chronic obstructive pulmonary disease ( [COPD] )": the abbreviation tagged, the name it stands for not
    i = span.start
    if i < 2 or s.tokens[i - 1] != "(" or span.end >= len(s.tokens) or s.tokens[span.end] != ")" \
            or s.tags[i - 2] != "O" or s.in_seed(span):
        return None
    word = s.tokens[i - 2]
    ends = s.checker.stats.heads.get(span.label, {}).get(s.checker.stats.stats_form(word), 0)
    if ends < s.checker.edge_min_count:
        return None
    return (f"{s.text(span)!r} abbreviates the phrase before it, which is left untagged although {word!r} ends "
            f"{ends} {span.label} mention(s) in the split")


def entity_too_long(s: Sentence, span: Span) -> str | None:
    limit = s.checker.stats.max_entity_len.get(span.label)
    if not limit or span.end - span.start <= limit:
        return None
    return f"{span.label} of {span.end - span.start} tokens (seed split max {limit})"


# ---------------------------------------------------------------- helpers
_ALNUM = re.compile(r"[^\W_]").search  # a letter or a digit (str.isalnum)


def _subsequence(needle: Sequence[str], hay: Sequence[str]) -> bool:
    it = iter(hay)
    return all(x in it for x in needle)


def known_untagged(s: Sentence) -> Span | None:
    """The first (longest) text of the lexicon that the sentence leaves untagged, as the span it should be; not one
    the seed's own annotation leaves untagged (an :data:`UNTAG_RULES` rule would fire on it)."""
    lexicon, low = s.checker.stats.lexicon, s.low
    if not lexicon:
        return None
    taken = {i for span in s.spans for i in range(span.start, span.end)}
    for i, end in s.checker.stats.lexicon_windows(low):
        label = lexicon.get(" ".join(low[i:end]))
        if label and not any(j in taken for j in range(i, end)) and label in s.checker.types:
            probe = s.retagged(spans_to_tags([Span(i, end, label)], len(low)))
            if first_failure(probe, UNTAG_RULES) is None:
                return Span(i, end, label)
    return None


# ---------------------------------------------------------------- repairs (salvage=True)
def tag_known(cand: Candidate, found: Finding, s: Sentence) -> Sentence | None:
    """Tag the text the split tags consistently that the sentence leaves untagged."""
    known = s.memo("known_untagged", known_untagged)
    if known is None:
        return None
    cand.tags = spans_to_tags([*tags_to_spans(cand.tags), known], len(cand.tokens))
    cand.salvaged.append(f"{found.rule.name}: tagged {' '.join(cand.tokens[known.start : known.end])!r} as "
                         f"{known.label} (the split tags it so)")
    return s.retagged(cand.tags)


_PER = ("PER", "ORG")
_LOAN = "[Mary Smith](PER) signed the loan ."
_CANCER_HEADS = SplitStats(heads={"Disease": {"cancer": 60}}, context_words={"gene": 13})

RULES: tuple[Rule, ...] = (
    Rule("too_short", too_short, "a sentence of fewer than `min_tokens` (4) tokens", Example("[Lupus](Disease) .")),
    Rule("no_entity", no_entity, "no entity tagged, where the seed has some",
         Example("Mutations in PTEN are frequent in tumours .")),
    Rule("garbled", garbled, "a U+FFFD character (text lost in decoding) the seed does not have",
         Example("Imbr\ufffd and colleagues traced [gout](Disease) through three generations .")),
    Rule("placeholder", placeholder, "a type name in brackets (`<Disease>`), an entity that is a bare type name "
         "the split never tags or one numbered (`disease 1`, `Type 2`), one opening with the type name as spelled "
         "where the split's mentions never do (`Disease R408Q`), or a type name as spelled left untagged after the "
         "first word (`... RNA level Disease .`)",
         Example("Recent studies suggest that <Disease> may drive [gout](Disease) in adults .")),
    Rule("several_sentences", several_sentences, "two sentences in one row",
         Example("[Asthma](Disease) was studied in adults . The new design improves care ."),
         repair=Repair("keeps the sentence with the most entities", keep_one_sentence)),
    Rule("stutter", stutter, "a word or phrase written three times in a row, or an entity's words twice in a row",
         Example("Antibiotics are used in treating [influenza](Disease) influenza influenza infections ."),
         repair=Repair("keeps one copy (with the tags of the most tagged copy)", keep_one_copy)),
    Rule("truncated", truncated, "a sentence that stops at an article, preposition, conjunction or comma, without "
         "final punctuation (cut off), unless its seed ends so",
         Example("Carriers of BRCA1 had a higher risk of [breast cancer](Disease) compared to a")),
    Rule("no_context", no_context, "fewer than `min_context` (3) tokens outside the entities",
         Example("[Adenomatous polyposis coli tumour](Disease)", seed="[Gout](Disease) flares are painful .")),
    Rule("meta_text", meta_text, "a word for the text itself (sentence, abstract, excerpt) that the seed lacks and "
         "the split uses fewer than 5 times outside entities: the prompt written back as content",
         Example("In these research abstracts , the sentence describes [gout](Disease) in adults .",
                 stats=SplitStats(context_words={"in": 300}))),
    Rule("markup_debris", markup_debris, "a token of braces or brackets alone that neither the split nor the seed "
         "writes: the answer's JSON written into the sentence", Example("Patients with [gout](Disease) , lupus } , {",
                                                                       stats=SplitStats(context_words={"with": 90}))),
    Rule("format_example", format_example, "an entity that is the output-format prompt's example entity, its "
         "numbers aside (`type 3 diabetes`), where neither the seed, a sentence the prompt showed nor the split has "
         "one: the prompt's example written back",
         Example("Carriers of the allele developed [type 3 diabetes](Disease) early in life .",
                 representation="inline")),
    Rule("no_letters", no_letters, "an entity without a letter, of a type whose mentions (in the split) almost never "
         "end in one", Example("About [93 %](Disease) of the carriers had [gout](Disease) .", stats=_CANCER_HEADS),
         repair=Repair("untags it, unless another type does end mentions in such words", untag, letterless_elsewhere),
         group="type evidence"),
    Rule("lowercase_name", lowercase_name, "an entity without a capital letter, of a type whose mentions almost "
         "never end in one (a name type such as PER)",
         Example("The auditor reviewed the accounts of [John Smith](PER) for [compliance](PER) .", seed=_LOAN,
                 stats=SplitStats(heads={"PER": {"Smith": 60}}), types=_PER),
         repair=Repair("untags it, unless its last word ends mentions of another type", untag, head_ends_another_type),
         group="type evidence"),
    Rule("atypical_head", atypical_head, "an entity whose last word the split uses outside entities and ends under "
         "`atypical_share` (5%) of this type's mentions with",
         Example("Loss of the [Rb tumor suppressor gene](Disease) causes [retinoblastoma](Disease) in children .",
                 stats=_CANCER_HEADS),
         repair=Repair("untags it, unless the word typically ends mentions of another type", untag,
                       head_typical_elsewhere), group="type evidence"),
    Rule("head_alone", head_alone, "a one-word entity that ends at least `edge_min_count` (5) of its type's "
         "mentions in the split, stands outside entities there too, and is never one of its one-word mentions: "
         "the generic word of a name (NCBI-disease's 'disease')",
         Example("Patients with [gout](Disease) often have a second [disease](Disease) in adulthood .",
                 stats=SplitStats(heads={"Disease": {"disease": 200}}, context_words={"disease": 150},
                                  mentions={"Disease": ("Huntington disease", "gout")})),
         repair=Repair("untags it", untag), group="type evidence"),
    Rule("tagged_seed_context", tagged_seed_context, "an entity that is untagged context in the seed",
         Example("A [BRCA1](Disease) variant raises the risk of [gout](Disease) in men ."),
         repair=Repair("untags it", untag), group="seed context"),
    Rule("known_mention_type", known_mention_type, "a name the split consistently tags as another type",
         Example("[Jonathan Medved](ORG) , a company , appointed a new director .", seed=_LOAN, types=_PER,
                 stats=SplitStats(lexicon={"jonathan medved": "PER"})), group="lexicon type"),
    Rule("boundary_extended", boundary_extended, "an entity of two words or more whose first word is a function word "
         "(of, with, the, ...) the split uses outside entities and opens under `atypical_share` (5%) of this type's "
         "mentions with",
         Example("Patients [with breast cancer](Disease) were screened for PTEN mutations .",
                 stats=SplitStats(starts={"Disease": {"breast": 40}}, context_words={"with": 300})), group="boundary"),
    Rule("boundary_cut", boundary_cut, "an entity followed by an untagged word that ends mentions of its type in "
         "the split at least `edge_min_count` (5) times and twice as often as it stands outside entities: a name cut "
         "short", Example("Mutations in PTEN cause [breast](Disease) cancer in women .", stats=_CANCER_HEADS),
         group="boundary"),
    Rule("long_form_untagged", long_form_untagged, "an entity in parentheses after an untagged word that ends at "
         "least `edge_min_count` (5) mentions of its type in the split: the name it abbreviates left untagged",
         Example("Mutations in PTEN cause chronic lung disease ( [CLD](Disease) ) in adults .",
                 stats=SplitStats(heads={"Disease": {"disease": 200}}, context_words={"disease": 150})),
         group="boundary"),
    Rule("entity_too_long", entity_too_long, "an entity longer than the split's longest of its type",
         Example("Mutations in PTEN cause [a very long named disease](Disease) here .",
                 stats=SplitStats(max_entity_len={"Disease": 3})), group="length"),
    Rule("untagged_mention", untagged_mention, "a text tagged elsewhere in the sentence or in the seed, left "
         "untagged here", Example("Episodic hemolytic anemia is linked to inherited [G6PD deficiency](Disease) .",
                                  seed="[Episodic hemolytic anemia](Disease) follows [G6PD deficiency](Disease) .",
                                  forbid_seed_entities=False)),
    Rule("known_mention", known_mention, "a text the split consistently tags, left untagged",
         Example("[Aniridia](Disease) is often linked to hemolytic anemia in adults .",
                 stats=SplitStats(lexicon={"hemolytic anemia": "Disease"})), repair=Repair("tags it", tag_known)),
    Rule("likely_mention", likely_mention, "an untagged word the split's own mention tagger reads as inside a mention "
         "more surely than it reads any untagged word of all but `likely_mention_quantile` (10%) of the split's own "
         "sentences (read out of fold; the seed's untagged words aside): a mention new to the split, left untagged",
         Example("[Aniridia](Disease) is often seen with nephrosis in young adults .",
                 stats=SplitStats(tagger=MentionTagger.from_weights({"s3=sis": 6.0, "bias": -3.0}, [0.5] * 101)))),
    Rule("seed_tagger_mention", seed_tagger_mention, "a mention the tagger gate (a token tagger fine-tuned on the seeds: "
         "the augmenter's `tagger_gate`) tags where the sentence leaves it untagged",
         Example("[Aniridia](Disease) is often seen with nephrosis in young adults .",
                 tagger_gate=ListedWords({"aniridia": "Disease", "nephrosis": "Disease"}))),
    Rule("seed_entity_reused", seed_entity_reused, "an entity of the seed, where the stage asks for new ones",
         Example("Variants in PTEN can lead to [breast cancer](Disease) in women .")),
    Rule("near_copy_of_seed", near_copy_of_seed, "a sentence `near_copy_ratio` (0.85) similar to the seed or more",
         Example("Germline mutations in BRCA1 cause [lung cancer](Disease) .")),
    Rule("near_copy_of_shown", near_copy_of_shown,
         "a sentence `near_copy_ratio` (0.85) similar or more to another seed the prompt showed (the composer's "
         "example item)",
         Example("We studied 40 families with hereditary [colon cancer](Disease) and [ovarian cancer](Disease) .",
                 shown=(("We studied 40 families with hereditary [breast cancer](Disease) and "
                         "[ovarian cancer](Disease) ."),))),
    Rule("looping", looping, "a generation loop: a 4-word phrase three times, or an 8-word phrase twice",
         Example("Mutations of the gene cause [gout](Disease) and mutations of the gene cause [gout](Disease) and the "
                 "gene cause [gout](Disease) .")),
    Rule("self_coordinated", self_coordinated, "an entity coordinated with itself (`X and X`)",
         Example("[David Fischer](PER) and [David Fischer](PER) will repay the loan to the bank .", seed=_LOAN,
                 types=_PER)),
    Rule("duplicate", duplicate, "the same sentence as another accepted for this seed",
         Example("Inherited PTEN variants raise the risk of [glioma](Disease) .",
                 accepted=("Inherited PTEN variants raise the risk of [glioma](Disease) .",))),
    Rule("same_entities", same_entities, "the same entities (texts and types) as another accepted for this seed, "
         "where the stage asks for new entities", Example("Carriers of the variant developed [glioma](Disease) early .",
                                                          accepted=("PTEN variants raise the risk of [glioma](Disease) .",),
                                                          stats=SplitStats(mentions={"Disease": ("glioma", "gout")})),
         repair=Repair("puts mentions of the same types from the split in their places", swap_entities)),
    Rule("near_duplicate", near_duplicate, "a sentence `near_copy_ratio` (0.85) similar or more to another accepted "
         "for this seed", Example("PTEN variants in men raise the risk of [glioma](Disease) by half .",
                                  accepted=("PTEN variants in men raise the risk of [lupus](Disease) by half .",))),
    Rule("cross_seed_duplicate", cross_seed_duplicate, "a sentence `near_copy_ratio` (0.85) similar or more to a row "
         "accepted from another seed (the variety pass; its scope: see *Variety* below)",
         Example("PTEN variants in men raise the risk of [glioma](Disease) by half .",
                 others=("PTEN variants in men raise the risk of [lupus](Disease) by half .",))),
    Rule("repeated_entity", repeated_entity, "a new entity (not the seed's) of a text and type the run has accepted "
         "`max_entity_repeats` (3) times (the variety pass; its scope: see *Variety* below)",
         Example("Smokers in the cohort often developed [glioma](Disease) .", max_entity_repeats=3,
                 others=("PTEN variants raise the risk of [glioma](Disease) .", "A [glioma](Disease) grew slowly .",
                         "Two cases of [glioma](Disease) were reported ."))),
)

#: the rules the variety pass runs over a batch's finished seeds (:meth:`~hf_rgda.checking.Checker.vary`)
VARIETY_RULES: tuple[Rule, ...] = tuple(r for r in RULES if r.name in ("same_entities", "cross_seed_duplicate",
                                                                         "repeated_entity"))

#: the rules whose repair untags an entity: the evidence (statistics or the seed) says it is not of its type
UNTAG_RULES: tuple[Rule, ...] = tuple(r for r in RULES if r.repair is not None and r.repair.fix is untag)
