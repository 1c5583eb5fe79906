"""Rule-based memory-type classifier: which :class:`~retain.record.MemoryType` a piece of text is.

Method: a fixed *rule cascade* over cue patterns (regular expressions, English and Chinese) and the
speaker's role. No model, no network, no state: the same ``(text, role)`` always gives the same
answer. Rules are tried in order of precedence and the first that fires decides; its name is the
reason :func:`classify_with_reason` returns (``"sensitive:email"``, ``"hard:must"``, ...).

Order of precedence, highest first:

1. **Empty** text -> ``chatter``.
2. **Sensitive data**, whatever the role: e-mail addresses, phone numbers, payment-card numbers
   (13-19 digits passing the Luhn check, or any card-like run next to a card word), CVV codes,
   IBANs (ISO 13616 mod-97 check, or an IBAN-shaped string after the word "IBAN"), API keys and
   tokens (``sk-...``, ``*_sk_live_...``, ``ghp_...``, ``npm_...``, AWS ``AKIA...``, JWTs, PEM
   private keys, ``token=...``), passwords, passport and national id numbers (Chinese resident id
   with its ISO 7064 check digit, or any 15/18-digit id after 身份证). Privacy comes first: a false
   alarm costs a little accuracy elsewhere, a miss leaks a secret into long-term memory.
3. **Role cues.** Roles from agent traces decide the family; cues pick the type within it:

   - thought roles (``agent_thought``, ``thought``, ``reasoning``) -> ``reasoning``.
   - action roles (``agent_action``, ``tool_call``): a call written as code (``name(args)``, a shell
     command, 查询/搜索/预订...) -> ``plan_step``; a conversational reply ("Replied:", "Told them",
     回复：) -> ``chatter``, unless it asks the user for information (-> ``plan_step``); a delivered
     outcome (recommendation, shortlist, summary, totals, a versioned artefact "Table v2", 推荐,
     草案, 完毕) -> ``action_result``; anything else the agent does -> ``plan_step``.
   - tool roles (``tool``, ``function``, ``observation``), judged on the header only (first
     line, first 100 characters; a search page that merely lists a "delivered" item or carries an
     advert is still an observation): a social message (chat, review comment, reactions)
     -> ``chatter``; an outcome of an action (confirmed, booked, approved, created, cancelled,
     revoked, delivered, enabled, an ``Error:``, 成功) -> ``action_result``; ambient noise
     (newsletters, ads, surveys, dashboards, weather, reviews, raw document text such as
     transcripts, abstracts, excerpts) -> ``chatter``; anything else -> ``observation``.
   - system roles (``system``, ``developer``): a policy or rule (must, never, only, required,
     up to N, at most, policy/rule/standard/code, 必须, 禁止) -> ``hard_constraint``, else
     ``chatter`` (notifications, reminders, surveys).

4. **Content cascade** for people: ``user``, speaker names, ``assistant`` and unknown roles.
   With ``role=None`` a call written as code first gives ``plan_step`` and a tool-output marker
   (``Result:``, ``Error:``, "booking confirmed", "successfully") gives ``action_result``.

   a. strong hard-constraint cues: must, never, non-negotiable, hard ceiling/cap/limit, can't go
      over, no more than, at most, not allowed, allergy, a diet ("I am vegetarian"), budget, deadline,
      is due, don't touch,
      必须, 不能, 不超过, 以内, 预算, 过敏, 禁止 -> ``hard_constraint``;
   b. strong chatter cues: laughter (haha, lol, 哈哈, 笑死), thanks (谢谢, 辛苦), emoji,
      "!!", 太好了 -> ``chatter``;
   c. soft-preference cues: prefer, favour, would rather, instead of, ideally, if possible,
      if you can, I like, I'd like / would love (a thing), not a fan, please don't, 喜欢, 偏好,
      希望, 最好, 尽量, 不吃 -> ``soft_preference``;
   d. decision and correction cues: let's do, going with, switch to, change of plan, actually,
      my bad, "X it is", 改成, 计划有变, 决定 -> ``fact``;
   e. casual register: the message starts with a lower-case letter -> ``chatter``. Only strong
      cues (a-d) outrank it; weak limits in banter ("no parking needed") do not;
   f. weak hard-constraint cues (limits that are often constraints but also appear in
      preferences, hence after c): can only, "No X", or later/below, onwards, fewer than, max,
      exclude, has to be, rule, a deadline written as a day or date ("by Friday", "before
      tomorrow", "by end of June"), 只能, 最多, 至少 -> ``hard_constraint``;
   g. goal cues: goal, I want to, I'd like to, planning a/to, aim to, can you suggest/find,
      help me, 目标, 想要, 帮我, 计划去 -> ``goal``;
   h. plan cues: next step, plan:, step 1, "I/we will", "I'll" (not "will need / will be"),
      计划：, 下一步, 我会; for assistant roles also "let me", "I'm going to" -> ``plan_step``;
   i. default: ``fact`` when the text carries specifics (digits, URLs, file or code identifiers),
      names a thing (a capitalised or all-caps word inside a sentence: a person, place, product,
      weekday, month or code such as "(BRK)"; "I" does not count, and neither do texts with German
      function words, where every noun is capitalised) or is a self-statement ("my sister is",
      "I work", "I'm a", 我是), else ``chatter`` (the reason says ``chatter:greeting`` or
      ``chatter:question`` when it is one).

The cue lists are general phrases of each kind; they name no product, place or person. Measured
accuracy on the shared scenarios is printed by ``benchmarks/classify_accuracy.py``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from retain.record import MemoryType
from retain.text import privacy

__all__ = ["classify", "classify_with_reason", "cue_families", "role_family"]

_Rule = tuple[str, re.Pattern[str]]
_I = re.IGNORECASE


def _rules(flags: int, *pairs: tuple[str, str]) -> tuple[_Rule, ...]:
    return tuple((name, re.compile(pattern, flags)) for name, pattern in pairs)


def _first(rules: Sequence[_Rule], text: str) -> str | None:
    for name, pattern in rules:
        if pattern.search(text):
            return name
    return None


# --- roles -----------------------------------------------------------------------------------------

_THOUGHT_ROLES = frozenset({"agent_thought", "thought", "reasoning", "scratchpad", "inner_monologue"})
_ACTION_ROLES = frozenset({"agent_action", "action", "tool_call", "function_call"})
_TOOL_ROLES = frozenset({"tool", "function", "tool_result", "function_result", "observation", "ipython"})
_SYSTEM_ROLES = frozenset({"system", "developer"})
_ASSISTANT_ROLES = frozenset({"assistant", "agent", "ai", "bot", "model"})

# --- 2. sensitive data -----------------------------------------------------------------------------


def _sensitive(text: str) -> str | None:
    """``"sensitive:<kind>"`` for the first span :mod:`retain.text.privacy` finds in ``text``, or None.

    The common path (nothing found) costs one :func:`retain.text.privacy.contains_sensitive` call.
    """
    if not privacy.contains_sensitive(text):
        return None
    return f"sensitive:{privacy.detect(text)[0].kind}"


# --- 3. role families ------------------------------------------------------------------------------

# A call written as code at the start: ``search(q=...)``, ``ci.get_log(...)``, a shell command.
_CALL_START = re.compile(
    r"^\s*(?:[a-z_][\w.]*\(|(?:sed|grep|rg|cat|ls|cd|git|npm|npx|pip|pytest|python|curl|make|docker|"
    r"kubectl|for|find|echo|awk|head|tail)\s)"
)
_ACTION_CN = re.compile(r"^\s*(?:查询|搜索|查看|查找|预订|预定|提交|取消|下单|订购|发送|调用|打开)")

_REPLY = _rules(
    _I,
    ("action:asks_user", r"^\s*(?:replied|responded|回复用户)\W*(?:asked|ask|请确认|请问|please confirm)"),
    (
        "action:reply",
        r"^\s*(?:replied|responded|told (?:them|him|her|the user)|said\b|thanked|noted\b|"
        r"walked (?:them |him |her )?through|explained to|回复[:：]|答复[:：])",
    ),
)
_OUTCOME = _rules(
    _I,
    ("action:recommendation", r"^\s*(?:recommend(?:ed|ation)?s?|suggested)\b|^\s*推荐"),
    ("action:shortlist", r"\bshort-?listed\b|\bruled out\b|\bscreened\b|^\s*(?:included|excluded|added|removed)\b"),
    ("action:summary", r"\bsummary\b|\bwrite-?up\b|\bhandoff\b|\breview:|\bresults?:|汇总|总结|完毕|草案|结果[:：]"),
    (
        "action:total",
        r"\btotal (?:now|spend|cost)\b|=\s*[\d,.]+\s*(?:[A-Z]{3})?\s*[;,.(]|"
        r"\bwithin (?:the )?(?:budget|limit|[\d,.]+)",
    ),
    ("action:artefact", r"\b(?:table|draft|doc|version|report|plan)\s+v\d+\b"),
    (
        "action:verdict",
        r"^\s*(?:yes|no)[,:]|^\s*\d+/\d+ (?:failures|passed|tests)\b|^\s*(?:opened|approved|completed)\b",
    ),
)

# Tool rules look at the header only (first line, first 100 characters): a search page that merely
# lists a "delivered" item or carries an advert is still an observation.
_TOOL_OUTCOME = _rules(
    _I,
    ("tool:error", r"^\s*(?:error|exception|traceback)\b"),
    (
        "tool:confirmed",
        r"\b(?:confirmed|booked|reserved|cancell?ed|revoked|delivered|enabled|filed|"
        r"submitted|created|approved|succeeded|successful(?:ly)?)\b",
    ),
    ("tool:booking", r"\b(?:booking|order|reservation)\s+[A-Z]{0,4}-?\d{3,}|^\s*result:"),
    ("tool:success_cn", r"成功|已预订|已取消|已提交|已完成"),
)
_TOOL_SOCIAL = _rules(
    _I,
    (
        "tool:social",
        r"^\W*(?:[\w ]{0,20}\bchat\b|comment|review comment|message from|thread)\b|\breact(?:ions?|ed)? with\b",
    ),
)
_TOOL_NOISE = _rules(
    _I,
    ("tool:marketing", r"^\W*(?:newsletter|sponsored|ad|advert\w*|promo\w*|offer|survey|广告|促销)\b"),
    ("tool:ambient", r"^[^:\n]{0,30}\b(?:dashboard|weather|forecast for|status ping)\b|^\W*天气"),
    ("tool:reviews", r"^\W*(?:user |customer |guest )?reviews\b"),
    ("tool:raw_text", r"^\W*(?:[\w ]{0,20}\btranscript|abstract|excerpt|pdf text|page text|ocr text)\b"),
)
_SYSTEM_POLICY = _rules(
    _I,
    ("system:policy", r"\b(?:polic(?:y|ies)|rules?|standard|regulations?|compliance|by-?laws?|building code)\b"),
    ("system:must", r"\bmust\b|\bnever\b|\brequire[sd]?\b|\bmandatory\b|\bprohibited\b|\bnot allowed\b"),
    ("system:limit", r"\bup to \d|\bat most\b|\bno more than\b|\bonly\b"),
    ("system:policy_cn", r"必须|禁止|不得|严禁|规定|政策|上限"),
)

# --- 4. content cascade ----------------------------------------------------------------------------

_HARD_STRONG = _rules(
    _I,
    (
        "hard:must",
        r"\bmust(?:n't)?\b(?!(?:'ve| have) been\b| be (?:so|really|very|nice|fun|hard|tough|great|lovely|amazing|"
        r"exciting|special|wonderful|awesome|scary|exhausting)\b)|必须|务必|一定要",
    ),
    ("hard:never", r"\bnever\b|\bunder no circumstances\b"),
    ("hard:non_negotiable", r"\bnon[- ]?negotiable\b|\bnot (?:a |just a )?nice[- ]to[- ]have\b|\bno exceptions\b"),
    ("hard:hard_limit", r"\bhard (?:ceiling|cap|limit|budget|deadline|constraint|requirement|rule|stop)\b"),
    (
        "hard:cannot_exceed",
        r"\b(?:can(?:'|no)?t|cannot|must not|won't|do not|don't) (?:go over|exceed|go above|"
        r"spend more|be more than)\b|\bnot (?:a|one) (?:cent|penny|dollar|euro|pound) more\b|"
        r"\bdon't have a (?:cent|penny|dollar) more\b",
    ),
    ("hard:upper_bound", r"\b(?:no|not) more than\b|\bat most\b|\bno later than\b|\bat the latest\b"),
    ("hard:forbidden", r"\bnot (?:allowed|permitted)\b|\bforbidden\b|\bprohibited\b|\bmandatory\b"),
    ("hard:allergy", r"\ballerg(?:y|ies|ic)\b|\banaphyla\w*|\bintoleran(?:t|ce)\b|\bcoeliac\b|\bceliac\b|过敏|忌口"),
    (
        "hard:diet",
        r"\b(?:I|we|he|she|they)(?:'m|'re| am| are| is)? (?:(?:strictly|fully|a|an) )*(?:vegetarian|vegan|pescatarian|"
        r"halal|kosher|teetotal)\b|\b(?:I|we) (?:don't|do not|can't|cannot) eat\b|吃素|素食者|不吃肉",
    ),
    ("hard:budget", r"\bbudget\b|\bceiling\b|\bspending limit\b|预算|上限"),
    ("hard:deadline", r"\bdeadline\b|\b(?:is|are|was) due\b|\bdue (?:date|by|on)\b|截止"),
    ("hard:do_not_touch", r"\b(?:do not|don't|never) (?:touch|modify|edit|change|share|disclose|delete)\b"),
    ("hard:zh_limit", r"(?<!能)不能|不可以|不允许|不得|禁止|严禁|不超过|别超|超了|以内|不许"),
)
_CHATTER_STRONG = _rules(
    _I,
    ("chatter:laughter", r"\b(?:ha){2,}h?\b|\bhehe\b|\blol\b|\blmao\b|\brofl\b|哈哈|呵呵|嘿嘿|笑死|233+"),
    ("chatter:thanks", r"\bthank(?:s| you)\b|\bthx\b|\bcheers\b|谢谢|多谢|感谢|辛苦"),
    ("chatter:emoji", r"[\U0001F300-\U0001FAFF\u2600-\u27BF]|:\)|:-\)|:D\b|;\)"),
    ("chatter:exclaim", r"!!|\?\?|太好了|好耶|哇"),
)
_SOFT = _rules(
    _I,
    ("soft:prefer", r"\bprefer(?:s|red|ably|ence)?\b|\bfavou?r\b|偏好|偏爱|偏向|更喜欢|倾向"),
    ("soft:rather", r"\brather\b|\binstead of\b|\bbetter than\b|宁愿|宁可"),
    (
        "soft:ideally",
        r"\bideally\b|\bif (?:at all )?possible\b|\bif you can\b|\bwherever possible\b|"
        r"\bwhen(?:ever)? possible\b|\bwould be nice\b|尽量|最好|如果可以",
    ),
    (
        "soft:like",
        r"\bI (?:really )?(?:like|enjoy|love)\b(?! (?:to|that|it|this)\b)|\b(?:I|we)'d (?:like|love)\b(?! to\b)|"
        r"\bwould (?:like|love)\b(?! to\b)|\bnot a fan\b|\bI (?:don't|do not) like\b|\bnicer\b|"
        r"\bfine with\b|喜欢|希望|不太(?:能|喜欢|想)|不(?:爱|吃|喝)",
    ),
    ("soft:taste", r"偏(?:清淡|甜|咸|辣|淡|软)|口味"),
    ("soft:please_not", r"\b(?:please|pls),? (?:don't|do not|avoid|not|no)\b"),
)
_DECISION = _rules(
    _I,
    (
        "fact:decision",
        r"\blet's (?:do|go with|switch|use|book|pick|change|make|take)\b|\bgoing with\b|"
        r"\bswitch(?:ed|ing)? (?:to|my|it)\b|\b(?:it|that) is!|\bbook (?:it|them|that)\b|\bmake it\b|"
        r"\bwe'll take\b|改成|改为|改到|换成|就选|就定|决定",
    ),
    (
        "fact:correction",
        r"\bchange of plans?\b|\bactually\b|\bscratch (?:that|the)\b|\bmy bad\b|"
        r"\bcorrection\b|\bI (?:was wrong|mixed up|swapped)\b|计划有变|更正|搞错",
    ),
)
_HARD_WEAK = _rules(
    _I,
    ("hard:only", r"\b(?:can|could) only\b|\bonly\b.{0,40}\bno\b|\bno\b.{0,40}\bonly\b|只能|只有"),
    (
        "hard:no_x",
        r"(?:^|[.:;!-]\s+)(?:no|NO|not) [A-Za-z'-]+(?: [A-Za-z'-]+)?(?: (?:before|after|longer|over|"
        r"under|than)\b|[.,;!]|$)|(?-i:\bNO [A-Z]+)",
    ),
    (
        "hard:range",
        r"\bor (?:later|earlier|below|above|less|more|fewer|newer|older)\b|\bonwards\b|\band up\b|"
        r"\b(?:fewer|less|more) than \d|\bat least\b|\bmax(?:imum)?\b|\bmin(?:imum)?\b|最多|至少|不少于|不低于",
    ),
    ("hard:exclude", r"\bexclude\b|\breject(?:s|ed)?\b|\binclusion\b|\bexclusion\b"),
    ("hard:has_to", r"\b(?:has|have) to be\b|\bneed (?:it|this|them) (?:back |done |ready )?(?:by|before)\b"),
    ("hard:rule", r"\brules?\b(?! out)|\brequire(?:s|d|ment)\b"),
    (
        "hard:by_when",
        r"\b(?:by|before) (?:(?:next|this|the) )?(?:(?:mon|tues|wednes|thurs|fri|satur|sun)day|tomorrow|tonight|"
        r"today|noon|midnight|eod|eow|end of (?:the )?(?:day|week|month|year)|(?:end of )?(?:jan(?:uary)?|"
        r"feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|"
        r"nov(?:ember)?|dec(?:ember)?))\b",
    ),
)
_GOAL = _rules(
    _I,
    ("goal:goal", r"\b(?:my|our|the) (?:main )?(?:goal|aim|objective)\b|\bgoal:|目标"),
    (
        "goal:want_to",
        r"\b(?:I|we)\s+(?:really\s+)?want to\b|\b(?:I|we)'d like to\b|"
        r"\b(?:I|we) would like to\b|想要|想去|想带|想学|我想",
    ),
    (
        "goal:planning",
        r"\bplanning (?:a|an|to|on)\b|\b(?:plan|aim|hope|intend)(?:ing)? to\b|\btrying to\b|"
        r"计划(?:去|要|在)|打算去",
    ),
    (
        "goal:request",
        r"\bcan you (?:please )?(?:suggest|recommend|find|help|plan|look|figure|check|work out)\b|"
        r"\bhelp me\b|帮我|帮忙",
    ),
)
_PLAN = _rules(
    _I,
    ("plan:next_step", r"\bnext step\b|\bplan:|\bstep \d\b|\bfirst,? (?:I|we)'ll\b|计划[:：]|下一步|第一步"),
    ("plan:will", r"\b(?:I|we) will\b(?! (?:need|be)\b)|\b(?:I|we)'ll\b(?! (?:need|be)\b)|我会|我将|我们会"),
)
_PLAN_ASSISTANT = _rules(
    _I,
    ("plan:let_me", r"\blet me\b|\b(?:I'm|I am) going to\b|接下来"),
)
_RESULT_UNKNOWN_ROLE = _rules(
    _I,
    (
        "result:marker",
        r"^\s*(?:result|output|error|status)\s*:|\b(?:booking|order|reservation) confirmed\b|"
        r"\bsuccessfully\b",
    ),
)
_CHATTER_WEAK = _rules(
    0,
    (
        "chatter:greeting",
        r"(?i)^\W*(?:hi|hello|hey|good (?:morning|evening|night)|morning|bye|goodbye|ok(?:ay)?|"
        r"sure|cool|nice|great|wow|oops|ugh|yay|你好|早上好|晚上好|好的|嗯|哦)\W*$",
    ),
    ("chatter:question", r"\?\W*$"),
)
_SELF_STATEMENT = re.compile(
    r"\b(?:my|our) \w+(?: \w+)? (?:is|are|was|were)\b|\bI (?:work|live|study|grew up|was born|moved)\b|"
    r"\bI(?:'m| am) an? \w+|我(?:是|在\S{1,6}工作|住在)",
    _I,
)
_CASUAL = _rules(0, ("chatter:casual", r"^\W*[a-z]"))
_SPECIFIC = re.compile(
    r"\d|https?://|\b\w+\.(?:[a-z]{2,4})\b|\b[A-Z]{2,}\d|[一二两三四五六七八九十百千万]+[个人天晚元]"
)
# A name inside a sentence: a capitalised or all-caps word after a word, comma, semicolon or closing
# bracket (not after . ! ? : or a dash, where a new sentence may start), optionally opening a bracket
# or quote: "out of Brennick (BRK)", "is Dana Okafor", "on Tuesdays". The pronoun I does not count,
# nor the name a greeting addresses ("Hi Sam", "Morning Jo").
_NAMED = _rules(
    0,
    (
        "default:name",
        r"[\w,;)](?<!\b[Hh]i)(?<!\b[Hh]ey)(?<!\b[Hh]ello)(?<!\b[Dd]ear)(?<!\b[Mm]orning)\s+[(\"'‘“]?"
        r"(?!I(?:['’]\w+)?\b)[A-ZÀ-ÖØ-Þ][\w'’-]*",
    ),
)
# German capitalises every noun, so a capital inside a sentence says nothing there.
_NOUN_CAPITALISING = re.compile(r"\b(?:ich|und|nicht|der|das|ist|mit|auf|ein|eine|einen)\b", _I)


def classify(text: str, role: str | None = None) -> MemoryType:
    """The memory type of ``text`` said or produced by ``role``.

    Args:
        text: the event text, any language (rules cover English and Chinese).
        role: who produced it: a scenario role (``user``, ``agent_thought``, ``agent_action``,
            ``tool``, ``system``), a chat role (``assistant``), a speaker name, or None (unknown).
            Case-insensitive.

    Returns:
        The :class:`MemoryType` chosen by the rule cascade described in the module docstring.
    """
    return classify_with_reason(text, role)[0]


def classify_with_reason(text: str, role: str | None = None) -> tuple[MemoryType, str]:
    """The memory type of ``text`` and the name of the rule that decided it.

    Same arguments and cascade as :func:`classify`. The reason is ``"<family>:<cue>"``, e.g.
    ``"sensitive:card"``, ``"role:thought"``, ``"hard:must"``, ``"default:specific"``.
    Never raises for string input; a non-string ``text`` raises ``TypeError``.
    """
    if not isinstance(text, str):
        raise TypeError(f"text: expected str, got {type(text).__name__}")
    if not text.strip():
        return MemoryType.CHATTER, "empty"
    reason = _sensitive(text)
    if reason is not None:
        return MemoryType.SENSITIVE, reason
    kind = (role or "").strip().lower()
    if kind in _THOUGHT_ROLES:
        return MemoryType.REASONING, "role:thought"
    if kind in _ACTION_ROLES:
        return _classify_action(text)
    if kind in _TOOL_ROLES:
        return _classify_tool(text)
    if kind in _SYSTEM_ROLES:
        name = _first(_SYSTEM_POLICY, text)
        return (MemoryType.HARD_CONSTRAINT, name) if name else (MemoryType.CHATTER, "system:notice")
    return _classify_content(text, assistant=kind in _ASSISTANT_ROLES, unknown=not kind)


def _classify_action(text: str) -> tuple[MemoryType, str]:
    if _CALL_START.search(text) or _ACTION_CN.search(text):
        return MemoryType.PLAN_STEP, "action:call"
    name = _first(_REPLY, text)
    if name == "action:asks_user":
        return MemoryType.PLAN_STEP, name
    if name is not None:
        return MemoryType.CHATTER, name
    name = _first(_OUTCOME, text)
    if name is not None:
        return MemoryType.ACTION_RESULT, name
    return MemoryType.PLAN_STEP, "action:default"


def _classify_tool(text: str) -> tuple[MemoryType, str]:
    header = text.strip().split("\n", 1)[0][:100]
    name = _first(_TOOL_SOCIAL, header)
    if name is not None:
        return MemoryType.CHATTER, name
    name = _first(_TOOL_OUTCOME, header)
    if name is not None:
        return MemoryType.ACTION_RESULT, name
    name = _first(_TOOL_NOISE, header)
    if name is not None:
        return MemoryType.CHATTER, name
    return MemoryType.OBSERVATION, "tool:default"


def _classify_content(text: str, *, assistant: bool, unknown: bool) -> tuple[MemoryType, str]:
    if unknown:
        if _CALL_START.search(text):
            return MemoryType.PLAN_STEP, "action:call"
        name = _first(_RESULT_UNKNOWN_ROLE, text)
        if name is not None:
            return MemoryType.ACTION_RESULT, name
    cascade: tuple[tuple[Sequence[_Rule], MemoryType], ...] = (
        (_HARD_STRONG, MemoryType.HARD_CONSTRAINT),
        (_CHATTER_STRONG, MemoryType.CHATTER),
        (_SOFT, MemoryType.SOFT_PREFERENCE),
        (_DECISION, MemoryType.FACT),
        (_CASUAL, MemoryType.CHATTER),
        (_HARD_WEAK, MemoryType.HARD_CONSTRAINT),
        (_GOAL, MemoryType.GOAL),
        (_PLAN + _PLAN_ASSISTANT if assistant else _PLAN, MemoryType.PLAN_STEP),
    )
    for rules, memory_type in cascade:
        name = _first(rules, text)
        if name is not None:
            return memory_type, name
    if _SPECIFIC.search(text):
        return MemoryType.FACT, "default:specific"
    name = None if _NOUN_CAPITALISING.search(text) else _first(_NAMED, text)
    if name is not None:
        return MemoryType.FACT, name
    if _SELF_STATEMENT.search(text):
        return MemoryType.FACT, "fact:self_statement"
    name = _first(_CHATTER_WEAK, text)
    return MemoryType.CHATTER, name or "default:vague"


_FAMILIES: tuple[tuple[str, Sequence[_Rule]], ...] = (
    ("reply", _REPLY),
    ("outcome", _OUTCOME),
    ("tool_outcome", _TOOL_OUTCOME),
    ("tool_social", _TOOL_SOCIAL),
    ("tool_noise", _TOOL_NOISE),
    ("system_policy", _SYSTEM_POLICY),
    ("hard_strong", _HARD_STRONG),
    ("chatter_strong", _CHATTER_STRONG),
    ("soft", _SOFT),
    ("decision", _DECISION),
    ("hard_weak", _HARD_WEAK),
    ("goal", _GOAL),
    ("plan", _PLAN + _PLAN_ASSISTANT),
    ("result_marker", _RESULT_UNKNOWN_ROLE),
    ("chatter_weak", _CHATTER_WEAK),
    ("casual", _CASUAL),
    ("named", _NAMED),
)


def cue_families(text: str) -> list[str]:
    """Every cue rule of the cascade that fires anywhere in ``text``, whatever the role and precedence:
    ``"<family>"`` and ``"<family>/<rule name>"`` for each family with a match (``"hard_strong"``,
    ``"hard_strong/hard:budget"``), plus ``"call"``, ``"specific"`` and ``"self_statement"``. These
    are the rules-as-features of the learned type classifier (:mod:`retain.text.typing`)."""
    out: list[str] = []
    for family, rules in _FAMILIES:
        fired = [name for name, pattern in rules if pattern.search(text)]
        if fired:
            out.append(family)
            out.extend(f"{family}/{name}" for name in fired)
    if _CALL_START.search(text) or _ACTION_CN.search(text):
        out.append("call")
    if _SPECIFIC.search(text):
        out.append("specific")
    if _SELF_STATEMENT.search(text):
        out.append("self_statement")
    return out


def role_family(role: str | None) -> str:
    """The family of a speaker role, as the cascade groups roles: ``"thought"``, ``"action"``,
    ``"tool"``, ``"system"``, ``"assistant"``, ``"unknown"`` (None or empty) or ``"person"`` (``user``
    and speaker names). Case-insensitive."""
    kind = (role or "").strip().lower()
    for family, roles in (
        ("thought", _THOUGHT_ROLES),
        ("action", _ACTION_ROLES),
        ("tool", _TOOL_ROLES),
        ("system", _SYSTEM_ROLES),
        ("assistant", _ASSISTANT_ROLES),
    ):
        if kind in roles:
            return family
    return "unknown" if not kind else "person"
