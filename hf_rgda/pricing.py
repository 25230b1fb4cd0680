"""Token prices and cost reports from counted usage.

Prices are US dollars per million tokens, from a dated table that a user overrides or extends with a JSON file
(``hf-rgda augment --prices FILE``, or ``$HF_RGDA_PRICES``) or a dict
(``{"openai:gpt-5.5": {"input": .., "output": .., "cached_input": ..}}``). A model missing from the table is
"unpriced" (its dollars are None, never $0) and the report says so; nothing is guessed.

Where the built-in prices come from: each entry carries the date and the page it was read from (``Price.source``;
``docs/providers.md`` lists them). The installed SDKs carry no prices. The entries of 2025-06-01 are from the
providers' price pages of that day; the models of :data:`hf_rgda.llm.EXAMPLE_MODELS` (the README's examples) were
added on 2026-11-26 from the official pages that the maintained price map ``genai-prices`` 0.2.3 (pydantic) cites,
and cross-checked with it. That package is not a dependency: it needs Python 3.11 (this package supports 3.10), and a
price map that moves with an installed version would make a run's reported cost depend on the environment. Short
prompts only: GPT-5.5 bills prompts over 272K tokens at higher rates, which this table does not model, and
Anthropic's cache writes (1.25x input) are counted at the input price.

Example:
    >>> table = PriceTable.default()
    >>> p = table.lookup({"backend": "openai", "model": "gpt-4o-mini"})
    >>> round(p.cost(prompt_tokens=1_000_000, completion_tokens=0), 2)
    0.15
    >>> table.lookup({"backend": "local", "model": "x.gguf"}).known
    False
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._exceptions import ConfigError

__all__ = ["PRICES_AS_OF", "Price", "PriceTable", "cost_report", "format_cost", "load_prices", "usd"]

#: the date of the newest built-in price; each entry carries its own (``Price.source``): check before relying on them
PRICES_AS_OF = "2026-11-26"

_OLD = "2025-06-01, the provider's price page"
_OPENAI = "2026-11-26, https://developers.openai.com/api/docs/pricing (prompts up to 272K tokens)"
_ANTHROPIC = "2026-11-26, https://platform.claude.com/docs/en/about-claude/pricing"
_GEMINI = ("2026-11-26, https://ai.google.dev/gemini-api/docs/pricing (introductory rate until 2026-12-31; from "
           "2027-01-01 $1.50 / $7.50 / $0.15)")

# $ per 1M tokens: input, output, cached input (prompt-cache reads), and where and when the price was read
_DEFAULT: dict[str, tuple[float, float, float, str]] = {
    "openai:gpt-5.5": (5.00, 30.00, 0.50, _OPENAI),
    "anthropic:claude-sonnet-5-5": (2.00, 10.00, 0.10, _ANTHROPIC),
    "gemini:gemini-3.8-flash": (0.75, 3.75, 0.075, _GEMINI),
    "openai:gpt-4o": (2.50, 10.00, 1.25, _OLD),
    "openai:gpt-4o-mini": (0.15, 0.60, 0.075, _OLD),
    "openai:gpt-4.1": (2.00, 8.00, 0.50, _OLD),
    "openai:gpt-4.1-mini": (0.40, 1.60, 0.10, _OLD),
    "gemini:gemini-2.5-flash": (0.30, 2.50, 0.075, _OLD),
    "gemini:gemini-2.5-pro": (1.25, 10.00, 0.31, _OLD),
    "gemini:gemini-2.0-flash": (0.10, 0.40, 0.025, _OLD),
}


@dataclass(frozen=True)
class Price:
    """Dollars per million tokens for one model; ``known=False`` marks a zero price for a model not in the table."""

    input: float = 0.0
    output: float = 0.0
    cached_input: float = 0.0
    known: bool = True
    source: str = ""

    def cost(self, *, prompt_tokens: int, completion_tokens: int, cached_tokens: int = 0) -> float:
        """Dollars for the given counts; ``cached_tokens`` are the part of ``prompt_tokens`` read from a prompt cache."""
        fresh = max(0, prompt_tokens - cached_tokens)
        return (fresh * self.input + cached_tokens * self.cached_input + completion_tokens * self.output) / 1e6


class PriceTable:
    """``"backend:model"`` -> :class:`Price`.

    Args:
        prices: entries as ``{"input": .., "output": .., "cached_input": ..}`` (``cached_input`` defaults to ``input``).
        as_of: the date the prices are from, shown in reports.
    """

    def __init__(self, prices: Mapping[str, Mapping[str, float]], *, as_of: str = "") -> None:
        self.as_of = as_of
        self.prices: dict[str, Price] = {}
        for name, entry in prices.items():
            try:
                inp, out = float(entry["input"]), float(entry["output"])
            except (KeyError, TypeError, ValueError) as err:
                raise ConfigError(f"price of {name!r}: need numeric 'input' and 'output' ($ per 1M tokens)") from err
            self.prices[name] = Price(inp, out, float(entry.get("cached_input", inp)),
                                      source=str(entry.get("source") or as_of or "user"))

    @classmethod
    def default(cls) -> PriceTable:
        """The built-in table, updated with ``$HF_RGDA_PRICES`` (a JSON file) when set."""
        table = cls({k: {"input": i, "output": o, "cached_input": c, "source": src}
                     for k, (i, o, c, src) in _DEFAULT.items()}, as_of=PRICES_AS_OF)
        env = os.environ.get("HF_RGDA_PRICES")
        return table.updated(load_prices(env)) if env else table

    def updated(self, other: PriceTable) -> PriceTable:
        """A copy with ``other``'s entries replacing or adding to this table's."""
        new = PriceTable({})
        new.as_of, new.prices = self.as_of, {**self.prices, **other.prices}
        return new

    def lookup(self, identity: Mapping[str, Any]) -> Price:
        """The price of a backend identity (``{"backend": ..., "model": ...}``); zero and ``known=False`` if absent."""
        name = f"{identity.get('backend')}:{identity.get('model')}"
        return self.prices.get(name, Price(known=False))


def load_prices(path: str | os.PathLike[str]) -> PriceTable:
    """Read a JSON price file: ``{"backend:model": {"input": .., "output": .., "cached_input": ..}}``."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as err:
        raise ConfigError(f"price file {path}: {err}") from err
    if not isinstance(data, dict):
        raise ConfigError(f"price file {path}: expected an object of 'backend:model' entries")
    return PriceTable(data, as_of=f"file {Path(path).name}")


def cost_report(stage_usage: Mapping[str, Mapping[str, int]], identity: Mapping[str, Any],
                table: PriceTable | None = None) -> dict[str, Any]:
    """Cost per stage (and judge round) from counted usage.

    Args:
        stage_usage: ``{stage: {"calls", "prompt_tokens", "completion_tokens", "cached_tokens"}}`` as in
            :meth:`hf_rgda.summary.RunSummary.to_dict`; only calls actually paid are counted there.
        identity: the backend identity (``llm.identity()``).
        table: prices; the default table when None.
    """
    table = table or PriceTable.default()
    price = table.lookup(identity)
    rows, total = {}, 0.0
    for stage, u in sorted(stage_usage.items()):
        c = price.cost(prompt_tokens=u.get("prompt_tokens", 0), completion_tokens=u.get("completion_tokens", 0),
                       cached_tokens=u.get("cached_tokens", 0))
        rows[stage] = {**u, "usd": round(c, 6) if price.known else None}
        total += c
    model = f"{identity.get('backend')}:{identity.get('model') or identity.get('name')}"
    note = (f"prices of {model} as of {price.source}" if price.known else
            f"{model} has no price in the table (as of {table.as_of}): unpriced, not $0; pass a price file "
            "(--prices) to set one")
    return {"model": model, "priced": price.known, "usd": round(total, 6) if price.known else None, "note": note,
            "price_per_million": {"input": price.input, "output": price.output, "cached_input": price.cached_input},
            "by_stage": rows}


def usd(amount: float | None) -> str:
    """Dollars as the reports print them; ``"unpriced"`` for a model the table has no price for."""
    return "unpriced" if amount is None else f"${amount:.6f}"


def format_cost(report: Mapping[str, Any]) -> str:
    """Terminal lines for a :func:`cost_report`."""
    lines = [f"cost: {usd(report['usd'])}  ({report['note']})"]
    for stage, r in report["by_stage"].items():
        lines.append(f"  {stage:<28} calls {r.get('calls', 0):>4}  in {r.get('prompt_tokens', 0):>8}  "
                     f"cached {r.get('cached_tokens', 0):>7}  out {r.get('completion_tokens', 0):>7}  {usd(r['usd'])}")
    return "\n".join(lines)
