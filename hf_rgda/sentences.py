"""Tagged sentences in and out of the LLM: rendering seeds, decoding answers, deterministic checks.

Two output forms are supported (chosen by measurement, see ``benchmarks/representation.py``):

- ``entities``: ``{"text": "...", "entities": [{"text": "...", "type": "..."}]}``; entity strings are matched
  back into the tokenized sentence (every occurrence is tagged; an unmatched entity rejects the sentence);
- ``segments``: ``{"segments": [{"text": "...", "type": "O" | type}]}``, concatenated in order.
"""

from __future__ import annotations

import difflib
import itertools
import json
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ._exceptions import ParseError, SchemaError
from .records import Candidate, Seed
from .tags import Span, detokenize, spans_to_tags, tags_to_spans, tokenize

__all__ = ["Checker", "decode_sentence", "entity_mentions", "head_statistics", "mention_lexicon", "parse_json",
           "splits_hyphens"]

def parse_json(text: str) -> Any:
    """Parse a JSON answer, tolerating a code fence around it.

    Raises:
        ParseError: the text is not JSON.
    """
    body = text.strip()
    fence = re.match(r"^```(?:json)?\s*(.*?)\s*```$", body, re.DOTALL)
    if fence:
        body = fence.group(1)
    try:
        return _clean_surrogates(json.loads(body))
    except json.JSONDecodeError as err:
        raise ParseError(f"answer is not valid JSON ({err.msg} at char {err.pos})", raw=text) from None


def _clean_surrogates(value: Any) -> Any:
    """``value`` with every string made encodable: a JSON escape may spell half of a surrogate pair ("\\ud83c", a
    small model cutting an emoji in two), which Python decodes to a lone surrogate that no UTF-8 encoder accepts (the
    next prompt, the cache key, Arrow). Pairs are joined; a lone half becomes U+FFFD."""
    if isinstance(value, str):
        if any("\ud800" <= ch <= "\udfff" for ch in value):
            return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        return value
    if isinstance(value, list):
        return [_clean_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {_clean_surrogates(k): _clean_surrogates(v) for k, v in value.items()}
    return value


def _find(tokens: list[str], needle: list[str], taken: list[bool]) -> list[int]:
    n = len(needle)
    return [i for i in range(len(tokens) - n + 1)
            if tokens[i : i + n] == needle and not any(taken[i : i + n])]


def _find_loose(tokens: list[str], needle: str, taken: list[bool]) -> list[tuple[int, int]]:
    """Token ranges whose text, spaces removed, equals ``needle`` (spaces removed): "life - long anemia" (copied
    from a pre-tokenized seed) against "life-long anemia" in the sentence, or the other way round."""
    out = []
    for i in range(len(tokens)):
        text, j = "", i
        while j < len(tokens) and len(text) < len(needle):
            text += tokens[j]
            j += 1
        if text == needle and not any(taken[i:j]):
            out.append((i, j))
    return out


def _decode_entities(item: Mapping[str, Any], types: Sequence[str], split_hyphens: bool) -> Candidate:
    cand = Candidate(raw=item)
    text, entities = item.get("text"), item.get("entities")
    if not isinstance(text, str) or not isinstance(entities, list):
        return cand.reject("malformed", "item needs 'text' (string) and 'entities' (list)")
    # a doubled final period ("... of the digestive tract..": the 1.5B writes it now and then) is one period
    tokens = tokenize(re.sub(r"(?<!\.)\.\.\s*$", ".", text.rstrip()), split_hyphens=split_hyphens)
    low = [t.lower() for t in tokens]  # entities match case-insensitively; the sentence keeps its own casing
    taken = [False] * len(tokens)
    spans: list[Span] = []
    def words(e: Any) -> list[str]:
        return tokenize(str(e.get("text", "")) if isinstance(e, Mapping) else "", split_hyphens=split_hyphens)

    for ent in sorted(entities, key=lambda e: -len(words(e))):
        etoks, etype = [t.lower() for t in words(ent)], ent.get("type") if isinstance(ent, Mapping) else None
        if etype not in types:
            return cand.reject("unknown_type", f"type {etype!r} is not in {list(types)}")
        if not etoks:
            return cand.reject("empty_entity", f"entity {ent!r} has no text")
        found = [(st, st + len(etoks)) for st in _find(low, etoks, taken)] or _find_loose(low, "".join(etoks), taken)
        if not found:
            if any(s.label == etype and "".join(low[s.start : s.end]) == "".join(etoks) for s in spans):
                continue  # listed twice: already tagged
            return cand.reject("entity_not_in_sentence", f"{ent.get('text')!r} does not occur in the sentence")
        for st, end in found:
            spans.append(Span(st, end, etype))
            taken[st:end] = [True] * (end - st)
    cand.tokens, cand.tags = tokens, spans_to_tags(spans, len(tokens))
    return cand


def _decode_segments(item: Mapping[str, Any], types: Sequence[str], split_hyphens: bool) -> Candidate:
    cand = Candidate(raw=item)
    segs = item.get("segments")
    if not isinstance(segs, list):
        return cand.reject("malformed", "item needs 'segments' (list)")
    tokens: list[str] = []
    spans: list[Span] = []
    for seg in segs:
        stoks, stype = tokenize(str(seg.get("text", "")), split_hyphens=split_hyphens), seg.get("type")
        if stype != "O" and stype not in types:
            return cand.reject("unknown_type", f"type {stype!r} is not in {list(types)}")
        if stype != "O" and stoks:
            spans.append(Span(len(tokens), len(tokens) + len(stoks), stype))
        tokens.extend(stoks)
    cand.tokens, cand.tags = tokens, spans_to_tags(spans, len(tokens))
    return cand


def decode_sentence(item: Any, types: Sequence[str], representation: str = "entities", *,
                    split_hyphens: bool = False) -> Candidate:
    """Turn one answer item into tokens and IOB2 tags (or a rejected :class:`Candidate`); ``split_hyphens`` follows
    the dataset's tokenization (see :func:`splits_hyphens`)."""
    if not isinstance(item, Mapping):
        return Candidate(raw=item).reject("malformed", f"expected an object, got {type(item).__name__}")
    try:
        if representation == "segments":
            return _decode_segments(item, types, split_hyphens)
        return _decode_entities(item, types, split_hyphens)
    except SchemaError as err:  # overlapping spans etc.
        return Candidate(raw=item).reject("invalid_tags", str(err))


def entity_mentions(token_rows: Sequence[Sequence[str]], tag_rows: Sequence[Sequence[str]], *,
                    per_type: int = 2000) -> dict[str, list[str]]:
    """Distinct entity texts per type (IOB2 tags), most frequent first (at most ``per_type``): the pool the
    composer's entity hints are drawn from."""
    counts: dict[str, Counter[str]] = {}
    for tokens, tags in zip(token_rows, tag_rows):
        for s in tags_to_spans(list(tags), strict=False):
            counts.setdefault(s.label, Counter())[detokenize(tokens[s.start : s.end])] += 1
    return {t: [m for m, _ in c.most_common(per_type)] for t, c in sorted(counts.items())}


def mention_lexicon(token_rows: Sequence[Sequence[str]], tag_rows: Sequence[Sequence[str]], *, min_count: int = 3,
                    min_rate: float = 0.9) -> dict[str, str]:
    """Entity texts the split tags consistently: lower-cased text (tokens joined by spaces) -> type, for texts used at
    least ``min_count`` times and tagged as that one type in at least ``min_rate`` of their uses (IOB2 tags; a use
    inside a longer entity is not counted). Input of :class:`Checker`'s ``known_mention`` rule: a generated
    sentence that leaves "hemolytic anemia" untagged contradicts how NCBI-disease annotates it."""
    tagged: dict[tuple[str, ...], Counter[str]] = {}
    spans_of = []
    for tokens, tags in zip(token_rows, tag_rows):
        spans = tags_to_spans(list(tags), strict=False)
        spans_of.append(spans)
        for s in spans:
            tagged.setdefault(tuple(str(t).lower() for t in tokens[s.start : s.end]), Counter())[s.label] += 1
    lengths = sorted({len(m) for m in tagged})
    uses: Counter[tuple[str, ...]] = Counter()
    for tokens, spans in zip(token_rows, spans_of):
        low = [str(t).lower() for t in tokens]
        exact = {(s.start, s.end) for s in spans}
        for n in lengths:
            for i in range(len(low) - n + 1):
                m = tuple(low[i : i + n])
                if m in tagged and ((i, i + n) in exact or not any(
                        s.start <= i and i + n <= s.end and s.end - s.start > n for s in spans)):
                    uses[m] += 1
    out = {}
    for m, labels in tagged.items():
        label, count = labels.most_common(1)[0]
        if uses[m] >= min_count and count >= min_rate * uses[m] and any(c.isalpha() for c in "".join(m)):
            out[" ".join(m)] = label
    return dict(sorted(out.items()))


def splits_hyphens(token_rows: Sequence[Sequence[str]]) -> bool:
    """Whether the corpus writes hyphens as tokens of their own ("Prader - Willi", NCBI-disease) rather than inside
    words ("state-of-the-art", SciERC): the generated sentences are tokenized the same way, so their near-copy check
    and their tokens match the data they join."""
    alone = inside = 0
    for tokens in token_rows:
        for i, t in enumerate(tokens):
            if t == "-" and 0 < i < len(tokens) - 1 and str(tokens[i - 1])[-1:].isalnum() and str(tokens[i + 1])[:1].isalnum():
                alone += 1
            elif "-" in t[1:-1]:
                inside += 1
    return alone > inside


def head_statistics(token_rows: Sequence[Sequence[str]], tag_rows: Sequence[Sequence[str]], *,
                    min_count: int = 5) -> tuple[dict[str, dict[str, int]], dict[str, int]]:
    """Per type, how often each word ends one of its mentions; and how often each word used at least ``min_count``
    times outside any entity is so used (IOB2 tags; case kept, so the "A" of "hemophilia A" is not the article
    "a"). Inputs of :class:`Checker`'s ``atypical_head`` rule."""
    heads: dict[str, Counter[str]] = {}
    outside: Counter[str] = Counter()
    for tokens, tags in zip(token_rows, tag_rows):
        for s in tags_to_spans(list(tags), strict=False):
            heads.setdefault(s.label, Counter())[str(tokens[s.end - 1])] += 1
        outside.update(str(t) for t, g in zip(tokens, tags) if g == "O" and any(c.isalpha() for c in str(t)))
    return ({t: dict(sorted(h.items())) for t, h in sorted(heads.items())},
            {w: c for w, c in sorted(outside.items()) if c >= min_count})


def _letterless(text: str) -> bool:
    return not any(c.isalpha() for c in text)


def _lowercase(text: str) -> bool:
    return any(c.isalpha() for c in text) and not any(c.isupper() for c in text)


def _seed_mentions(seed: Seed) -> set[tuple[tuple[str, ...], str]]:
    """The seed's own annotation: (lower-cased mention words, type) for each of its entities."""
    return {(tuple(t.lower() for t in seed.tokens[s.start : s.end]), s.label) for s in seed.spans}


def _sentence_breaks(toks: Sequence[str]) -> list[int]:
    """Indices of tokens ending a sentence that another follows ("... word . Next")."""
    return [i for i in range(1, len(toks) - 1)
            if toks[i] in (".", "!", "?") and toks[i - 1].isalpha() and toks[i - 1].islower() and len(toks[i - 1]) > 2
            and toks[i + 1][:1].isupper() and toks[i + 1].isalpha()]


def _subsequence(needle: Sequence[str], hay: Sequence[str]) -> bool:
    it = iter(hay)
    return all(x in it for x in needle)


def _ngram_loop(tokens: Sequence[str]) -> bool:
    """A generation loop: a 4-word phrase three times, or an 8-word phrase twice. (A 4-word phrase twice is
    ordinary prose, "the matrices in M ... the matrices in M" in SciERC: see ``benchmarks/checker_gold.py``.)"""
    words = [t.lower() for t in tokens if any(c.isalnum() for c in t)]
    for n, times in ((4, 3), (8, 2)):
        grams = Counter(tuple(words[i : i + n]) for i in range(len(words) - n + 1))
        if any(c >= times for c in grams.values()):
            return True
    return False


@dataclass(frozen=True)
class Checker:
    """The deterministic quality floor every generated sentence must pass before any judge sees it.

    Args:
        types: the dataset's entity types.
        max_entity_len: per type, the longest entity (in tokens) the seed split shows; longer ones are rejected.
        near_copy_ratio: token-sequence similarity to the seed at or above which a sentence is a near copy.
        min_tokens: shortest acceptable sentence.
        min_context: fewest tokens outside entities (a bare entity or a list of entities is no training sentence).
        heads, context_words: split statistics (see :func:`head_statistics`): per type, how often each word (case
            kept) ends a mention of it, and how often the split uses each common word outside any entity. A
            generated entity whose last (or only) word the split uses outside entities, and as the end of a
            mention of that type in under ``atypical_share`` of its uses, is rejected (``atypical_head``:
            "Rb tumor suppressor gene" as a Disease in NCBI-disease, where "gene" almost never ends a Disease
            mention; "BRCA1" alone, which the split uses 221 times outside entities and never as a Disease). A
            capitalized word the split never shows is judged by its lowercase form. An entity with no letter at all
            is rejected where under ``atypical_share`` of the type's mentions end in a letterless word
            (``no_letters``: "93 %" as a Disease), and one with no capital letter where under ``atypical_share`` of
            them end in a word without one (``lowercase_name``: "compliance" as FIN's PER).
        salvage: repair instead of reject where the fix is certain and local: untag an entity rejected as
            ``atypical_head``, ``no_letters``, ``lowercase_name`` or ``tagged_seed_context`` (the evidence says the
            text is not of that type, so the row is right with it untagged), tag an untagged text of the
            ``lexicon``, and keep one of several sentences (the one with most entities). Each repair is listed in the candidate's ``salvaged``;
            the row must still pass every rule afterwards.
        lexicon: entity texts the split tags consistently (see :func:`mention_lexicon`); one left untagged in a
            generated sentence is rejected (``known_mention``), or tagged under ``salvage``, unless the seed's own
            annotation leaves it untagged; a name (every word capitalized) of it tagged as another type is rejected
            (``known_mention_type``), unless the seed's own annotation types it so.
        split_hyphens: the split writes hyphens as tokens of their own (see :func:`splits_hyphens`); generated
            sentences are decoded the same way.
    """

    types: tuple[str, ...]
    max_entity_len: Mapping[str, int] = field(default_factory=dict)
    near_copy_ratio: float = 0.85
    min_tokens: int = 4
    min_context: int = 3
    heads: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    context_words: Mapping[str, int] = field(default_factory=dict)
    atypical_share: float = 0.05
    atypical_min_outside: int = 10
    salvage: bool = False
    split_hyphens: bool = False
    lexicon: Mapping[str, str] = field(default_factory=dict)

    def _never_tagged(self, word: str, label: str) -> bool:
        """Whether the split never ends a ``label`` mention with ``word`` (so a bare type name is a placeholder);
        without split statistics, a bare type name counts as one (SciERC's "method" as Generic needs the split)."""
        return not any(h.lower() == word for h in self.heads.get(label, {}))

    def _atypical(self, head: str, label: str) -> bool:
        """Whether the split uses ``head`` outside entities (at least ``atypical_min_outside`` times) and as the last
        word of a ``label`` mention in under ``atypical_share`` of those uses (no statistics: never atypical). The
        floor keeps rare words out of the rule; ``benchmarks/checker_gold.py --atypical-min-outside N`` measures
        what a floor rejects of the gold test sentences."""
        head = self._stats_form(head)
        outside = self.context_words.get(head, 0)
        as_head = self.heads.get(label, {}).get(head, 0)
        return (outside >= self.atypical_min_outside and label in self.heads
                and as_head < self.atypical_share * (as_head + outside))

    def _stats_form(self, word: str) -> str:
        """The form whose statistics speak for ``word``: itself, or for a capitalized word the split never shows
        (statistics are case-kept, and "Study" opening a generated sentence may be rare in the split) its lowercase
        form. A capitalized word the split does show keeps its own counts (FIN tags "Lender" as PER, not "lender")."""
        if word in self.context_words or any(word in h for h in self.heads.values()):
            return word
        rest = word[1:]  # "Study", not "I" (a Roman numeral in FIN's "Venture I"), not "BRCA1"
        return word.lower() if word[:1].isupper() and rest.isalpha() and rest.islower() else word

    def _rarely(self, label: str, shape: Callable[[str], bool]) -> bool:
        """Whether under ``atypical_share`` of the split's ``label`` mentions (among at least 50) end in a word of
        ``shape``: :func:`_letterless` (then "93 %" as a Disease is not one; FIN's LOC, addresses ending in
        postcodes, is left alone) or :func:`_lowercase` (a name type, FIN's PER and ORG, where "compliance" as a PER
        is not one unless the split ends such a mention with that word, as "bank"; NCBI-disease's Disease and
        SciERC's types, common nouns, are left alone)."""
        heads = self.heads.get(label, {})
        total = sum(heads.values())
        return total >= 50 and sum(c for h, c in heads.items() if shape(h)) < self.atypical_share * total

    def _not_of_type(self, cand: Candidate, seed: Seed) -> tuple[Span, str, str] | None:
        """The first entity that the split's statistics (``atypical_head``) or the seed's own annotation
        (``tagged_seed_context``) say is not of its type, with the rule and the evidence."""
        toks, low, spans = cand.tokens, [t.lower() for t in cand.tokens], tags_to_spans(cand.tags)
        gold = _seed_mentions(seed)
        for s in spans:
            if (tuple(low[s.start : s.end]), s.label) in gold:  # the seed's own annotation says it is one
                continue
            text = " ".join(toks[s.start : s.end])
            if _letterless(text) and self._rarely(s.label, _letterless):
                return s, "no_letters", (f"{text!r} has no letter; under {self.atypical_share:.0%} of the split's "
                                         f"{s.label} mentions end in a word without one")
            if _lowercase(text) and self._rarely(s.label, _lowercase) and not self.heads[s.label].get(toks[s.end - 1]):
                # (a lowercase word the split itself ends such a mention with passes: FIN tags "lender" as PER twice)
                return s, "lowercase_name", (f"{text!r} has no capital letter; under {self.atypical_share:.0%} of the "
                                             f"split's {s.label} mentions end in a word without one")
            head = toks[s.end - 1]
            if self._atypical(head, s.label):  # a one-word entity is its own head ("BRCA1" as a Disease)
                form = self._stats_form(head)
                shown = f"{head!r}" + (f" (as {form!r})" if form != head else "")
                return s, "atypical_head", (f"{text!r}: {shown} ends {self.heads[s.label].get(form, 0)} {s.label} "
                                            f"mention(s) in the split and is used {self.context_words[form]} times "
                                            "outside entities")
        seed_low, seed_o = [t.lower() for t in seed.tokens], [g == "O" for g in seed.tags]
        for s in spans:
            m = low[s.start : s.end]
            if not any(c.isalpha() for c in "".join(m)):
                continue
            # the seed's untagged context, word for word or with up to 2 words dropped from inside it ("N -
            # acetylgalactosamine - 6 - sulfatase" from the seed's untagged "... - 6 - sulfate sulfatase")
            for i in range(len(seed_low) - len(m) + 1):
                for w in range(len(m), len(m) + 3 if len(m) > 1 else len(m) + 1):
                    win = seed_low[i : i + w]
                    if len(win) == w and all(seed_o[i : i + w]) and win[0] == m[0] and win[-1] == m[-1] and _subsequence(m, win):
                        return s, "tagged_seed_context", (f"{' '.join(toks[s.start : s.end])!r} is untagged context in "
                                                          "the seed sentence")
        return None

    def _known_untagged(self, cand: Candidate, seed: Seed) -> Span | None:
        """The first (longest) text of the lexicon that the sentence leaves untagged, as the span it should be."""
        if not self.lexicon:
            return None
        low, taken = [t.lower() for t in cand.tokens], {i for s in tags_to_spans(cand.tags) for i in range(s.start, s.end)}
        for n in range(min(len(low), 8), 0, -1):
            for i in range(len(low) - n + 1):
                text = " ".join(low[i : i + n])
                label = self.lexicon.get(text)
                if label and not any(j in taken for j in range(i, i + n)) and label in self.types:
                    probe = Candidate(raw=None, tokens=cand.tokens, tags=spans_to_tags([Span(i, i + n, label)], len(low)))
                    if self._not_of_type(probe, seed) is None:  # the seed's own annotation wins
                        return Span(i, i + n, label)
        return None

    def _salvage(self, cand: Candidate, seed: Seed) -> None:
        """Deterministic repairs (``salvage=True``), each recorded in ``cand.salvaged``: of several sentences keep the
        one with the most entities; untag every entity :meth:`_not_of_type` flags (the rest of the row stays), unless
        its head word typically ends mentions of another type (then it may be a mistyped entity and is left for
        the checks to reject); tag every known mention left untagged."""
        toks, tags = cand.tokens, cand.tags
        cuts = _sentence_breaks(toks)
        if cuts:
            bounds = list(zip([0, *(c + 1 for c in cuts)], [c + 1 for c in cuts] + [len(toks)]))
            spans = tags_to_spans(tags)
            if not any(a < s.start < b < s.end for s in spans for a, b in bounds):  # no entity crosses a break
                a, b = max(bounds, key=lambda ab: (sum(ab[0] <= s.start < ab[1] for s in spans), -ab[0]))
                cand.tokens, cand.tags = toks[a:b], tags[a:b]
                cand.salvaged.append(f"several_sentences: kept sentence {bounds.index((a, b)) + 1} of {len(bounds)}")
        while bad := self._not_of_type(cand, seed):
            s, rule, detail = bad
            head = cand.tokens[s.end - 1]
            if rule == "atypical_head" and any(not self._atypical(head, t) for t in self.heads if t != s.label):
                break  # maybe an entity of another type ("natural language processing" as Material): untagging
                # it would teach that it is no entity, so the row is rejected instead
            if rule == "no_letters" and any(not self._rarely(t, _letterless) for t in self.heads if t != s.label):
                break  # another type does have number-only mentions (a LOC's postcode): maybe just mistyped
            if rule == "lowercase_name" and any(self.heads[t].get(head) for t in self.heads if t != s.label):
                break  # the word ends mentions of another type ("lender" as ORG; FIN tags it PER): maybe mistyped
            cand.tags = cand.tags[: s.start] + ["O"] * (s.end - s.start) + cand.tags[s.end :]
            cand.salvaged.append(f"{rule}: untagged {' '.join(cand.tokens[s.start : s.end])!r} ({detail})")
        while known := self._known_untagged(cand, seed):
            cand.tags = spans_to_tags([*tags_to_spans(cand.tags), known], len(cand.tokens))
            cand.salvaged.append(f"known_mention: tagged {' '.join(cand.tokens[known.start : known.end])!r} as "
                                 f"{known.label} (the split tags it so)")

    def check(self, cand: Candidate, seed: Seed, accepted: Sequence[Candidate], *, forbid_seed_entities: bool) -> Candidate:
        """Reject ``cand`` (in place) with the first failed rule; ``accepted`` are its already-kept siblings."""
        if not cand.ok:
            return cand
        if self.salvage:
            self._salvage(cand, seed)
        toks, low = cand.tokens, [t.lower() for t in cand.tokens]
        spans = tags_to_spans(cand.tags)
        if len(toks) < self.min_tokens:
            return cand.reject("too_short", f"{len(toks)} tokens")
        if seed.spans and not spans:
            return cand.reject("no_entity", "the seed has entities but this sentence tags none")
        garbled = next((t for t in toks if "\ufffd" in t), None)
        if garbled is not None and not any("\ufffd" in t for t in seed.tokens):
            # a lone half of a surrogate pair in the answer (see _clean_surrogates), or a byte the model mangled
            return cand.reject("garbled", f"{garbled!r} holds U+FFFD, the mark of a character lost in decoding")
        names = {t.lower() for t in self.types}
        for i in range(len(low) - 2):
            if low[i] in ("<", "[", "{") and low[i + 1] in names and low[i + 2] in (">", "]", "}"):
                return cand.reject("placeholder", f"{' '.join(toks[i : i + 3])!r} is a placeholder, not text")
        for s in spans:
            bare = "".join(low[s.start : s.end])
            if bare.strip("<>[]{}") in names and (bare != bare.strip("<>[]{}") or self._never_tagged(bare, s.label)):
                return cand.reject("placeholder", f"entity {' '.join(toks[s.start : s.end])!r} is a type name")
        cut = _sentence_breaks(toks)
        if cut:
            return cand.reject("several_sentences", f"a sentence ends at token {cut[0]} and another begins")
        context = len(toks) - sum(s.end - s.start for s in spans)
        if context < self.min_context:
            return cand.reject("no_context", f"only {context} token(s) outside the entities")
        bad = self._not_of_type(cand, seed)
        if bad:
            return cand.reject(bad[1], bad[2])
        seed_typed = _seed_mentions(seed)
        for s in spans:  # "Jonathan Medved , a company" tagged ORG, where FIN tags "Jonathan Medved" PER
            known = self.lexicon.get(" ".join(low[s.start : s.end]))
            # names only (every word capitalized): a common noun's type shifts with its use ("machine translation"
            # is a Task or a Method in SciERC), a name's does not
            name = all(t[:1].isupper() for t in toks[s.start : s.end] if t[:1].isalpha())
            if known and known != s.label and name and (tuple(low[s.start : s.end]), s.label) not in seed_typed:
                return cand.reject("known_mention_type", f"{' '.join(toks[s.start : s.end])!r} is tagged {s.label} "
                                   f"but the split tags it as {known}")
        for s in spans:
            limit = self.max_entity_len.get(s.label)
            if limit and s.end - s.start > limit:
                return cand.reject("entity_too_long", f"{s.label} of {s.end - s.start} tokens (seed split max {limit})")
        taken = {i for s in spans for i in range(s.start, s.end)}
        own = {tuple(low[s.start : s.end]) for s in spans}
        mentions = own | {tuple(t.lower() for t in seed.tokens[s.start : s.end]) for s in seed.spans}
        for m in mentions:
            for i in range(len(low) - len(m) + 1):
                if tuple(low[i : i + len(m)]) == m and not all(j in taken for j in range(i, i + len(m))):
                    if m not in own and len(m) == 1 and (toks[i] in self.context_words or low[i] in self.context_words):
                        continue  # a seed's one-word mention the split often leaves untagged ("it" as Generic)
                    return cand.reject("untagged_mention", f"{' '.join(toks[i : i + len(m)])!r} is an entity "
                                       "elsewhere but is not tagged here")
        known = self._known_untagged(cand, seed)
        if known:
            return cand.reject("known_mention", f"{' '.join(toks[known.start : known.end])!r} is left untagged but the "
                               f"split tags it as {known.label}")
        if forbid_seed_entities:
            seed_ents = {tuple(t.lower() for t in seed.tokens[s.start : s.end]) for s in seed.spans}
            reused = [" ".join(low[s.start : s.end]) for s in spans if tuple(low[s.start : s.end]) in seed_ents]
            if reused:
                return cand.reject("seed_entity_reused", f"reuses {reused[0]!r}")
        seed_low = [t.lower() for t in seed.tokens]
        if low == seed_low or difflib.SequenceMatcher(a=seed_low, b=low).ratio() >= self.near_copy_ratio:
            return cand.reject("near_copy_of_seed", "too similar to the seed sentence")
        if _ngram_loop(toks):
            return cand.reject("looping", "a phrase repeats (4 words three times, or 8 words twice)")
        for a, b in itertools.pairwise(spans):  # "David Fischer and David Fischer will repay ..." (the 1.5B, FIN)
            # joined by "and"/"or"/"&" only: "New York , New York" (city, state) is a FIN address
            if low[a.start : a.end] == low[b.start : b.end] and low[a.end : b.start] in (["and"], ["or"], ["&"]):
                return cand.reject("self_coordinated", f"{' '.join(toks[a.start : b.end])!r} coordinates an entity "
                                   "with itself")
        if any(low == [t.lower() for t in other.tokens] for other in accepted):
            return cand.reject("duplicate", "same as another output for this seed")
        return cand
