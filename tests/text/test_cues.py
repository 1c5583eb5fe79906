"""Explicit correction cues (retain.text.cues): which cues count, and which make an explicit correction."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

import retain.text.cues as cues
from retain.text.cues import correction_cues, explicit_cues, has_cue, mentions_cue


def test_may_before_a_day_number_is_the_month_not_a_modal() -> None:
    assert explicit_cues("From May 3 the cap is now 300.") == ["is now"]
    assert explicit_cues("From then on the cap may now be 300.") == []


def test_mentions_cue_is_the_pattern_alone_has_cue_a_cue_that_counts() -> None:
    story = "Eigentlich wollten wir glutenfrei essen."  # a German marker in a story told in the past
    assert mentions_cue(story) and not has_cue(story)
    assert mentions_cue("Actually, the cap is 300.") and has_cue("Actually, the cap is 300.")
    assert not mentions_cue("The cap is 300.") and not has_cue("The cap is 300.")


def _reference_explicit_cues(text: str) -> list[str]:
    """explicit_cues as first written: each cue reads the text from its start (quadratic)."""
    out = []
    for m in cues._CUES.finditer(text):
        cue = m.group(0).strip().lower()
        start = max((c.end() for c in cues._CLAUSE_MARK.finditer(text, 0, m.start())), default=0)
        # read up to the cue, as first written: a modal running into it counts ("we'll改成")
        hedges = [(h.start(), h.end()) for h in cues._HEDGE.finditer(text, 0, m.start()) if not cues._is_month(text, h)]
        if cues._MARKER.match(cue):
            heading = cue[-1] in ":!-" or bool(cues._HEADING_END.match(text, m.end()))
            label = cues._LABEL.fullmatch(text, start, m.start())
            explicit = bool(cues._CLAUSE_OPEN.search(text, 0, m.start())) or (heading and label is not None)
        else:
            explicit = not any(s >= start and e <= m.start() for s, e in hedges)
        if explicit:
            lo, hi = next((s.span() for s in cues._EN_SENTENCE.finditer(text) if s.end() > m.start()), (0, 0))
            sentence = text[lo:hi]
            hedged = bool(cues._EN_HEDGE.search(sentence))
            story = bool(cues._EN_STORY.search(sentence)) and not cues._DIGIT.search(sentence)
            before = any(lo <= b.start() < m.start() for b in cues._EN_BEFORE.finditer(text))
            explicit = not (hedged or before or (story and cues._MARKER.match(cue)))
        if explicit:
            out.append(cue)
    return out


_WORDS = [
    "actually", "instead", "update", "correction", "change of plan", "scratch that", "oh", "so", "well", "ok",
    "will", "may", "May", "in", "if", "now", "is now", "it's now", "raised the cap", "to", "300", "3", "switch to",
    "Window", "the", "cap", "i can do 4 runs", "maybe", "said", "we had", "yesterday", "could",
    "更正", "改成", "如果", "计划有变", "6个人了", "no longer", "Budget",
]  # fmt: skip
_SEPARATORS = [" ", ", ", ". ", "! ", ": ", " - ", " — ", "\n", "", "? ", "(", '"', "  ", ";", "-", "，", "..."]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_WORDS), st.sampled_from(_SEPARATORS)), max_size=30))
def test_explicit_cues_agrees_with_the_quadratic_reference(parts: list[tuple[str, str]]) -> None:
    text = "".join(w + s for w, s in parts)
    assert explicit_cues(text) == _reference_explicit_cues(text)


def test_japanese_change_reports_are_correction_cues() -> None:
    assert correction_cues("WC-88213を6/25に変更、6/16収録を設定") == ["に変更"]
    assert correction_cues("6/25(木)に変更で。時間は同じ14時から") == ["に変更"]


def test_a_modal_running_into_a_cjk_cue_hedges_it() -> None:
    """A modal written straight against a CJK cue ("we'll改成", no word boundary between "will" and
    "改") hedges the cue as it does with a space between them."""
    for text in ("we'll改成6个人", "Checkout will改成 the new export", "ok if6个人了"):
        assert explicit_cues(text) == [], text
    assert explicit_cues("we改成6个人") == ["改成"]


def test_may_as_a_name_or_month_stays_explicit() -> None:
    assert explicit_cues("Theresa May said the monthly cap is now 300 runs.") == ["is now"]
    assert explicit_cues("The cap from last May is now 300.") == ["is now"]
