"""Personal identifiers found by pattern, checksum or cue: e-mail addresses, payment cards, CVVs,
IBANs, national ids, passports, user names and IP addresses.

Each ``find_*`` function is a detector (:data:`retain.text.findings.Detector`): every span of its
kinds in a text, with character offsets. What each finds, and why, is listed in
:mod:`retain.text.privacy`, which runs them all and resolves overlaps. ``stdnum`` is imported on first use.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator

from retain.text.findings import Finding

__all__ = [
    "find_cards",
    "find_cvvs",
    "find_emails",
    "find_ibans",
    "find_ips",
    "find_national_ids",
    "find_passports",
    "find_usernames",
]

_I = re.IGNORECASE
# Word characters for boundaries, ASCII only: CJK letters are \w, yet a number may follow 号 directly.
_NOT_AFTER = r"(?<![0-9A-Za-z_])"
_NOT_BEFORE = r"(?![0-9A-Za-z_])"


def _near_before(pattern: re.Pattern[str], text: str, start: int, window: int) -> bool:
    """True when ``pattern`` matches in the ``window`` characters before ``start``, on that line."""
    left = text[max(0, start - window) : start].rsplit("\n", 1)[-1]
    return pattern.search(left) is not None


# WHATWG HTML "valid e-mail address", less / = ? ' ` in the local part (they would swallow a
# preceding "email=" or quote), with at least one dot and an alphabetic last label.
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_EMAIL = re.compile(
    rf"(?<![A-Za-z0-9.!#$%&*+^_{{|}}~-])[A-Za-z0-9!#$%&*+^_{{|}}~-]+(?:\.[A-Za-z0-9!#$%&*+^_{{|}}~-]+)*"
    rf"@(?:{_LABEL}\.)+(?:[A-Za-z]{{2,63}}|xn--[A-Za-z0-9-]{{2,59}}){_NOT_BEFORE}"
)


_URL_USERINFO = re.compile(r"://[^\s/@]*:$")  # "https://user:" + "password@host" is not an address


def find_emails(text: str) -> Iterator[Finding]:
    """E-mail addresses (the WHATWG pattern, dotted domain); not the ``user:password@`` of a URL."""
    for m in _EMAIL.finditer(text):
        if _URL_USERINFO.search(text[max(0, m.start() - 200) : m.start()]):
            continue
        yield Finding("email", m.start(), m.end(), "pattern:whatwg_email")


_CARD = re.compile(
    rf"{_NOT_AFTER}(?<!-)(?:\d{{13,19}}|\d{{4}}(?P<sep>[ -])\d{{4,6}}(?P=sep)\d{{4,5}}(?:(?P=sep)\d{{1,4}}){{0,2}})"
    rf"{_NOT_BEFORE}(?!-\d)"
)
_CARD_CUE = re.compile(
    r"\b(?:card|credit|debit|visa|master ?card|amex|american express|cc|carte|karte|kreditkarte|tarjeta|carta)\b"
    r"|卡号|银行卡|信用卡|借记卡|カード",
    _I,
)
_LINE = 10_000  # a window reaching back to the start of the line
_TEST_CARDS = re.compile(r"\b(?:test|testing|sandbox|dummy|example|fake)\s+(?:credit\s+)?cards?\b", _I)
# A card-verification cue, then within 40 characters on the same sentence (no digit, no sentence
# end in between: "the CVV on it is 737", "CVV de la tarjeta es 846") the 3-4 digit value.
_CVV_CUE = (
    r"\b(?:cvv2?|cvc2?|cvn|csc|cid|card (?:security|verification) (?:code|value|number)|security code"
    r"|(?:karten)?prüfnummer|sicherheitscode|prüfziffer|cryptogramme(?: visuel)?|code de sécurité"
    r"|c[óo]digo de (?:seguridad|verificaci[óo]n)|codice di (?:sicurezza|verifica)"
    r"|(?:three|four|3|4)[- ]digits? on the back"
    r")\b"
    r"|安全码|验证码|セキュリティコード|보안\s?코드|(?:卡)?背面的?(?:三|3|四|4)位数?|(?:裏|裏面|うら)の(?:3|４|4|３)桁"
    r"|뒷면\s?(?:3|세)\s?자리"
)
_CVV = re.compile(
    rf"(?:{_CVV_CUE})(?:[^\d\n.!?。！？]|[.!?](?!\s|$)){{0,40}}?(?<![\d.,])(\d{{3,4}})(?![\d.,:/]\d|\d)", _I
)
_IBAN = re.compile(rf"{_NOT_AFTER}[A-Z]{{2}}\d{{2}}(?: ?[A-Z0-9]){{11,30}}{_NOT_BEFORE}")
_IBAN_CUE = re.compile(r"\bIBAN\b", _I)
_CN_RIC = re.compile(r"(?<!\d)\d{17}[\dXx](?![\dXx])")
_CN_RIC_CUE = re.compile(
    r"(?:身份证(?:号码?)?|\bID\s+(?:card\s+)?(?:number|no\.?))[\s:：是为]{0,4}(\d{17}[\dXx]|\d{15})(?![\dXx])", _I
)
# UK National Insurance number: two prefix letters (HMRC's rules: not D, F, I, Q, U, V; second
# not O; not BG, GB, KN, NK, NT, TN, ZZ), six digits (grouped in pairs or not), suffix A-D. After a
# cue ("National Insurance", "NI number", "NINO") any two letters, as in HMRC's specimen "QQ 12 34 56 C".
_NINO_SHAPE = r"[A-Z]{2} ?\d{2} ?\d{2} ?\d{2} ?[A-D]"
_NINO = re.compile(
    rf"{_NOT_AFTER}(?!BG|GB|KN|NK|NT|TN|ZZ)[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z]"
    rf" ?\d{{2}} ?\d{{2}} ?\d{{2}} ?[A-D]{_NOT_BEFORE}"
)
_NINO_CUE = re.compile(
    rf"\b(?:national insurance|nino|ni)\b(?:\s+(?:number|no\.?|num|#))?[\s:=#]*(?:is\s+)?({_NINO_SHAPE}){_NOT_BEFORE}",
    _I,
)
_ES_DNI = re.compile(rf"{_NOT_AFTER}(\d{{8}}-?[A-Z]|[XYZ]-?\d{{7}}-?[A-Z]){_NOT_BEFORE}")
_IT_CF = re.compile(rf"{_NOT_AFTER}[A-Z]{{6}}\d{{2}}[A-Z]\d{{2}}[A-Z]\d{{3}}[A-Z]{_NOT_BEFORE}", _I)
_SSN = re.compile(r"(?<![\d-])\d{3}-\d{2}-\d{4}(?![\d-])")
_SSN_CUE = re.compile(
    r"\b(?:social security (?:number|no\.?)|ssn)\b[\s:#=]*(?:is\s+)?(\d{3}[- ]?\d{2}[- ]?\d{4})(?![\d-])", _I
)
# German tax id (Steuer-ID, 11 digits, may be grouped 2-3-3-3) and French social security number (NIR,
# 15 characters, may be grouped 1-2-2-2-3-3-2): ``stdnum`` checksums.
_DE_IDNR = re.compile(r"(?<![\d ])\d{2} ?\d{3} ?\d{3} ?\d{3}(?![\d])")
_FR_NIR = re.compile(r"(?<![\d])[12] ?\d{2} ?\d{2} ?(?:\d{2}|2[AB]) ?\d{3} ?\d{3} ?\d{2}(?!\d)")
_PASSPORT = re.compile(
    r"\bpassport(?:\s+(?:number|no\.?|num|#))?\s*(?:is\b|[:=#])?\s*([A-Z]{0,2}\d{6,9}|(?=(?:[A-Z]*\d){5})[A-Z0-9]{8,9})"
    r"(?![0-9A-Za-z])"
    r"|护照(?:号码?)?[\s:：是为]{0,3}([A-Z]{0,2}\d{6,9})(?![0-9A-Za-z])",
    _I,
)


def find_cards(text: str) -> Iterator[Finding]:
    """Payment card numbers: Luhn-valid 13-19 digits, or 15/16 digits after a card word; none on a
    line about test cards."""
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


def find_cvvs(text: str) -> Iterator[Finding]:
    """The 3-4 digits a card-verification cue (CVV, CVC, CSC, security code, Prüfnummer,
    cryptogramme, código de seguridad, codice di sicurezza, 安全码, セキュリティコード, ...) names
    within 40 characters of the same sentence with no other digit between (the value only)."""
    for m in _CVV.finditer(text):
        yield Finding("cvv", m.start(1), m.end(1), "cue:cvv")


def find_ibans(text: str) -> Iterator[Finding]:
    """IBANs valid by ``stdnum.iban``, or IBAN-shaped right after the word "IBAN"."""
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


def _cn_ric_valid(number: str) -> bool:
    """ISO 7064 mod 11-2 check character and a real birth date (1900 on); the region code is not
    checked (``stdnum.cn.ric`` refuses codes missing from its list, e.g. Shanghai's 310115)."""
    import datetime

    from stdnum.cn import ric

    try:
        datetime.date(int(number[6:10]), int(number[10:12]), int(number[12:14]))
    except ValueError:
        return False
    return int(number[6:10]) >= 1900 and ric.calc_check_digit(number) == number[-1].upper()


def find_national_ids(text: str) -> Iterator[Finding]:
    """Chinese resident ids (checksum and birth date, or after 身份证 / "ID number"), US SSNs, UK
    National Insurance numbers, Spanish DNI / NIE and Italian codici fiscali (``stdnum``
    checksums)."""
    from stdnum.es import dni, nie
    from stdnum.it import codicefiscale
    from stdnum.us import ssn

    for m in _CN_RIC.finditer(text):
        if _cn_ric_valid(m.group()):
            yield Finding("national_id", m.start(), m.end(), "stdnum.cn.ric")
    for m in _NINO.finditer(text):
        yield Finding("national_id", m.start(), m.end(), "pattern:uk_nino")
    for m in _NINO_CUE.finditer(text):
        yield Finding("national_id", m.start(1), m.end(1), "cue:uk_nino")
    for m in _ES_DNI.finditer(text):
        if dni.is_valid(m.group()) or nie.is_valid(m.group()):
            yield Finding("national_id", m.start(), m.end(), "stdnum.es.dni")
    for m in _IT_CF.finditer(text):
        if codicefiscale.is_valid(m.group()):
            yield Finding("national_id", m.start(), m.end(), "stdnum.it.codicefiscale")
    for m in _CN_RIC_CUE.finditer(text):
        yield Finding("national_id", m.start(1), m.end(1), "cue:national_id")
    for m in _SSN.finditer(text):
        if ssn.is_valid(m.group()):
            yield Finding("national_id", m.start(), m.end(), "stdnum.us.ssn")
    for m in _SSN_CUE.finditer(text):
        yield Finding("national_id", m.start(1), m.end(1), "cue:ssn")
    yield from _eu_tax_ids(text)
    yield from _world_ids(text)


_EU_ID_CUE = re.compile(
    r"(?:\bsteuer-?id|\bsteuer-?identifikationsnummer|\bidentifikationsnummer)\b[\s:#=]*(?:ist\s+)?"
    r"(?P<de>\d{2} ?\d{3} ?\d{3} ?\d{3})(?!\d)"
    r"|(?:\bsécurité sociale|\bnuméro de sécu|\bNIR)\b[^\d\n]{0,12}(?P<fr>[12](?: ?[\dAB]){12,14})(?!\d)",
    _I,
)


# National numbers of more countries: the distinctive shapes checked by ``stdnum`` (Brazil's CPF
# 000.000.000-00, Korea's resident registration number 000000-0000000), and any 9-13 digits right
# after their name (CPF, NIF / contribuinte, BSN / burgerservicenummer, マイナンバー / 個人番号,
# 주민등록번호), checksum or not.
_BR_CPF = re.compile(r"(?<![\d.])\d{3}\.\d{3}\.\d{3}-\d{2}(?![\d-])")
_KR_RRN = re.compile(r"(?<![\d-])\d{6}-[1-8]\d{6}(?![\d-])")
_WORLD_ID_CUE = re.compile(
    r"(?:\b(?:cpf|nif|contribuinte|bsn|burgerservicenummer|sofinummer)\b|マイナンバー|個人番号|주민(?:등록)?번호)"
    r"[^\d\n]{0,12}?(?P<value>(?<!\d)\d(?:[ .-]?\d){8,12})(?!\d)",
    _I,
)


def _world_ids(text: str) -> Iterator[Finding]:
    """CPF and Korean resident numbers by shape and checksum; CPF, NIF, BSN, My Number and resident
    numbers after their name."""
    from stdnum.br import cpf
    from stdnum.kr import rrn

    for m in _BR_CPF.finditer(text):
        if cpf.is_valid(m.group()):
            yield Finding("national_id", m.start(), m.end(), "stdnum.br.cpf")
    for m in _KR_RRN.finditer(text):
        if rrn.is_valid(m.group()):
            yield Finding("national_id", m.start(), m.end(), "stdnum.kr.rrn")
    for m in _WORLD_ID_CUE.finditer(text):
        yield Finding("national_id", m.start("value"), m.end("value"), "cue:national_id")


def _eu_tax_ids(text: str) -> Iterator[Finding]:
    """German Steuer-IDs and French NIRs that pass their ``stdnum`` checks, or that follow their
    names (Steuer-ID, sécurité sociale)."""
    from stdnum.de import idnr
    from stdnum.fr import nir

    for m in _EU_ID_CUE.finditer(text):
        group = "de" if m.group("de") is not None else "fr"
        yield Finding("national_id", m.start(group), m.end(group), "cue:national_id")
    for m in _DE_IDNR.finditer(text):
        if idnr.is_valid(m.group().replace(" ", "")):
            yield Finding("national_id", m.start(), m.end(), "stdnum.de.idnr")
    for m in _FR_NIR.finditer(text):
        if nir.is_valid(m.group().replace(" ", "")):
            yield Finding("national_id", m.start(), m.end(), "stdnum.fr.nir")


_USERNAME = re.compile(
    r"\b(?:user ?name|user ?id|login (?:name|id))\b\s*(?:is\b|[:=])?\s*"
    r"([A-Za-z0-9][A-Za-z0-9._@-]{2,63})(?![0-9A-Za-z])"
    r"|(?:用户名|账号)[\s:：是为]{0,3}([A-Za-z0-9][A-Za-z0-9._@-]{2,63})(?![0-9A-Za-z])",
    _I,
)


def find_usernames(text: str) -> Iterator[Finding]:
    """Identifier-shaped login names (a digit, ``.``, ``_`` or ``@`` in them) after a username cue."""
    for m in _USERNAME.finditer(text):
        group = 1 if m.group(1) is not None else 2
        value = m.group(group).rstrip(".-")
        if any(ch.isdigit() or ch in "._@" for ch in value):
            yield Finding("username", m.start(group), m.start(group) + len(value), "cue:username")


def find_passports(text: str) -> Iterator[Finding]:
    """Passport numbers (6-9 digits, up to two letters first) after "passport" / 护照."""
    for m in _PASSPORT.finditer(text):
        group = 1 if m.group(1) is not None else 2
        yield Finding("passport", m.start(group), m.end(group), "cue:passport")


# ASCII word characters only: CJK text runs into addresses without spaces ("IPは10.0.0.1です").
_IP_CANDIDATE = re.compile(r"(?<![0-9A-Za-z_.:])[0-9A-Fa-f]*[.:][0-9A-Fa-f.:]+(?![0-9A-Za-z_])")


_VERSION_CUE = re.compile(r"(?:\b(?:version|ver|release|build|v)|バージョン|版本|ビルド|リリース)\W{0,2}$", _I)


def find_ips(text: str) -> Iterator[Finding]:
    """IPv4 / IPv6 addresses (``host:port`` allowed); not loopback, unspecified, link-local,
    multicast, nor a version number."""
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
