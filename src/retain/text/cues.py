"""Explicit correction cues: which words in which languages mark a text as correcting an earlier one,
and when they do not count.

:func:`correction_cues` finds the cue phrases of a text (:data:`CORRECTION_CUES`): "correction:",
"actually", "my bad", "switched to", "moved to", "it's now", "no longer", "new ceiling", "scratch that",
"update:", "改成", "计划有变", "放宽到", ... :func:`retain.ingest.conflict.decide` reads them as one signal of an
update. :func:`explicit_cues` keeps the cues that make an *explicit correction*, the only kind that
retires a hard constraint: a correction marker that opens a sentence or clause ("Actually, ...",
"Correction: ...", "Change of plan: ...", "Oh, scratch that", "计划有变，...") or a change predicate not
under a modal ("infra raised the budget to 12 minutes", "预算放宽到3500元"; not "checkout will switch the
export to"); an English cue not in a sentence with a modal or hedge, after a condition or a reporting
verb, or (a marker) in a past-tense story without a number ("Instead, we had dinner at ..."). A
mid-clause marker ("somewhere Marta can actually relax") is a cue but not an explicit one.

Languages: English and Chinese; German "eigentlich", "stattdessen", "doch lieber", French "en fait",
"finalement", Spanish "en realidad", Chinese "其实", Japanese "実は", "やっぱり", "に変更", which count
only where they are safe (``_FOREIGN_CUES``): never in a question, in a sentence with a modal or
condition, or (but "に変更") in a story told in the past.

Limits: rules, no model. Modals, conditions, questions and the past are told by short word and ending
lists per language, so an unusual form slips through. Left out: "plutôt" and "mejor" (mid-clause they
are "quite" and "better"), "不是...而是" (a contrast more often than a correction). Every function here
takes time linear in the text length (:class:`_ClauseScan`).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator

__all__ = ["CORRECTION_CUES", "correction_cues", "explicit_cues", "has_cue", "mentions_cue"]


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
    # at most 60 characters between "i can do" and "now": bounded so the match stays linear on a long
    # clause
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
# normale Abendessen bestellt,", "sind ... gegangen"). Two searches, not one "aux.*participle"
# pattern, so the scan stays linear.
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
_DIGIT = re.compile(r"\d")  # a sentence holding one names a number
# A sentence of a cue of another language (_ClauseScan.foreign_cue_counts): as _EN_SENTENCE, but a "."
# before a lower-case word ("z.B. fürs") does not end it either.
_FOREIGN_SENTENCE = re.compile(r"(?:[^.!?。！？\n]|\.(?=\w|[ \t]+[a-zß-öø-ÿ]))+[.!?。！？]*")


def correction_cues(text: str) -> list[str]:
    """The correction / update cue phrases found in ``text`` (lower-cased), in order. A cue of
    another language counts only where it is safe (see ``_FOREIGN_CUES``). Time linear in
    ``len(text)``; raises nothing."""
    return [cue for _, cue, _ in _cue_matches(text)]


def has_cue(text: str) -> bool:
    """True when :func:`correction_cues` finds a cue in ``text`` (it stops at the first)."""
    return next(_cue_matches(text), None) is not None


def mentions_cue(text: str) -> bool:
    """True when a pattern of :data:`CORRECTION_CUES` matches anywhere in ``text``, whether or not the
    cue counts (:func:`correction_cues`): a pre-filter that scans no clause."""
    return _CUES.search(text) is not None


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
    re-reading the text once per cue, so the work of :func:`explicit_cues` grows with the text's
    length, not with its length times its cues:

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
            story = _EN_STORY.search(sentence) is not None and _DIGIT.search(sentence) is None
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
