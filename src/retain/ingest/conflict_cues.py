"""Cue words of the learned conflict model's features (:mod:`retain.ingest.conflict_features`), in the
languages of the scenarios (English, German, French, Spanish, Portuguese, Italian, Chinese, Japanese,
Korean).

Each pattern marks one way a message states a change without repeating the old value: a speaker
correcting themselves, news or an approval that moves a limit, a relative change ("a week later",
"推迟 5 天", "1.05 倍"), a scope cut ("drop", "砍掉", "olvida"), a hand-over to another person, a
switch to another option, and the agent's own recaps (the statements a correction also retires).
The patterns are features the model weighs, never a decision by themselves.
"""

from __future__ import annotations

import re

__all__ = ["CUE_PATTERNS", "cue_flags", "is_question", "is_recap", "is_short_choice"]

_SELF = (
    r"\b(?:i was wrong|i'm wrong|i am wrong|my (?:bad|mistake)|i misspoke|mixed (?:it|them) up|scratch that|wrong box"
    r"|correction|i meant|sorry,? (?:wrong|i meant)|not \S+,? but|ich habe mich (?:vertan|geirrt)|korrektur|falsch"
    r"|je me suis tromp|erreur|me equivoqu|corrijo|me enganei|correção|mi sono sbagliat|correzione|mi correggo)"
    r"|说错|记错|看错|搞错|写错|弄错|填错|不对|更正|纠正|間違|違いました|訂正|잘못|정정"
)
_NEWS = (
    r"\b(?:good news|bad news|great news|approved|signed off|sponsor\w*|chipped in|gute nachricht|schlechte nachricht"
    r"|genehmigt|bonne nouvelle|mauvaise nouvelle|buenas noticias|malas noticias|aprobad|boas notícias|más notícias"
    r"|aprovad|buone notizie|brutte notizie|approvat)"
    r"|好消息|坏消息|坏了|批了|批下来|批准|同意了|赞助|支援|追加|通知|公告|お知らせ|承認|朗報|좋은 소식|승인"
)
_RELATIVE = (
    r"(?:\b(?:a|one|two|three|four|\d+)\s*(?:more\s+)?(?:days?|weeks?|months?|hours?|minutes?)\s+"
    r"(?:later|earlier|sooner|more|less|longer|shorter)\b"
    r"|\b(?:later|earlier|sooner|slides?|slips?|extended|prolong\w*|verlänger\w*|verkürz\w*|später|früher"
    r"|plus tard|plus tôt|avance|recul\w*|más tarde|antes|adelant\w*|retras\w*|mais tarde|prolongou|anticip\w*"
    r"|posticip\w*|dopo)\b"
    r"|\d+\s*%|\b(?:half|a third|two thirds|a quarter|three quarters|double|twice)\b"
    r"|[一二两三四五六七八九十\d]+\s*(?:天|日|周|週間|个月|ヶ月|小时|时间|倍|个百分点)|[分之]|前倒し|延长|推迟|顺延|往后|提前|早まっ|遅れ|晚一)"
)
_DROP = (
    r"\b(?:drop\w*|remove\w*|cut|cuts|scrap\w*|cancel\w*|no longer|out of (?:this|scope|the)|leave \S+(?: \S+)? out"
    r"|pull \S+(?: \S+)? out|not needed|don't need|skip|forget|without|streich\w*|entfällt|weglassen|ohne"
    r"|supprim\w*|laisse tomber|sans|annul\w*|olvida|quitamos|sin|cancelad|esquece|sem|cancelad|togli\w*|senza"
    r"|annullat|niente)\b"
    r"|不要了|不要|砍掉|去掉|取消|不搞|不用|别|先不|不买|不申|放掉|不含|不归|不迁|删|やめ|外す|不要|なし|回そう|빼|취소"
)
_HANDOVER = (
    r"\b(?:takes? over|took over|covers?|instead|on leave|out sick|has flu|sick|stands? in|steps? in|hand\w* over"
    r"|owner is now|reassign\w*|übernimmt|vertritt|remplace|reprend|sustituye|se encarga|substitui|assume"
    r"|sostituisce|al posto|maternità|in ferie)"
    r"|接手|接替|转给|改由|交接|休产假|休假|离职|出差|代替|代わり|お願いして|引き継|출장|대신|인수"
)
_SWITCH = (
    r"\b(?:switch\w*|go with|going with|move it to|let's do|then\b|rather|change to|make it|bump|wir gehen mit"
    r"|stattdessen|nehmen wir|on passe|plutôt|on part sur|nos vamos|mejor|vamos con|fico com|passiamo|andiamo con"
    r"|meglio)"
    r"|改成|改为|换成|换到|换|改到|挪到|改|就定|那就|还是|にして|に変更|に切り替|으로 바꾸|로 하"
)
_RECAP = (
    r"^\s*[\w\s/()-]{0,24}?(?:recap|summary|so far|brief|notes?|working plan|plan so far|checklist|baseline"
    r"|status|zusammenfassung|zwischenstand|stand|résumé|récap|resumen|resumo|riassunto|in sintesi|punto"
    r"|要点|整理|记录|小结|总结|汇总|确认|目前|まとめ|整理|확인|요약|정리)\s*[:：]"
)
_CHOICE = (
    r"(?:\blet'?s (?:go with|do|book|use|take)|\bwe(?:'ll| will)? (?:go with|take|book)|\bbook the|\bwe'd like"
    r"|\bandiamo con|\bvamos (?:avançar|con)|\bon (?:prend|part sur)|\bnehmen wir|就定|就用|就选|就订|选|吧[。！]?$"
    r"|で進め|にしましょう|으로 하)"
)

CUE_PATTERNS: dict[str, re.Pattern[str]] = {
    "self_correct": re.compile(_SELF, re.IGNORECASE),
    "news": re.compile(_NEWS, re.IGNORECASE),
    "relative": re.compile(_RELATIVE, re.IGNORECASE),
    "drop": re.compile(_DROP, re.IGNORECASE),
    "handover": re.compile(_HANDOVER, re.IGNORECASE),
    "switch": re.compile(_SWITCH, re.IGNORECASE),
}
"""Name -> pattern of each cue family :func:`cue_flags` reports."""

_RECAP_RE = re.compile(_RECAP, re.IGNORECASE)
_CHOICE_RE = re.compile(_CHOICE, re.IGNORECASE)
_SEPARATORS = re.compile(r"[;；|]|[,，、](?=\s*\S)")


def cue_flags(text: str) -> tuple[float, ...]:
    """1.0 / 0.0 per cue family of :data:`CUE_PATTERNS` (in its order) found in ``text``."""
    return tuple(1.0 if pattern.search(text) else 0.0 for pattern in CUE_PATTERNS.values())


def is_recap(text: str) -> bool:
    """True when ``text`` reads as a recap of several facts: a recap label ("Summary so far:", "要点：",
    "Zwischenstand:") or at least four list separators in a text of at most 400 characters that
    opens with a label and a colon."""
    if _RECAP_RE.search(text):
        return True
    head, colon, _ = text.partition(":") if ":" in text else text.partition("：")
    return bool(colon) and len(head) <= 24 and len(_SEPARATORS.findall(text)) >= 4 and len(text) <= 400


def is_short_choice(text: str) -> bool:
    """True when ``text`` is a short statement picking one option ("Let's go with Arredo Emilia.",
    "就定华东包装吧。"), at most 80 characters."""
    return len(text) <= 80 and _CHOICE_RE.search(text.strip()) is not None


_QUESTION_MARKS = ("?", "？")
_ELLIPSIS = ("...", "…", "。。。")


def is_question(text: str) -> bool:
    """True when ``text`` asks rather than states: it ends with a question mark, or it asks something
    and trails off ("do we even need the residency language? EU customers are like 3%...": a question
    mark before a closing ellipsis). A question never retires a hard constraint."""
    stripped = text.rstrip()
    if stripped.endswith(_QUESTION_MARKS):
        return True
    return stripped.endswith(_ELLIPSIS) and any(mark in stripped for mark in _QUESTION_MARKS)
