"""Credentials in text: API keys and tokens (well-known prefixes, ``Bearer``, the detect-secrets
vendor plugins), private keys, passwords (key = value and prose cues) and high-entropy secrets.

Each ``find_*`` function is a detector (:data:`retain.text.findings.Detector`); see
:mod:`retain.text.privacy` for what each finds and leaves alone. ``detect-secrets`` is imported on
first use and only its offline, regex-based checks are called.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from typing import Any

from retain.text.findings import Finding

__all__ = [
    "BASE64_ENTROPY_LIMIT",
    "BASE64_MIN_CHARS",
    "HEX_ENTROPY_LIMIT",
    "HEX_MIN_CHARS",
    "KEY_PREFIXES",
    "find_high_entropy",
    "find_key_prefixes",
    "find_passwords",
    "find_vendor_keys",
]

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
_I = re.IGNORECASE


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


_PREFIXES = tuple((name, needle, re.compile(rf"(?<![0-9A-Za-z_-]){pattern}")) for name, needle, pattern in KEY_PREFIXES)
_BEARER = re.compile(r"\bBearer\s+([A-Za-z0-9._~+/-]{20,}=*)")
# What a credential is called. Besides the words for a password, the names of a code or key by what
# it opens, in either word order: the qualifier first in English and German ("door code", "wifi key",
# "Türcode", "WLAN-Schlüssel"), the noun first in the Romance languages ("code wifi", "code de la
# porte", "código de acceso", "codice del cancello", "clé WPA"); "clave" is Spanish for a password.
_OPENS = (
    r"wi-?fi|wlan|wpa2?|r[ée]seau|red|rede|rete|porte|portail|porta|port[ãa]o|puerta|portal|port[óo]n|cancello"
    r"|alarme?|allarme|acc[èe]s|acceso|accesso|acesso|entr[ée]e|entrada|ingresso|immeuble|edificio|pr[ée]dio"
    r"|coffre|cofre|cassaforte|garage|garaje|garagem|s[ée]curit[ée]|seguridad|sicurezza|seguran[çc]a"
    r"|secret|secreto|segreto|pin|haust[üu]r|t[üu]r|tor|hoftor|eingang|alarmanlage|tresor|safe"
)
_OF = (
    r"(?:de la |de l'|du |del |della |dello |dell'|do |da |de |di |d'"
    r"|f[üu]r die |f[üu]r den |f[üu]r das |f[üu]rs |vom |zum |zur |der |des )?"
)
_PW_WORDS = (
    r"password|passwd|passcode|passphrase|pwd|pin|pass|passwort|kennwort|mot de passe|mdp|senha|wachtwoord"
    r"|contraseña|contrasena|clave|parola d'ordine|pw|geheimzahl|geheimnummer|digicode|combination"
    r"|(?:door|gate|alarm|access|entry|safe|lock|garage|locker|building|wi-?fi|wlan|network|router) (?:code|key)"
    r"|(?:wlan|wifi|netzwerk|tür|tor|alarm|zugangs|tresor)-?(?:schlüssel|code)|digicode"
    rf"|(?:code|c[óo]digo|codice|cl[ée]|chiave|chave|llave) {_OF}(?:{_OPENS})"
)
_COPULA = r"(?:is|was|ist|lautet|est|c['’]est|es|è|é|era)(?:[ \t]+(?:now|still|currently|jetzt|maintenant|ahora|ora))?"
# cue, then either the value (after an optional copula and colon: "password: X", "password is X") or
# up to four linking words and then a copula or colon ("the password for the NAS is X", "Die PIN
# meiner EC-Karte ist X", "le mot de passe du routeur est X").
_PASSWORD_PROSE = re.compile(
    rf"\b(?:{_PW_WORDS})\b(?:['’]s\b)?(?:,?[ \t]+{_COPULA}\b)?[ \t]*(?P<colon>[:=：])?[ \t]*(?P<value>[!-~]{{4,}})"
    r"|(?:密码|口令|パスワード|暗証番号|비밀번호|비번)(?:是|为|は|는|은)?[ \t:：]{0,3}(?P<cjk>[!-~]{4,})",
    _I,
)
_PASSWORD_LINKED = re.compile(
    rf"\b(?:{_PW_WORDS})\b(?:[ \t]+(?!{_COPULA}\b)[^\W\d]+(?:[-'][^\W\d]+)*){{1,4}}?"
    rf"(?:,?[ \t]+{_COPULA}\b[ \t]*[:=：]?|[ \t]*[:=：])[ \t]*(?P<value>[!-~]{{4,}})",
    _I,
)
_PASSWORD_SET_TO = re.compile(
    rf"\b(?:set|changed?|reset|updated?)\b[^.!?\n]{{0,40}}?\b(?:{_PW_WORDS}|login)[ \t]+to[ \t]+"
    r"(?P<value>[!-~]{4,})",
    _I,
)
# A code typed on a keypad, with no name for it ("punch 7294 on the keypad by the side door").
_KEYPAD = re.compile(
    r"\b(?:punch|key|tap|type|enter|press)(?:[ \t]+in)?[ \t]+(?P<value>\d{3,8}#?)[ \t]+(?:on|into|at)[ \t]+the"
    r"(?:[ \t]+[^\W\d]+)?[ \t]+(?:keypad|door|gate|panel|lock)\b",
    _I,
)
# An API key or token named in prose, in any language, when its value is key-shaped (16 or more
# letters and digits, both present): "Der API-Schlüssel lautet 3f9a...", "clé API : ...".
_API_KEY_PROSE = re.compile(
    r"\b(?:api[- ]?(?:key|schlüssel|token)|cl[ée] (?:d['’])?api|clave (?:de )?(?:la )?api|chave (?:de )?api"
    r"|chiave api|access[- ]?key(?: secret)?|secret[- ]?key|(?:access|auth|bot|bearer|refresh)[- ]?token)\b"
    rf"(?:[ \t]+{_COPULA}\b)?[ \t]*[:=：]?[ \t]*(?P<value>[A-Za-z0-9_./+=-]{{16,}})",
    _I,
)
_PASSPHRASE_WORDS = re.compile(
    rf"\bpassphrase\b[^.!?\n:]{{0,40}}?(?:[ \t]+{_COPULA}\b|:)[ \t]*"
    r"(?P<value>[a-z]{3,12}(?:[ \t]+[a-z]{3,12}){2,7})"
    r"(?=[ \t]*(?:[.!?,;\n]|$))",
    _I,
)
_FIGURATIVE_CUE = re.compile(r"\bclave\b", _I)
"""A cue that is also an everyday word ("la clave es practicar", the key is to practise): its value
must look like a secret; a plain lower-case word is not taken for a passphrase."""
_PATH = re.compile(r"[\w.~-]*(?:/[\w.-]+)+\.\w{1,5}")
_BARE_PASS = re.compile(r"\bpass\b[ \t]*$", _I)
"""``pass`` with no copula or colon ("bus pass 4471"): its value needs a letter, not only digits."""


# Words that follow "password is" without being one ("the password is required"), for the
# passphrase rule of :func:`_passphrase`.
_NOT_PASSPHRASES = frozenset(
    (
        "required", "incorrect", "correct", "invalid", "expired", "changed", "updated", "stored", "written",
        "encrypted", "protected", "missing", "optional", "mandatory", "different", "sensitive", "something",
        "somewhere", "complicated", "temporary", "default", "generated", "compromised", "necessary",
        "obligatoire", "obligatorio", "incorrecto", "erforderlich", "abgelaufen", "sbagliata", "necessaria",
        "dangerous", "important", "whatever",
    )
)  # fmt: skip
_PASSPHRASE = re.compile(r"[a-z]{8,64}")


def _passphrase(value: str) -> bool:
    """A lower-case passphrase ("correcthorsebatterystaple"): one word of 8-64 letters that is not
    an adjective, participle or adverb commonly said of a password ("required", "encrypted", "really")."""
    core = value.rstrip(_EDGE_PUNCT)
    if not _PASSPHRASE.fullmatch(core) or core in _NOT_PASSPHRASES:
        return False
    return not core.endswith(("ed", "ly", "ing", "ble", "ive", "ful", "ous"))


_PASSWORD_NAME = re.compile(r"pass|pwd|contrase", _I)
# Lower-case literals, one of which every KeywordDetector name (resp. prose cue) contains.
_KEYWORD_NEEDLES = ("key", "pass", "pwd", "secret", "contras")
_PROSE_NEEDLES = (
    "pass",
    "code",
    "código",
    "codigo",
    "codice",
    "clave",
    "parola",
    "key",
    "schlüssel",
    "clé",
    "chiave",
    "chave",
    "llave",
    "mdp",
    "contrase",
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
    "비번",
    "geheim",
    "digicode",
    "combination",
    "pw",
    "door",
    "token",
    "login",
)
# CJK, kana, hangul and full-width forms: a password value written against them ends where they start
# ("password: Tulip#2024です" covers "Tulip#2024" only).
_CJK_START = re.compile(r"[\u3000-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]")
_TRAILING_PUNCT = ".,;:)]}'\"`"
_EDGE_PUNCT = ".,;:!?*_'\"`"
_INDIRECT = re.compile(r"[\[\]({<>}]|\$\w")  # a call, an index, markup, a template or a variable
_REFERENCE = re.compile(r"[A-Za-z_$]+(?:\.[A-Za-z_$]+)+")  # process.env.API_KEY, settings.secret


_PIN = re.compile(r"\d{4,8}")
"""A PIN or door code: a cue names it, so "1234" is the code, not a placeholder (detect-secrets'
sequential-string filter is not applied to it)."""


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
    if any(f(core) for f in filters if not (f is filters[2] and _PIN.fullmatch(core))):
        return False
    inner_symbol = any(not (ch.isalnum() or ch in "_-") for ch in core)
    inner_capital = any(ch.isupper() for ch in core[1:]) and any(ch.islower() for ch in core)
    return any(ch.isdigit() for ch in core) or inner_symbol or inner_capital


def find_key_prefixes(text: str) -> Iterator[Finding]:
    """API keys of the :data:`KEY_PREFIXES` formats and ``Bearer`` tokens."""
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


def find_vendor_keys(text: str) -> Iterator[Finding]:
    """What the detect-secrets vendor plugins find: API keys, ``://user:pass@`` passwords, and
    whole PEM private-key blocks."""
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


def find_passwords(text: str) -> Iterator[Finding]:
    """Passwords and secrets named by a key (``password=...``, ``api_key: ...``; detect-secrets
    KeywordDetector) or by a prose cue ("my password is X", 密码 X), when the value looks like a secret."""
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
        yield from _prose_passwords(text)


def _prose_passwords(text: str) -> Iterator[Finding]:
    """Passwords stated in prose: right after the cue ("password: X", "password is X", 密码是 X) or
    after up to four linking words and a copula or colon ("the password for the NAS is X")."""
    for m in _PASSPHRASE_WORDS.finditer(text):  # a passphrase of several words: the words
        yield Finding("password", m.start("value"), m.end("value"), "pattern:passphrase")
    for m in _API_KEY_PROSE.finditer(text):
        value = m.group("value").rstrip(_TRAILING_PUNCT)
        if any(ch.isdigit() for ch in value) and any(ch.isalpha() for ch in value):
            yield Finding("api_key", m.start("value"), m.start("value") + len(value), "pattern:api_key_prose")
    matches = [*_PASSWORD_PROSE.finditer(text), *_PASSWORD_LINKED.finditer(text), *_PASSWORD_SET_TO.finditer(text)]
    matches += _KEYPAD.finditer(text)
    for m in matches:
        group = "cjk" if m.re is _PASSWORD_PROSE and m.group("cjk") is not None else "value"
        value = m.group(group).rstrip(_TRAILING_PUNCT)
        lead = text[m.start() : m.start(group)]
        if _BARE_PASS.search(lead) and not (len(value) >= 6 and any(ch.isalpha() for ch in value)):
            continue
        if _PATH.fullmatch(value):  # a file path ("tests pass: tests/api.test.ts"), not a secret
            continue
        stated = group == "cjk" or m.re is _PASSWORD_SET_TO or bool(re.search(rf"(?:[:=：]|\s{_COPULA})\s*$", lead, _I))
        if _looks_like_secret(value) or (stated and _passphrase(value) and not _FIGURATIVE_CUE.search(lead)):
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


def find_high_entropy(text: str) -> Iterator[Finding]:
    """High-entropy tokens: unquoted Base64-like (>= 20 characters, mixed case and digits) and
    quoted hex (>= 16 characters) above the entropy limits."""
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
