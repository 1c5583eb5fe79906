"""Conflicts between a new record and what is already stored: paraphrase, update, or new.

No LLM is needed. A new record is compared with its nearest current records (dense and lexical
neighbours within the namespace) on four signals:

* **subject overlap**: do they talk about the same slot? Share of content terms in common
  (stopwords removed, Latin words truncated to 5 characters as a crude stemmer, CJK as character
  bigrams), plus shared identifiers (codes with digits such as "CR-22741", "payments.spec.ts");
* **aligned value change**: a number of the old record is gone and a new number stands in the
  same slot, i.e. the words around the two numbers overlap ("for 5 years" -> "for 6 years",
  "budget is 35,000" -> "budget is 38,500", "一共5个人" -> "一共6个人"). Numbers that merely
  appear in one record and not the other (a computation, a listing) are no change;
* **correction cues** in the new record: "correction:", "actually", "my bad", "switched to",
  "moved to", "it's now", "no longer", "new ceiling", "scratch that", "update:", "改成", "计划有变",
  "放宽到", ... (:data:`CORRECTION_CUES`). A cue that the old record already carries ("retracted"
  after a retraction notice) is an echo, not a correction of it;
* **negation flip**: "X, not Y" / "not Y:" where Y is said in the old record ("it's orders.spec.ts,
  not payments" against "the payments tests flake").

Decision (first that applies):

1. **paraphrase**: cosine >= ``paraphrase_cos`` with no value change and no cue: the same fact said
   again; the caller may merge it into the existing record (both sources kept).
2. **update**: the new record states something (not a question, not tool output; an agent's
   thought revises only agent thoughts), the old record did not itself propose the new state
   ("switch to X" where X is what it said), and one of
   (a) a correction cue whose sentence overlaps the old record's subject, or a negation flip;
   (b) an aligned value change with high cosine and subject overlap;
   (c) a retraction: a sentence saying an item was retracted, withdrawn, cancelled or recalled names
   it by a value the old record holds in the same context ("Lindqvist 2022 is retracted" against
   "Included: ... Lindqvist 2022 (n=88) ..."): the old record reported the item as current (a record
   that itself reports the retraction is not superseded by it).
   The new record supersedes the candidate; with several, the highest ``overlap + cosine`` (plus
   0.5 for an aligned value change or a negation flip, 0.25 when both have the same role) wins.
   **Hard constraints** are superseded only by an *explicit correction* (:func:`explicit_cues`): a
   correction marker that opens a sentence or clause ("Actually, ...", "Correction: ...", "Change of
   plan: ...", "Oh, scratch that", "计划有变，...") or a change predicate not under a modal ("infra
   raised the budget to 12 minutes", "预算放宽到3500元"; not "checkout will switch the export to"),
   whose sentence overlaps the constraint's subject or which comes with an aligned value change; an
   English cue not in a sentence with a modal or hedge, after a condition or a reporting verb, or (a
   marker) in a past-tense story without a number ("Instead, we had dinner at ..."). A
   mid-clause marker ("somewhere Marta can actually relax"), a value change or a negation flip alone
   never retires one. When such a refused proposal would have won, no other candidate is superseded
   instead: the decision is ``new`` and carries the proposal as :attr:`ConflictDecision.held` for
   the caller to audit.
3. **new**: otherwise.

An optional :class:`ConflictJudge` (e.g. an LLM) may be plugged in to confirm or veto update and
paraphrase decisions; none is configured by default. Every decision carries its reason and scores.
Measured by ``benchmarks/supersede_detection.py`` (replaying scenario files through ``Memory.add``).
"""

from __future__ import annotations

import bisect
import dataclasses
import enum
import functools
import math
import re
from collections.abc import Iterator, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from retain.lexical import STOPWORDS, index_terms, query_terms
from retain.record import MemoryRecord, MemoryType
from retain.store.base import RecordFilter, Store

__all__ = [
    "CORRECTION_CUES",
    "DEFAULT_POLICY",
    "ConflictDecision",
    "ConflictJudge",
    "ConflictPolicy",
    "Relation",
    "correction_cues",
    "decide",
    "explicit_cues",
    "find_updates",
    "negated_terms",
    "subject_terms",
    "value_slots",
    "values",
]


class Relation(enum.StrEnum):
    """How a new record relates to an existing one."""

    NEW = "new"
    PARAPHRASE = "paraphrase"
    UPDATE = "update"


CORRECTION_CUES: tuple[str, ...] = (
    r"\bcorrection\b",
    r"\bactually\b",
    r"\bmy bad\b",
    r"\bi swapped\b",
    r"\boh wait\b",
    r"\bi forgot\b",
    r"\bscratch (?:that|the)\b",
    r"\binstead\b",
    r"\bswitch(?:ed|ing)? (?:to|my|the|our)\b",
    r"\bchange of plan\b",
    r"\bchanged (?:to|the|my|our|his|her|its)\b",
    r"\bmoved (?:the|it|to|our|his|her|my)\b",
    r"\bnow (?:it'?s|is|are|goes|allows?)\b",
    r"\b(?:it'?s|is|are) now\b(?= [\w.:/-]*\d| https?:| at\b| in\b| on\b| (?-i:[A-Z]))",
    r"\b(?:approved|allowed|authori[sz]ed) (?:up )?to\b",
    # at most 60 characters between "i can do" and "now": with [\w ]+ every "i can do" without a "now"
    # re-read the rest of its clause (quadratic on a long clause)
    r"\bi can do [\w ]{1,60} now\b",
    r"\b(?:raised|lowered|increased|decreased|bumped|narrow(?:ed)?|widen(?:ed)?|extended|reduced)\b[^.]{0,40}\bto\b",
    r"\b(?:goes|went) (?:up |down )?to\s+(?=[\d$€£¥])",
    r"\bnew (?:ceiling|limit|budget|cap|deadline|date|address|number|endpoint|plan|window|target)\b",
    r"\bno longer\b",
    r"\bcleared (?:me|us|him|her) for\b",
    r"\bretracted\b",
    r"\bsupersed",
    r"\bupdate\s*(?:on [\w ]{1,20})?[:!-]",
    "改成",
    "改为",
    "改到",
    "计划有变",
    "更正",
    "放宽到",
    "调整为",
    "变成",
    "现在一共",
    "可以.{1,6}了",
    r"\d\s*[个人元块位天晚次岁号]{1,2}了",
    # Other languages (_FOREIGN_CUES: they count only where they are safe).
    r"\bstattdessen\b",
    r"\beigentlich\b",
    r"\bdoch lieber\b",
    r"\ben fait\b",
    r"\bfinalement\b",
    r"\ben realidad\b",
    "其实",
    "実は",
    "やっぱり",
    "に変更",
)
_CUES = re.compile("|".join(CORRECTION_CUES), re.IGNORECASE)
# Cues naming an event the old record may itself report (then they echo it rather than correct it).
_ECHO = re.compile(r"^(retract|switch|moved|changed|cleared)", re.IGNORECASE)
_NEGATION = re.compile(
    r"(?:^|[,;(]\s*|\bit'?s\s+)not ([\w.\-/]+)(?:\s+[a-z]{1,3})?(?=\s*[.,:;!)]|\s*$)", re.IGNORECASE | re.MULTILINE
)
_NUMBER = re.compile(r"\d+(?:[.,:/]\d+)*(?:月\d+[日号])?")
_DATE = re.compile(r"^\d+月\d+[日号]$")
# A number right after one of these names a thing (parcel number 137, order #12), or right after the
# one word that opens the text ("Note 4: ..."), it is no value.
_ID_BEFORE = re.compile(
    r"(?:\b(?:number|no|nr|id|ticket|order|parcel|case|issue|invoice|room|flight|seat|step|item|part|page|row|"
    r"line|chapter|version|v|note|entry|task|option|lesson|section|figure|table|question|point|episode|"
    r"platform|gate|test|run|build|job|batch|ref)\.?|#|第)\s*$|^\s*[A-Z][a-z]+\s*$|\d-$",
    re.IGNORECASE,
)
_CJK_STOP = frozenset("的了是在我你他她它们和也都就要吧呢啊吗这那有还")
_DESTINATION = re.compile(r"\b(?:to|for)\s+([^\d.,;:!?\n]{2,40})(?=[.,;:!?\n]|$)")
_IDENT = re.compile(r"\b(?=[\w.\-/]*\d)(?=[\w.\-/]*[A-Za-z])[\w][\w.\-/]{2,}\b|\b[\w\-]+\.[a-z]{1,4}\b")
_LATIN = re.compile(r"[a-z]")
_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)
_CJK_CHAR = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
_SENTENCE = re.compile(r"[^.!?。！？\n]+[.!?。！？]*")
_LABEL_END = re.compile(r"\s*(?:$|[:;,)\]]|[.!?](?:\s|$)|\s+[^\W\d_]+=)")
_RETRACTION = re.compile(r"\b(?:retracted|withdrawn|cancell?ed|recalled|discontinued)\b", re.IGNORECASE)
_RETRACTION_NEWS = re.compile(r"\b(?:retract|withdr[ae]w|cancel|recall|discontinu)\w*", re.IGNORECASE)
_ARITHMETIC = re.compile(r"\d\s*[×x*=]\s*\d|\d\s*\+\s*\d")
# Correction markers: discourse words that mark a correction only where they open a sentence or clause
# ("Actually, ...", "Correction: ..."); mid-clause they are adverbs or nouns ("somewhere Marta can
# actually relax", "instead of the refund", "a correction was issued"). Every other cue is a predicate
# that states the change itself ("raised the cap to", "the budget goes up to", "she now allows", "放宽到").
_MARKER = re.compile(
    r"^(?:correction|actually|my bad|oh wait|scratch|instead|change of plan|update|supersed|更正|计划有变)"
)
# What may stand before a marker that opens a sentence or clause: the start of the text or a sentence /
# clause mark (. ! ? ; : , dash, bracket, quote, newline; CJK marks), then at most two interjections
# ("Oh, actually", "Ok so scratch that", "Ooh, actually").
_CLAUSE_OPEN = re.compile(
    r"(?:^|[.!?;:,(\[\"“‘'\n。！？；：，、（]|(?:^|\s)[-–—]+)\s*"
    r"(?:(?:oh+|o+h|ok(?:ay)?|so|sorry|wait|hmm+|ah+|um+|uh+|well|and|but|oops|ugh|argh|right|hey|no|yes|yeah)"
    r"\b[\s,!.]*){0,2}$",
    re.IGNORECASE,
)
_CLAUSE_MARK = re.compile(r"[.!?;:,(\[\"“‘\n。！？；：，、（]|\s[-–—]+\s")
# A marker used as a heading may follow a label of one to three words: "Window update: ...", "Physio
# update!!", "Budget correction - ...".
_LABEL = re.compile(r"\s*(?:[^\W\d_][\w'-]*\s+){1,3}")
_HEADING_END = re.compile(r"\s*[:!—–-]")
# A change under a modal or a condition is not made yet: "checkout will switch the export to ...",
# "if they raise the cap to ...". A "may" that names the month is no modal (_is_month).
_HEDGE_WORDS = (
    r"\b(?:will|would|could|might|may|should|shall|if|unless|until|whether|maybe|perhaps|going to|"
    r"plan(?:s|ning)? to|wants? to|hopes? to)"
)
_HEDGE = re.compile(_HEDGE_WORDS + r"\b|'ll\b|如果|要是|假如|也许|万一|打算", re.IGNORECASE)
# A modal that runs into the cue with no space or mark ("we'll改成3个人", "will改成"): a word character
# follows it, so _HEDGE's closing \b misses it; read right before the cue (it ends at the cue).
_HEDGE_TOUCHING = re.compile(f"(?:{_HEDGE_WORDS}|'ll)$", re.IGNORECASE)
_HEDGE_TOUCHING_LOOKBACK = 16  # characters: the longest modal ("planning to") and more
# "May" is the month before a day number ("From May 3"), after a preposition of time ("In May",
# "by May", "mid-May"), or capitalised inside a sentence ("the cap from last May is now 300") unless a
# subject follows it, as in a question ("Hi Anna, May I ..."), or a bare verb ("the cap May be
# raised"). "May I ...?" and "we may" stay modals.
_DAY_AFTER = re.compile(r"\s+\d")
_MONTH_PREPOSITION = re.compile(
    r"\b(?:in|by|from|until|since|before|after|during|of|early|late|mid)(?:\s+|\s*-\s*)$", re.IGNORECASE
)
_SENTENCE_OPEN = re.compile(r"(?:^|[.!?。！？:;\n])[\s\"'“‘(\[]*$")
_SUBJECT_AFTER = re.compile(r"\s+(?:i|we|you|he|she|they|it)\b", re.IGNORECASE)
# ... or a bare verb: "The cap May be raised to 300", "The boss May switch the cap" (title case) are
# modals; a name takes a verb with its ending ("Theresa May said", "Anna and May switched").
_BARE_VERB_AFTER = re.compile(
    r"\s+(?:be|have|not|also|still|well|never|even|switch|change|move|raise|lower|increase|decrease|bump|"
    r"extend|reduce|narrow|widen|go|allow|approve|authori[sz]e|clear|need|get|take|make|stay|keep|drop|cut|"
    r"set|add|remove|cancel|apply|require|want)\b",
    re.IGNORECASE,
)
_MONTH_LOOKBACK = 40  # characters before a "may" read for its preposition or sentence opening
# Looking back from a cue in bounded time, on the reversed text (explicit_cues): what may stand between a
# clause opener and a marker (the interjections of _CLAUSE_OPEN, at most two words, and the spaces and
# ",!." around them), the dashes of a "-" opener, and a heading label (_LABEL read backwards).
_TAIL_BACK = re.compile(r"[\s,!.]*(?:\w+[\s,!.]*){0,2}")
_DASHES_BACK = re.compile(r"[-–—]*")
_LABEL_BACK = re.compile(r"(?:\s+[\w'-]*[^\W\d_]){1,3}\s*")
# Correction cues of other languages, by language. Markers ("eigentlich", "en fait", "其实", "実は",
# ...) are cues only where they open a sentence or clause; the predicates "doch lieber" ("we take the
# train after all") and "に変更" ("changed to") wherever they stand, and they are explicit unless a
# modal or condition precedes them in their clause ("に変更" only before an ending of a change made or
# decided: _CHANGE_END). None counts in a question, in a sentence with a modal or condition
# (_FOREIGN_HEDGE, _HEDGE: "Wenn ..., stattdessen ...") or, except "に変更"
# (which reports the change itself), in a sentence told in the past: "Eigentlich wollten wir ..." and
# "其实我们昨天去了一家普通的披萨店" tell a story, they correct nothing. Left out: "plutôt" and "mejor"
# (adverb and adjective mid-clause: "plutôt bien", "mucho mejor"), "不是...而是" (a contrast, not a
# correction: "这不是问题，而是机会").
_FOREIGN_CUES: dict[str, str] = {
    "stattdessen": "de",
    "eigentlich": "de",
    "doch lieber": "de",
    "en fait": "fr",
    "finalement": "fr",
    "en realidad": "es",
    "其实": "zh",
    "実は": "ja",
    "やっぱり": "ja",
    "に変更": "ja",
}
_FOREIGN_PREDICATES = frozenset({"doch lieber", "に変更"})
_PAST = {
    "de": re.compile(
        r"\b(?:war|waren|warst|hatte|hatten|hattest|wollte|wollten|konnte|konnten|musste|mussten|sollte|"
        r"sollten|durfte|durften|mochte|mochten|wurde|wurden|ging|gingen|kam|kamen|gab|gaben|aß|aßen|nahm|nahmen|"
        r"fuhr|fuhren|blieb|blieben|fand|fanden|trank|tranken|bekam|bekamen|saß|saßen|sagte|sagten|meinte|"
        r"meinten|machte|machten|dachte|dachten|brachte|brachten|bestellte|bestellten|buchte|buchten|kaufte|"
        r"kauften|gestern|vorgestern|damals|letzte[nmrs]?)\b",
        re.IGNORECASE,
    ),
    "fr": re.compile(
        r"\b(?:hier|avant-hier|(?:ét|av|all|fais|pouv|voul|dev)(?:ais|ait|ions|iez|aient)|fut|furent)\b|"
        r"\b(?:ai|as|a|avons|avez|ont|suis|es|est|sommes|êtes|sont)\s+(?:\w+\s+){0,2}?"
        r"(?:\w+(?:é|ée|és|ées)|fait|pris|eu|été|vu|dit|mis|bu|venue?s?|partie?s?)\b|"
        # imparfait ("mangeait", "allaient"; not "fait", "parfait", "souhait") and passé simple
        r"\b(?!(?:parf|souh|extr|retr|portr|abstr|distr|attr)ait\b)\w{2,}(?:ait|aient)\b|\b\w+(?:âmes|âtes|èrent)\b",
        re.IGNORECASE,
    ),
    "es": re.compile(
        r"\b(?:ayer|anoche|anteayer|fue|fui|fuiste|fuimos|fueron|era|eran|éramos|había|habían|estaba|estábamos|"
        r"estaban|iba|íbamos|iban|tuve|tuvo|tuvimos|tuvieron|hice|hizo|hicimos|hicieron|estuve|estuvo|estuvimos|"
        r"estuvieron|pude|pudo|pudimos|quise|quiso|dije|dijo|dijimos|dijeron|puse|puso|trajo|supe|supo|comía|"
        r"tenía|hacía|quería|podía|sabía|vivía|salía|decía|bebía|pedía|prefería)\b|"
        r"\b(?:he|has|ha|hemos|habéis|han)\s+\w+(?:ado|ido|to|cho)\b|\b\w+(?:é|ó|aron|ieron|amos|imos)\b|"
        r"\b\w+(?:aba|abas|ábamos|aban|íamos|ían)\b",  # imperfect ("cenábamos", "comían")
        re.IGNORECASE,
    ),
    "zh": re.compile(
        r"昨天|前天|昨晚|上次|上周|上个月|去年|以前|之前|曾经|当初|那时|那天|那次|当时|刚才|后来|[吃去玩住喝看买点订走坐][了过]"
    ),
    "ja": re.compile(
        r"昨日|先日|この前|先週|あの時|その時|ました|でした|だった|" r"た(?:[。、！!？?」]|$|よ|ね|けど|し|から|の|ん)"
    ),
}
# The German perfect: an auxiliary and, after it, a participle closing its clause ("Wir haben ...
# normale Abendessen bestellt,", "sind ... gegangen"). Two searches, not "aux.*participle": that one
# re-read the rest of the sentence from every auxiliary (minutes for a long sentence of "ist").
_PERFECT = {
    "de": (
        re.compile(r"\b(?:habe|hast|hat|haben|habt|bin|bist|ist|sind|seid)\b", re.IGNORECASE),
        re.compile(
            r"\b(?:ge\w+(?:t|en)|(?:be|ver|er|ent|zer|emp)\w+t|\w+iert|bekommen|vergessen|verloren|entschieden|"
            r"erhalten|verstanden)\b(?=\s*(?:[.,;:!?)\n]|$))|\bge\w+(?:t|en)\b",
            re.IGNORECASE,
        ),
    ),
}
_QUESTION = re.compile(
    r"[?？¿]|\best-ce que\b|吗|是不是|要不要|能不能|可不可以|好不好|为什么|怎么|(?:ます|です|でしょう|ない|の)か|"
    # a Japanese sentence ending in か ("変更しましたか", "大丈夫かな"); a Chinese A-not-A question ("用不用",
    # "有没有") or a sentence-final 吧 / 呢 / 嘛
    r"か(?:な|しら|ね)?[\s。.!！]*$|([\u4e00-\u9fff])[不没]\1|[吧呢嘛][\s。.!！~～]*$|"
    r"\bn['’]est-ce pas\b|,\s*(?:oder|nicht wahr|verdad)\s*[.!]*$",  # tag questions without a "?"
    re.IGNORECASE,
)
_FOREIGN_HEDGE = re.compile(
    r"\b(?:würde\w*|könnte\w*|sollte\w*|möchte\w*|wäre|wären|hätte|hätten|vielleicht|eventuell|wahrscheinlich|"
    r"wenn|falls|ob|si|s['’]ils?|peut-être|pourrai\w*|devrai\w*|voudrai\w*|serai\w*|aurai\w*|quizás?|tal vez|"
    r"a lo mejor|podría\w*|debería\w*|sería\w*)\b|もし|かもしれ|かも|たら|なら|れば|でしょう|だろう|"
    r"如果|要是|假如|也许|或许|可能|大概|万一|的话|打算",
    re.IGNORECASE,
)
# What may follow "に変更" for it to report a change made or decided ("に変更しました", "に変更で、",
# "に変更します。"): not a wish, a plan, a condition, a negation or a question ("に変更したい",
# "に変更するつもり", "に変更すれば", "に変更しても", "に変更しない", "に変更しましたか").
_CHANGE_END = re.compile(
    r"(?:しました|した|します|する|してください|して下さい|済み(?:です)?|です|だ|で|になりました|になった|"
    r"になります|されました|された|されます)?(?=\s*(?:[。、，,.!！\n」』）)]|$))"
)
# What keeps an English cue from being explicit (_ClauseScan.english_cue_counts), read in its sentence
# (_EN_SENTENCE: a "." ends it unless a word character follows, "4.5"): a modal or hedge anywhere in it
# ("Actually, maybe we could drop the rule.", "we might raise the budget"; "would like" too: a wish; "may"
# is left to the clause rule of the predicates); a condition or
# a report ("X said:", "she says that") before the cue ("If the venue cancels, actually we go ...", "He
# said: actually the budget is 5000."); for a marker, a story told in the past with no number in its
# sentence ("Instead, we had dinner at a normal pizza place"): "we had / went / ate ...", "yesterday",
# "last night". Past tense
# alone is no story: "Actually, I changed my mind: ...", "Correction: we moved the date to May 5." are
# corrections.
_EN_HEDGE = re.compile(
    r"\b(?:maybe|perhaps|possibly|probably|might|could|would|should (?:we|i|you|they)|i guess|"
    r"not (?:sure|certain))\b",
    re.IGNORECASE,
)
_EN_BEFORE = re.compile(
    r"\b(?:(?:if(?!-)|unless|in case|provided|assuming|supposing|as long as|according to)\b|"  # conditions
    # reported speech: "X said: ...", "she says that ..." ("Theresa May said the cap is now 300" is no report)
    r"(?:said|says|told (?:me|us|him|her|them)|tells (?:me|us)|wrote|writes|claims?|claimed|mentioned)"
    r"(?:\s*:|\s+that\b))",
    re.IGNORECASE,
)
_EN_STORY = re.compile(
    r"\b(?:we|they)\s+(?:had|went|ate|drank|ordered|stayed|tried|visited|spent|met|saw|did|took)\b"
    r"(?!\s+(?:with|to\s+\d|\w+\s+wrong\b|\w+\s+\w+\s+wrong\b))|"
    r"\b(?:yesterday|last (?:night|week|weekend|time|month|year)|the other day|that night)\b",
    re.IGNORECASE,
)
_EN_SENTENCE = re.compile(r"(?:[^.!?。！？\n]|\.(?=\w))+[.!?。！？]*")
# A sentence of a cue of another language (_ClauseScan.foreign_cue_counts): as _SENTENCE, but a "."
# before a letter or digit ("45.5", "z.B") or before a lower-case word ("z.B. fürs") does not end it.
_FOREIGN_SENTENCE = re.compile(r"(?:[^.!?。！？\n]|\.(?=\w|[ \t]+[a-zß-öø-ÿ]))+[.!?。！？]*")


def correction_cues(text: str) -> list[str]:
    """The correction / update cue phrases found in ``text`` (lower-cased), in order. A cue of
    another language counts only where it is safe (see ``_FOREIGN_CUES``). Time linear in
    ``len(text)``; raises nothing."""
    return [cue for _, cue, _ in _cue_matches(text)]


def _cue_matches(text: str) -> Iterator[tuple[re.Match[str], str, _ClauseScan]]:
    """The matches of the cue patterns in ``text`` that count, each with its cue (stripped,
    lower-cased) and the text's :class:`_ClauseScan` (built at the first match)."""
    scan: _ClauseScan | None = None
    for m in _CUES.finditer(text):
        if scan is None:
            scan = _ClauseScan(text)
        cue = m.group(0).strip().lower()
        if cue in _FOREIGN_CUES and not scan.foreign_cue_counts(m.start(), cue):
            continue
        yield m, cue, scan


def explicit_cues(text: str) -> list[str]:
    """The cues of :func:`correction_cues` that make an explicit correction (lower-cased, in order);
    only these let a new record supersede a hard constraint.

    * a correction marker ("actually", "correction", "change of plan", "scratch that", "update:",
      "instead", "更正", "计划有变", ...) counts where it opens a sentence or clause, after at most two
      interjections ("Actually, the cap is 300.", "Oh, scratch that", "计划有变，..."), or as a heading
      after a short label ("Window update: ..."); mid-clause it does not ("somewhere Marta can
      actually relax", "until the visa is actually granted");
    * any other cue states the change itself ("infra raised the budget to 12 minutes", "she now
      allows 4 runs", "预算放宽到3500元") and counts unless a modal or a condition governs its clause
      ("checkout will switch the export to ...", "if they raise it to ..."); "May" that names the
      month is no modal ("In May the cap is now 300.", "From May 3 ..."; "May I ...?" and "we may"
      are);
    * an English cue of either kind counts only in a sentence without a modal or hedge ("Actually,
      maybe we could ...", "we might raise ...", "I guess", "not sure"), without a condition or a
      reporting verb before it ("If the venue cancels, actually ...", "He said: actually ...") and,
      for a marker, that tells no story in the past without a number ("Instead, we had dinner at a
      normal pizza place"; "Actually, I changed my mind: the budget is 5000." counts): ``_EN_HEDGE``,
      ``_EN_BEFORE``, ``_EN_STORY``;
    * a cue of another language ("eigentlich", "en fait", "en realidad", "其实", "実は", "に変更", ...:
      ``_FOREIGN_CUES``) counts only where :func:`correction_cues` keeps it, never in a question or a
      past-tense story; markers are then explicit, the predicates "doch lieber" and "に変更" unless a
      modal or condition precedes them in their clause.

    Time is linear in ``len(text)`` (characters) plus O(log n) per cue: the clause marks and the
    modals are found once for the whole text, and the look back from a marker to its clause opener
    reads at most the two words before it. Raises nothing; any str is accepted."""
    out: list[str] = []
    for m, cue, scan in _cue_matches(text):
        marker = bool(_MARKER.match(cue))
        if cue in _FOREIGN_CUES:
            # a marker counts (correction_cues) only where it opens a clause: then it is explicit
            explicit = cue not in _FOREIGN_PREDICATES or not (
                scan.hedged(m.start()) or _FOREIGN_HEDGE.search(text, scan.clause_start(m.start()), m.start())
            )
        elif marker:
            explicit = scan.opens_clause(m.start()) or (
                (cue[-1] in ":!-" or bool(_HEADING_END.match(text, m.end()))) and scan.labelled(m.start())
            )
        else:
            explicit = not scan.hedged(m.start())
        if explicit and cue not in _FOREIGN_CUES:
            explicit = scan.english_cue_counts(m.start(), marker=marker)
        if explicit:
            out.append(cue)
    return out


class _ClauseScan:
    """What :func:`explicit_cues` asks about the text before a cue, each question answered without
    reading the text from its start (once per cue that was quadratic: minutes for 160 KB):

    * :meth:`opens_clause`: does ``_CLAUSE_OPEN`` match right before it (a clause opener and at most
      two interjections);
    * :meth:`labelled`: is everything from its clause start to it a short label (``_LABEL``);
    * :meth:`hedged`: does a modal or condition (``_HEDGE``) stand between its clause start and it.

    Clause starts (ends of ``_CLAUSE_MARK`` matches) and modal spans are found once for the whole
    text; the look backs run on the reversed text and stop after a few words."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._rev: str | None = None
        self._clause_starts: list[int] | None = None
        self._hedges: list[tuple[int, int]] | None = None
        self._sentences: dict[re.Pattern[str], list[tuple[int, int]]] = {}  # pattern -> sentence spans
        self._foreign: dict[tuple[int, str], bool] = {}  # (sentence start, language) -> no question, no past
        self._english: dict[int, tuple[bool, bool]] = {}  # sentence start -> (hedged, story)
        self._before: list[int] | None = None  # starts of _EN_BEFORE matches

    @property
    def rev(self) -> str:
        if self._rev is None:
            self._rev = self.text[::-1]
        return self._rev

    def clause_start(self, at: int) -> int:
        """Where the clause holding position ``at`` starts: the end of the last clause mark ending at
        or before ``at``, else 0."""
        if self._clause_starts is None:
            self._clause_starts = [c.end() for c in _CLAUSE_MARK.finditer(self.text)]
        i = bisect.bisect_right(self._clause_starts, at)
        return self._clause_starts[i - 1] if i else 0

    def foreign_cue_counts(self, at: int, cue: str) -> bool:
        """Whether the cue of another language at ``at`` counts (``_FOREIGN_CUES``): a marker opens
        a clause ("に変更" ends as ``_CHANGE_END`` allows); its sentence (``_FOREIGN_SENTENCE``) is no
        question, holds no modal or condition and, but for "に変更", is not told in the past."""
        if cue not in _FOREIGN_PREDICATES and not self.opens_clause(at):
            return False
        if cue == "に変更" and not _CHANGE_END.match(self.text, at + len(cue)):
            return False
        lo, hi = self._sentence(at, _FOREIGN_SENTENCE)
        lang = "ja-change" if cue == "に変更" else _FOREIGN_CUES[cue]
        key = (lo, lang)
        if key not in self._foreign:  # once per sentence: a long one may hold many cues
            sentence = self.text[lo:hi]
            past = lang != "ja-change" and (_PAST[lang].search(sentence) is not None or _perfect(lang, sentence))
            hedged = _FOREIGN_HEDGE.search(sentence) is not None or any(
                not _is_month(sentence, h) for h in _HEDGE.finditer(sentence)
            )
            self._foreign[key] = not past and not hedged and _QUESTION.search(sentence) is None
        return self._foreign[key]

    def _sentence(self, at: int, pattern: re.Pattern[str]) -> tuple[int, int]:
        """The span of the sentence (a match of ``pattern``: ``_FOREIGN_SENTENCE``, ``_EN_SENTENCE``)
        that starts last at or before position ``at``; the spans are found once per pattern."""
        spans = self._sentences.get(pattern)
        if spans is None:
            spans = self._sentences[pattern] = [s.span() for s in pattern.finditer(self.text)]
        i = bisect.bisect_right(spans, (at, len(self.text) + 1)) - 1
        return spans[i] if i >= 0 else (0, len(self.text))

    def english_cue_counts(self, at: int, *, marker: bool) -> bool:
        """Whether the English cue at ``at`` may be explicit: its sentence (``_EN_SENTENCE``) holds no modal or hedge
        (``_EN_HEDGE``), no condition or reporting verb before it (``_EN_BEFORE``) and, for a
        ``marker``, tells no story in the past without a number (``_EN_STORY``)."""
        lo, hi = self._sentence(at, _EN_SENTENCE)
        if lo not in self._english:  # once per sentence: a long one may hold many cues
            sentence = self.text[lo:hi]
            hedged = _EN_HEDGE.search(sentence) is not None
            story = _EN_STORY.search(sentence) is not None and _NUMBER.search(sentence) is None
            self._english[lo] = (hedged, story)
        hedged, story = self._english[lo]
        if hedged or (marker and story):
            return False
        if self._before is None:
            self._before = [b.start() for b in _EN_BEFORE.finditer(self.text)]
        i = bisect.bisect_left(self._before, lo)
        return not (i < len(self._before) and self._before[i] < at)

    def opens_clause(self, at: int) -> bool:
        # A match of _CLAUSE_OPEN ending at ``at`` is an opener (one character, or a space and dashes)
        # and a tail of spaces, ",!." and at most two words: it starts at or after ``lo``.
        tail = at - self._back(_TAIL_BACK, at)
        lo = max(0, tail - 1 - self._back(_DASHES_BACK, tail))
        return _CLAUSE_OPEN.search(self.text, lo, at) is not None

    def _back(self, pattern: re.Pattern[str], at: int) -> int:
        """How many characters before ``at`` the reversed-text ``pattern`` (which may match empty) spans."""
        m = pattern.match(self.rev, len(self.text) - at)
        return m.end() - m.start() if m else 0

    def labelled(self, at: int) -> bool:
        n = len(self.text)
        return _LABEL_BACK.fullmatch(self.rev, n - at, n - self.clause_start(at)) is not None

    def hedged(self, at: int) -> bool:
        if self._hedges is None:
            self._hedges = [(h.start(), h.end()) for h in _HEDGE.finditer(self.text) if not _is_month(self.text, h)]
        # Modal spans never hold a clause mark, so none straddles a clause start; they do not
        # overlap, so the first one starting in the clause is the first to end.
        start = self.clause_start(at)
        i = bisect.bisect_left(self._hedges, (start, -1))
        if i < len(self._hedges) and self._hedges[i][1] <= at:
            return True
        touching = _HEDGE_TOUCHING.search(self.text, max(start, at - _HEDGE_TOUCHING_LOOKBACK), at)
        return touching is not None and not _is_month(self.text, touching)


def _perfect(lang: str, sentence: str) -> bool:
    """True when ``sentence`` holds a perfect tense of ``lang`` (``_PERFECT``); linear in its length."""
    if lang not in _PERFECT:
        return False
    aux, participle = _PERFECT[lang]
    m = aux.search(sentence)
    return m is not None and participle.search(sentence, m.end()) is not None


def _is_month(text: str, m: re.Match[str]) -> bool:
    """True when the modal-looking match ``m`` of ``_HEDGE`` is "May" the month (see ``_DAY_AFTER``)."""
    word = m.group(0)
    if word.lower() != "may":
        return False
    lo = max(0, m.start() - _MONTH_LOOKBACK)
    if _DAY_AFTER.match(text, m.end()) or _MONTH_PREPOSITION.search(text, lo, m.start()):
        return True
    return (
        word == "May"
        and _SENTENCE_OPEN.search(text, lo, m.start()) is None
        and _SUBJECT_AFTER.match(text, m.end()) is None
        and _BARE_VERB_AFTER.match(text, m.end()) is None
    )


def _explicit_sentences(text: str) -> str:
    return " ".join(s.group(0) for s in _SENTENCE.finditer(text) if explicit_cues(s.group(0)))


def negated_terms(text: str) -> set[str]:
    """Stemmed words a negation in ``text`` rejects: "orders.spec.ts, not payments." -> {"payme"};
    "Not TZ: ..." -> {"tz"}. Only a negated word at a clause end or before a colon counts."""
    return {_stem(m.group(1).lower()) for m in _NEGATION.finditer(text)}


def values(text: str) -> set[str]:
    """Numbers in ``text`` with thousands separators removed ("4,200" -> "4200")."""
    return {_norm(m.group(0)) for m in _NUMBER.finditer(text)}


def value_slots(text: str, window: int = 3) -> dict[str, set[str]]:
    """Each number of ``text`` (normalised as in :func:`values`) with its slot: the stemmed words
    within ``window`` words on either side (CJK: the characters within ``window`` characters), plus
    "#date" for a CJK month-day date and "#id" for a number naming a thing ("parcel number 137")."""
    slots: dict[str, set[str]] = {}
    for m in _NUMBER.finditer(text):
        left = text[max(0, m.start() - 60) : m.start()]
        right = text[m.end() : m.end() + 60]
        ctx = set(_context_words(left)[-window:]) | set(_context_words(right)[:window])
        ctx |= set(_CJK_CHAR.findall(left[-window:])) | set(_CJK_CHAR.findall(right[:window]))
        ctx -= _CJK_STOP  # function characters (了, 的, ...) share no slot
        if _DATE.match(m.group(0)):
            ctx.add("#date")
        if _ID_BEFORE.search(left) or _is_label(left, right):
            ctx.add("#id")
        slots.setdefault(_norm(m.group(0)), set()).update(ctx)
    return slots


def _is_label(left: str, right: str) -> bool:
    """A number right after a content word and closing its clause ("distractor turn 5", "Tracking check
    3: ...") labels a thing; a quantity is followed by its unit or object ("for 6 years")."""
    before = _WORD.findall(left[-40:])
    if not before or left[-1:] not in (" ",) or before[-1].lower() in STOPWORDS:
        return False
    return bool(_LABEL_END.match(right))


def subject_terms(text: str) -> set[str]:
    """Content terms: index terms minus stopwords and bare numbers; Latin words cut to 5 characters
    (truncation stemming: "registration" and "registering" meet as "regis"); identifiers kept whole."""
    out = set()
    for term in index_terms(text):
        if term in STOPWORDS or term.isdigit() or term in _CJK_STOP or (len(term) < 2 and not _CJK_CHAR.match(term)):
            continue
        out.add(_stem(term))
    out.update(m.group(0).lower() for m in _IDENT.finditer(text))
    return out


def _norm(number: str) -> str:
    return re.sub(r"[.,](?=\d{3}\b)", "", number)


def _stem(term: str) -> str:
    return term[:5] if _LATIN.match(term) else term


def _context_words(text: str) -> list[str]:
    return [_stem(w.lower()) for w in _WORD.findall(text) if w.lower() not in STOPWORDS and not _CJK_CHAR.match(w)]


@dataclass(frozen=True, slots=True)
class ConflictPolicy:
    """Thresholds of :func:`decide` (tuned on ``scenarios/dev``).

    Attributes:
        paraphrase_cos: cosine (dense) at or above which an unchanged statement is a paraphrase.
        min_overlap: subject overlap (share of the smaller term set) needed for a cue-marked update
            (overlap of the cue's sentence with the old record, or of the whole texts).
        min_cos_update: cosine needed for a cue-marked update when the overlap is below
            ``strong_overlap``.
        strong_overlap: overlap that suffices for a cue-marked update whatever the cosine.
        value_cos, value_overlap: an aligned value change without any cue is an update only above
            both (the same sentence with another number: "for 5 years" -> "for 6 years").
        max_new_terms: ... and only when the two records differ in at most this many subject terms
            (symmetric difference): "Bob is 31 years old" does not update "Alice is 30 years old".
        passive_roles: roles whose records report rather than state (tool output, the agent's
            actions); they never supersede anything.
        reflective_roles: roles of the agent's own reasoning; they supersede only records of a
            reflective role (a thought revises a thought, never what the user or a tool said).
    """

    paraphrase_cos: float = 0.93
    min_overlap: float = 0.2
    min_cos_update: float = 0.42
    strong_overlap: float = 0.34
    value_cos: float = 0.6
    value_overlap: float = 0.4
    max_new_terms: int = 1
    passive_roles: frozenset[str] = frozenset({"tool", "agent_action", "assistant_action", "function"})
    reflective_roles: frozenset[str] = frozenset({"agent_thought", "assistant_thought"})


DEFAULT_POLICY = ConflictPolicy()


@dataclass(frozen=True, slots=True)
class ConflictDecision:
    """Outcome for one new record.

    Attributes:
        relation: paraphrase, update or new.
        target: the existing record concerned (None for ``new``).
        overlap: subject overlap with the target, 0..1 (share of the smaller term set).
        cosine: cosine of the two embeddings, -1..1 (higher = more similar).
        cues: correction cues found in the new record (lower-cased).
        reason: one line naming the rule that fired and its evidence.
        signals: the update rules that fired: "cue", "negation", "value".
        rank: the winning candidate's score among the candidates (higher = stronger).
        held: for a ``new`` decision, the update of a hard constraint that the explicit-correction
            rule refused (its target stays current) and that would have won; None otherwise. The
            caller audits it (``Memory.add``: a refused "supersede" entry).
    """

    relation: Relation
    target: MemoryRecord | None
    overlap: float
    cosine: float
    cues: tuple[str, ...]
    reason: str
    signals: tuple[str, ...] = ()
    rank: float = 0.0
    held: ConflictDecision | None = None

    def scores(self) -> dict[str, float]:
        """The numeric evidence, rounded to 4 places: overlap, cosine, rank (for audit entries)."""
        return {"overlap": round(self.overlap, 4), "cosine": round(self.cosine, 4), "rank": round(self.rank, 4)}


class ConflictJudge(Protocol):
    """Optional second opinion (e.g. an LLM) on a proposed update or paraphrase; off by default."""

    def confirm(self, new: MemoryRecord, old: MemoryRecord, relation: Relation) -> bool:
        """True to accept the proposed relation between ``new`` and ``old``."""
        ...


def _overlap(a: AbstractSet[str], b: AbstractSet[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / min(len(a), len(b))


def _aligned_change(new: dict[str, set[str]], old: dict[str, set[str]]) -> list[tuple[str, str]]:
    """(old value, new value) pairs where an old number is gone and a new one shares its slot;
    none when the two name different things (parcel number 136 vs parcel number 137)."""
    new_ids = {v for v, ctx in new.items() if "#id" in ctx}
    old_ids = {v for v, ctx in old.items() if "#id" in ctx}
    if new_ids and old_ids and not new_ids & old_ids:
        return []
    gone = [v for v in old if v not in new]
    came = [v for v in new if v not in old]
    return [(o, n) for o in gone for n in came if old[o] & new[n] and "#id" not in old[o] | new[n]]


def _destinations(cue_text: str) -> list[set[str]]:
    """Subject terms of what the cue sentences ``cue_text`` (:func:`_cue_sentences`) switch *to*
    ("switch to the oiled oak block"); :func:`decide` drops an old record that already says one of
    them (:func:`_adopted`)."""
    return [dest for m in _DESTINATION.finditer(cue_text) if (dest := subject_terms(m.group(1)))]


def _adopted(destinations: Sequence[set[str]], old_terms: AbstractSet[str]) -> bool:
    """True when the old record already says what the new one switches to (``destinations``, from
    :func:`_destinations`): it proposed the new state rather than contradicting it."""
    return any(dest <= old_terms for dest in destinations)


@functools.lru_cache(maxsize=1 << 14)
def _old_terms(text: str) -> frozenset[str]:
    """:func:`subject_terms` of a candidate's text, memoised: a record is a candidate of many new ones."""
    return frozenset(subject_terms(text))


@functools.lru_cache(maxsize=1024)
def _retracted_items(text: str) -> dict[str, set[str]]:
    """Value slots (:func:`value_slots`) of the sentences of ``text`` that report a retraction."""
    sentences = [m.group(0) for m in _SENTENCE.finditer(text) if _RETRACTION.search(m.group(0))]
    return value_slots(" ".join(sentences)) if sentences else {}


def _names_retracted(retracted: dict[str, set[str]], old_slots: dict[str, set[str]]) -> list[str]:
    """Values the old record holds in a context sharing a term with the retraction's context."""
    return sorted(v for v, ctx in retracted.items() if v in old_slots and ctx & old_slots[v])


def _cue_sentences(text: str) -> str:
    return " ".join(s.group(0) for s in _SENTENCE.finditer(text) if _has_cue(s.group(0)))


def _has_cue(text: str) -> bool:
    """True when :func:`correction_cues` finds a cue in ``text``."""
    return next(_cue_matches(text), None) is not None


def decide(
    new: MemoryRecord,
    candidates: Sequence[tuple[MemoryRecord, float]],
    *,
    policy: ConflictPolicy = DEFAULT_POLICY,
    judge: ConflictJudge | None = None,
) -> ConflictDecision:
    """Classify ``new`` against ``candidates`` (current records of its namespace with their cosine
    to ``new``, any order). See the module docstring for the rules. Pure; no I/O apart from what
    ``judge`` does. Candidates of another namespace, superseded ones and ``new`` itself are ignored."""
    text = new.content
    cues = tuple(correction_cues(text))
    can_update = new.role not in policy.passive_roles and not text.rstrip().endswith(("?", "？"))
    reflective = new.role in policy.reflective_roles
    new_terms = subject_terms(text)
    cue_text = _cue_sentences(text)
    cue_terms = subject_terms(cue_text) if cues else set()
    negated = negated_terms(text)
    new_slots = value_slots(text)
    computed = bool(_ARITHMETIC.search(text))
    cue_values = set(value_slots(cue_text)) if cues else set()
    explicit = tuple(explicit_cues(text)) if cues else ()
    explicit_terms = subject_terms(_explicit_sentences(text)) if explicit else set()
    retracted = _retracted_items(text)
    if reflective and cue_values:  # a thought repeating a change someone else already stated
        stated = (set(value_slots(o.content)) for o, _ in candidates if o.role not in policy.reflective_roles)
        if any(cue_values <= vals for vals in stated):
            cues = ()
    best: ConflictDecision | None = None
    held: ConflictDecision | None = None  # the best update the hard-constraint rule refused
    destinations = _destinations(cue_text)  # once, not per candidate
    for old, cos in candidates:
        if old.id == new.id or old.namespace != new.namespace or not old.is_current:
            continue
        old_terms = _old_terms(old.content)
        old_slots = value_slots(old.content)
        overlap = _overlap(new_terms, old_terms)
        changed = bool(new_slots and old_slots and set(new_slots) != set(old_slots))
        if cos >= policy.paraphrase_cos and not changed and not cues:
            decision = ConflictDecision(
                Relation.PARAPHRASE, old, overlap, cos, cues, f"paraphrase (cos {cos:.2f})", (), 10.0 + cos
            )
        elif (
            not can_update
            or (reflective and old.role not in policy.reflective_roles)
            or _adopted(destinations, old_terms)
        ):
            continue
        else:
            old_terms_all = old_terms | {w[:2] for w in old_terms if _LATIN.match(w)} | set(old_slots)
            live = [c for c in cues if not (_ECHO.match(c) and _stem(c.split()[0]) in old_terms)]
            live_set = set(live)
            flip = sorted(w for w in negated if w in old_terms_all)
            aligned = [] if computed else _aligned_change(new_slots, old_slots)
            restated = bool(cue_values) and cue_values <= set(old_slots)
            cue_overlap = max(overlap, _overlap(cue_terms, old_terms)) if live else 0.0
            signals: list[str] = []
            if live and _cue_rule(cue_overlap, cos, restated=restated, policy=policy):
                signals.append("cue")
            if flip and overlap >= policy.min_overlap:
                signals.append("negation")
            same_subject = len(new_terms ^ old_terms) <= policy.max_new_terms  # "Bob is 31" is not "Alice is 30"
            if aligned and (
                (cos >= policy.value_cos and overlap >= policy.value_overlap and same_subject)
                or (live and cos >= policy.min_cos_update)
            ):
                signals.append("value")
            reports_it = bool(_RETRACTION_NEWS.search(old.content))  # the notice itself, not the item
            named = _names_retracted(retracted, old_slots) if retracted and not reflective and not reports_it else []
            if named:
                signals.append("retraction")
            if not signals:
                continue
            # A hard constraint yields only to an explicit correction: a cue opening a sentence or
            # clause whose sentence is about it, or such a cue with an aligned value change.
            refused = old.type is MemoryType.HARD_CONSTRAINT and not _explicit_correction(
                [c for c in explicit if c in live_set],
                max(overlap, _overlap(explicit_terms, old_terms)),
                cos,
                restated=restated,
                value="value" in signals,
                policy=policy,
            )
            evidence = []
            if named:
                evidence.append(f"retracts {named}")
            if live:
                evidence.append(f"cues {live}")
            if flip:
                evidence.append(f"negates {flip}")
            if aligned:
                evidence.append("values " + ", ".join(f"{o} -> {n}" for o, n in aligned[:3]))
            rank = overlap + cos + (0.5 if aligned else 0.0) + (0.5 if flip else 0.0) + 0.25 * (old.role == new.role)
            decision = ConflictDecision(
                Relation.UPDATE,
                old,
                overlap,
                cos,
                cues,
                f"update ({'+'.join(signals)}): {'; '.join(evidence)}; overlap {overlap:.2f}, cos {cos:.2f}",
                tuple(signals),
                rank,
            )
            if refused:
                if held is None or decision.rank > held.rank:
                    held = dataclasses.replace(
                        decision, reason=f"refused, hard constraint without an explicit correction: {decision.reason}"
                    )
                continue
        if best is not None and decision.rank <= best.rank:
            continue
        if judge is not None and not judge.confirm(new, old, decision.relation):
            continue
        best = decision
    if held is not None and (best is None or held.rank > best.rank):
        # The proposal was about the constraint: no weaker candidate takes its place.
        return ConflictDecision(Relation.NEW, None, 0.0, 0.0, cues, "hard constraint kept", held=held)
    if best is None:
        return ConflictDecision(Relation.NEW, None, 0.0, 0.0, cues, "no conflicting record")
    return best


def _explicit_correction(
    live_explicit: Sequence[str],
    overlap: float,
    cos: float,
    *,
    restated: bool,
    value: bool,
    policy: ConflictPolicy,
) -> bool:
    """True when explicit cues (:func:`explicit_cues`, echoes removed) correct the old record: the
    "cue" rule of :func:`decide` holds for them (``overlap``: that of their sentences, or of the whole
    texts), or an aligned value change comes with them at the cosine a cue-marked update needs."""
    if not live_explicit:
        return False
    if value and cos >= policy.min_cos_update:
        return True
    return _cue_rule(overlap, cos, restated=restated, policy=policy)


def _cue_rule(overlap: float, cos: float, *, restated: bool, policy: ConflictPolicy) -> bool:
    """The "cue" signal of :func:`decide` for live cues: they do not merely restate the old values,
    and the texts overlap enough (``strong_overlap`` alone, or ``min_overlap`` with the cosine of a
    cue-marked update)."""
    return (
        not restated
        and overlap >= policy.min_overlap
        and (overlap >= policy.strong_overlap or cos >= policy.min_cos_update)
    )


def find_updates(
    store: Store,
    namespace: str,
    records: Sequence[MemoryRecord],
    *,
    policy: ConflictPolicy = DEFAULT_POLICY,
    judge: ConflictJudge | None = None,
    window: int = 10,
) -> list[tuple[MemoryRecord, ConflictDecision]]:
    """The updates among ``records`` (new, embedded, not yet stored; in arrival order).

    Each record is compared (:func:`decide`) with the current records of ``namespace`` (any tier)
    that are among its ``window`` dense neighbours or its ``window`` best BM25 matches, and with the
    records before it in ``records``: all of them while they are at most ``4 * window``, else, the same
    way as the stored ones, its ``window`` nearest by cosine and its ``window`` best term matches among
    them (:class:`_Earlier`; comparing with every earlier one made a batch of n records cost
    O(n^2) rule evaluations: minutes for a few thousand turns). A record is superseded at most once per call.

    Returns:
        (new record, decision) pairs with ``decision.relation == Relation.UPDATE``; the superseded
        record is ``decision.target``. Also, in the same order, the pairs whose decision holds a
        refused update of a hard constraint (``decision.held``, any relation): the caller audits
        them; their hard constraint stays current. Split parts (``metadata["split_group"]``) never
        take part.
    """
    out: list[tuple[MemoryRecord, ConflictDecision]] = []
    earlier = _Earlier(window)
    retired: set[str] = set()
    everywhere = RecordFilter(tiers=None)
    for rec in records:
        if rec.embedding is None or "split_group" in rec.metadata:
            continue
        if not _may_update(rec.content):  # no cue, number or negation: no rule of decide() can fire
            earlier.append(rec)
            continue
        terms = query_terms(rec.content)
        ids = [h.id for h in store.search_vector(namespace, rec.embedding, everywhere, limit=window)]
        if store.supports_lexical:
            ids += [h.id for h in store.search_lexical(namespace, terms, everywhere, limit=window)]
        pool = store.get(namespace, list(dict.fromkeys(ids))) + earlier.candidates(rec, terms)
        candidates = [(r, _cosine(rec, r)) for r in pool if r.id not in retired and r.embedding is not None]
        decision = decide(rec, candidates, policy=policy, judge=judge)
        if decision.relation is Relation.UPDATE and decision.target is not None:
            retired.add(decision.target.id)
            out.append((rec, decision))
        elif decision.held is not None:
            out.append((rec, decision))
        earlier.append(rec)
    return out


class _Earlier:
    """The records of a :func:`find_updates` batch seen so far, and which of them a new record is
    compared with: all while they are at most ``4 * window``; else the ``window`` with the highest
    cosine to it and the ``window`` sharing the most of its query terms (each shared term weighted by
    its inverse document frequency among them, log(1 + n / df): BM25 without length normalisation),
    ties to the later record."""

    def __init__(self, window: int) -> None:
        self.window = window
        self.records: list[MemoryRecord] = []
        self._unit = np.zeros((0, 0), dtype=np.float32)  # rows [:len(records)]: L2-normalised embeddings
        self._widths: set[int] = set()  # embedding widths seen (one, unless the caller mixed encoders)
        self._postings: dict[str, list[int]] = {}
        self._indexed = 0  # records[:_indexed] are in _postings

    def append(self, rec: MemoryRecord) -> None:
        assert rec.embedding is not None
        v = rec.embedding.astype(np.float32)
        norm = float(np.linalg.norm(v))
        n = len(self.records)
        self._widths.add(len(v))
        if len(self._widths) == 1:  # grown by doubling: appending stays O(d) amortised
            if n == len(self._unit):
                grown = np.zeros((max(64, 2 * n), len(v)), dtype=np.float32)
                if n:  # the first buffer replaces the (0, 0) placeholder
                    grown[:n] = self._unit[:n]
                self._unit = grown
            self._unit[n] = v / norm if norm else v
        self.records.append(rec)

    def candidates(self, rec: MemoryRecord, terms: Sequence[str]) -> list[MemoryRecord]:
        n = len(self.records)
        if n <= 4 * self.window:
            return list(self.records)
        assert rec.embedding is not None
        picked: dict[int, None] = {}
        if self._widths == {len(rec.embedding)}:
            cos = self._unit[:n] @ rec.embedding.astype(np.float32)
            # stable sort of the reversed list: of equal cosines the later record comes first
            order = n - 1 - np.argsort(-cos[::-1], kind="stable")[: self.window]
            picked.update(dict.fromkeys(order.tolist()))
        for j in range(self._indexed, n):  # index the records appended since the last call
            for term in set(query_terms(self.records[j].content)):
                self._postings.setdefault(term, []).append(j)
        self._indexed = n
        weight: dict[int, float] = {}
        for term in set(terms):
            rows = self._postings.get(term, ())
            idf = math.log1p(n / len(rows)) if rows else 0.0
            for j in rows:
                weight[j] = weight.get(j, 0.0) + idf
        best = sorted(weight, key=lambda j: (-weight[j], -j))[: self.window]
        picked.update(dict.fromkeys(best))
        return [self.records[j] for j in sorted(picked)]


def _may_update(text: str) -> bool:
    """True when ``text`` carries something an update needs: a correction cue, a number (a value
    change) or a negated term. The three signals of :func:`decide` each need one of these."""
    return bool(_CUES.search(text) or _NUMBER.search(text) or _NEGATION.search(text))


def _cosine(a: MemoryRecord, b: MemoryRecord) -> float:
    assert a.embedding is not None and b.embedding is not None
    x, y = a.embedding.astype(np.float64), b.embedding.astype(np.float64)
    norm = float(np.linalg.norm(x) * np.linalg.norm(y))
    return float(x @ y) / norm if norm else 0.0
