"""Directives a person gives memory in words: standing instructions and preferences, explicit memory
cues ("remember this", "记住") and forget requests ("forget that").

* :func:`standing_directive` — a text that sets how later answers should be shaped, whatever they are
  about: an *instruction* ("Always include version numbers when I ask about libraries", "from now
  on ...", "以后都...") or a *preference* ("I prefer minimal dependencies", "I'd rather ...",
  "我更喜欢..."). Such a record stays in force until replaced, so the context carries it like a hard
  constraint (:mod:`retain.safety.context`).
* :func:`memory_cue` — an explicit request to keep something: "remember this", "don't forget",
  "important:", "keep in mind", "记住", "别忘了", "別忘了", "覚えておいて"; the write path pins or boosts
  the record (:mod:`retain.ingest.directives`) with the cue in the audit reason.
* :func:`forget_cue` — "forget that", "never mind that", "忘了它", "别记了": a request to forget the
  record before it.

Rules, no model: English and Chinese (with a few Japanese forms); a cue inside a question or a
negation of the cue ("I don't prefer", "no need to remember") does not count.
"""

from __future__ import annotations

import re

__all__ = ["DIRECTIVE_KEY", "forget_cue", "memory_cue", "standing_directive"]

DIRECTIVE_KEY = "directive"
"""Metadata key of a user record's standing directive ("instruction" or "preference"), set when written."""

_INSTRUCTION = re.compile(
    r"\b(?:always|never|please always|make sure to always)\b[^.!?\n]{0,160}?\b(?:when(?:ever)?|if|whenever)\s+i\s+"
    r"(?:ask|request|want|need|talk|mention)"
    r"|\bfrom now on\b|\bgoing forward\b|\bin (?:all|every) (?:future )?(?:answers?|responses?|replies)\b"
    r"|\b(?:always|never) (?:use|include|format|answer|respond|reply|write|show|give|add|mention|provide|keep)\b"
    r"|以后(?:都|请|每次)|每次(?:我)?问|始终|总是要|一律",
    re.IGNORECASE,
)
_PREFERENCE = re.compile(
    r"\bi(?:\s+(?:really\s+|strongly\s+|generally\s+|usually\s+|also\s+|still\s+)?(?:prefer|would prefer|"
    r"would rather)|['’]d (?:prefer|rather))\b|\bmy (?:preference|preferred)\b"
    r"|\bi (?:like|love|want) (?:to keep|it when)\b"
    r"|我(?:更)?(?:喜欢|偏好|倾向于|更愿意)|希望.{0,12}(?:简洁|简单|详细)|の方が好き",
    re.IGNORECASE,
)
_NEGATED = re.compile(r"\b(?:don't|do not|didn't|never)\s+(?:really\s+)?prefer\b", re.IGNORECASE)
_MEMORY = re.compile(
    r"\bremember (?:this|that|it)\b|\bplease remember\b|\bdon'?t forget\b|\bdo not forget\b|\bimportant\s*:"
    r"|\bkeep (?:this |that |it )?in mind\b|\bnote this\b|\bmake a note\b"
    r"|记住|記住|别忘了|別忘了|不要忘记|重要[:：]|覚えておいて|忘れないで",
    re.IGNORECASE,
)
_NOT_MEMORY = re.compile(
    r"\b(?:no need to|don't need to|you don't have to) (?:remember|keep)\b|不用记|不必记", re.IGNORECASE
)
_FORGET = re.compile(
    r"\bforget (?:that|this|it|what i said)\b|\bnever mind (?:that|this)\b|\bdisregard (?:that|this|what i said)\b"
    r"|\bscratch that from memory\b|忘了它|忘掉(?:它|这个|那个)|别记了|不要记住|忘れて",
    re.IGNORECASE,
)
_DONT_FORGET = re.compile(r"\b(?:don'?t|do not|never) forget\b", re.IGNORECASE)


def _is_question(text: str) -> bool:
    return text.rstrip().endswith(("?", "？"))


def standing_directive(text: str) -> str | None:
    """ "instruction", "preference" or None: whether ``text`` sets a standing instruction or states a
    preference that should shape later answers (see the module docstring). A text that is only a
    question ("do you always ...?") is neither."""
    if _INSTRUCTION.search(text) and not (_is_question(text) and len(text) < 120):
        return "instruction"
    if _PREFERENCE.search(text) and not _NEGATED.search(text):
        return "preference"
    return None


def memory_cue(text: str) -> str | None:
    """The explicit memory cue in ``text`` ("remember this", "记住", ...) as written, or None (also
    when the text says there is no need to remember)."""
    if _NOT_MEMORY.search(text):
        return None
    found = _MEMORY.search(text)
    return found.group(0) if found else None


def forget_cue(text: str) -> str | None:
    """The forget request in ``text`` ("forget that", "忘了它", ...) as written, or None; "don't
    forget" is not one."""
    found = _FORGET.search(text)
    if found is None or _DONT_FORGET.search(text[max(0, found.start() - 10) : found.end()]):
        return None
    return found.group(0)
