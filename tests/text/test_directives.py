"""Standing instructions and preferences, memory cues, forget requests."""

from __future__ import annotations

import pytest

from retain.text.directives import forget_cue, memory_cue, standing_directive


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("Always include version numbers when I ask about software dependencies.", "instruction"),
        ("From now on, answer in bullet points.", "instruction"),
        ("以后都用中文回答。", "instruction"),
        ("I prefer simple, minimal dependencies to keep the app light.", "preference"),
        ("I'd rather take the train than fly.", "preference"),
        ("我更喜欢靠窗的座位。", "preference"),
        ("I don't prefer any airline in particular.", None),
        ("Which libraries does the project use?", None),
        ("Do you always answer this fast?", None),
    ],
)
def test_standing_directive(text: str, kind: str | None) -> None:
    assert standing_directive(text) == kind


@pytest.mark.parametrize(
    ("text", "cue"),
    [
        ("Remember this: the gate code is 4412.", "Remember this"),
        ("Don't forget the kids eat early.", "Don't forget"),
        ("Important: no red-eye flights.", "Important:"),
        ("记住，预算不能超过五千。", "记住"),
        ("別忘了带护照。", "別忘了"),
        ("No need to remember this one.", None),
        ("The museum is important to us.", None),
    ],
)
def test_memory_cue(text: str, cue: str | None) -> None:
    assert memory_cue(text) == cue


@pytest.mark.parametrize(
    ("text", "cue"),
    [
        ("Forget that, it was a typo.", "Forget that"),
        ("忘了它吧。", "忘了它"),
        ("Don't forget that the hotel has no lift.", None),
        ("I always forget my keys.", None),
    ],
)
def test_forget_cue(text: str, cue: str | None) -> None:
    assert forget_cue(text) == cue
