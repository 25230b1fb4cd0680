"""The question the entity verifier asks about one tagged entity, and the categories it offers (pure: no call).

``In this sentence, "X" is:`` followed by lettered options (:func:`question`), in this order:

1. the asked type, always ``A``;
2. the dataset's other types (in a multi-type dataset, the contrasts that matter most);
3. contrast categories ("confusers"): by default the categories of the asked type's domain group (:data:`GROUPS`)
   that no type of the dataset stands for: a Disease is set against a gene or protein, a chemical, drug or molecule,
   and a body part, cell or tissue; a one-type dataset whose type no group knows gets :data:`FALLBACK`. A user's own
   list (``confusers=``) replaces these defaults;
4. :data:`BOUNDARY`: a span cut from a name or running past it;
5. :data:`ORDINARY`: "an ordinary word or phrase, not a name", always, last.

A type is described by the user's ``type_descriptions``, else by its group's text (``Disease``: "the name of a
disease, disorder or syndrome"), else as "a <type> (an entity type of this dataset)".

Why the asked type is always ``A`` and the options are never shuffled: small models prefer some letters over
others (position bias). With the asked type first, that preference is one offset shared by every question, which
a threshold measured on the same layout (``benchmarks/calibration.py`` asks exactly these questions) absorbs. A
shuffle, even a deterministic one, turns it into noise that differs from entity to entity: no threshold can undo
it, and it lowers the ranking of good over bad entities (AUROC). The issue's probe measured its AUROC of 0.93 with
the asked type first.

Example:
    >>> q = question("BRCA1", "Disease", ["Disease"])
    >>> print(q.text())
    In this sentence, "BRCA1" is:
    A) the name of a disease, disorder or syndrome
    B) the name of a gene or protein
    C) a chemical, drug or molecule
    D) a body part, cell or tissue
    E) only part of a name, or a name together with words that do not belong to it
    F) an ordinary word or phrase, not a name
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .._exceptions import ConfigError

__all__ = ["BOUNDARY", "FALLBACK", "GROUPS", "ORDINARY", "Category", "Option", "Question", "check_questions", "describe",
           "question"]

ORDINARY = "an ordinary word or phrase, not a name"
BOUNDARY = "only part of a name, or a name together with words that do not belong to it"
#: the kinds of option after the asked type; the verifier untags an entity only when the most likely is one of
#: ``UNTAGGABLE`` (see :mod:`.verify`)
KINDS = ("asked", "type", "confuser", "boundary", "ordinary")
UNTAGGABLE = ("confuser", "ordinary")


@dataclass(frozen=True)
class Category:
    """A category of common entity types: how an option describes it, and the type names that stand for it
    (lower case, letters only: ``"Gene_or_gene_product"`` is ``"geneorgeneproduct"``)."""

    text: str
    names: frozenset[str]


def _category(text: str, *names: str) -> Category:
    return Category(text, frozenset(names))


#: domain groups of common types: a type's default contrasts are the other categories of its group
GROUPS: tuple[tuple[Category, ...], ...] = (
    (_category("the name of a disease, disorder or syndrome", "disease", "diseases", "disorder", "diseaseordisorder"),
     _category("the name of a gene or protein", "gene", "genes", "protein", "geneorprotein", "geneorgeneproduct"),
     _category("a chemical, drug or molecule", "chemical", "chemicals", "drug", "compound", "chemicalordrug"),
     _category("a body part, cell or tissue", "anatomy", "bodypart", "cell", "celltype", "tissue", "organ")),
    (_category("the name of a person", "per", "person", "people"),
     _category("the name of an organization, such as a company or an institution", "org", "organization",
               "organisation", "company"),
     _category("the name of a place", "loc", "location", "gpe", "place"),
     _category("a name of another kind, such as an event, a product, a nationality or a law", "misc",
               "miscellaneous")),
    (_category("a task or problem that research addresses", "task"),
     _category("a method, model, algorithm or system", "method"),
     _category("an evaluation metric or measure", "metric"),
     _category("a dataset, corpus or other material", "material"),
     _category("another scientific term, such as a phenomenon, a feature or a resource", "otherscientificterm"),
     _category('a general term that refers to a method, task or system, such as "this approach"', "generic")),
)
#: the contrasts of a one-type dataset whose type no group knows
FALLBACK = ("the name of a person, organization or place", "a number, date or quantity")


@dataclass(frozen=True)
class Option:
    """One lettered option: its text and its kind (one of :data:`KINDS`)."""

    text: str
    kind: str


@dataclass(frozen=True)
class Question:
    """The question about one entity; the asked type's option is the first (``"A"``)."""

    entity: str
    options: tuple[Option, ...]

    @property
    def letters(self) -> tuple[str, ...]:
        return tuple(string.ascii_uppercase[: len(self.options)])

    def text(self) -> str:
        """The question as the user message shows it, after the sentence."""
        lines = [f'In this sentence, "{self.entity}" is:']
        return "\n".join(lines + [f"{letter}) {o.text}" for letter, o in zip(self.letters, self.options)])

    def alternative(self, probs: Mapping[str, float]) -> Option:
        """The most likely option other than the asked type (the first of equals)."""
        best = max(range(1, len(self.options)), key=lambda i: (probs.get(self.letters[i], 0.0), -i))
        return self.options[best]


def _name(entity_type: str) -> str:
    return re.sub(r"[^a-z]", "", entity_type.lower())


def _group(entity_type: str) -> tuple[tuple[Category, ...], Category] | None:
    name = _name(entity_type)
    return next(((g, c) for g in GROUPS for c in g if name in c.names), None)


def describe(entity_type: str, descriptions: Mapping[str, str] | None = None) -> str:
    """How an option describes ``entity_type``: the user's description, its group's text, or its name."""
    if descriptions and descriptions.get(entity_type):
        return descriptions[entity_type]
    found = _group(entity_type)
    if found is not None:
        return found[1].text
    spaced = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", entity_type).replace("_", " ")
    return f"a {spaced} (an entity type of this dataset)"


def default_confusers(asked: str, types: Sequence[str]) -> list[str]:
    """The contrast categories of ``asked`` in a dataset of ``types`` when the user gives none."""
    found = _group(asked)
    if found is None:
        return list(FALLBACK) if len(set(types) | {asked}) == 1 else []
    covered = {_name(t) for t in (*types, asked)}
    return [c.text for c in found[0] if not c.names & covered]


def question(entity: str, asked: str, types: Sequence[str], descriptions: Mapping[str, str] | None = None,
             confusers: Sequence[str] | None = None) -> Question:
    """The question about ``entity`` tagged ``asked`` (see the module docstring for the options' order).

    Args:
        asked: the entity's type; it may be one the dataset lacks (the calibration presents a Disease as a Gene).
        types: the dataset's entity types.
        descriptions: ``{type: description}`` (``type_descriptions``).
        confusers: contrast categories instead of :func:`default_confusers`.

    Raises:
        ConfigError: more than 26 options.
    """
    first = describe(asked, descriptions)
    kinds = {first: "asked"}
    for text, kind in [*((describe(t, descriptions), "type") for t in types if t != asked),
                       *((c, "confuser") for c in (default_confusers(asked, types) if confusers is None else confusers)),
                       (BOUNDARY, "boundary"), (ORDINARY, "ordinary")]:
        kinds.setdefault(text, kind)
    if len(kinds) > len(string.ascii_uppercase):
        raise ConfigError(f"{len(types)} entity types: the entity verifier's question about a {asked} would have "
                          f"{len(kinds)} options, at most 26 can be lettered; turn the verifier off "
                          "(verify_entities=False, --no-verify-entities) or give fewer confusers")
    return Question(entity, tuple(Option(text, kind) for text, kind in kinds.items()))


def check_questions(types: Sequence[str], descriptions: Mapping[str, str] | None = None,
                    confusers: Sequence[str] | None = None) -> None:
    """Build the question about each of ``types`` once, so that one the letters cannot hold stops a run before its
    first call (not after the generation was paid for).

    Raises:
        ConfigError: a question would have more than 26 options.
    """
    for asked in types:
        question("x", asked, types, descriptions, confusers)
