"""Tokens as the data writes them: the token shapes a split keeps whole (URLs, @handles, #hashtags, decimals, hyphens,
clitics), learned from its tokens or chosen by the user, and generated rows cut the same way."""

from __future__ import annotations

import re
from typing import Any, ClassVar

import pytest
from datasets import Dataset

from hf_rgda import AugmentConfig, ConfigError, RGDAAugmenter, ScriptedLLM
from hf_rgda.checking import SplitStats, decode_sentence
from hf_rgda.checking.stats import whole_shapes
from hf_rgda.tags import TOKEN_SHAPES, TokenStyle, tokenize
from hf_rgda.testing import FakeWorld

ALL = TokenStyle.parse("url+handle+hashtag+decimal+hyphen+ptb_clitic")


@pytest.mark.parametrize(("shape", "text", "whole", "pieces"), [
    ("url", "see http://t.co/abc12.", ["see", "http://t.co/abc12", "."],
     ["see", "http", ":", "/", "/", "t", ".", "co", "/", "abc12", "."]),
    ("url", "at www.example.org/a?b=1 today", ["at", "www.example.org/a?b=1", "today"],
     ["at", "www", ".", "example", ".", "org", "/", "a", "?", "b", "=", "1", "today"]),
    ("handle", "thanks @YourROWYSOdate !", ["thanks", "@YourROWYSOdate", "!"], ["thanks", "@", "YourROWYSOdate", "!"]),
    ("hashtag", "go #UKFirst now", ["go", "#UKFirst", "now"], ["go", "#", "UKFirst", "now"]),
    ("decimal", "rose 3.5 % to 1,000 units", ["rose", "3.5", "%", "to", "1,000", "units"],
     ["rose", "3", ".", "5", "%", "to", "1", ",", "000", "units"]),
    ("hyphen", "an X-linked trait", ["an", "X-linked", "trait"], ["an", "X", "-", "linked", "trait"]),
    ("clitic", "Huntington's disease", ["Huntington's", "disease"], ["Huntington", "'", "s", "disease"]),
    ("ptb_clitic", "Huntington's disease isn't", ["Huntington", "'s", "disease", "is", "n't"],
     ["Huntington", "'", "s", "disease", "isn", "'", "t"]),
])
def test_each_shape_is_one_token_when_kept_whole_and_pieces_otherwise(shape: str, text: str, whole: list[str],
                                                                        pieces: list[str]) -> None:
    assert shape in TOKEN_SHAPES
    assert tokenize(text, style=TokenStyle.of([shape])) == whole
    assert tokenize(text, style=TokenStyle.pieces()) == pieces


def test_the_default_styles_are_the_old_tokenizers() -> None:
    """TokenStyle() is tokenize's default and TokenStyle.pieces() its split_hyphens=True, regex for regex: the
    tokenization of NCBI-style and SciERC-style data does not change unless a split shows other shapes."""
    assert TokenStyle().pattern.pattern == r"-[LR][RSC]B-|\w+(?:[-'’]\w+)*|[^\w\s]"
    assert TokenStyle.pieces().pattern.pattern == r"-[LR][RSC]B-|\w+|[^\w\s]"
    text = "The APC-linked (GSK-3beta) tumour's 3.5-fold rise -LRB- see http://x.org -RRB- @a #b don't."
    assert tokenize(text) == tokenize(text, style=TokenStyle())
    assert tokenize(text, split_hyphens=True) == tokenize(text, style=TokenStyle.pieces())


def test_every_shape_together() -> None:
    text = "RT @ana: #UK FIRST DIRECT ARENA rated 4.5 by fans http://t.co/Xy9. It's a well-known venue."
    assert tokenize(text, style=ALL) == ["RT", "@ana", ":", "#UK", "FIRST", "DIRECT", "ARENA", "rated", "4.5", "by",
                                         "fans", "http://t.co/Xy9", ".", "It", "'s", "a", "well-known", "venue", "."]


def test_a_style_is_read_from_text_and_bad_names_are_config_errors() -> None:
    assert str(TokenStyle.parse("hashtag+url")) == "url+hashtag" and str(TokenStyle.pieces()) == "none"
    assert TokenStyle.parse("none") == TokenStyle.pieces()
    assert AugmentConfig(tokenizer="url+handle").token_style == TokenStyle(("url", "handle"))
    assert AugmentConfig().token_style is None  # "auto": the split's own
    with pytest.raises(ConfigError, match="unknown token shape"):
        AugmentConfig(tokenizer="url+emoji")
    with pytest.raises(ConfigError, match="exclude each other"):
        AugmentConfig(tokenizer="clitic+ptb_clitic")


# ---------------------------------------------------------------- learned from the split
SOCIAL = [  # a social-media split that keeps URLs, handles, hashtags and decimals whole
    (["@ana", "loved", "the", "gig", "in", "Leeds", "http://t.co/a1", "#live"], ["O"] * 5 + ["B-LOC", "O", "O"]),
    (["@bo", "rated", "York", "4.5", "stars", "#travel", "http://t.co/b2"], ["O", "O", "B-LOC", "O", "O", "O", "O"]),
    (["Rain", "again", "in", "Bath", ",", "2.5", "inches", "@cy", "#uk"], ["O", "O", "O", "B-LOC", "O", "O", "O", "O", "O"]),
]
NCBI = [  # a biomedical split that writes hyphens, decimals and apostrophes as tokens of their own
    (["Prader", "-", "Willi", "syndrome", "in", "3", ".", "5", "%", "of", "cases", "."],
     ["B-Disease", "I-Disease", "I-Disease", "I-Disease"] + ["O"] * 8),
    (["The", "APC", "-", "linked", "tumour", "'", "s", "growth", "(", "1", ".", "2", "fold", ")", "."],
     ["O"] * 4 + ["B-Disease"] + ["O"] * 10),
]


def test_the_splits_shapes_are_learned_from_its_tokens() -> None:
    social = SplitStats.from_split([t for t, _ in SOCIAL], [g for _, g in SOCIAL])
    assert social.whole_tokens == ("url", "handle", "hashtag", "decimal")
    assert social.token_style == TokenStyle(("url", "handle", "hashtag", "decimal", "hyphen", "clitic"))
    ncbi = SplitStats.from_split([t for t, _ in NCBI], [g for _, g in NCBI])
    assert ncbi.whole_tokens == () and ncbi.split_hyphens and ncbi.token_style == TokenStyle.pieces()
    assert SplitStats().token_style == TokenStyle()  # no statistics: tokenize's default
    # SciERC writes "'s" and "n't" as tokens of their own, and decimals whole
    scierc = [["the", "model", "'s", "accuracy", "of", "87.2", "does", "n't", "drop"], ["a", "rate", "of", "0.25", "'s"]]
    assert whole_shapes(scierc) == ("decimal", "ptb_clitic")
    assert SplitStats.from_split(scierc, [["O"] * len(r) for r in scierc]).token_style == TokenStyle(
        ("decimal", "hyphen", "ptb_clitic"))
    # one whole token is no evidence; more pieces than whole ones keep the pieces
    assert whole_shapes([["see", "http://t.co/a"]]) == ()
    assert whole_shapes([["@a", "@b", "@", "c", "@", "d", "@", "e"]]) == ()


def test_a_row_is_decoded_the_splits_way() -> None:
    item = {"text": "@ana loved York 4.5 stars http://t.co/Xy9 #travel", "entities": [{"text": "York", "type": "LOC"}]}
    social = SplitStats.from_split([t for t, _ in SOCIAL], [g for _, g in SOCIAL]).token_style
    c = decode_sentence(item, ["LOC"], style=social)
    assert c.tokens == ["@ana", "loved", "York", "4.5", "stars", "http://t.co/Xy9", "#travel"]
    assert c.tags == ["O", "O", "B-LOC", "O", "O", "O", "O"]
    entity = {"text": "Look at @ana 's photo", "entities": [{"text": "@ana", "type": "PER"}]}  # an entity that is a handle
    assert decode_sentence(entity, ["PER"], style=TokenStyle.parse("handle+ptb_clitic")).tags == [
        "O", "O", "B-PER", "O", "O"]


class Social(FakeWorld):
    """The scripted world writing tweets: a handle, a decimal, a URL and a hashtag in every sentence."""

    CITIES: ClassVar[list[str]] = ["Derby", "Ely", "Hull", "Ripon", "Truro", "Wells", "Exeter", "Durham", "Salford", "Preston", "Lincoln"]
    WORDS: ClassVar[list[str]] = ["adored", "reviewed", "skipped", "visited", "praised", "missed", "filmed", "mapped", "toured", "left"]

    def sentence(self) -> dict[str, Any]:
        i = next(self.counter)
        city, word = self.CITIES[i % len(self.CITIES)], self.WORDS[i % len(self.WORDS)]
        text = f"@fan{i} {word} {city} and gave it {i}.5 stars http://t.co/q{i}z #trip{i} today"
        return {"text": text, "entities": [{"text": city, "type": "LOC"}]}


def _rows(split: list[tuple[list[str], list[str]]], **options: Any) -> list[list[str]]:
    ds = Dataset.from_dict({"tokens": [t for t, _ in split], "ner_tags": [g for _, g in split]})
    aug = RGDAAugmenter.from_dataset(ds, llm=ScriptedLLM(Social()), method="gda", cache=False, **options)
    out = ds.map(aug, batched=True, load_from_cache_file=False)
    return [r["tokens"] for r in out if r["rgda_status"] == "accepted"]


def test_generated_rows_keep_the_shapes_the_split_keeps_whole() -> None:
    rows = _rows(SOCIAL)
    assert rows
    for tokens in rows:
        assert sum(bool(re.fullmatch(r"@fan\d+", t)) for t in tokens) == 1
        assert sum(bool(re.fullmatch(r"http://t\.co/q\d+z", t)) for t in tokens) == 1
        assert sum(bool(re.fullmatch(r"#trip\d+", t)) for t in tokens) == 1
        assert sum(bool(re.fullmatch(r"\d+\.5", t)) for t in tokens) == 1
        assert "http" not in tokens and "@" not in tokens and "#" not in tokens


def test_on_a_split_that_splits_them_the_rows_are_split_too_and_the_user_may_choose() -> None:
    rows = _rows(NCBI + [(["Bath", "flooded", "in", "2", ".", "5", "hours", "."], ["B-LOC"] + ["O"] * 7)])
    assert rows and all("@" in t and "#" in t and "http" in t and "." in t for t in rows)
    chosen = _rows(NCBI + [(["Bath", "flooded", "in", "2", ".", "5", "hours", "."], ["B-LOC"] + ["O"] * 7)],
                   tokenizer="url+hashtag")
    assert chosen and all("@" in t and any(x.startswith("http://") for x in t) and "#" not in t for t in chosen)
