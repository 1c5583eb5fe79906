"""Secrets and personal data in text: detection, and redaction to typed placeholders.

Everything here works on Python ``str`` and every offset is a **character** offset (a code point
index, what ``text[start:end]`` takes), never a byte offset: ``"电话 138 0013 8000"`` has its
number at 3..16. Nothing is loaded at import beyond the standard library; the detector libraries
are imported on first use and nothing ever touches the network (detect-secrets' optional online
verification is never called).

What is detected, in order of precedence (``Finding.detector`` names the detector; the
placeholder is what :func:`redact` writes):

- ``national_id`` -> ``[NATIONAL_ID]``: Chinese resident id (``stdnum.cn.ric``: birth date and
  ISO 7064 check character; or 15/18 digits right after 身份证 / "ID number"); US SSN
  (``stdnum.us.ssn``, ``123-45-6789`` form only).
- ``card`` -> ``[CARD]``: 13-19 digits, contiguous or in 4-digit groups, passing ``stdnum.luhn``;
  or 15/16 digits within 30 characters after a card word (card, visa, 卡号, ...), so a mistyped
  card number is still withheld.
- ``iban`` -> ``[IBAN]``: ``stdnum.iban`` (country format and ISO 7064 mod 97); or IBAN-shaped
  right after the word "IBAN".
- ``email`` -> ``[EMAIL]``: the WHATWG HTML "valid e-mail address" pattern (ASCII), with a dotted
  domain and an alphabetic top-level label.
- ``api_key`` -> ``[API_KEY]``: :data:`KEY_PREFIXES` (well-known formats detect-secrets lacks:
  ``sk-...``, vendor ``*_sk_live_...``, ``npm_...``, ``AIza...``, ``hf_...``, ``github_pat_...``),
  ``Bearer`` tokens, and the ``detect-secrets`` plugins for AWS, Azure storage, Discord, GitHub,
  GitLab, JWT, Mailchimp, npm, OpenAI, PyPI, SendGrid, Slack, Square, Stripe, Telegram, Twilio.
- ``private_key`` -> ``[PRIVATE_KEY]``: ``detect-secrets`` PrivateKeyDetector; the whole PEM block
  (to the END line, or to the end of the text when there is none).
- ``password`` -> ``[PASSWORD]``: ``detect-secrets`` BasicAuthDetector (``://user:pass@``) and
  KeywordDetector on password names (``password=...``, ``db_pass: ...``); prose ("my password is
  X", "password X", "PIN: X", "Passwort: X", "mot de passe : X", "senha X", 密码 X, パスワードは X,
  暗証番号 X, 비밀번호는 X). A value ends where CJK, kana, hangul or full-width text starts.
- ``cvv`` -> ``[CVV]``: 3-4 digits right after CVV / CVC / CSC / security code / 安全码.
- ``passport`` -> ``[PASSPORT]``: 6-9 digits (up to two letters first) after "passport" / 护照.
- ``username`` -> ``[USERNAME]``: an identifier-shaped login name (a digit, ``.``, ``_`` or
  ``@`` in it) right after "username", "user name", "user id", "login name" / "login id", 用户名 or
  账号: "username cvale7"; a word ("the username field") is not taken.
- ``secret`` -> ``[SECRET]``: KeywordDetector on other names (``api_key=...``, ``secret: ...``);
  Base64HighEntropyString on unquoted tokens (>= 20 characters, upper and lower case and digits,
  Shannon entropy > 4.5 bits) and HexHighEntropyString on quoted ones (>= 16, entropy > 3.0).
- ``ip`` -> ``[IP]``: ``ipaddress`` on candidate tokens (``host:port`` allowed); loopback,
  unspecified, link-local and multicast addresses are ignored, private ones are not.
- ``phone`` -> ``[PHONE]``: ``phonenumbers`` (libphonenumber), ``PhoneNumberMatcher`` at leniency
  ``STRICT_GROUPING`` (valid for the region and grouped as that country writes it, or not
  grouped) for each of :data:`PHONE_REGIONS`; plus any ``+``-prefixed international number of a
  possible length. A number with one decimal point ("0.268435456") is never a phone number.

Only the value is covered: ``"CVV 771"`` becomes ``"CVV [CVV]"`` and ``"password: x9!"``
becomes ``"password: [PASSWORD]"``, so a redacted text still reads.

Known limitations (each a deliberate trade of recall for fewer false alarms):

- E-mail addresses with non-ASCII local parts or domains are not found (in CJK text the local
  part could not be told from the words before it).
- Phone numbers in national format are found only for :data:`PHONE_REGIONS` and only when
  libphonenumber holds them valid there (a number in an unallocated range is missed unless
  written with ``+`` and a country code). At this leniency dates, times, prices, order and flight
  numbers are not phone numbers.
- A Luhn-valid 13-19 digit number is a card even when it is an order id (one random number in ten
  passes Luhn); card numbers on a line that speaks of test / sandbox / dummy cards are ignored.
- Passwords in prose are taken only when the word after the cue looks like a secret (a digit, a
  symbol or an inner capital: "Tulip#2024", not "required") and is printable ASCII.
- Hex strings (commit ids, digests) are flagged only when quoted: unquoted 40-hex commit ids are
  common in engineering notes and are not secrets. Subresource-integrity digests (``sha384-...``)
  and UUIDs are not secrets either.
- Unlabelled secrets shorter than 20 characters (a bare "Tulip#2024" with no cue) are missed.
- A four-part version string ("1.2.3.4") reads as an IPv4 address unless "v", "version",
  "release" or "build" comes right before it.
- Names, postal addresses and dates of birth are not detected (that needs a NER model).

Cost: about 1 microsecond per character of prose (0.4 ms for a typical scenario event); text dense
with digit runs (tables of numbers) costs up to ~50 microseconds per character, nearly all of it
in libphonenumber's matcher. The first call pays the detector libraries' import (about 0.1 s).
"""

from __future__ import annotations

import functools
import ipaddress
import re
import unicodedata
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from retain.errors import InvalidInput

__all__ = [
    "KEY_PREFIXES",
    "PHONE_REGIONS",
    "PLACEHOLDERS",
    "Finding",
    "contains_sensitive",
    "detect",
    "redact",
]

PLACEHOLDERS: Mapping[str, str] = MappingProxyType(
    {
        "email": "[EMAIL]",
        "phone": "[PHONE]",
        "card": "[CARD]",
        "cvv": "[CVV]",
        "iban": "[IBAN]",
        "national_id": "[NATIONAL_ID]",
        "passport": "[PASSPORT]",
        "ip": "[IP]",
        "api_key": "[API_KEY]",
        "private_key": "[PRIVATE_KEY]",
        "password": "[PASSWORD]",
        "username": "[USERNAME]",
        "secret": "[SECRET]",
    }
)
"""Placeholder for each kind; an unknown kind becomes ``[KIND]`` (upper-cased)."""

PHONE_REGIONS: tuple[str, ...] = ("US", "GB", "DE", "FR", "CN")
"""Regions (ISO 3166-1 alpha-2) whose national formats are tried; ``+CC`` numbers need none.

Each region added finds that country's national numbers and adds false alarms (an 8-11 digit run
that is valid somewhere); with these five no national-format match in the shared scenarios, nor
in the LoCoMo and BEAM texts under shared/data, was anything but a phone number."""

KEY_PREFIXES: tuple[tuple[str, str, str], ...] = (
    # (name, literal the key contains, pattern). Formats detect-secrets 1.5 lacks or finds in one
    # file syntax only.
    ("openai_style", "sk-", r"sk-(?:[A-Za-z0-9]+-)*[A-Za-z0-9_]{6,}"),  # sk-, sk-proj-, sk-ant-, sk-test-
    ("stripe_style", "k_", r"(?:[a-z]{2,10}_)?[sr]k_(?:live|test)_[A-Za-z0-9]{10,}"),  # vendor-prefixed too
    ("npm", "npm_", r"npm_[A-Za-z0-9]{20,}"),  # detect-secrets finds npm tokens only in .npmrc lines
    ("google_api", "AIza", r"AIza[0-9A-Za-z_-]{30,}"),
    ("huggingface", "hf_", r"hf_[A-Za-z0-9]{30,}"),
    ("github_fine_grained", "github_pat_", r"github_pat_[A-Za-z0-9_]{22,}"),
)
"""Well-known key prefixes the detect-secrets plugins lack. An ``sk-`` key must hold a digit or
be at least 20 characters after ``sk-`` (so "sk-learn" is not a key). Publishable ``pk_`` keys
are public by design and not matched."""

BASE64_ENTROPY_LIMIT = 4.5  # detect-secrets' default; over unquoted tokens of >= 20 characters
BASE64_MIN_CHARS = 20
HEX_ENTROPY_LIMIT = 3.0  # detect-secrets' default; quoted strings only
HEX_MIN_CHARS = 16


@dataclass(frozen=True, slots=True)
class Finding:
    """One detected span.

    Attributes:
        kind: what it is: a key of :data:`PLACEHOLDERS` ("email", "phone", "card", ...).
        start: first character, a ``str`` index (code points, not bytes).
        end: one past the last character; ``text[start:end]`` is the sensitive value.
        detector: the library and plugin or rule that found it, e.g. ``"stdnum.luhn"``,
            ``"phonenumbers"``, ``"detect_secrets.GitHubTokenDetector"``, ``"prefix:npm"``.
    """

    kind: str
    start: int
    end: int
    detector: str

    @property
    def placeholder(self) -> str:
        """The text that replaces this span in :func:`redact`, e.g. ``"[EMAIL]"``."""
        return PLACEHOLDERS.get(self.kind, f"[{self.kind.upper()}]")


_Detector = Callable[[str], Iterator[Finding]]
_I = re.IGNORECASE
# Word characters for boundaries, ASCII only: CJK letters are \w, yet a number may follow 号 directly.
_NOT_AFTER = r"(?<![0-9A-Za-z_])"
_NOT_BEFORE = r"(?![0-9A-Za-z_])"


def _near_before(pattern: re.Pattern[str], text: str, start: int, window: int) -> bool:
    """True when ``pattern`` matches in the ``window`` characters before ``start``, on that line."""
    left = text[max(0, start - window) : start].rsplit("\n", 1)[-1]
    return pattern.search(left) is not None


_WORD_CHAR = re.compile(r"[0-9A-Za-z_]")
_TOKEN_CHAR = re.compile(r"[0-9A-Za-z_+/=.-]")


def _located(text: str, value: str, *, widen: bool = False) -> Iterator[tuple[int, int]]:
    """Spans of every occurrence of ``value`` in ``text`` that does not start or end inside a word.

    With ``widen``, an occurrence is instead extended to the end of its token (letters, digits and
    ``_+/=.-``, a trailing dot dropped): some detect-secrets plugins report only the part of a
    token their pattern captured (GitHubTokenDetector reports the ``ghp`` prefix).
    """
    pos = text.find(value) if value else -1
    while pos >= 0:
        end = pos + len(value)
        if pos == 0 or not (_WORD_CHAR.match(text[pos - 1]) and _WORD_CHAR.match(value[0])):
            if widen:
                while end < len(text) and _TOKEN_CHAR.match(text[end]):
                    end += 1
                while end > pos + len(value) and text[end - 1] == ".":
                    end -= 1
                yield pos, end
            elif end == len(text) or not (_WORD_CHAR.match(text[end]) and _WORD_CHAR.match(value[-1])):
                yield pos, end
        pos = text.find(value, pos + 1)


# --- e-mail ----------------------------------------------------------------------------------------

# WHATWG HTML "valid e-mail address", less / = ? ' ` in the local part (they would swallow a
# preceding "email=" or quote), with at least one dot and an alphabetic last label.
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_EMAIL = re.compile(
    rf"(?<![A-Za-z0-9.!#$%&*+^_{{|}}~-])[A-Za-z0-9!#$%&*+^_{{|}}~-]+(?:\.[A-Za-z0-9!#$%&*+^_{{|}}~-]+)*"
    rf"@(?:{_LABEL}\.)+(?:[A-Za-z]{{2,63}}|xn--[A-Za-z0-9-]{{2,59}}){_NOT_BEFORE}"
)


_URL_USERINFO = re.compile(r"://[^\s/@]*:$")  # "https://user:" + "password@host" is not an address


def _emails(text: str) -> Iterator[Finding]:
    for m in _EMAIL.finditer(text):
        if _URL_USERINFO.search(text[max(0, m.start() - 200) : m.start()]):
            continue
        yield Finding("email", m.start(), m.end(), "pattern:whatwg_email")


# --- payment cards, CVV, IBAN, national ids, passports -----------------------------------------------

_CARD = re.compile(
    rf"{_NOT_AFTER}(?<!-)(?:\d{{13,19}}|\d{{4}}(?P<sep>[ -])\d{{4,6}}(?P=sep)\d{{4,5}}(?:(?P=sep)\d{{1,4}}){{0,2}})"
    rf"{_NOT_BEFORE}(?!-\d)"
)
_CARD_CUE = re.compile(
    r"\b(?:card|credit|debit|visa|master ?card|amex|american express|cc)\b|卡号|银行卡|信用卡|借记卡", _I
)
_LINE = 10_000  # a window reaching back to the start of the line
_TEST_CARDS = re.compile(r"\b(?:test|testing|sandbox|dummy|example|fake)\s+(?:credit\s+)?cards?\b", _I)
_CVV = re.compile(
    r"\b(?:cvv2?|cvc2?|csc|card security code|security code)\b\s*(?:is\b|[:=#])?\s*(\d{3,4})(?!\d)"
    r"|安全码[：:是为]?\s*(\d{3,4})(?!\d)",
    _I,
)
_IBAN = re.compile(rf"{_NOT_AFTER}[A-Z]{{2}}\d{{2}}(?: ?[A-Z0-9]){{11,30}}{_NOT_BEFORE}")
_IBAN_CUE = re.compile(r"\bIBAN\b", _I)
_CN_RIC = re.compile(r"(?<!\d)\d{17}[\dXx](?![\dXx])")
_CN_RIC_CUE = re.compile(
    r"(?:身份证(?:号码?)?|\bID\s+(?:card\s+)?(?:number|no\.?))[\s:：是为]{0,4}(\d{17}[\dXx]|\d{15})(?![\dXx])", _I
)
_SSN = re.compile(r"(?<![\d-])\d{3}-\d{2}-\d{4}(?![\d-])")
_PASSPORT = re.compile(
    r"\bpassport(?:\s+(?:number|no\.?|num|#))?\s*(?:is\b|[:=#])?\s*([A-Z]{0,2}\d{6,9})(?![0-9A-Za-z])"
    r"|护照(?:号码?)?[\s:：是为]{0,3}([A-Z]{0,2}\d{6,9})(?![0-9A-Za-z])",
    _I,
)


def _cards(text: str) -> Iterator[Finding]:
    from stdnum import luhn

    for m in _CARD.finditer(text):
        if _near_before(_TEST_CARDS, text, m.start(), _LINE):
            continue
        digits = re.sub(r"\D", "", m.group())
        if not 13 <= len(digits) <= 19:
            continue
        if luhn.is_valid(digits):
            yield Finding("card", m.start(), m.end(), "stdnum.luhn")
        elif len(digits) in (15, 16) and _near_before(_CARD_CUE, text, m.start(), 30):
            yield Finding("card", m.start(), m.end(), "cue:card")


def _cvvs(text: str) -> Iterator[Finding]:
    for m in _CVV.finditer(text):
        group = 1 if m.group(1) is not None else 2
        yield Finding("cvv", m.start(group), m.end(group), "cue:cvv")


def _ibans(text: str) -> Iterator[Finding]:
    from stdnum import iban

    for m in _IBAN.finditer(text):
        candidate = m.group()
        # The pattern may run on into a following upper-case word: try whole groups, longest first.
        cuts = [len(candidate)] + [i for i in range(len(candidate) - 1, 14, -1) if candidate[i] == " "]
        valid = next((cut for cut in cuts if iban.is_valid(candidate[:cut])), None)
        if valid is not None:
            yield Finding("iban", m.start(), m.start() + valid, "stdnum.iban")
        elif _near_before(_IBAN_CUE, text, m.start(), 15):
            groups = candidate.split(" ")
            while len(groups) > 1 and groups[-1].isalpha():
                groups.pop()
            yield Finding("iban", m.start(), m.start() + len(" ".join(groups)), "cue:iban")


def _national_ids(text: str) -> Iterator[Finding]:
    from stdnum.cn import ric
    from stdnum.us import ssn

    for m in _CN_RIC.finditer(text):
        if ric.is_valid(m.group()):
            yield Finding("national_id", m.start(), m.end(), "stdnum.cn.ric")
    for m in _CN_RIC_CUE.finditer(text):
        yield Finding("national_id", m.start(1), m.end(1), "cue:national_id")
    for m in _SSN.finditer(text):
        if ssn.is_valid(m.group()):
            yield Finding("national_id", m.start(), m.end(), "stdnum.us.ssn")


_USERNAME = re.compile(
    r"\b(?:user ?name|user ?id|login (?:name|id))\b\s*(?:is\b|[:=])?\s*"
    r"([A-Za-z0-9][A-Za-z0-9._@-]{2,63})(?![0-9A-Za-z])"
    r"|(?:用户名|账号)[\s:：是为]{0,3}([A-Za-z0-9][A-Za-z0-9._@-]{2,63})(?![0-9A-Za-z])",
    _I,
)


def _usernames(text: str) -> Iterator[Finding]:
    for m in _USERNAME.finditer(text):
        group = 1 if m.group(1) is not None else 2
        value = m.group(group).rstrip(".-")
        if any(ch.isdigit() or ch in "._@" for ch in value):
            yield Finding("username", m.start(group), m.start(group) + len(value), "cue:username")


def _passports(text: str) -> Iterator[Finding]:
    for m in _PASSPORT.finditer(text):
        group = 1 if m.group(1) is not None else 2
        yield Finding("passport", m.start(group), m.end(group), "cue:passport")


# --- IP addresses ----------------------------------------------------------------------------------

# ASCII word characters only: CJK text runs into addresses without spaces ("IPは10.0.0.1です").
_IP_CANDIDATE = re.compile(r"(?<![0-9A-Za-z_.:])[0-9A-Fa-f]*[.:][0-9A-Fa-f.:]+(?![0-9A-Za-z_])")


_VERSION_CUE = re.compile(r"(?:\b(?:version|ver|release|build|v)|バージョン|版本|ビルド|リリース)\W{0,2}$", _I)


def _ips(text: str) -> Iterator[Finding]:
    for m in _IP_CANDIDATE.finditer(text):
        token = m.group().rstrip(".:")
        host = token
        address: ipaddress.IPv4Address | ipaddress.IPv6Address | None = None
        try:
            address = ipaddress.ip_address(token)
        except ValueError:
            if token.count(":") == 1:  # host:port
                host = token.split(":", 1)[0]
                try:
                    address = ipaddress.IPv4Address(host)
                except ValueError:
                    address = None
        if address is None or address.is_loopback or address.is_unspecified:
            continue
        if _VERSION_CUE.search(text[max(0, m.start() - 12) : m.start()]):
            continue
        if address.version == 6 and sum(1 for group in host.split(":") if group) < 3:
            continue  # "::add", "a:b::": hex words, not addresses
        if address.is_link_local or address.is_multicast:
            continue
        yield Finding("ip", m.start(), m.start() + len(host), "ipaddress")


# --- phone numbers -----------------------------------------------------------------------------------

_DECIMAL = re.compile(r"\d+[.,]\d+")
_MINUS = re.compile(r"\s-\s?\d")


def _is_decimal(text: str, start: int, end: int) -> bool:
    """A number with one decimal point, or the digits either side of one: "0.268435456"."""
    if _DECIMAL.fullmatch(text[start:end]):
        return True
    before = text[max(0, start - 2) : start]
    after = text[end : end + 2]
    return (len(before) == 2 and before[1] in ".," and before[0].isdigit()) or (
        len(after) == 2 and after[0] in ".," and after[1].isdigit()
    )


# A run of >= 6 digits with at most 3 separators between digits; the matcher runs on these windows
# (plus a little context) rather than the whole text, which is what makes long texts cheap. A run
# that is a date is skipped; a very long run (a table of numbers) is cut into overlapping windows.
_PHONE_RUN = re.compile(r"\d(?:[ \t\u00a0().\-\u2010-\u2015/]{0,3}\d){5,}")
_DATE_RUN = re.compile(r"\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{4}")
_PHONE_CONTEXT = 8
_PHONE_WINDOW = 1000


def _phone_windows(text: str) -> Iterator[tuple[int, str]]:
    spans: list[list[int]] = []
    for m in _PHONE_RUN.finditer(text):
        if _DATE_RUN.fullmatch(m.group()):
            continue
        start, end = max(0, m.start() - _PHONE_CONTEXT), min(len(text), m.end() + _PHONE_CONTEXT)
        if spans and start <= spans[-1][1]:
            spans[-1][1] = end
        else:
            spans.append([start, end])
    step = _PHONE_WINDOW - 4 * _PHONE_CONTEXT
    for start, end in spans:
        for chunk in range(start, max(start + 1, end - 4 * _PHONE_CONTEXT), step):
            yield chunk, text[chunk : min(end, chunk + _PHONE_WINDOW)]


def _has_plus(window: str) -> bool:
    return "+" in window or "\uff0b" in window  # ASCII or full-width plus


_PHONE_MEMO_SIZE = 32_768
"""Phone windows whose matcher results :func:`_window_phones` keeps (windows are at most
:data:`_PHONE_WINDOW` characters)."""


@functools.lru_cache(maxsize=_PHONE_MEMO_SIZE)
def _window_phones(window: str) -> tuple[tuple[int, int, str], ...]:
    """The phone matches in one window, as ``(start, end, detector)`` offsets into the window.

    A pure function of the window text (libphonenumber's matcher reads nothing else), so it is
    memoised: the same digit run in the same few characters of context -- a booking reference or a
    number repeated across the texts of a large agent state, a conversation replayed -- is matched
    once. What the caller does with the matches (the decimal check, which reads the text around the
    window) is not memoised.
    """
    from phonenumbers import Leniency, PhoneNumberMatcher, ValidationResult, is_possible_number_with_reason

    found: list[tuple[int, int, str]] = []
    for region in PHONE_REGIONS:
        for match in PhoneNumberMatcher(window, region, leniency=Leniency.STRICT_GROUPING):
            found.append((match.start, match.end, "phonenumbers"))
    # "+CC ..." in a range libphonenumber does not know yet: keep when the length is possible for
    # that country (not only as a local number) and no minus sign reads it as "+12 -3" diff counts.
    for match in PhoneNumberMatcher(window, "ZZ", leniency=Leniency.POSSIBLE) if _has_plus(window) else ():
        raw = match.raw_string
        if not raw.startswith("+") or _MINUS.search(raw):
            continue
        if is_possible_number_with_reason(match.number) == ValidationResult.IS_POSSIBLE:
            found.append((match.start, match.end, "phonenumbers:possible"))
    return tuple(found)


def _phones(text: str) -> Iterator[Finding]:
    for offset, window in _phone_windows(text):
        for start, end, detector in _window_phones(window):
            if detector == "phonenumbers:possible" or not _is_decimal(text, offset + start, offset + end):
                yield Finding("phone", offset + start, offset + end, detector)


# --- keys, tokens, passwords -------------------------------------------------------------------------

_PREFIXES = tuple((name, needle, re.compile(rf"(?<![0-9A-Za-z_-]){pattern}")) for name, needle, pattern in KEY_PREFIXES)
_BEARER = re.compile(r"\bBearer\s+([A-Za-z0-9._~+/-]{20,}=*)")
_PASSWORD_PROSE = re.compile(
    r"\b(?:password|passwd|passcode|passphrase|pwd|pin|passwort|kennwort|mot de passe|senha|wachtwoord)\b"
    r"(?:[ \t]+(?:is|was|ist|est|é))?[ \t]*[:=：]?[ \t]*([!-~]{4,})"
    r"|(?:密码|口令|パスワード|暗証番号|비밀번호)(?:是|为|は|는|은)?[ \t:：]{0,3}([!-~]{4,})",
    _I,
)
_PASSWORD_NAME = re.compile(r"pass|pwd|contrase", _I)
# Lower-case literals, one of which every KeywordDetector name (resp. prose cue) contains.
_KEYWORD_NEEDLES = ("key", "pass", "pwd", "secret", "contras")
_PROSE_NEEDLES = (
    "pass",
    "pwd",
    "pin",
    "kennwort",
    "senha",
    "wachtwoord",
    "密码",
    "口令",
    "パスワード",
    "暗証番号",
    "비밀번호",
)
# CJK, kana, hangul and full-width forms: a password value written against them ends where they start
# ("password: Tulip#2024です" covers "Tulip#2024" only).
_CJK_START = re.compile(r"[\u3000-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]")
_TRAILING_PUNCT = ".,;:)]}'\"`"
_EDGE_PUNCT = ".,;:!?*_'\"`"
_INDIRECT = re.compile(r"[\[\]({<>}]|\$\w")  # a call, an index, markup, a template or a variable
_REFERENCE = re.compile(r"[A-Za-z_$]+(?:\.[A-Za-z_$]+)+")  # process.env.API_KEY, settings.secret


def _looks_like_secret(value: str) -> bool:
    """A password-like value: "Tulip#2024", "hunter2", "SwordFish"; not "required", "TEXT",
    "your_api_key_here", "****", "{user.password}", "data.get('password')", "</label>",
    "process.env.API_KEY" or "${PASSWORD}"."""
    if _INDIRECT.search(value):
        return False
    core = value.strip(_EDGE_PUNCT)
    if len(core) < 4 or not any(ch.isalnum() for ch in core) or _REFERENCE.fullmatch(core):
        return False
    _, _, filters = _keyword_tools()
    if any(f(core) for f in filters):
        return False
    inner_symbol = any(not (ch.isalnum() or ch in "_-") for ch in core)
    inner_capital = any(ch.isupper() for ch in core[1:]) and any(ch.islower() for ch in core)
    return any(ch.isdigit() for ch in core) or inner_symbol or inner_capital


def _key_prefixes(text: str) -> Iterator[Finding]:
    for name, needle, pattern in _PREFIXES:
        if needle not in text:
            continue
        for m in pattern.finditer(text):
            body = m.group()[3:] if name == "openai_style" else m.group()
            if name == "openai_style" and not (len(body) >= 20 or any(ch.isdigit() for ch in body)):
                continue
            yield Finding("api_key", m.start(), m.end(), f"prefix:{name}")
    for m in _BEARER.finditer(text) if "Bearer" in text else ():
        yield Finding("api_key", m.start(1), m.end(1), "pattern:bearer")


@functools.cache
def _plugins() -> tuple[Any, ...]:
    """detect-secrets plugin instances (regex based; ``analyze_string`` is pure and offline)."""
    from detect_secrets.plugins.aws import AWSKeyDetector
    from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
    from detect_secrets.plugins.basic_auth import BasicAuthDetector
    from detect_secrets.plugins.discord import DiscordBotTokenDetector
    from detect_secrets.plugins.github_token import GitHubTokenDetector
    from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
    from detect_secrets.plugins.jwt import JwtTokenDetector
    from detect_secrets.plugins.mailchimp import MailchimpDetector
    from detect_secrets.plugins.npm import NpmDetector
    from detect_secrets.plugins.openai import OpenAIDetector
    from detect_secrets.plugins.private_key import PrivateKeyDetector
    from detect_secrets.plugins.pypi_token import PypiTokenDetector
    from detect_secrets.plugins.sendgrid import SendGridDetector
    from detect_secrets.plugins.slack import SlackDetector
    from detect_secrets.plugins.square_oauth import SquareOAuthDetector
    from detect_secrets.plugins.stripe import StripeDetector
    from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
    from detect_secrets.plugins.twilio import TwilioKeyDetector

    classes = (
        AWSKeyDetector, AzureStorageKeyDetector, BasicAuthDetector, DiscordBotTokenDetector,
        GitHubTokenDetector, GitLabTokenDetector, JwtTokenDetector, MailchimpDetector, NpmDetector,
        OpenAIDetector, PrivateKeyDetector, PypiTokenDetector, SendGridDetector, SlackDetector,
        SquareOAuthDetector, StripeDetector, TelegramBotTokenDetector, TwilioKeyDetector,
    )  # fmt: skip
    return tuple(cls() for cls in classes)


_PEM_BLOCK = re.compile(
    r"(?:-----)?BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?.*?(?:-*END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-*|\Z)", re.DOTALL
)


def _vendor_keys(text: str) -> Iterator[Finding]:
    for plugin in _plugins():
        name = type(plugin).__name__
        for value in set(plugin.analyze_string(text)):
            if name == "PrivateKeyDetector":  # the key material follows the header: withhold it all
                blocks = [(m.start(), m.end()) for m in _PEM_BLOCK.finditer(text)]
                for start, end in blocks or [(start, len(text)) for start, _ in _located(text, value)]:
                    yield Finding("private_key", start, end, f"detect_secrets.{name}")
                continue
            value = value.strip().split()[0] if value.strip() else ""
            kind = "password" if name == "BasicAuthDetector" else "api_key"
            for start, end in _located(text, value, widen=True):
                yield Finding(kind, start, end, f"detect_secrets.{name}")


@functools.cache
def _keyword_tools() -> tuple[Any, Any, tuple[Callable[[str], bool], ...]]:
    from detect_secrets.filters import heuristic
    from detect_secrets.plugins.keyword import CONFIG_DENYLIST_REGEX_TO_GROUP, KeywordDetector

    filters = (
        heuristic.is_templated_secret,
        heuristic.is_prefixed_with_dollar_sign,
        heuristic.is_sequential_string,
        heuristic.is_potential_uuid,
    )
    return KeywordDetector(), CONFIG_DENYLIST_REGEX_TO_GROUP, filters


def _passwords(text: str) -> Iterator[Finding]:
    lowered = text.lower()
    if any(needle in lowered for needle in _KEYWORD_NEEDLES):
        detector, regex_map, _ = _keyword_tools()
        for line_start, line in _lines(text):
            if not any(needle in line.lower() for needle in _KEYWORD_NEEDLES):
                continue
            for raw in detector.analyze_string(line, denylist_regex_to_group=regex_map):
                value = raw.strip().split()[0] if raw.strip() else ""
                value = _CJK_START.split(value, maxsplit=1)[0].rstrip(_TRAILING_PUNCT)
                if not _looks_like_secret(value):
                    continue
                for start, end in _located(line, value):
                    kind = "password" if _PASSWORD_NAME.search(line[max(0, start - 40) : start]) else "secret"
                    yield Finding(kind, line_start + start, line_start + end, "detect_secrets.KeywordDetector")
    if any(needle in lowered for needle in _PROSE_NEEDLES):
        for m in _PASSWORD_PROSE.finditer(text):
            group = 1 if m.group(1) is not None else 2
            value = m.group(group).rstrip(_TRAILING_PUNCT)
            if _looks_like_secret(value):
                yield Finding("password", m.start(group), m.start(group) + len(value), "pattern:password_prose")


def _lines(text: str) -> Iterator[tuple[int, str]]:
    offset = 0
    for line in text.splitlines(keepends=True):
        yield offset, line
        offset += len(line)


_B64_TOKEN = re.compile(rf"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{{{BASE64_MIN_CHARS},}}={{0,2}}(?![A-Za-z0-9+/=_-])")


_SRI = re.compile(r"sha(?:256|384|512)-")  # subresource-integrity digests of public files


@functools.cache
def _entropy_plugins() -> tuple[Any, Any]:
    from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString, HexHighEntropyString

    return Base64HighEntropyString(limit=BASE64_ENTROPY_LIMIT), HexHighEntropyString(limit=HEX_ENTROPY_LIMIT)


def _high_entropy(text: str) -> Iterator[Finding]:
    b64, hexa = _entropy_plugins()
    _, _, filters = _keyword_tools()
    for m in _B64_TOKEN.finditer(text):
        token = m.group()
        mixed = any(c.isupper() for c in token) and any(c.islower() for c in token) and any(c.isdigit() for c in token)
        if not mixed or _SRI.match(token) or any(f(token) for f in filters):
            continue
        if b64.calculate_shannon_entropy(token) > BASE64_ENTROPY_LIMIT:
            yield Finding("secret", m.start(), m.end(), "detect_secrets.Base64HighEntropyString")
    for value in set(hexa.analyze_string(text)):
        if len(value) >= HEX_MIN_CHARS and hexa.calculate_shannon_entropy(value) > HEX_ENTROPY_LIMIT:
            for start, end in _located(text, value):
                yield Finding("secret", start, end, "detect_secrets.HexHighEntropyString")


# --- public API --------------------------------------------------------------------------------------

# Precedence on spans of equal length: the earlier detector's kind wins (the module docstring's order).
_DETECTORS: tuple[_Detector, ...] = (
    _national_ids,
    _cards,
    _ibans,
    _emails,
    _key_prefixes,
    _vendor_keys,
    _passwords,
    _cvvs,
    _passports,
    _usernames,
    _high_entropy,
    _ips,
    _phones,
)


def _check_text(text: object) -> str:
    if not isinstance(text, str):
        raise InvalidInput(f"text: expected str, got {type(text).__name__}")
    return text


def _resolve(candidates: list[tuple[int, Finding]]) -> list[Finding]:
    """Longest span wins; ties go to the higher-priority detector, then the earlier start."""
    chosen: list[Finding] = []
    for _, finding in sorted(candidates, key=lambda c: (c[1].start - c[1].end, c[0], c[1].start)):
        if finding.end > finding.start and all(finding.end <= f.start or finding.start >= f.end for f in chosen):
            chosen.append(finding)
    return sorted(chosen, key=lambda f: f.start)


def detect(text: str) -> list[Finding]:
    """Every secret and piece of personal data found in ``text``.

    Args:
        text: any language; offsets are character (code point) indices into it.

    Returns:
        Findings sorted by ``start``, non-overlapping: where detectors overlap the longest span
        wins (equal lengths: the more specific detector, in the order of the table in the module
        docstring). Empty when nothing is found.

    Raises:
        InvalidInput: ``text`` is not a ``str``.
    """
    text = _check_text(text)
    candidates = [(rank, f) for rank, detector in enumerate(_DETECTORS) for f in detector(text)]
    folded, origin = _fold(text)
    if folded != text:  # full-width / compatibility forms: detect on the NFKC form, map spans back
        for rank, detector in enumerate(_DETECTORS):
            for f in detector(folded):
                if f.end > f.start:
                    start, end = origin[f.start], origin[f.end - 1] + 1
                    candidates.append((rank, Finding(f.kind, start, end, f"{f.detector}+nfkc")))
    return _resolve(candidates)


def _fold(text: str) -> tuple[str, list[int]]:
    """``text`` with each character replaced by its NFKC form ("ｄａｎａ＠ｅｘａｍｐｌｅ．ｏｒｇ" ->
    "dana@example.org"), and for each folded character the index of the original it came from.
    Circled characters ("①②③", ``<circle>`` compatibility forms) are kept: they number list items
    in Chinese and Japanese text, and folded they would run together into one long number."""
    if text.isascii():
        return text, []
    parts: list[str] = []
    origin: list[int] = []
    for i, ch in enumerate(text):
        form = ch if ord(ch) <= 127 or _is_circled(ch) else unicodedata.normalize("NFKC", ch)
        parts.append(form)
        origin.extend([i] * len(form))
    return "".join(parts), origin


@functools.lru_cache(maxsize=4096)
def _is_circled(ch: str) -> bool:
    return unicodedata.decomposition(ch).startswith("<circle>")


def contains_sensitive(text: str) -> bool:
    """True when :func:`detect` would find anything; stops at the first detector that fires.

    Raises:
        InvalidInput: ``text`` is not a ``str``.
    """
    text = _check_text(text)
    folded, _ = _fold(text)
    forms = (text,) if folded == text else (text, folded)  # the text as given first: most stop there
    return any(f.end > f.start for form in forms for detector in _DETECTORS for f in detector(form))


def redact(text: str, *, findings: list[Finding] | None = None) -> tuple[str, list[Finding]]:
    """Replace each sensitive span with its typed placeholder (``"[EMAIL]"``, ``"[API_KEY]"``, ...).

    Everything outside the findings is kept character for character.

    Args:
        text: the text to redact.
        findings: spans to withhold, with offsets into ``text``; default :func:`detect` (text).
            Overlapping findings are resolved as in :func:`detect` (longest wins).

    Returns:
        ``(redacted_text, withheld)``: the new text and the findings replaced, sorted by start,
        with offsets into the *original* text.

    Raises:
        InvalidInput: ``text`` is not a ``str``, or a finding lies outside ``0..len(text)``.
    """
    text = _check_text(text)
    if findings is None:
        withheld = detect(text)
    else:
        for f in findings:
            if not 0 <= f.start <= f.end <= len(text):
                raise InvalidInput(f"findings: span {f.start}..{f.end} outside the text (0..{len(text)})")
        withheld = _resolve(list(enumerate(findings)))
    parts: list[str] = []
    cursor = 0
    for f in withheld:
        parts.append(text[cursor : f.start])
        parts.append(f.placeholder)
        cursor = f.end
    parts.append(text[cursor:])
    return "".join(parts), withheld
