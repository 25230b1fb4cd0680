"""What the stages of one run share: the :class:`Run` (configuration, call seam, checker, system prompts, and the
writing of tagged sentences) and the :class:`Step` the scheduler runs for each seed."""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .._exceptions import ParseError
from ..calls import Caller, Partial
from ..checking import Checker, decode_sentence
from ..checking.rules import LOOPING
from ..config import AugmentConfig
from ..messages import Messages, build_messages
from ..records import Candidate, Seed, SeedResult
from ..schemas import sentences_schema

__all__ = ["Each", "Run", "Step", "scripted_sentences", "squeeze", "valid"]


@dataclass(frozen=True)
class Step:
    """One pass of a stage: ``run(r)`` for every live seed of a group (a group stage's: ``run(rs, each)`` over the
    group, :class:`Each` the scheduler's pass).

    Attributes:
        name: the stage's name, which prefixes the seed's failure (``"guidance: ParseError: ..."``).
        label: the progress bar's label.
    """

    name: str
    label: str
    run: Callable[..., Awaitable[None]]


class Each(Protocol):
    """The scheduler's pass (:meth:`hf_rgda.pipeline.Pipeline.each`): run ``step`` on the live seeds of ``rs``;
    with ``soft``, an error is a note on the seed instead of its failure. Returns the seeds a soft step stopped."""

    def __call__(self, rs: Sequence[SeedResult], step: Step, *, soft: bool = False) -> Awaitable[set[SeedResult]]: ...


@dataclass
class Run:
    """What every stage of one run shares.

    Attributes:
        systems: the system prompt of each declared stage that has one (:func:`.registry.system_prompts`).
        memo: what a stage reads once and keeps across the batches of one augmenter, under its name (the sense
            gate's threshold): the split's reference sentences are read once, not once a batch.
    """

    config: AugmentConfig
    caller: Caller
    checker: Checker
    systems: Mapping[str, str]
    memo: dict[str, Any]

    def messages(self, stage: str, **sections: Any) -> Messages:
        """``stage``'s system prompt and a user message of these sections."""
        return build_messages(self.systems[stage], **sections)

    async def write(self, r: SeedResult, stage: str, messages: Messages, n: int, *, salt: object = "",
                    keep: Sequence[Candidate] = (), new_entities: bool = True,
                    shown: Sequence[Seed] = ()) -> tuple[list[Candidate], str]:
        """Ask ``stage`` for ``n`` tagged sentences and put each through the checker.

        Args:
            keep: sentences already kept, which the new ones must not repeat.
            new_entities: the stage asks for new entities (the checker rejects the seed's own); False for the seed
                generation, which writes new versions of the seed.
            shown: other sentences of the dataset the messages show (the composer's example item): a near copy of
                one is rejected as of the seed.

        Returns:
            The new sentences (those the checker kept first, then the rejected, each with its reason; every
            rejection is also recorded on ``r``) and the answer's text.
        """
        schema = sentences_schema(self.checker.types, n, self.config.representation)
        data, raw = await self.caller.ask(r, stage, messages, schema, salt=salt, partial="sentences")
        out = self._check_all(r, stage, data, n, keep, new_entities, shown)
        if isinstance(data, Partial) and len(data["sentences"]) < n:
            cut = Candidate(raw=data.cut_off)
            if data.looped:
                cut.reject("looping", f"{LOOPING}; the answer stopped inside it")
            elif data.copied:
                cut.reject("duplicate", "the answer stopped inside this sentence, which copies an earlier one of the "
                                        "same answer word for word")
            else:
                cut.reject("cut_off", f"the answer broke off inside this sentence (max_tokens is {self.config.max_tokens})")
            r.rejected.append((stage, cut))
            out.append(cut)
        elif len(data["sentences"]) < n:  # fewer sentences than asked for (none at all, say): a visible rejection
            short = Candidate(raw=raw[:2000]).reject(
                "missing", f"the answer held {len(data['sentences'])} of the {n} sentences asked for")
            r.rejected.append((stage, short))
            out.append(short)
        return out, raw

    def _check_all(self, r: SeedResult, stage: str, data: Any, n: int, keep: Sequence[Candidate],
                   new_entities: bool, shown: Sequence[Seed]) -> list[Candidate]:
        items = data.get("sentences") if isinstance(data, dict) else None
        if not isinstance(items, list):
            raise ParseError("answer has no 'sentences' list", raw=json.dumps(data)[:2000])
        kept: list[Candidate] = list(keep)
        out: list[Candidate] = []
        for item in items[:n]:
            cand = decode_sentence(item, self.checker.types, self.config.representation,
                                   style=self.checker.token_style, salvage=self.config.salvage)
            self.checker.check(cand, r.seed, kept, forbid_seed_entities=new_entities, shown=shown)
            (kept if cand.ok else out).append(cand)
            if not cand.ok:
                r.rejected.append((stage, cand))
        return kept[len(keep):] + out


def scripted_sentences(world: Any, messages: Any, schema: Any, params: Any) -> Any:
    """A writing stage's answer in the scripted world: as many new sentences as the schema asks."""
    return world.write(schema)


def valid(r: SeedResult) -> list[Candidate]:
    """The seed's accepted sentences that passed the checker."""
    return [c for c in r.accepted if c.ok]


def squeeze(text: str) -> str:
    """``text`` lower-cased without whitespace: how two guides, sentences or entity texts are compared."""
    return _SPACE("", text).lower()


_SPACE = re.compile(r"\s+").sub
