"""Token prices and cost reports from counted usage.

Prices are US dollars per million tokens, from a dated table that a user overrides or extends with a JSON file
(``hf-rgda augment --prices FILE``, or ``$HF_RGDA_PRICES``) or a dict
(``{"openai:gpt-5.5": {"input": .., "output": .., "cached_input": ..}}``). A model missing from the table is priced
at zero and the report says so; nothing is guessed.

Where the built-in prices come from: the providers' public price pages on :data:`PRICES_AS_OF`. The installed SDKs
(openai 3.54, anthropic 2.12, google-genai 3.4) carry no prices. On 2026-11-23 the table was checked against them:
the models the anthropic SDK lists as past their end-of-life (Claude 3.7 Sonnet, Claude 3.5 Haiku, Claude Sonnet 4)
were removed, the models they still list kept at their 2025-06-01 prices; newer models (e.g. the ones in
:data:`hf_rgda.llm.EXAMPLE_MODELS`) have no built-in price: give theirs in a price file.

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

__all__ = ["PRICES_AS_OF", "Price", "PriceTable", "cost_report", "format_cost", "load_prices"]

#: the date the built-in list prices were taken from the providers' public price pages; check before relying on them
#: (the list of models was last checked against the installed SDKs on 2026-11-23)
PRICES_AS_OF = "2025-06-01"

# $ per 1M tokens: input, output, cached input (prompt-cache reads)
_DEFAULT: dict[str, tuple[float, float, float]] = {
    "openai:gpt-4o": (2.50, 10.00, 1.25),
    "openai:gpt-4o-mini": (0.15, 0.60, 0.075),
    "openai:gpt-4.1": (2.00, 8.00, 0.50),
    "openai:gpt-4.1-mini": (0.40, 1.60, 0.10),
    "gemini:gemini-2.5-flash": (0.30, 2.50, 0.075),
    "gemini:gemini-2.5-pro": (1.25, 10.00, 0.31),
    "gemini:gemini-2.0-flash": (0.10, 0.40, 0.025),
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
            self.prices[name] = Price(inp, out, float(entry.get("cached_input", inp)), source=as_of or "user")

    @classmethod
    def default(cls) -> PriceTable:
        """The built-in table, updated with ``$HF_RGDA_PRICES`` (a JSON file) when set."""
        table = cls({k: {"input": i, "output": o, "cached_input": c} for k, (i, o, c) in _DEFAULT.items()},
                    as_of=PRICES_AS_OF)
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


def cost_report(usage_by_stage: Mapping[str, Mapping[str, int]], identity: Mapping[str, Any],
                table: PriceTable | None = None) -> dict[str, Any]:
    """Cost per stage (and judge round) from counted usage.

    Args:
        usage_by_stage: ``{stage: {"calls", "prompt_tokens", "completion_tokens", "cached_tokens"}}`` as in
            :meth:`hf_rgda.summary.RunSummary.to_dict`; only calls actually paid are counted there.
        identity: the backend identity (``llm.identity()``).
        table: prices; the default table when None.
    """
    table = table or PriceTable.default()
    price = table.lookup(identity)
    rows, total = {}, 0.0
    for stage, u in sorted(usage_by_stage.items()):
        c = price.cost(prompt_tokens=u.get("prompt_tokens", 0), completion_tokens=u.get("completion_tokens", 0),
                       cached_tokens=u.get("cached_tokens", 0))
        rows[stage] = {**u, "usd": round(c, 6)}
        total += c
    model = f"{identity.get('backend')}:{identity.get('model') or identity.get('name')}"
    note = (f"prices of {model} as of {price.source}" if price.known else
            f"{model} has no price in the table (as of {table.as_of}): counted as $0; pass a price file to set one")
    return {"model": model, "priced": price.known, "usd": round(total, 6), "note": note,
            "price_per_million": {"input": price.input, "output": price.output, "cached_input": price.cached_input},
            "by_stage": rows}


def format_cost(report: Mapping[str, Any]) -> str:
    """Terminal lines for a :func:`cost_report`."""
    lines = [f"cost: ${report['usd']:.6f}  ({report['note']})"]
    for stage, r in report["by_stage"].items():
        lines.append(f"  {stage:<28} calls {r.get('calls', 0):>4}  in {r.get('prompt_tokens', 0):>8}  "
                     f"cached {r.get('cached_tokens', 0):>7}  out {r.get('completion_tokens', 0):>7}  ${r['usd']:.6f}")
    return "\n".join(lines)
