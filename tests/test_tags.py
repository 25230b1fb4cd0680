from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hf_rgda import SchemaError
from hf_rgda.tags import (
    SCHEMES,
    Span,
    convert_tags,
    entity_types,
    label_names,
    spans_to_tags,
    tags_to_spans,
    tokenize,
    validate_tags,
)


@st.composite
def spans_and_length(draw: st.DrawFn) -> tuple[list[Span], int]:
    length = draw(st.integers(0, 25))
    spans, pos = [], 0
    while pos < length:
        pos += draw(st.integers(0, 3))
        size = draw(st.integers(1, 4))
        if pos + size > length:
            break
        spans.append(Span(pos, pos + size, draw(st.sampled_from(["PER", "LOC", "Disease"]))))
        pos += size
    return spans, length


@pytest.mark.parametrize("scheme", [s for s in SCHEMES if s != "IO"])
@given(case=spans_and_length())
def test_round_trip_every_scheme(scheme: str, case: tuple[list[Span], int]) -> None:
    spans, length = case
    tags = spans_to_tags(spans, length, scheme)
    assert tags_to_spans(tags, scheme) == spans
    assert convert_tags(convert_tags(tags, scheme, "IOB2"), "IOB2", scheme) == tags


@given(case=spans_and_length())
def test_io_round_trip_merges_only_adjacent_same_type(case: tuple[list[Span], int]) -> None:
    spans, length = case
    decoded = tags_to_spans(spans_to_tags(spans, length, "IO"), "IO")
    covered = lambda ss: {(i, s.label) for s in ss for i in range(s.start, s.end)}
    assert covered(decoded) == covered(spans)
    assert len(decoded) <= len(spans)


@pytest.mark.parametrize(("tags", "scheme", "message"), [
    (["I-PER", "O"], "IOB2", "does not continue"),
    (["B-PER", "I-LOC"], "IOB2", "does not continue"),
    (["B-PER", "O"], "BIOES", "never closed"),
    (["E-PER"], "BIOES", "closes no open entity"),
    (["B-PER"], "IOB1", "must directly follow"),
    (["X-PER"], "IOB2", "not part of IOB2"),
    (["BPER"], "IOB2", "malformed tag"),
])
def test_invalid_sequences_name_the_position(tags: list[str], scheme: str, message: str) -> None:
    with pytest.raises(SchemaError, match=message):
        tags_to_spans(tags, scheme)


def test_lenient_mode_opens_entity_on_stray_inside() -> None:
    assert tags_to_spans(["O", "I-PER", "I-PER"], strict=False) == [Span(1, 3, "PER")]


def test_iob1_uses_b_only_between_adjacent_same_type() -> None:
    tags = spans_to_tags([Span(0, 1, "PER"), Span(1, 2, "PER"), Span(3, 4, "LOC")], 4, "IOB1")
    assert tags == ["I-PER", "B-PER", "O", "I-LOC"]


def test_validate_tags_checks_label_set_and_lengths() -> None:
    assert validate_tags(["a", "b"], ["B-PER", "O"], ["PER"]) == [Span(0, 1, "PER")]
    with pytest.raises(SchemaError, match="not in the label set"):
        validate_tags(["a"], ["B-Effect"], ["PER"])
    with pytest.raises(SchemaError, match="2 tokens but 1 tags"):
        validate_tags(["a", "b"], ["O"], ["PER"])
    with pytest.raises(SchemaError, match="empty sentence"):
        validate_tags([], [], ["PER"])
    with pytest.raises(SchemaError, match="token 1 is empty"):
        validate_tags(["a", " "], ["O", "O"], ["PER"])


def test_label_helpers() -> None:
    assert entity_types(["O", "B-PER", "I-PER", "B-LOC"]) == ["PER", "LOC"]
    assert label_names(["PER"], "BILOU") == ["O", "B-PER", "I-PER", "L-PER", "U-PER"]


def test_tokenize_keeps_hyphenated_words() -> None:
    assert tokenize("BRCA1-linked breast cancer (BC).") == ["BRCA1-linked", "breast", "cancer", "(", "BC", ")", "."]
