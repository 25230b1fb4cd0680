"""Checking generated sentences: decoding model answers, the split's statistics, and the rule table the checker runs.

- :mod:`~hf_rgda.checking.decode`: JSON answers into tokens and IOB2 tags (:func:`decode_sentence`, :func:`parse_json`);
- :mod:`~hf_rgda.checking.stats`: :class:`SplitStats`, every statistic of the seed split, computed once;
- :mod:`~hf_rgda.checking.rules`: :data:`RULES`, the checker as an ordered table of named rule functions;
- :mod:`~hf_rgda.checking.table`: the table's rows (:class:`Rule`, with the :class:`Example` it fires on);
- :mod:`~hf_rgda.checking.checker`: :class:`Checker`, which runs the table (and its repairs, ``salvage=True``).
"""

from .checker import Checker
from .decode import complete_items, decode_sentence, parse_json
from .rules import RULES
from .stats import SplitStats, entity_inventory, entity_length_limits, entity_mentions
from .table import Example, Rule

__all__ = ["RULES", "Checker", "Example", "Rule", "SplitStats", "complete_items", "decode_sentence", "entity_inventory",
           "entity_length_limits", "entity_mentions", "parse_json"]
