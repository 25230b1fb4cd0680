"""Configuration of an augmentation run: one frozen dataclass, validated on construction.

Every field carries ``help`` metadata; the CLI builds its options from them.

Example:
    >>> cfg = AugmentConfig(method="gda", num_augmented=2)
    >>> cfg.uses_gr, cfg.uses_ac
    (False, False)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import Field, asdict, dataclass, field, fields, replace
from numbers import Integral, Real
from typing import Any

from ._exceptions import ConfigError, SchemaError
from .tags import TokenStyle

__all__ = ["DEFAULT_LLM", "METHODS", "REPRESENTATIONS", "AugmentConfig", "DebateConfig"]

DEFAULT_LLM = "local:Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
METHODS = ("naive", "gda", "rgda", "rgda-no-gr", "rgda-no-ac", "biorda")
REPRESENTATIONS = ("auto", "entities", "segments", "inline")
SCHEDULES = ("stage", "row")
JUDGE_READINGS = ("auto", "probability", "sample")


#: the debate has this many reviewer personas (see hf_rgda.stages.panel.PERSONAS)
MAX_DEBATE_AGENTS = 5


@dataclass(frozen=True)
class DebateConfig:
    """Debate size and acceptance.

    Attributes:
        agents: panel size (1 = self-review).
        sigma: mean reviewer score (0-100) a proposal needs, for verdicts sampled whole.
        max_rounds: Advise/Reflect(/Revise) rounds at most.
        reading: ``"sample"`` (each reviewer samples one verdict on all items, with remarks) or ``"probability"``
            (one 1-5 rating question per reviewer, item and criterion, read from logprobs: :mod:`hf_rgda.stages.rating`;
            remarks are sampled only for the items a revision follows).
        probability_sigma: the mean reviewer score a proposal needs when the verdicts are read by probability.
    """

    agents: int = 3
    sigma: int = 80
    max_rounds: int = 3
    reading: str = "sample"
    probability_sigma: int = 50

    def __post_init__(self) -> None:
        if not 1 <= self.agents <= MAX_DEBATE_AGENTS:
            raise ConfigError(f"debate agents={self.agents} must be between 1 and {MAX_DEBATE_AGENTS}")
        if not 0 <= self.sigma <= 100:
            raise ConfigError(f"debate sigma={self.sigma} must be between 0 and 100")
        if self.max_rounds < 1:
            raise ConfigError(f"debate max_rounds={self.max_rounds} must be at least 1")
        if self.reading not in ("sample", "probability"):
            raise ConfigError(f"debate reading={self.reading!r} must be 'sample' or 'probability'")
        if not 0 <= self.probability_sigma <= 100:
            raise ConfigError(f"debate probability_sigma={self.probability_sigma} must be between 0 and 100")

    @property
    def threshold(self) -> int:
        """The mean reviewer score an item needs under this reading."""
        return self.probability_sigma if self.reading == "probability" else self.sigma



def is_flag(f: Field[Any]) -> bool:
    """Whether an option is on or off (``bool``, or ``bool | None`` with ``type=bool``): the command line writes it
    as ``--x`` / ``--no-x``."""
    return f.type in ("bool", bool) or f.metadata.get("type") is bool


def _f(default: Any, help: str, **kw: Any) -> Any:
    """An option: its default, its help (a paragraph; white space folded) and its CLI metadata."""
    return field(default=default, metadata={"help": " ".join(help.split()), **kw})


#: the numeric options' types, as annotated: what a value of each must be (a float option takes an int: 1 is 1.0)
_NUMBERS: dict[str, type] = {"int": Integral, "float": Real}  # "int | None": an int, or None

#: each numeric option's accepted values: a test, and the words for it
_BOUNDS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "num_augmented": (lambda v: 1 <= v <= 20, "between 1 and 20"),
    "threshold": (lambda v: 0 <= v <= 100, "between 0 and 100"),
    "probability_threshold": (lambda v: 0 <= v <= 100, "between 0 and 100"),
    "max_rounds": (lambda v: v >= 1, "at least 1"),
    "max_repairs": (lambda v: v is None or v >= 0, "0 or more, or None (the backend's own)"),
    "spare_sentences": (lambda v: v is None or 0 <= v <= 10, "between 0 and 10, or None (the backend's own)"),
    "top_up": (lambda v: v is None or 0 <= v <= 5, "between 0 and 5, or None (the backend's own)"),
    "temperature": (lambda v: 0.0 <= v <= 2.0, "between 0.0 and 2.0"),
    "judge_temperature": (lambda v: 0.0 <= v <= 2.0, "between 0.0 and 2.0"),
    "near_copy_ratio": (lambda v: 0.0 < v <= 1.0, "in (0, 1]"),
    "verify_threshold": (lambda v: 0.0 <= v <= 1.0, "between 0.0 and 1.0"),
    "sense_threshold": (lambda v: 0.0 <= v < 1.0, "at least 0.0 and under 1.0"),
    "sense_quantile": (lambda v: 0.0 < v <= 0.5, "above 0.0 and at most 0.5"),
    "likely_mention_quantile": (lambda v: 0.0 <= v <= 0.5, "between 0.0 and 0.5"),
    "verify_relative": (lambda v: 0.0 <= v <= 1.0, "between 0.0 and 1.0"),
    "verify_min_mass": (lambda v: 0.0 <= v <= 1.0, "between 0.0 and 1.0"),
    "entity_hints": (lambda v: v >= 0, "0 or more"),
    "max_entity_repeats": (lambda v: v >= 0, "0 or more"),
    "attribution_top_n": (lambda v: v >= 1, "at least 1"),
}


@dataclass(frozen=True)
class AugmentConfig:
    """What to generate and how hard to check it."""

    method: str = _f("rgda", "augmentation method", choices=METHODS, group="generation")
    num_augmented: int = _f(3, "new sentences asked for per seed sentence", group="generation")
    temperature: float = _f(1.0, "sampling temperature of the generating stages (the paper uses 1.0)", group="generation")
    judge_temperature: float = _f(0.2, "sampling temperature of the GR and AC judges", group="judges")
    judge_reading: str = _f("auto", """
        how the GR and AC judges and the debate reviewers score: 'probability' asks one 1-5 question per rubric
        criterion, read as a probability-weighted mean from next-token logprobs, and asks for feedback only when a
        refinement follows; 'sample' samples one full verdict with feedback (the paper's judge); 'auto': 'probability'
        where the backend has logprobs, else 'sample'""", choices=JUDGE_READINGS, group="judges")
    threshold: int = _f(90, """
        judge score (0-100) at which a refine loop stops, for verdicts sampled whole (judge_reading 'sample'; the
        paper's 90)""", group="judges")
    probability_threshold: int = _f(50, """
        judge score (0-100) at which a refine loop stops, and the debate's sigma, for verdicts read by probability: the
        middle of the 1-5 scale (their scores are expected values; with the local 1.5B model they barely move, see
        docs/decisions/judge-reading-probability.md; calibrate your own model with hf-rgda calibrate)""",
        group="judges")
    judge_early_pass: bool = _f(True, """
        a verdict read by probability on a backend where a seed's questions asked in turn take no longer (the local
        model; a remote one with max_concurrency 1) asks its criteria one by one, the largest first, and stops once
        their points reach probability_threshold: the criteria left can only add points, so every decision is the same
        with fewer calls; such a verdict's score is the points asked (a lower bound) and the summary counts it as passed
        early. False: every criterion is asked (full scores); also turn it off with the local backend's kv_states_mb=0,
        where the seeds' questions, asked in turn, would each read their seed again""", group="judges")
    max_rounds: int = _f(3, "judge rounds per refine loop (the loop refines after every round but the last)", group="judges")
    max_repairs: int | None = _f(None, """
        targeted re-asks for sentences that fail the deterministic checks; unset: the backend's own (1 for the APIs; 0
        for the local model, whose re-asks repeat the rejected sentence's fault: docs/decisions/local-no-repairs.md)""",
        type=int, group="generation")
    spare_sentences: int | None = _f(None, """
        sentences the composer writes beyond num_augmented, so that a seed still has num_augmented rows after the gates
        drop some (the first num_augmented to pass every check are kept, those with the entities the model wrote first;
        the rest recorded as 'spare'); unset: the backend's own (1 for the local model, whose gates pass about half of
        its sentences; 0 for the APIs, which repair instead: docs/decisions/spare-sentences.md)""",
        type=int, group="generation")
    top_up: int | None = _f(None, """
        how many times at most (0-5) a seed left short of num_augmented sentences is asked again, afresh: the
        composer's request for the missing and spare sentences, sampled anew, from the second time on with another
        seed of the batch as its example item; the rule checker reads each ask's sentences before the next, the gates
        (sense, entity verification, completeness) read them all afterwards; 0 never; unset: the backend's own (2 for
        the local model, whose short seeds are mostly one bad sample; 0 for the APIs, which repair instead:
        docs/decisions/top-up.md); the guided methods (gda, rgda) only""",
        type=int, group="generation")
    seed: int = _f(0, "base random seed; every call's seed is derived from it and the call's content", group="generation")
    representation: str = _f("auto", """
        what the LLM writes: a sentence plus entity list ('entities'), typed segments ('segments'), or the sentence with
        each entity marked in place as [words](Type) ('inline': no entity can be missing from its sentence, and none is
        written twice); 'auto': the backend's own (inline for the local model: more accepted rows for fewer tokens,
        docs/decisions/inline-representation.md; entities for the APIs, whose schemas hold the entity types to the label
        set)""", choices=REPRESENTATIONS, group="generation")
    schedule: str = _f("stage", """
        'stage' runs one stage for the whole batch before the next (reuses the KV prefix); 'row' runs each seed through
        every stage first""", choices=SCHEDULES, group="generation")
    domain: str = _f("", "short description of the data's domain, e.g. 'biomedical abstracts'", group="generation")
    max_tokens: int = _f(768, "completion-token cap per LLM call", group="generation")
    tokenizer: str = _f("auto", """
        how generated sentences are cut into tokens: 'auto' as the seed split writes them (learned from its tokens:
        URLs, @handles, #hashtags and decimals such as 3.5 kept whole where the split keeps them so, hyphenated words
        and clitics ('s, n't) as it writes them; a split without such tokens keeps the old way), or the shapes to keep
        whole joined by '+', from url, handle, hashtag, decimal, hyphen, clitic (Huntington's) and ptb_clitic
        (Huntington 's), e.g. 'url+handle+hashtag+decimal+hyphen'; 'none' splits every one into pieces""",
        group="generation")
    near_copy_ratio: float = _f(0.85, """
        token-sequence similarity to the seed (or to another seed the prompt showed) at or above which a sentence is a
        near copy""", group="checks")
    max_entity_repeats: int = _f(3, """
        how often the run accepts one new entity (its text and type, not the seed's own): a later row carrying it is
        rejected (repeated_entity), so one entity string does not fill a run; counted over what the augmenter accepted
        in this process, batch after batch (not across num_proc workers), and the composer draws no entity hint among
        those used up; 0: no cap""", group="checks")
    salvage: bool = _f(True, """
        repair a generated sentence deterministically instead of rejecting it when one part is wrong: untag an entity
        the split's statistics or the seed's own annotation say is not of its type, tag a text the split always tags,
        keep the one of several sentences with the entities; each repair is recorded in rgda_reason""", group="checks")
    reject_below_threshold: bool = _f(False, "drop sentences whose final AC score is below the threshold", group="judges")
    check_mentions: bool | None = _f(None, """
        the completeness check (hf_rgda.stages.completeness): in each row that passed entity verification, up to 4
        untagged spans the split's statistics propose (and, with mention_listing, those the model lists) are asked the
        verifier's question; one it confirms (P(type) >= verify_threshold) rejects the row (untagged_mention); unset:
        the backend's own (on for the local model, whose rows leave mentions untagged, about 7 s a row; off for the
        APIs: docs/decisions/completeness.md)""", type=bool, group="checks")
    likely_mention_quantile: float = _f(0.1, """
        the checker's likely_mention rule: the split's own mention tagger (a logistic model trained on the split's
        tags when the augmenter is built from it) reads each word a row leaves untagged; a row whose most likely word
        reads above what this share of the split's own sentences reach (read out of fold) is rejected: a mention new
        to the split left untagged, found with no model call (docs/decisions/split-tagger.md); 0: off""",
        group="checks")
    mention_listing: bool = _f(False, """
        the completeness check also asks the model to list each row's mentions (one generation a row); off: only the
        spans the split's statistics propose are asked about (the listing measured worse and costs more with the 1.5B:
        docs/decisions/completeness.md)""", group="checks")
    sense_gate: bool = _f(True, """
        the sense gate (hf_rgda.sense), where the backend reads a text's token logprobs (the local model): a sentence is
        read after a few of the split's own sentences, and one whose three least likely tokens read below what
        sense_quantile of the split's sentences read is rejected (sense/implausible): garbled, looping, spliced or
        off-domain text; a prompt evaluation a row, no generation""", group="checks")
    sense_quantile: float = _f(0.1, """
        the share of the split's own sentences a row may read below and pass the sense gate (its threshold: that
        quantile of their readings)""", group="checks")
    sense_threshold: float = _f(0.0, """
        an absolute threshold for the sense gate instead of sense_quantile (the geometric mean probability of a
        sentence's three least likely tokens; `hf-rgda calibrate` measures it, scorer 'sense'); 0: the split's own""",
        group="checks")
    verify_entities: bool = _f(True, """
        ask one multiple-choice question per tagged entity of every sentence that passed the checker (its type against
        the dataset's other types, contrast categories and 'an ordinary word or phrase'), read as the probability of its
        type; below verify_threshold the entity is untagged (salvage, then the row is checked again) or its row rejected""",
        group="entity verification")
    verify_threshold: float = _f(0.25, """
        entity verification: the probability of its type an entity needs to stay tagged, at most (see verify_relative;
        0.25: measured on NCBI-disease canaries with the local 1.5B model, see docs/decisions/verify-relative.md;
        calibrate your own model with hf-rgda calibrate)""", group="entity verification")
    verify_relative: float = _f(0.5, """
        entity verification relative to the seed: the model's P(type) for the seed's own (gold) entities is read once
        per seed (one question each, asked only when an entity scores below verify_threshold), and an entity needs
        min(verify_threshold, verify_relative x that mean) to stay tagged; the P a model gives a correct entity differs
        by dataset (local 1.5B: 0.44 NCBI-disease, 0.13 SciERC, 0.22 FIN). 0: verify_threshold alone""",
        group="entity verification")
    verify_min_mass: float = _f(0.5, """
        entity verification: the share of the model's next-token probability (or of the sampled answers, without
        logprobs) that must name one of the question's options; an answer under it names no option ('The ...'), so its
        entity is unverified, never verified, and its row rejected (unanswered_entity)""", group="entity verification")
    verify_known: bool = _f(True, """
        entity verification trusts the split: an entity whose text the split tags as its type consistently (used 3 times
        or more, tagged so 9 times in 10 or more) is kept without a question; the dataset's convention outranks the
        model's everyday sense of a word (NCBI-disease tags 'tumor' in 'tumor suppressor' as Disease 17 of 17 times)""",
        group="entity verification")
    verify_split: bool = _f(False, """
        entity verification weighs the split's statistics with the model: an entity is judged by the geometric mean of
        the model's P(type) and the share of the split's uses of its last word that end a mention of its type
        (SplitStats.head_share), against the same threshold (its seed reference read the same way); with the local 1.5B,
        SciERC canaries' AUROC 0.805 -> 0.852 and, on a fresh draw, 0.780 -> 0.804; NCBI-disease and FIN within 0.004
        (docs/decisions/verify-split.md)""", group="entity verification")
    skip_entityless: bool = _f(True, "leave seeds without any entity un-augmented (small models invent entities for them)", group="checks")
    entity_hints: int = _f(6, """
        guided methods: the composer's guide shows a same-type entity from the dataset in place of each of the seed's,
        plus this many more per type as examples (0 = neither: the paper's composer, told never to reuse the seed's
        entities)""", group="guided methods")
    where: bool = _f(False, """
        guided methods: attribution (WHERE) picks the seed's words the composer must replace; needs an attribution model""",
        group="guided methods")
    attribution_top_n: int = _f(2, "words chosen for replacement per seed by the attribution selector", group="guided methods")
    debate_review: bool = _f(False, """
        guided methods: a panel of debate agents reviews every composed sentence on four criteria; the composer revises
        those below debate_sigma, which are rejected if still below after debate_rounds (rgda+debate)""",
        group="guided methods")
    debate_agents: int = _f(3, "biorda / debate_review: agents in the Advise-Reflect-Revise debate (1 = self-review)", group="guided methods")
    debate_sigma: int = _f(80, """
        biorda / debate_review: mean reviewer score (0-100) at which a proposal is accepted, for verdicts sampled whole
        (read by probability: probability_threshold)""", group="guided methods")
    debate_rounds: int = _f(3, "biorda / debate_review: debate rounds at most", group="guided methods")
    keep_originals: bool = _f(True, "emit each seed row before its augmented rows", group="output rows")
    keep_rejected: bool = _f(False, "also emit rejected and failed samples (empty tokens, reason set)", group="output rows")

    def __post_init__(self) -> None:
        if isinstance(self.top_up, bool):  # before it counted, top_up was on or off: on is once
            object.__setattr__(self, "top_up", int(self.top_up))
        for f in fields(self):
            value, kind = getattr(self, f.name), _NUMBERS.get(str(f.type).removesuffix(" | None"))
            if kind is not None and (value is not None or not str(f.type).endswith(" | None")):
                if isinstance(value, bool) or not isinstance(value, kind):
                    raise ConfigError(f"{f.name}={value!r} must be {'an integer' if kind is Integral else 'a number'}")
                if type(value) not in (int, float):  # numpy's, say: written out as JSON with the rest
                    value = int(value) if isinstance(value, Integral) else float(value)
                    object.__setattr__(self, f.name, value)
            choices = f.metadata.get("choices")
            if choices and value not in choices:
                raise ConfigError(f"{f.name}={value!r} is not valid; choose one of {', '.join(choices)}")
        for name, (ok, accepted) in _BOUNDS.items():
            if not ok(getattr(self, name)):
                raise ConfigError(f"{name}={getattr(self, name)} must be {accepted}")
        _ = self.debate  # validates the debate fields
        if self.where and self.method in ("naive", "biorda"):
            raise ConfigError(f"where=True applies to the guided methods (gda, rgda and its ablations), not {self.method!r}")
        if self.debate_review and not self.uses_guidance:
            raise ConfigError(f"debate_review=True applies to the guided methods (gda, rgda and its ablations), not "
                              f"{self.method!r} (biorda always debates)")
        if self.max_tokens < 64:
            raise ConfigError(f"max_tokens={self.max_tokens} must be at least 64")
        _ = self.token_style  # validates tokenizer

    @property
    def token_style(self) -> TokenStyle | None:
        """The tokenizer chosen (None: ``"auto"``, the split's own way).

        Raises:
            ConfigError: ``tokenizer`` names an unknown shape.
        """
        if self.tokenizer == "auto":
            return None
        try:
            return TokenStyle.parse(self.tokenizer)
        except SchemaError as err:
            raise ConfigError(f"tokenizer={self.tokenizer!r}: {err} (or 'auto', or 'none')") from None

    @property
    def uses_guidance(self) -> bool:
        """Whether the method runs the guidance and composer stages."""
        return self.method not in ("naive", "biorda")

    @property
    def uses_attribution(self) -> bool:
        """Whether the method needs the attribution selector (WHERE)."""
        return self.method == "biorda" or self.where

    @property
    def debate(self) -> DebateConfig:
        """The debate settings (WHICH)."""
        return DebateConfig(self.debate_agents, self.debate_sigma, self.debate_rounds,
                            probability_sigma=self.probability_threshold)

    @property
    def uses_gr(self) -> bool:
        """Whether the Guidance Refiner loop runs."""
        return self.method in ("rgda", "rgda-no-ac")

    @property
    def uses_ac(self) -> bool:
        """Whether the Augmentation Calibrator loop runs."""
        return self.method in ("rgda", "rgda-no-gr")

    def check_attribution(self, model: object) -> None:
        """Raise unless WHERE has its attribution model (``model``) where the method needs one.

        Raises:
            ConfigError: the method (or ``where=True``) needs an attribution model and ``model`` is none.
        """
        if self.uses_attribution and not model:
            raise ConfigError(f"method {self.method!r}{' with where=True' if self.where else ''} needs "
                              "attribution_model=<folder or Hub id> (hf_rgda.attribution.fit_seed_model trains one)")

    def for_backend(self, llm: Any) -> AugmentConfig:
        """This configuration with the backend's own values where it leaves them to the backend: ``representation``
        ``"auto"`` (its ``representation`` attribute: ``"inline"`` for the local model, ``"entities"`` otherwise) and
        ``max_repairs`` unset (its ``max_repairs``: 0 for the local model, 1 otherwise), ``spare_sentences`` unset
        (its ``spare_sentences``: 1 for the local model, 0 otherwise), ``check_mentions`` unset (the backend's: on for the
        local model, off otherwise) and ``top_up`` unset (the backend's: 2 for the local model, 0 otherwise)."""
        own: dict[str, Any] = {}
        if self.representation == "auto":
            own["representation"] = getattr(llm, "representation", "entities")
        if self.max_repairs is None:
            own["max_repairs"] = getattr(llm, "max_repairs", 1)
        if self.spare_sentences is None:
            own["spare_sentences"] = getattr(llm, "spare_sentences", 0)
        if self.check_mentions is None:
            own["check_mentions"] = getattr(llm, "check_mentions", False)
        if self.top_up is None:
            own["top_up"] = int(getattr(llm, "top_up", 0))
        return replace(self, **own) if own else self

    def threshold_for(self, verdict_method: str) -> int:
        """The refine loops' threshold for a verdict read by ``verdict_method`` (``Judgement.method``)."""
        return self.probability_threshold if verdict_method == "probability" else self.threshold

    def to_dict(self) -> dict[str, Any]:
        """Plain-dict form, for hashing, cards and summaries."""
        return asdict(self)
