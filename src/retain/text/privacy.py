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
- ``api_key`` -> ``[API_KEY]``: :data:`~retain.text.credentials.KEY_PREFIXES` (well-known formats detect-secrets lacks:
  ``sk-...``, vendor ``*_sk_live_...``, ``npm_...``, ``AIza...``, ``hf_...``, ``github_pat_...``),
  ``Bearer`` tokens, and the ``detect-secrets`` plugins for AWS, Azure storage, Discord, GitHub,
  GitLab, JWT, Mailchimp, npm, OpenAI, PyPI, SendGrid, Slack, Square, Stripe, Telegram, Twilio.
- ``private_key`` -> ``[PRIVATE_KEY]``: ``detect-secrets`` PrivateKeyDetector; the whole PEM block
  (to the END line, or to the end of the text when there is none).
- ``password`` -> ``[PASSWORD]``: ``detect-secrets`` BasicAuthDetector (``://user:pass@``) and
  KeywordDetector on password names (``password=...``, ``db_pass: ...``); prose ("my password is
  X", "password X", "PIN: X", "Passwort: X", "mot de passe : X", "senha X", 密码 X, パスワードは X,
  暗証番号 X, 비밀번호는 X), and a code or key named by what it opens in either word order ("door
  code", "wifi key", "WLAN-Schlüssel", "code wifi", "código de la puerta", "clave del wifi"). A value
  ends where CJK, kana, hangul or full-width text starts.
- ``cvv`` -> ``[CVV]``: 3-4 digits right after CVV / CVC / CSC / security code / 安全码 / "the 3
  digits on the back" / 背面的三位数.
- ``passport`` -> ``[PASSPORT]``: 6-9 digits (up to two letters first) after "passport" / 护照.
- ``username`` -> ``[USERNAME]``: an identifier-shaped login name (a digit, ``.``, ``_`` or
  ``@`` in it) right after "username", "user name", "user id", "login name" / "login id", 用户名 or
  账号: "username cvale7"; a word ("the username field") is not taken.
- ``secret`` -> ``[SECRET]``: KeywordDetector on other names (``api_key=...``, ``secret: ...``);
  Base64HighEntropyString on unquoted tokens (>= 20 characters, upper and lower case and digits,
  Shannon entropy > 4.5 bits) and HexHighEntropyString on quoted ones (>= 16, entropy > 3.0).
- ``address`` -> ``[ADDRESS]``: the street line of a postal address by its shape, in English,
  French, Spanish, Portuguese, Italian, German, Dutch, Chinese and Japanese (:mod:`retain.text.addresses`).
- ``ip`` -> ``[IP]``: ``ipaddress`` on candidate tokens (``host:port`` allowed); loopback,
  unspecified, link-local and multicast addresses are ignored, private ones are not.
- ``phone`` -> ``[PHONE]``: ``phonenumbers`` (libphonenumber), ``PhoneNumberMatcher`` at leniency
  ``STRICT_GROUPING`` (valid for the region and grouped as that country writes it, or not
  grouped) for each of :data:`~retain.text.phones.PHONE_REGIONS`; plus any ``+``-prefixed international number of a
  possible length. A number with one decimal point ("0.268435456") is never a phone number.

Only the value is covered: ``"CVV 771"`` becomes ``"CVV [CVV]"`` and ``"password: x9!"``
becomes ``"password: [PASSWORD]"``, so a redacted text still reads.

Known limitations (each a deliberate trade of recall for fewer false alarms):

- E-mail addresses with non-ASCII local parts or domains are not found (in CJK text the local
  part could not be told from the words before it).
- Phone numbers in national format are found only for :data:`~retain.text.phones.PHONE_REGIONS` and only when
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
- Names, dates of birth and postal addresses other than a numbered street line (see
  :mod:`retain.text.addresses`) are not detected (that needs a NER model).

Cost: about 1 microsecond per character of prose (0.4 ms for a typical scenario event); text dense
with digit runs (tables of numbers) costs up to ~50 microseconds per character, nearly all of it
in libphonenumber's matcher. The first call pays the detector libraries' import (about 0.1 s).
"""

from __future__ import annotations

import functools
import unicodedata

from retain.errors import InvalidInput
from retain.text.addresses import find_addresses
from retain.text.credentials import find_high_entropy, find_key_prefixes, find_passwords, find_vendor_keys
from retain.text.findings import Detector, Finding
from retain.text.identifiers import (
    find_cards,
    find_cvvs,
    find_emails,
    find_ibans,
    find_ips,
    find_national_ids,
    find_passports,
    find_usernames,
)
from retain.text.phones import find_phones

__all__ = [
    "contains_sensitive",
    "detect",
    "redact",
]

# Precedence on spans of equal length: the earlier detector's kind wins (the module docstring's order).
_DETECTORS: tuple[Detector, ...] = (
    find_national_ids,
    find_cards,
    find_ibans,
    find_emails,
    find_key_prefixes,
    find_vendor_keys,
    find_passwords,
    find_cvvs,
    find_passports,
    find_usernames,
    find_high_entropy,
    find_ips,
    find_phones,
    find_addresses,
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
