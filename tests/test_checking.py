from __future__ import annotations

import pytest

from hf_rgda import ParseError
from hf_rgda.checking import RULES, Checker, Rule, SplitStats, decode_sentence, parse_json
from hf_rgda.records import Candidate, Seed
from hf_rgda.tags import detokenize, parse_inline

SEED = Seed("k", ("Germline", "mutations", "in", "BRCA1", "cause", "breast", "cancer", "."),
            ("O", "O", "O", "O", "O", "B-Disease", "I-Disease", "O"))
CHECK = Checker(("Disease",), SplitStats(max_entity_len={"Disease": 3}))


def _heads(rows: list[list[str]], tags: list[list[str]]) -> tuple[dict, dict]:
    """The split's head statistics alone (these tests leave the rest of :class:`SplitStats` empty)."""
    stats = SplitStats.from_split(rows, tags)
    return stats.heads, stats.context_words


def _splits_hyphens(rows: list[list[str]]) -> bool:
    return SplitStats.from_split(rows, [["O"] * len(r) for r in rows]).split_hyphens


def decode(text: str, *ents: tuple[str, str]) -> Candidate:
    return decode_sentence({"text": text, "entities": [{"text": t, "type": y} for t, y in ents]}, ["Disease"])


def test_entities_are_matched_back_and_every_occurrence_tagged() -> None:
    c = decode("Asthma and asthma attacks differ from gout .", ("asthma", "Disease"), ("gout", "Disease"))
    assert c.ok
    # case-insensitive: "Asthma" at the start of the sentence is the same mention; tokens keep their casing
    assert c.tags == ["B-Disease", "O", "B-Disease", "O", "O", "O", "B-Disease", "O"] and c.tokens[0] == "Asthma"


def test_entity_listed_with_other_casing_is_found() -> None:
    c = decode("The primary cause of multiple sclerosis is unknown .", ("Multiple sclerosis", "Disease"))
    assert c.ok and c.tags[4:6] == ["B-Disease", "I-Disease"] and c.tokens[4] == "multiple"


@pytest.mark.parametrize(("text", "ents"), [
    ("The <Disease> gene abnormality was associated with gout .", [("<Disease>", "Disease"), ("gout", "Disease")]),
    ("Recent studies suggest that <Disease> may drive gout in adults .", [("gout", "Disease")]),
    ("Mutations of this gene cause a disease in most adults .", [("disease", "Disease")]),
    ("The mutation may affect RNA in cells of retinoblastoma at the RNA level Disease .", [("retinoblastoma", "Disease")]),
])
def test_placeholders_and_type_names_are_not_entities(text: str, ents: list[tuple[str, str]]) -> None:
    c = decode(text, *ents)
    assert c.ok
    CHECK.check(c, SEED, [], forbid_seed_entities=True)
    assert c.reason == "placeholder"


def test_longest_entity_wins_over_contained_one() -> None:
    c = decode("Breast cancer differs from cancer of the lung .", ("cancer", "Disease"), ("Breast cancer", "Disease"))
    assert c.tags[:2] == ["B-Disease", "I-Disease"] and c.tags[4] == "B-Disease"


@pytest.mark.parametrize(("item", "reason"), [
    ({"text": "A rare disease .", "entities": [{"text": "lupus", "type": "Disease"}]}, "entity_not_in_sentence"),
    ({"text": "A case of lupus .", "entities": [{"text": "lupus", "type": "Effect"}]}, "unknown_type"),
    ({"text": "A case of lupus .", "entities": [{"text": "  ", "type": "Disease"}]}, "empty_entity"),
    ({"sentence": "no text key"}, "malformed"),
    ("just a string", "malformed"),
])
def test_bad_items_are_rejected_with_a_reason(item: object, reason: str) -> None:
    assert decode_sentence(item, ["Disease"]).reason == reason


def test_segments_representation() -> None:
    c = decode_sentence({"segments": [{"text": "Risk of", "type": "O"}, {"text": "type 2 diabetes", "type": "Disease"},
                                      {"text": "rises .", "type": "O"}]}, ["Disease"], "segments")
    assert c.tokens == ["Risk", "of", "type", "2", "diabetes", "rises", "."]
    assert c.tags == ["O", "O", "B-Disease", "I-Disease", "I-Disease", "O", "O"]


def test_inline_representation_reads_marks_where_they_stand() -> None:
    c = decode_sentence({"text": "Carriers of [Prader-Willi syndrome](Disease) and [gout](Disease) (rare) exist."},
                        ["Disease"], "inline", split_hyphens=True)
    assert c.ok and c.tokens == ["Carriers", "of", "Prader", "-", "Willi", "syndrome", "and", "gout", "(", "rare", ")",
                                 "exist", "."]
    assert c.tags == ["O", "O", "B-Disease", "I-Disease", "I-Disease", "I-Disease", "O", "B-Disease", "O", "O", "O",
                      "O", "O"]
    # brackets that are no mark stay words; a citation is text
    assert decode_sentence({"text": "As in [12], [gout](Disease) recurs."}, ["Disease"], "inline").tags[6] == "B-Disease"


@pytest.mark.parametrize(("text", "reason"), [
    ("Mutations cause [breast cancer](Effect).", "unknown_type"),
    ("Mutations cause [breast cancer](Disease .", "malformed"),
    ("Mutations cause breast cancer](Disease).", "malformed"),
    ("Mutations cause [breast cancer (Disease).", "malformed"),
    ("Mutations cause [ ](Disease).", "empty_entity"),
])
def test_inline_marks_that_are_not_marks_reject_the_sentence(text: str, reason: str) -> None:
    assert decode_sentence({"text": text}, ["Disease"], "inline").reason == reason


def test_inline_mark_of_a_type_the_dataset_lacks_is_untagged_when_salvaging() -> None:
    item = {"text": "Mutations in [BRCA1](Gene) cause [breast cancer](Disease)."}
    c = decode_sentence(item, ["Disease"], "inline", salvage=True)
    assert c.ok and c.tags == ["O", "O", "O", "O", "B-Disease", "I-Disease", "O"]
    assert c.salvaged == ["unknown_type: untagged 'BRCA1' (marked Gene)"]
    assert decode_sentence(item, ["Disease"], "inline").reason == "unknown_type"


def test_inline_bracket_without_a_type_is_an_untyped_mark_but_a_citation_stays() -> None:
    item = {"text": "[Sarcoidosis](Disease) [ is ] a condition of the lungs [ 1 ] [ IVS3 G ( - 1 ) ]."}
    c = decode_sentence(item, ["Disease"], "inline", salvage=True)
    assert c.ok and c.tokens[:3] == ["Sarcoidosis", "is", "a"] and c.tags[:2] == ["B-Disease", "O"]
    assert c.tokens[-12:-9] == ["[", "1", "]"] and c.salvaged == ["untyped_mark: untagged 'is'"]
    assert decode_sentence(item, ["Disease"], "inline").reason == "malformed"


def test_inline_type_name_alone_in_brackets_is_dropped_when_salvaging() -> None:
    """The 1.5B wrote "... retinoblastoma ... at the RNA level [Disease]." six times for one seed (profile of
    6689f5c): a label for an entity it left unmarked. Kept as a word it made every such sentence a placeholder."""
    item = {"text": "Loss of RB1 in [retinoblastoma](Disease) acts at the RNA level [Disease]."}
    c = decode_sentence(item, ["Disease"], "inline", salvage=True)
    assert c.ok and c.tokens[-3:] == ["RNA", "level", "."]
    assert "Disease" not in c.tokens and c.salvaged == ["type_label: dropped [Disease]"]
    assert c.tags[4] == "B-Disease"
    assert decode_sentence(item, ["Disease"], "inline").reason == "malformed"


def test_inline_rendering_round_trips() -> None:
    item = SEED.as_item("inline")
    assert item == {"text": "Germline mutations in BRCA1 cause [breast cancer](Disease)."}
    back = decode_sentence(item, ["Disease"], "inline")
    assert (back.tokens, back.tags) == (list(SEED.tokens), list(SEED.tags))


@pytest.mark.parametrize(("text", "ents", "reason"), [
    ("Lupus .", [("Lupus", "Disease")], "too_short"),
    ("Mutations in PTEN are frequent in tumours .", [], "no_entity"),
    ("Imbr\ufffd and colleagues traced gout through three generations .", [("gout", "Disease")], "garbled"),
    ("Mutations in PTEN cause a very long named disease here .", [("a very long named disease", "Disease")], "entity_too_long"),
    ("Variants in PTEN can lead to breast cancer in women .", [("breast cancer", "Disease")], "seed_entity_reused"),
    ("Germline mutations in BRCA1 cause lung cancer .", [("lung cancer", "Disease")], "near_copy_of_seed"),
    ("Mutations of the gene cause gout and mutations of the gene cause gout and the gene cause gout .",
     [("gout", "Disease")], "looping"),
    ("In this cohort the gene was linked to gout , and in this cohort the gene was linked to gout too .",
     [("gout", "Disease")], "looping"),
])
def test_checker_rules(text: str, ents: list[tuple[str, str]], reason: str) -> None:
    c = CHECK.check(decode(text, *ents), SEED, [], forbid_seed_entities=True)
    assert c.reason == reason, c.detail


def test_checker_accepts_good_sentence_and_rejects_duplicates() -> None:
    good = CHECK.check(decode("Inherited PTEN variants raise the risk of glioma .", ("glioma", "Disease")), SEED, [],
                       forbid_seed_entities=True)
    assert good.ok
    again = CHECK.check(decode("Inherited PTEN variants raise the risk of glioma .", ("glioma", "Disease")), SEED,
                        [good], forbid_seed_entities=True)
    assert again.reason == "duplicate"


def test_a_replacement_character_the_seed_already_has_is_not_garbling() -> None:
    """U+FFFD in a user's own seed (FIN's test split has six such rows) may be copied; only a new one is garbling."""
    seed = Seed("s", ("Mutations", "in", "Gen\ufffdve", "families", "cause", "gout", "."),
                ("O", "O", "O", "O", "O", "B-Disease", "O"))
    c = decode("Gen\ufffdve registries list many cases of hereditary lupus in children .", ("hereditary lupus", "Disease"))
    assert CHECK.check(c, seed, [], forbid_seed_entities=True).ok, c.detail


def test_a_phrase_twice_is_prose_not_a_loop() -> None:
    c = decode("Mutations of the gene were found in gout and mutations of the gene were rare in controls .",
               ("gout", "Disease"))
    assert CHECK.check(c, SEED, [], forbid_seed_entities=True).ok, c.detail


def test_a_seed_mention_the_split_often_leaves_untagged_may_stay_untagged() -> None:
    """SciERC's seeds tag "it" as Generic now and then; a new sentence need not tag every "it" (the split uses it
    untagged thousands of times), but a rarer seed mention left untagged is still rejected."""
    seed = Seed("s", ("We", "train", "it", "with", "CRF", "."), ("O", "O", "B-Generic", "O", "B-Method", "O"))
    check = Checker(("Generic", "Method"), SplitStats(context_words={"it": 4000, "with": 900}))
    ok = check.check(decode_sentence({"text": "We found that it improves parsing with HMM models .",
                                      "entities": [{"text": "HMM models", "type": "Method"}]}, ["Generic", "Method"]),
                     seed, [], forbid_seed_entities=False)
    assert ok.ok, ok.detail
    bad = check.check(decode_sentence({"text": "We found that CRF improves parsing with HMM models .",
                                       "entities": [{"text": "HMM models", "type": "Method"}]}, ["Generic", "Method"]),
                      seed, [], forbid_seed_entities=False)
    assert bad.reason == "untagged_mention" and "'CRF'" in bad.detail
    also = check.check(decode_sentence({"text": "It helps , and we found that it improves parsing with HMM models .",
                                        "entities": [{"text": "HMM models", "type": "Method"}]}, ["Generic", "Method"]),
                       seed, [], forbid_seed_entities=False)
    assert also.ok, also.detail
    # the sentence's own mentions are still tagged everywhere or nowhere
    own = Candidate(raw={}, tokens="HMM models help , and it improves parsing with HMM models .".split(),  # noqa: SIM905
                    tags=["B-Method", "I-Method"] + ["O"] * 10)
    check.check(own, seed, [], forbid_seed_entities=False)
    assert own.reason == "untagged_mention" and "'HMM models'" in own.detail


def test_seed_entity_allowed_when_not_forbidden() -> None:
    c = decode("In carriers of BRCA1 variants , breast cancer often appears early .", ("breast cancer", "Disease"))
    assert CHECK.check(c, SEED, [], forbid_seed_entities=False).ok


def test_parse_json_accepts_fences_and_rejects_garbage() -> None:
    assert parse_json('```json\n{"a": 1}\n```') == {"a": 1}
    with pytest.raises(ParseError) as info:
        parse_json("Sure! {not json")
    assert info.value.raw == "Sure! {not json"


def test_seed_rendering() -> None:
    assert SEED.text == "Germline mutations in BRCA1 cause breast cancer."
    assert SEED.entities == [{"text": "breast cancer", "type": "Disease"}]
    assert detokenize(["a", "(", "b", ")", "."]) == "a (b)."


def test_bare_entity_is_no_training_sentence() -> None:
    seed = Seed("k", ("Gout", "flares", "are", "painful", "."), ("B-Disease", "O", "O", "O", "O"))
    cand = Candidate(raw={}, tokens=["Adenomatous", "polyposis", "coli", "tumour"],
                     tags=["B-Disease", "I-Disease", "I-Disease", "I-Disease"])
    Checker(("Disease",)).check(cand, seed, [], forbid_seed_entities=True)
    assert cand.reason == "no_context"


def test_untagged_mention_of_a_known_entity_is_rejected() -> None:
    seed = Seed("k", ("Episodic", "hemolytic", "anemia", "follows", "G6PD", "deficiency", "."),
                ("B-Disease", "I-Disease", "I-Disease", "O", "B-Disease", "I-Disease", "O"))
    toks = ["Episodic", "hemolytic", "anemia", "is", "linked", "to", "inherited", "G6PD", "deficiency", "."]
    tags = ["O", "O", "O", "O", "O", "O", "O", "B-Disease", "I-Disease", "O"]
    cand = Candidate(raw={}, tokens=toks, tags=tags)
    Checker(("Disease",)).check(cand, seed, [], forbid_seed_entities=False)
    assert cand.reason == "untagged_mention" and "Episodic hemolytic anemia" in cand.detail


def test_tagging_the_seeds_own_context_as_an_entity_is_rejected() -> None:
    seed = Seed("k", ("Mutations", "alter", "poly", "(", "A", ")", "+", "RNA", "in", "myotonic", "dystrophy", "."),
                ("O",) * 9 + ("B-Disease", "I-Disease", "O"))
    toks = ["A", "novel", "mutation", "in", "the", "poly", "(", "A", ")", "+", "RNA", "triggers", "disease", "."]
    tags = ["O"] * 5 + ["B-Disease"] + ["I-Disease"] * 5 + ["O"] * 3
    cand = Candidate(raw={}, tokens=toks, tags=tags)
    Checker(("Disease",)).check(cand, seed, [], forbid_seed_entities=True)
    assert cand.reason == "tagged_seed_context"


def test_entity_ending_in_a_common_context_word_is_rejected() -> None:
    rows = [["The", "gene", "of", "breast", "cancer", "."]] * 12 + [["A", "gene", "test", "in", "Wilms", "tumor"]]
    tags = [["O", "O", "O", "B-Disease", "I-Disease", "O"]] * 12 + [["O", "O", "O", "O", "B-Disease", "I-Disease"]]
    heads, outside = _heads(rows, tags)
    assert heads == {"Disease": {"cancer": 12, "tumor": 1}} and outside["gene"] == 13 and "cancer" not in outside
    check = Checker(("Disease",), SplitStats(heads=heads, context_words=outside))
    bad = decode("Loss of the Rb tumor suppressor gene causes eye cancer .", ("Rb tumor suppressor gene", "Disease"))
    check.check(bad, SEED, [], forbid_seed_entities=True)
    assert bad.reason == "atypical_head" and "'gene' ends 0 Disease" in bad.detail
    good = decode("Loss of the Rb protein causes childhood eye cancer .", ("childhood eye cancer", "Disease"))
    one_word = decode("Loss of this gene causes retinoblastoma in most children .", ("retinoblastoma", "Disease"))
    for c in (good, one_word):
        check.check(c, SEED, [], forbid_seed_entities=True)
        assert c.ok, c.detail


def test_a_one_word_entity_the_split_uses_as_context_is_rejected() -> None:
    """A gene symbol tagged as a Disease: the split uses it outside entities and never as a Disease mention."""
    rows = [["BRCA1", "mutations", "cause", "breast", "cancer", "."]] * 12 + [["APC", "is", "rare", "in", "APC", "kin"]]
    tags = [["O", "O", "O", "B-Disease", "I-Disease", "O"]] * 12 + [["B-Disease", "O", "O", "O", "O", "O"]]
    heads, outside = _heads(rows, tags)
    check = Checker(("Disease",), SplitStats(heads=heads, context_words=outside))
    bad = decode("Loss of BRCA1 function is common in ovarian cancer .", ("BRCA1", "Disease"), ("ovarian cancer", "Disease"))
    check.check(bad, SEED, [], forbid_seed_entities=False)
    assert bad.reason == "atypical_head" and "'BRCA1' ends 0 Disease mention(s)" in bad.detail
    # a word the split also tags as a Disease, or uses too rarely outside entities to judge, is not flagged
    for item in (("APC was found in the twins studied here .", ("APC", "Disease")),
                 ("Gout was found in the twins studied here .", ("Gout", "Disease"))):
        ok = check.check(decode(*item), SEED, [], forbid_seed_entities=False)
        assert ok.ok, ok.detail


def test_two_sentences_in_one_row_are_rejected_but_abbreviations_are_not() -> None:
    two = decode("Asthma was studied in adults . The new design improves care .", ("Asthma", "Disease"))
    CHECK.check(two, SEED, [], forbid_seed_entities=True)
    assert two.reason == "several_sentences"
    one = decode("Asthma in adults ( see Fig . 2 and Dr . Smith ) was studied by the team .", ("Asthma", "Disease"))
    CHECK.check(one, SEED, [], forbid_seed_entities=True)
    assert one.ok, one.detail


def test_atypical_head_keeps_case_so_hemophilia_a_is_not_the_article() -> None:
    rows = [["a", "case", "of", "hemophilia", "A", "in", "a", "boy"]] * 3 + [["a", "b", "a", "c", "a", "d"]] * 40
    tags = [["O", "O", "O", "B-Disease", "I-Disease", "O", "O", "O"]] * 3 + [["O"] * 6] * 40
    heads, outside = _heads(rows, tags)
    check = Checker(("Disease",), SplitStats(heads=heads, context_words=outside))
    c = decode("Two cousins were found to carry hemophilia A in this study .", ("hemophilia A", "Disease"))
    check.check(c, SEED, [], forbid_seed_entities=True)
    assert c.ok, c.detail


def test_an_entity_opening_with_the_type_name_is_a_placeholder() -> None:
    """The 1.5B wrote "The discovery of new [Disease R408Q](Disease) mutations ..." (protocol200, f4b6d2f's chunk 2):
    the type name as spelled, opening an entity, where the split's mentions never open so and the seed does not
    write it; a split that opens mentions with it keeps them."""
    text = "The discovery of new Disease R408Q mutations helps ."
    c = Checker(("Disease",)).check(decode(text, ("Disease R408Q", "Disease")), SEED, [], forbid_seed_entities=True)
    assert c.reason == "placeholder" and "opens with the type name 'Disease'" in c.detail, c.detail
    opens = Checker(("Disease",), SplitStats(starts={"Disease": {"Disease": 3}}))
    assert opens.check(decode(text, ("Disease R408Q", "Disease")), SEED, [], forbid_seed_entities=True).ok
    lower = decode("The discovery of new disease R408Q mutations helps .", ("disease R408Q", "Disease"))
    assert Checker(("Disease",)).check(lower, SEED, [], forbid_seed_entities=True).ok  # not the type name as spelled


def test_a_type_name_the_split_tags_is_an_entity_not_a_placeholder() -> None:
    """SciERC tags "method" as Generic: with the split's statistics it is kept; "<Method>" never is."""
    check = Checker(("Generic", "Method"), SplitStats(heads={"Generic": {"method": 40}, "Method": {"CRF": 3}}))
    ok = decode_sentence({"text": "We propose a new method for parsing long texts .",
                          "entities": [{"text": "method", "type": "Generic"}]}, ["Generic", "Method"])
    check.check(ok, SEED, [], forbid_seed_entities=True)
    assert ok.ok, ok.detail
    bad = decode_sentence({"text": "We apply <Method> to parse long texts quickly .",
                           "entities": [{"text": "<Method>", "type": "Method"}]}, ["Generic", "Method"])
    check.check(bad, SEED, [], forbid_seed_entities=True)
    assert bad.reason == "placeholder"


def test_entity_copied_with_pre_tokenized_spacing_is_found() -> None:
    """"life - long" (copied from an NCBI-style seed) matches "life-long" in the sentence, and the other way round."""
    c = decode("Fava beans trigger life-long hemolytic anemia in carriers .", ("life - long hemolytic anemia", "Disease"))
    assert c.ok, c.detail
    assert c.tokens[3:6] == ["life-long", "hemolytic", "anemia"] and c.tags[3:6] == ["B-Disease", "I-Disease", "I-Disease"]
    back = decode("The Prader - Willi syndrome was studied in children .", ("Prader-Willi syndrome", "Disease"))
    assert back.ok and back.tags[1:5] == ["B-Disease", "I-Disease", "I-Disease", "I-Disease"]
    partial = decode("Fava beans trigger life-long anemia in carriers .", ("life - long hemolytic anemia", "Disease"))
    assert partial.reason == "entity_not_in_sentence"


def test_salvage_untags_what_the_evidence_says_is_no_entity_and_keeps_the_row() -> None:
    rows = [["The", "gene", "of", "breast", "cancer", "."]] * 12 + [["A", "gene", "test", "in", "Wilms", "tumor"]]
    tags = [["O", "O", "O", "B-Disease", "I-Disease", "O"]] * 12 + [["O", "O", "O", "O", "B-Disease", "I-Disease"]]
    heads, outside = _heads(rows, tags)
    strict = Checker(("Disease",), SplitStats(heads=heads, context_words=outside))
    lenient = Checker(("Disease",), SplitStats(heads=heads, context_words=outside), salvage=True)
    item = ("Loss of the Rb tumor suppressor gene causes retinoblastoma in children .",
            ("Rb tumor suppressor gene", "Disease"), ("retinoblastoma", "Disease"))
    rejected = strict.check(decode(*item), SEED, [], forbid_seed_entities=True)
    assert rejected.reason == "atypical_head"
    kept = lenient.check(decode(*item), SEED, [], forbid_seed_entities=True)
    assert kept.ok, kept.detail
    assert kept.tags == ["O"] * 8 + ["B-Disease"] + ["O"] * 3  # only retinoblastoma stays tagged
    assert kept.salvaged == [("atypical_head: untagged 'Rb tumor suppressor gene' ('Rb tumor suppressor gene': 'gene' "
                              "ends 0 Disease mention(s) in the split and is used 13 times outside entities)")]
    # the seed's own annotation: "BRCA1" is context in SEED, so tagging it is undone, not fatal
    ctx = lenient.check(decode("A BRCA1 variant raises the risk of gout in men .", ("BRCA1", "Disease"), ("gout", "Disease")),
                        SEED, [], forbid_seed_entities=True)
    assert ctx.ok and ctx.tags[1] == "O" and ctx.tags[7] == "B-Disease" and ctx.salvaged[0].startswith("tagged_seed_context")
    # nothing left after untagging: still rejected, for the rule the row now fails
    empty = lenient.check(decode("Loss of the Rb tumor suppressor gene was seen in mice .", ("Rb tumor suppressor gene", "Disease")),
                          SEED, [], forbid_seed_entities=True)
    assert empty.reason == "no_entity"


def test_salvage_keeps_the_sentence_with_the_entities() -> None:
    lenient = Checker(("Disease",), SplitStats(max_entity_len={"Disease": 3}), salvage=True)
    two = decode("The new design improves care . Asthma was studied in many adults .", ("Asthma", "Disease"))
    lenient.check(two, SEED, [], forbid_seed_entities=True)
    assert two.ok, two.detail
    assert two.tokens == ["Asthma", "was", "studied", "in", "many", "adults", "."] and two.tags[0] == "B-Disease"
    assert two.salvaged == ["several_sentences: kept sentence 2 of 2"]
    short = decode("Asthma was studied in adults . It helps .", ("Asthma", "Disease"))
    lenient.check(short, SEED, [], forbid_seed_entities=True)
    assert short.ok and short.tokens[-2:] == ["adults", "."]


def _inline(text: str) -> Candidate:
    return decode_sentence({"text": text}, ["Disease"], "inline")


def test_a_stutter_is_rejected_or_cut_to_one_copy() -> None:
    """Rows of the 1.5B (A/B run 12): "treating influenza influenza influenza infections", "the gene responsible
    for hypobetalipoproteinemia hypobetalipoproteinemia"."""
    strict = Checker(("Disease",), SplitStats(max_entity_len={"Disease": 3}))
    lenient = Checker(("Disease",), SplitStats(max_entity_len={"Disease": 3}), salvage=True)
    text = "Antibiotics help in treating [influenza](Disease) influenza influenza infections in children ."
    bad = strict.check(_inline(text), SEED, [], forbid_seed_entities=True)
    assert bad.reason == "stutter" and bad.detail == "'influenza' is written 3 times in a row"
    fixed = lenient.check(_inline(text), SEED, [], forbid_seed_entities=True)
    assert fixed.ok, fixed.detail
    assert fixed.tokens[3:6] == ["treating", "influenza", "infections"] and fixed.tags[4] == "B-Disease"
    assert fixed.salvaged == ["stutter: kept one of 3 copies of 'influenza'"]
    # the tags of the tagged copy, wherever it stands; an entity holding both copies keeps the first as its start
    for text in ("A gene causes hypobetalipoproteinemia [hypobetalipoproteinemia](Disease) in adult carriers .",
                 "A gene causes [hypobetalipoproteinemia hypobetalipoproteinemia](Disease) in adult carriers ."):
        assert strict.check(_inline(text), SEED, [], forbid_seed_entities=True).reason == "stutter"
        fixed = lenient.check(_inline(text), SEED, [], forbid_seed_entities=True)
        assert fixed.ok and fixed.tokens[3:5] == ["hypobetalipoproteinemia", "in"], fixed.detail
        assert fixed.tags[2:5] == ["O", "B-Disease", "O"]
    multi = lenient.check(_inline("Carriers of [cystic fibrosis](Disease) cystic fibrosis cystic fibrosis were "
                                  "studied ."), SEED, [], forbid_seed_entities=True)
    assert multi.ok and multi.tokens == ["Carriers", "of", "cystic", "fibrosis", "were", "studied", "."]
    assert multi.tags[2:4] == ["B-Disease", "I-Disease"]
    # a plain phrase twice is prose ("New York , New York" is a FIN address); so are short words and numbers
    for text in ("A holiday in New York , New York closes the banks and [gout](Disease) clinics .",
                 "The [gout](Disease) study paid $ 30 , 000 , 000 , 000 to the the clinic ."):
        ok = strict.check(_inline(text), SEED, [], forbid_seed_entities=True)
        assert ok.ok, ok.detail


def test_generated_sentences_follow_the_datasets_hyphen_convention() -> None:
    ncbi_like = [["Prader", "-", "Willi", "syndrome", "(", "PWS", ")", "."], ["a", "life", "-", "long", "anemia"]]
    scierc_like = [["a", "state-of-the-art", "parser", "."], ["non-local", "features", "-", "and", "rules"]]
    assert _splits_hyphens(ncbi_like) and not _splits_hyphens(scierc_like)
    item = {"text": "Children with Prader-Willi syndrome ( PWS ) were studied .",
            "entities": [{"text": "Prader-Willi syndrome", "type": "Disease"}, {"text": "PWS", "type": "Disease"}]}
    split = decode_sentence(item, ["Disease"], split_hyphens=True)
    assert split.tokens[2:6] == ["Prader", "-", "Willi", "syndrome"]
    assert split.tags[2:8] == ["B-Disease", "I-Disease", "I-Disease", "I-Disease", "O", "B-Disease"]
    whole = decode_sentence(item, ["Disease"])
    assert whole.tokens[2:4] == ["Prader-Willi", "syndrome"] and whole.tags[2:4] == ["B-Disease", "I-Disease"]
    # the near-copy check compares like with like: the seed's "Prader - Willi" equals the split form
    seed = Seed("k", tuple(split.tokens), tuple(split.tags))
    copy = decode_sentence(item, ["Disease"], split_hyphens=True)
    Checker(("Disease",), SplitStats(split_hyphens=True)).check(copy, seed, [], forbid_seed_entities=False)
    assert copy.reason == "near_copy_of_seed"


def test_known_mentions_left_untagged_are_rejected_or_tagged() -> None:
    rows = [["Episodes", "of", "hemolytic", "anemia", "were", "seen", "."]] * 3 + [
        ["The", "gene", "causes", "chronic", "hemolytic", "anemia", "."],  # inside a longer mention: not a use
        ["A", "study", "of", "cancer", "cells", "."], ["Breast", "cancer", "risk", "rises", "."],
        ["Cancer", "screening", "saves", "lives", "."]]
    tags = [["O", "O", "B-Disease", "I-Disease", "O", "O", "O"]] * 3 + [
        ["O", "O", "O", "B-Disease", "I-Disease", "I-Disease", "O"],
        ["O", "O", "O", "O", "O", "O"], ["B-Disease", "I-Disease", "O", "O", "O"], ["B-Disease", "O", "O", "O", "O"]]
    lexicon = SplitStats.from_split(rows, tags).lexicon
    assert lexicon["hemolytic anemia"] == "Disease"
    assert "cancer" not in lexicon  # tagged in 1 of its 2 uses outside longer mentions
    item = ("Aniridia is often linked to hemolytic anemia in adults .", ("Aniridia", "Disease"))
    strict = Checker(("Disease",), SplitStats(lexicon=lexicon))
    bad = strict.check(decode(*item), SEED, [], forbid_seed_entities=True)
    assert bad.reason == "known_mention" and "'hemolytic anemia'" in bad.detail
    fixed = Checker(("Disease",), SplitStats(lexicon=lexicon), salvage=True).check(decode(*item), SEED, [],
                                                                                 forbid_seed_entities=True)
    assert fixed.ok, fixed.detail
    assert fixed.tags == ["B-Disease", "O", "O", "O", "O", "B-Disease", "I-Disease", "O", "O", "O"]
    assert fixed.salvaged == ["known_mention: tagged 'hemolytic anemia' as Disease (the split tags it so)"]
    # the seed's own annotation wins: a seed that leaves the text untagged allows it untagged
    seed = Seed("s", ("Carriers", "of", "hemolytic", "anemia", "traits", "were", "tested", "."), ("O",) * 8)
    ok = strict.check(decode(*item), seed, [], forbid_seed_entities=True)
    assert ok.ok, ok.detail


def test_a_head_that_ends_under_five_percent_of_its_uses_as_the_type_is_atypical() -> None:
    """"immune system" as a Disease (the 1.5B on NCBI): "system" ends 2 Disease mentions of NCBI's train split and is
    used 44 times outside entities (4.3%). The share is 5% (``benchmarks/checker_gold.py --atypical-share``
    measured it: no more gold rejections on NCBI-disease and FIN, 3 more of 529 on SciERC)."""
    check = Checker(("Disease",), SplitStats(heads={"Disease": {"system": 2, "cancer": 80}},
                                             context_words={"system": 44}))
    c = check.check(decode("Defects of the immune system cause gout in older men .", ("immune system", "Disease"),
                           ("gout", "Disease")), SEED, [], forbid_seed_entities=True)
    assert c.reason == "atypical_head" and "'system' ends 2 Disease mention(s)" in c.detail
    assert check.atypical_share == 0.05


def test_a_numbered_type_name_is_a_placeholder() -> None:
    """The 1.5B's top-up wrote "The study [disease 1](Disease) examines ... in [disease 2](Disease) development ." and
    "The Lynch syndrome was [Type 2](Disease) found ..." (the format example's "type 2 diabetes" cut): placeholders,
    rejected; a seed's own such entity passes."""
    check = Checker(("Disease",))
    for text, ent in [("The study disease 1 examines cell adhesion in gout .", ("disease 1", "Disease")),
                      ("The Lynch syndrome was Type 2 found in the families .", ("Type 2", "Disease"))]:
        c = check.check(decode(text, ent), SEED, [], forbid_seed_entities=True)
        assert c.reason == "placeholder" and "numbered placeholder" in c.detail, c.detail
    own = Seed("s", *map(tuple, parse_inline("Carriers of [type 2](Disease) were seen .")))
    c = check.check(decode("Carriers of type 2 and gout were seen .", ("type 2", "Disease"), ("gout", "Disease")),
                    own, [], forbid_seed_entities=False)
    assert c.reason != "placeholder"


def test_the_generic_word_of_a_name_is_untagged_where_the_split_never_tags_it_alone() -> None:
    """NCBI-disease ends hundreds of mentions with "disease" and never tags the word by itself (the 1.5B wrote
    "... is a type of [disease](Disease) ..."): under salvage it is untagged and the row kept; "cancer", which the
    split does tag alone, stays; without a mention pool (no split) the rule says nothing."""
    stats = SplitStats(heads={"Disease": {"disease": 200, "cancer": 80}}, context_words={"disease": 150, "cancer": 40},
                       mentions={"Disease": ("Huntington disease", "cancer")})
    row = ("Carriers of [gout](Disease) often develop a [disease](Disease) or [cancer](Disease) later .")
    c = Checker(("Disease",), stats, salvage=True).check(decode(row.replace("[", "").replace("](Disease)", ""),
                                                                ("gout", "Disease"), ("disease", "Disease"),
                                                                ("cancer", "Disease")), SEED, [],
                                                         forbid_seed_entities=True)
    assert c.ok and c.salvaged == [c.salvaged[0]] and c.salvaged[0].startswith("head_alone: untagged 'disease'")
    assert [c.tokens[i] for i, t in enumerate(c.tags) if t.startswith("B-")] == ["gout", "cancer"]
    bare = Checker(("Disease",), SplitStats(heads=stats.heads, context_words=stats.context_words))
    assert bare.check(decode("Carriers of gout often develop a disease later .", ("gout", "Disease"),
                             ("disease", "Disease")), SEED, [], forbid_seed_entities=True).ok


def test_a_known_mention_tagged_as_another_type_is_rejected() -> None:
    """"Jonathan Medved , a company" tagged ORG by the 1.5B, where FIN tags "Jonathan Medved" as PER every time."""
    types = ["PER", "ORG"]
    check = Checker(tuple(types), SplitStats(lexicon={"jonathan medved": "PER"}), salvage=True)
    item = {"text": "Jonathan Medved , a company , appointed a new director .",
            "entities": [{"text": "Jonathan Medved", "type": "ORG"}]}
    bad = check.check(decode_sentence(item, types), SEED, [], forbid_seed_entities=True)
    assert bad.reason == "known_mention_type" and "tagged ORG but the split tags it as PER" in bad.detail
    right = {**item, "entities": [{"text": "Jonathan Medved", "type": "PER"}]}
    assert check.check(decode_sentence(right, types), SEED, [], forbid_seed_entities=True).ok
    # a common noun's type shifts with its use (SciERC tags "machine translation" as a Task, and as a Method too)
    sci = Checker(("Task", "Method"), SplitStats(lexicon={"machine translation": "Task"}))
    noun = {"text": "We train machine translation on parallel text .",
            "entities": [{"text": "machine translation", "type": "Method"}]}
    assert sci.check(decode_sentence(noun, ["Task", "Method"]), SEED, [], forbid_seed_entities=True).ok
    # the seed's own annotation wins
    seed = Seed("s", ("Jonathan", "Medved", "Ltd", "lends", "."), ("B-ORG", "I-ORG", "O", "O", "O"))
    ok = check.check(decode_sentence(item, types), seed, [], forbid_seed_entities=False)
    assert ok.ok, ok.detail


def test_a_seed_mention_is_never_flagged_atypical() -> None:
    """The seed's gold annotation outranks the split's head statistics (BioRDA keeps the seed's entities)."""
    seed = Seed("s", ("Loss", "of", "Rb", "tumor", "suppressor", "gene", "function", "."),
                ("O", "O", "B-Disease", "I-Disease", "I-Disease", "I-Disease", "O", "O"))
    check = Checker(("Disease",), SplitStats(heads={"Disease": {"cancer": 6}}, context_words={"gene": 7}), salvage=True)
    c = decode("Partial loss of Rb tumor suppressor gene activity was reported .", ("Rb tumor suppressor gene", "Disease"))
    check.check(c, seed, [], forbid_seed_entities=False)
    assert c.ok and not c.salvaged, c.detail


def test_salvage_does_not_untag_what_may_be_an_entity_of_another_type() -> None:
    """"natural language processing" typed Material: 'processing' never ends a Material but often a Task, so the
    row is rejected (a wrong type) rather than kept with the mention untagged (a wrong training signal)."""
    heads = {"Material": {"corpus": 9}, "Task": {"processing": 6}}
    check = Checker(("Material", "Task"), SplitStats(heads=heads, context_words={"processing": 40, "gene": 50}),
                    salvage=True)
    item = {"text": "We test the model on natural language processing with a new corpus .",
            "entities": [{"text": "natural language processing", "type": "Material"}, {"text": "corpus", "type": "Material"}]}
    c = check.check(decode_sentence(item, ["Material", "Task"]), SEED, [], forbid_seed_entities=True)
    assert c.reason == "atypical_head" and not c.salvaged


def test_a_capitalized_word_the_split_never_shows_is_judged_by_its_lowercase_form() -> None:
    """"Study" opening a generated sentence, tagged as a Disease: the split shows only "study" (often, never as a
    Disease). A capitalized word the split does show keeps its own counts (FIN tags "Lender" as PER)."""
    rows = ([["the", "study", "of", "breast", "cancer", "."]] * 12
            + [["the", "lender", "and", "the", "Lender", "sign"]] * 12)
    tags = ([["O", "O", "O", "B-Disease", "I-Disease", "O"]] * 12
            + [["O", "O", "O", "O", "B-Disease", "O"]] * 12)
    heads, outside = _heads(rows, tags)
    check = Checker(("Disease",), SplitStats(heads=heads, context_words=outside), salvage=True)
    c = check.check(decode("Study shows that gout is common in older men .", ("Study", "Disease"), ("gout", "Disease")),
                    SEED, [], forbid_seed_entities=True)
    assert c.ok and c.tags[0] == "O" and c.tags[3] == "B-Disease"
    assert c.salvaged == [("atypical_head: untagged 'Study' ('Study': 'Study' (as 'study') ends 0 Disease mention(s) "
                           "in the split and is used 12 times outside entities)")]
    kept = check.check(decode("The Lender reported gout in older men .", ("Lender", "Disease"), ("gout", "Disease")),
                       SEED, [], forbid_seed_entities=True)
    assert kept.ok and not kept.salvaged and kept.tags[1] == "B-Disease"
    # "Venture I", gene symbols
    assert check.stats.stats_form("I") == "I" and check.stats.stats_form("BRCA1") == "BRCA1"


def test_an_entity_without_a_letter_is_untagged_where_the_type_never_has_one() -> None:
    """"93 %" and "163" typed Disease (the 1.5B wrote them): NCBI's Disease mentions almost never end in a letterless
    word. A type whose mentions do (FIN's LOC, addresses ending in postcodes) keeps them."""
    heads = {"Disease": {"cancer": 60, "2": 1}, "LOC": {"York": 20, "02108": 10}}
    item = ("About 93 % of the 163 carriers had gout .", ("93 %", "Disease"), ("163", "Disease"), ("gout", "Disease"))
    c = Checker(("Disease",), SplitStats(heads={"Disease": heads["Disease"]}), salvage=True).check(
        decode(*item), SEED, [], forbid_seed_entities=True)
    assert c.ok, c.detail
    assert c.tags == ["O"] * 8 + ["B-Disease", "O"]
    assert [r.split(":")[0] for r in c.salvaged] == ["no_letters", "no_letters"]
    # where another type does have letterless mentions, the number may just be mistyped: rejected, not untagged
    strict = Checker(("Disease", "LOC"), SplitStats(heads=heads), salvage=True).check(decode(*item), SEED, [],
                                                                          forbid_seed_entities=True)
    assert strict.reason == "no_letters" and "'93 %' has no letter" in strict.detail and not strict.salvaged
    # a type with enough letterless mentions keeps them; so does a type without statistics
    for label in ("LOC", "Other"):
        h = {**heads, "Other": {}} if label == "Other" else heads
        ok = Checker(("Disease", "LOC", "Other"), SplitStats(heads=h)).check(
            decode_sentence({"text": "The office moved to Boston 02108 last year .",
                             "entities": [{"text": "02108", "type": label}]}, ["Disease", "LOC", "Other"]),
            SEED, [], forbid_seed_entities=True)
        assert ok.ok, (label, ok.detail)


def test_an_all_lowercase_entity_of_a_name_type_is_untagged_or_rejected() -> None:
    """"compliance" typed PER (the 1.5B on FIN): FIN's PER mentions almost never end in a word without a capital.
    Types of common nouns keep lowercase mentions; where the word ends mentions of another type (FIN tags "bank" as
    ORG), it may just be mistyped, so the row is rejected rather than untagged."""
    types = ["PER", "ORG", "Disease"]
    heads = {"PER": {"Smith": 60, "lender": 1}, "ORG": {"Bank": 30, "bank": 5, "compliance": 1}, "Disease": {"cancer": 60}}
    text = "The auditor reviewed the accounts of Mary Smith for compliance ."
    item = {"text": text, "entities": [{"text": "Mary Smith", "type": "PER"}, {"text": "compliance", "type": "PER"}]}
    salvaged = Checker(("PER",), SplitStats(heads={"PER": heads["PER"]}), salvage=True).check(
        decode_sentence(item, types), SEED, [], forbid_seed_entities=True)
    assert salvaged.ok, salvaged.detail
    assert salvaged.tags[6:] == ["B-PER", "I-PER", "O", "O", "O"]
    assert [r.split(":")[0] for r in salvaged.salvaged] == ["lowercase_name"]
    strict = Checker(tuple(types), SplitStats(heads=heads), salvage=True).check(decode_sentence(item, types), SEED, [],
                                                                    forbid_seed_entities=True)
    assert strict.reason == "lowercase_name" and "'compliance' has no capital letter" in strict.detail
    # "the borrower" as PER: no type of the split ends a mention with "borrower", so it is untagged, not rejected
    borrower = {"text": "The auditor reviewed the accounts of Mary Smith for the borrower .",
                "entities": [{"text": "Mary Smith", "type": "PER"}, {"text": "borrower", "type": "PER"}]}
    kept = Checker(tuple(types), SplitStats(heads=heads), salvage=True).check(
        decode_sentence(borrower, types), SEED, [], forbid_seed_entities=True)
    assert kept.ok and kept.tags[-2] == "O" and [r.split(":")[0] for r in kept.salvaged] == ["lowercase_name"]
    # lowercase ORG and Disease mentions are common enough; "Mary smith" has a capital; the split has "lender" as PER
    for label, ent in (("ORG", "mary smith"), ("Disease", "mary smith"), ("PER", "Mary smith"), ("PER", "the lender")):
        ok = Checker(tuple(types), SplitStats(heads=heads)).check(
            decode_sentence({"text": f"The auditor reviewed the accounts of {ent} last year .",
                             "entities": [{"text": ent, "type": label}]}, types), SEED, [], forbid_seed_entities=True)
        assert ok.ok, (label, ok.detail)


def test_an_entity_coordinated_with_itself_is_rejected() -> None:
    bad = decode("David Fischer and David Fischer will repay the loan to the bank .", ("David Fischer", "Disease"))
    CHECK.check(bad, SEED, [], forbid_seed_entities=True)
    assert bad.reason == "self_coordinated" and "'David Fischer and David Fischer'" in bad.detail
    # the same entity twice, apart, is ordinary prose; two different ones coordinated too
    for item in (("Gout is common , and gout is painful in older men .", ("gout", "Disease")),
                 ("A holiday in New York , New York closes the banks .", ("New York", "Disease")),
                 ("Gout and asthma were studied in older men .", ("gout", "Disease"), ("asthma", "Disease"))):
        ok = CHECK.check(decode(*item), SEED, [], forbid_seed_entities=True)
        assert ok.ok, ok.detail


def test_a_shortened_copy_of_the_seeds_context_is_still_context() -> None:
    seed = Seed("s", ("Missense", "mutations", "in", "N", "-", "acetylgalactosamine", "-", "6", "-", "sulfate", "sulfatase",
                      "cause", "mucopolysaccharidosis", "IVA", "."), ("O",) * 12 + ("B-Disease", "I-Disease", "O"))
    item = {"text": "Missense mutations in N-acetylgalactosamine-6-sulfatase were found in patients with MJD .",
            "entities": [{"text": "N-acetylgalactosamine-6-sulfatase", "type": "Disease"}, {"text": "MJD", "type": "Disease"}]}
    c = decode_sentence(item, ["Disease"], split_hyphens=True)
    Checker(("Disease",), SplitStats(split_hyphens=True)).check(c, seed, [], forbid_seed_entities=True)
    assert c.reason == "tagged_seed_context" and "sulfatase" in c.detail
    kept = Checker(("Disease",), SplitStats(split_hyphens=True), salvage=True).check(
        decode_sentence(item, ["Disease"], split_hyphens=True), seed, [], forbid_seed_entities=True)
    assert kept.ok and kept.tags[-3:] == ["O", "B-Disease", "O"] and "B-Disease" not in kept.tags[:8]


def test_penn_treebank_brackets_stay_single_tokens() -> None:
    """SciERC writes "(" as "-LRB-"; a model copying that must not leave "- LRB -" inside an entity."""
    item = {"text": "We study virtual reality -LRB- VR -RRB- for training surgeons .",
            "entities": [{"text": "virtual reality", "type": "Task"}, {"text": "VR", "type": "Task"}]}
    c = decode_sentence(item, ["Task"])
    assert c.ok and c.tokens[4:7] == ["-LRB-", "VR", "-RRB-"] and c.tags[2:7] == ["B-Task", "I-Task", "O", "B-Task", "O"]


def test_a_doubled_final_period_is_one_period() -> None:
    c = decode("Ulcerative colitis affects the lining of the digestive tract..", ("Ulcerative colitis", "Disease"))
    assert c.ok and c.tokens[-2:] == ["tract", "."]
    dots = decode("Ulcerative colitis affects the lining of the tract ...", ("Ulcerative colitis", "Disease"))
    assert dots.tokens[-3:] == [".", ".", "."]  # an ellipsis is left as it was written


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.name)
def test_every_rule_fires_on_its_example(rule: Rule) -> None:
    """The table's examples (the README's rule table shows them) are run, so they cannot rot: each is rejected for
    its own rule, and a rule with a repair repairs it under salvage (the row then passes; one without gives the same
    finding)."""
    ex = rule.example
    cand, accepted = ex.candidates()
    Checker(ex.types, ex.stats, representation=ex.representation, tagger_gate=ex.tagger_gate).check(
        cand, ex.seed_record(), accepted, forbid_seed_entities=ex.forbid_seed_entities, shown=ex.shown_records(),
        ledger=ex.ledger())
    assert cand.reason == rule.name, cand.detail
    plain = cand.detail
    cand, accepted = ex.candidates()
    Checker(ex.types, ex.stats, salvage=True, representation=ex.representation, tagger_gate=ex.tagger_gate).check(
        cand, ex.seed_record(), accepted, forbid_seed_entities=ex.forbid_seed_entities, shown=ex.shown_records(),
        ledger=ex.ledger())
    if rule.repair:
        assert cand.ok and [n.split(":")[0] for n in cand.salvaged] == [rule.name], (cand.reason, cand.salvaged)
    else:  # nothing to repair: the same finding, the sentence not checked again
        assert (cand.reason, cand.detail) == (rule.name, plain) and not cand.salvaged


def test_the_rule_table_names_each_rule_once() -> None:
    assert len({r.name for r in RULES}) == len(RULES)
    assert all(r.description and r.check.__name__ == r.name for r in RULES)


def test_split_stats_pickle_the_same_before_and_after_their_index_is_built() -> None:
    """``datasets`` fingerprints the augmenter by pickling it: the index the rules build on first use stays out."""
    import pickle

    rows = [["The", "gene", "of", "breast", "cancer", "."]] * 12 + [["A", "gene", "test", "in", "Wilms", "tumor"]]
    tags = [["O", "O", "O", "B-Disease", "I-Disease", "O"]] * 12 + [["O", "O", "O", "O", "B-Disease", "I-Disease"]]
    stats = SplitStats.from_split(rows, tags)
    before = pickle.dumps(stats)
    assert stats.ends_mention("cancer", "Disease") and not stats.rarely_ends("Disease", "lowercase", 0.05)
    assert "_index" in vars(stats) and pickle.dumps(stats) == before and pickle.loads(before) == stats


def _check(check: Checker, c: Candidate, seed: Seed = SEED) -> Candidate:
    return check.check(c, seed, [], forbid_seed_entities=False)


def test_the_split_counts_the_words_that_open_multi_word_mentions() -> None:
    stats = SplitStats.from_split([["Hereditary", "breast", "cancer", "and", "gout", "."]],
                                  [["B-Disease", "I-Disease", "I-Disease", "O", "B-Disease", "O"]])
    assert stats.starts == {"Disease": {"Hereditary": 1}} and stats.heads == {"Disease": {"cancer": 1, "gout": 1}}


def test_an_entity_opening_with_a_function_word_is_rejected_but_not_a_name_that_looks_like_one() -> None:
    stats = SplitStats(starts={"Disease": {"breast": 40}, "PER": {"Will": 30}}, heads={"PER": {"Smith": 30}},
                       context_words={"with": 300, "will": 300, "breast": 2})
    check = Checker(("Disease", "PER"), stats)
    bad = _check(check, decode("Patients with breast cancer were screened for PTEN .", ("with breast cancer", "Disease")))
    assert bad.reason == "boundary_extended" and "opens with 'with'" in bad.detail
    for text, entity, label in (("Patients with breast cancer were screened for PTEN .", "breast cancer", "Disease"),
                                ("Patients met Will Smith in the clinic last year .", "Will Smith", "PER")):  # as written
        c = decode_sentence({"text": text, "entities": [{"text": entity, "type": label}]}, ["Disease", "PER"])
        ok = _check(check, c)
        assert ok.ok, ok.detail


def test_an_entity_cut_before_a_head_of_its_type_is_rejected_but_not_before_a_number_or_a_context_word() -> None:
    stats = SplitStats(heads={"Disease": {"syndrome": 40, "2": 7, "patients": 6}},
                       context_words={"patients": 300, "syndrome": 3})
    check = Checker(("Disease",), stats)
    bad = _check(check, decode("Children with Prader - Willi syndrome were seen .", ("Prader - Willi", "Disease")))
    assert bad.reason == "boundary_cut" and "stops before 'syndrome'" in bad.detail
    for text in ("Patients with gout 2 years after onset were enrolled .",  # letterless: no statistics outside
                 "Gout patients were enrolled in the second year .", "We studied gout ( a common arthritis ) here ."):
        ok = _check(check, decode(text, ("gout", "Disease")))
        assert ok.ok, ok.detail


def test_a_sentence_cut_off_mid_clause_is_rejected_but_not_one_that_ends_with_punctuation_or_as_its_seed() -> None:
    bad = _check(CHECK, decode("Carriers had a higher risk of gout compared to a", ("gout", "Disease")))
    assert bad.reason == "truncated" and "stops at 'a'" in bad.detail
    bad = _check(CHECK, decode("Carriers of gout had the right to sell , transfer , assign ,", ("gout", "Disease")))
    assert bad.reason == "truncated" and "stops at ','" in bad.detail  # a list cut off after its comma
    list_seed = Seed("s", ("The", "Borrower", "shall", "pay", "the", "fees", ";", "and"), ("O",) * 8)
    for text, seed in (("The gout patients were then tested for .", SEED), ("Gout was the case in AS", SEED),
                       ("The gout clinic shall pay the fees ; and", list_seed)):
        ok = _check(CHECK, decode(text, ("gout", "Disease")), seed)
        assert ok.ok, ok.detail


def test_a_sentence_about_the_text_itself_is_rejected_where_the_split_never_speaks_so() -> None:
    """The prompt's own words written as content ("the sentence describes", "research abstracts"); a split that uses
    the word as content (SciERC's papers parse sentences) or a seed that has it licenses it."""
    text = "In these research abstracts , the sentence describes gout in adults ."
    rare = Checker(("Disease",), SplitStats(context_words={"in": 300, "adults": 40}))
    common = Checker(("Disease",), SplitStats(context_words={"in": 300, "sentence": 39, "abstracts": 5}))

    def reason(checker: Checker, seed: Seed = SEED, text: str = text) -> str | None:
        c = checker.check(decode(text, ("gout", "Disease")), seed, [], forbid_seed_entities=True)
        return None if c.ok else c.reason

    assert reason(rare) == "meta_text"
    assert reason(common) is None
    assert reason(CHECK) is None  # no context statistics: the rule cannot tell rare from common, so says nothing
    assert reason(rare, text="Abstracts of the meeting describe gout in adults .") == "meta_text"  # any case
    seed = Seed("k", ("The", "abstracts", "of", "BRCA1", "carriers", "mention", "breast", "cancer", "."),
                ("O", "O", "O", "O", "O", "O", "B-Disease", "I-Disease", "O"))
    assert reason(rare, seed, "The abstracts of the trial mention gout in adults .") is None


def test_an_abbreviation_tagged_after_its_untagged_long_form_is_rejected() -> None:
    """"chronic lung disease ( [CLD] )": the name the abbreviation stands for is left untagged. Only where the word
    before the parenthesis ends mentions of the type in the split; a gene symbol after a plain word is no sign."""
    check = Checker(("Disease",), SplitStats(heads={"Disease": {"disease": 200, "syndrome": 40}},
                                             context_words={"disease": 150, "patients": 90}))

    def verdict(text: str, *ents: str) -> Candidate:
        return _check(check, decode(text, *((e, "Disease") for e in ents)))

    bad = verdict("Mutations in PTEN cause chronic lung disease ( CLD ) in adults .", "CLD")
    assert bad.reason == "long_form_untagged" and "'disease' ends 200 Disease mention(s)" in bad.detail
    assert verdict("Mutations in PTEN cause chronic lung disease ( CLD ) in adults .", "chronic lung disease",
                   "CLD").ok
    assert verdict("We studied the patients ( CLD ) in adults with gout .", "CLD", "gout").ok


def test_the_format_prompts_example_entity_written_back_is_rejected_unless_the_seed_or_split_has_one() -> None:
    """The inline format prompt marks "type 2 diabetes" in its example; the local 1.5B wrote it (and "type 3 diabetes",
    "type 4 diabetes") into up to a third of its rows. A seed, a shown sentence or the split with such an entity
    licenses it (numbers aside: a seed's "type 1 diabetes" licenses "type 2 diabetes")."""
    from hf_rgda.checking.echo import format_example_forms

    assert ("type", "#", "diabetes") in format_example_forms("inline")  # read from the prompt, not written here

    def reason(seed: Seed = SEED, stats: SplitStats | None = None, shown: tuple[Seed, ...] = (),
               text: str = "The study linked BRCA1 carriers to type II diabetes in adults .",
               entity: str = "type II diabetes") -> str | None:
        checker = Checker(("Disease",), stats or SplitStats(), representation="inline")
        c = checker.check(decode(text, (entity, "Disease")), seed, [], forbid_seed_entities=True, shown=shown)
        return None if c.ok else c.reason

    assert reason() == "format_example"  # a roman numeral is a number too
    assert reason(text="Carriers of the allele developed type 2 diabetes early .", entity="type 2 diabetes") == (
        "format_example")
    with_t1 = Seed("t1", ("Insulin", "loss", "causes", "type", "1", "diabetes", "."),
                   ("O", "O", "O", "B-Disease", "I-Disease", "I-Disease", "O"))
    assert reason(with_t1) is None  # the seed has one
    assert reason(shown=(with_t1,)) is None  # a sentence the prompt showed has one
    assert reason(stats=SplitStats(mentions={"Disease": ("gout", "Type 2 diabetes")})) is None  # the split has one
    assert reason(stats=SplitStats(mentions={"Disease": ("gout", "diabetes")})) == "format_example"
    assert reason(stats=SplitStats(lexicon={"type 1 diabetes": "Disease"})) is None  # its lexicon has one
    for representation in ("entities", ""):  # a prompt without a marked example, or prompts not known: none to copy
        c = decode("Carriers of the allele developed type 2 diabetes early .", ("type 2 diabetes", "Disease"))
        assert Checker(("Disease",), representation=representation).check(c, SEED, [], forbid_seed_entities=True).ok
    assert reason(text="The study linked BRCA1 carriers to type 2 diabetes mellitus in adults .",
                  entity="type 2 diabetes mellitus") is None  # another entity than the example's
