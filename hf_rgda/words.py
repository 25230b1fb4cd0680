"""The stop-word list, in one place: the words that carry a sentence's structure rather than its content.

:data:`STOP_WORDS` is what EDA (``baselines.py``) never edits; :data:`FUNCTION_WORDS` adds question words,
quantifiers and auxiliaries, and is what WHERE (``attribution.py``) never chooses to replace.

Example:
    >>> "the" in STOP_WORDS and "would" in FUNCTION_WORDS and "would" not in STOP_WORDS
    True
"""

from __future__ import annotations

__all__ = ["FUNCTION_WORDS", "STOP_WORDS"]

#: articles, prepositions, conjunctions, pronouns, forms of "be", negation
STOP_WORDS = frozenset([
    "a", "an", "the", "of", "in", "on", "at", "to", "for", "from", "by", "with", "and", "or", "but", "is", "are", "was",
    "were", "be", "been", "being", "this", "that", "these", "those", "it", "its", "as", "into", "than", "then",
    "there", "their", "they", "we", "our", "you", "your", "he", "she", "his", "her", "not", "no"])

#: the stop words, plus "nor", question and relative words, quantifiers, modal and auxiliary verbs
FUNCTION_WORDS = STOP_WORDS | frozenset([
    "nor", "if", "when", "while", "which", "who", "whom", "whose", "what", "where", "how", "all", "any", "both", "each",
    "such", "also", "only", "can", "could", "may", "might", "must", "shall", "should", "will", "would", "has", "have",
    "had", "do", "does", "did"])
