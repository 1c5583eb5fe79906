"""retain.text.privacy: each kind found and redacted, look-alikes left alone, offsets in characters."""

from __future__ import annotations

import itertools
import socket
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from retain.errors import InvalidInput
from retain.text.findings import Finding
from retain.text.privacy import contains_sensitive, detect, redact

_JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"

# (text, the sensitive value, kind)
POSITIVES = [
    ("Reach me at dana@example.org tomorrow.", "dana@example.org", "email"),
    ("Call me on +44 20 7946 0958 after six.", "+44 20 7946 0958", "phone"),
    ("US office: (415) 555-0132.", "(415) 555-0132", "phone"),
    ("My mobile is +44 7700 931 004.", "+44 7700 931 004", "phone"),  # unallocated range, + form
    ("我的电话是138 0013 8000，谢谢", "138 0013 8000", "phone"),
    ("手机号13958210473，其他的在App里。", "13958210473", "phone"),
    ("Charge it to 4111 1111 1111 1111.", "4111 1111 1111 1111", "card"),
    ("Amex 378282246310005 works too", "378282246310005", "card"),
    ("Use my card 4111 1111 1111 1112, exp 01/30", "4111 1111 1111 1112", "card"),  # mistyped, after "card"
    ("exp 04/29, CVC 318.", "318", "cvv"),
    ("IBAN DE89 3704 0044 0532 0130 00 please", "DE89 3704 0044 0532 0130 00", "iban"),
    ("Transfer to GB82 WEST 1234 5698 7654 32 TODAY", "GB82 WEST 1234 5698 7654 32", "iban"),
    ("Pay it to my bank: IBAN GB29 PCLA 6016 1331 9268 19, thanks", "GB29 PCLA 6016 1331 9268 19", "iban"),
    ("身份证号 360426199101010071 已提交", "360426199101010071", "national_id"),
    ("SSN 536-22-1234 on file", "536-22-1234", "national_id"),
    ("passport number is 538817204 if needed", "538817204", "passport"),
    ("server at 203.0.113.7:8080 is down", "203.0.113.7", "ip"),
    ("route via 2001:db8::1 now", "2001:db8::1", "ip"),
    ("My API key is sk-test-ABC123, ok?", "sk-test-ABC123", "api_key"),
    ("OPENAI_API_KEY=sk-abcdefghijklmnopqrstuvwx", "sk-abcdefghijklmnopqrstuvwx", "api_key"),
    ("token: ghp_abcdefghijklmnopqrstuvwxyz0123456789", "ghp_abcdefghijklmnopqrstuvwxyz0123456789", "api_key"),
    ("AWS key AKIAIOSFODNN7EXAMPLE here", "AKIAIOSFODNN7EXAMPLE", "api_key"),
    ("live secret - pl_sk_live_51Hx9QmV2cT7rLw0ZpK4 - keep it", "pl_sk_live_51Hx9QmV2cT7rLw0ZpK4", "api_key"),
    ("Token seen in log: npm_Qm7Rz2xK9vT4pL8wN3sY6cB1 (scope)", "npm_Qm7Rz2xK9vT4pL8wN3sY6cB1", "api_key"),
    ("slack xoxb-123456789012-abcdefghijklmnop done", "xoxb-123456789012-abcdefghijklmnop", "api_key"),
    ("Authorization: Bearer " + _JWT, _JWT, "api_key"),
    (
        "key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----\nthanks",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
        "private_key",
    ),
    ("my password is Tulip#2024", "Tulip#2024", "password"),
    ("login odile / password Bossa!Lune77", "Bossa!Lune77", "password"),
    ("db:\n  password=hunter2\n", "hunter2", "password"),
    ("git clone https://bob:pa55w0rd@example.com/repo.git", "pa55w0rd", "password"),
    ("密码是Abc12345，别告诉别人", "Abc12345", "password"),
    ("パスワードは Tulip#2024 です", "Tulip#2024", "password"),
    ("暗証番号：4821、よろしく", "4821", "password"),
    ("비밀번호는 Tulip#2024 입니다", "Tulip#2024", "password"),
    ("Das Passwort ist Tulip#2024, bitte merken.", "Tulip#2024", "password"),
    ("Mot de passe : Tulip#2024", "Tulip#2024", "password"),
    ("password: Tulip#2024です", "Tulip#2024", "password"),
    ("api_key: 9f8e7d6c5b4a39281706", "9f8e7d6c5b4a39281706", "secret"),
    ("random token Zx8Qm2Lk9Pw4Rt7Yv1Nc6Bd3Hs5Jf0Ga here", "Zx8Qm2Lk9Pw4Rt7Yv1Nc6Bd3Hs5Jf0Ga", "secret"),
]

NEGATIVES = [
    "Passwort vergessen? Kein Problem.",
    "パスワードを忘れました",
    "パスワードは英数字8文字以上にしてください",
    "Mot de passe oublié",
    "Tracking number 4111 1111 1111 1112 arrived.",  # 16 digits, Luhn-invalid, no card word
    "Reference 1234 5678 9012 3456 noted.",
    "Check-in on 2026-08-18, check-out 2026-08-21.",
    "The mobile app shipped 2026-04-07 13:22 UTC.",
    "Matte quartz 4,200 EUR vs allowance 2,500 EUR -> +1,700.",
    "gross 1,284,402.10 EUR | transactions 18,311 | fees 25,498.46 EUR | net 1,258,903.64",
    "charged 25,498.46 - 1.42 EUR difference (rounding per transaction)",
    "SA 0214  08AUG  BRK 09:35 -> VLM 12:05   seats 14A 14B 14C 14D",
    "Flight NW 0881 departs 06:10, KT 4410 at 11:20.",
    "Upgraded to v1.2.3 and then v2.10.0-rc.1.",
    "bump @types/node from 18.19.3 to 18.19.8 (PR #2213)",
    "Order #40981223 shipped; job SD-661402, claim EX-22871, PIR ORV-PC-40981.",
    "【订单成功】订单号E28841937  G1363  10月2日 08:40-11:28  合计1428.00元",
    "批次号 110105000000000017 已入库",  # check character fits, birth date does not
    "Part codes GB82 WEST 1234 5698 7654 33 in stock",  # IBAN checksum fails, no "IBAN"
    "Key sk-...x9Q2 revoked at 10:14.",
    "Charged to the card ending 4242.",
    "Sandbox cards: 4242 4242 4242 4242 (succeeds)",
    "We use sk-learn and task-list widgets.",
    "commit 3f9a2c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39 fixed it",
    "request id 123e4567-e89b-12d3-a456-426614174000",
    "webhook posts to http://127.0.0.1:4010/hooks (loopback only)",
    "stored as CI secret NPM_TOKEN with ::add-mask::.",
    "Pin 2 of the connector is ground.",
    "Password reset link sent; the password manager is required.",
    "password = request.form['password']",
    "const apiKey = process.env.OPENWEATHER_API_KEY;",
    "API_KEY = 'YOUR_API_KEY_HERE'",
    "P(X = 9) = 10 \\cdot 0.134217728 \\cdot 0.2 = 0.268435456",
    "Publication window: 2015 or later, n >= 30; APA 7; due Nov 14.",
    "总预算卡死在12000元以内（车票+住宿+当地交通都算上）",
    "services/checkout/paylume_fallback.py test_3ds_required_over_threshold_eu",
]


@pytest.mark.parametrize(("text", "value", "kind"), POSITIVES)
def test_each_kind_is_detected_and_redacted(text: str, value: str, kind: str) -> None:
    findings = detect(text)
    spans = [(text[f.start : f.end], f.kind) for f in findings]
    assert (value, kind) in spans, spans
    assert contains_sensitive(text)
    redacted, withheld = redact(text)
    assert value not in redacted
    placeholder = next(f.placeholder for f in withheld if text[f.start : f.end] == value)
    assert placeholder == f"[{kind.upper()}]"
    assert placeholder in redacted


@pytest.mark.parametrize("text", NEGATIVES)
def test_look_alikes_are_not_flagged(text: str) -> None:
    assert detect(text) == []
    assert not contains_sensitive(text)
    assert redact(text) == (text, [])


def test_the_brief_example() -> None:
    redacted, withheld = redact("My API key is sk-test-ABC123, email dana@example.org")
    assert redacted == "My API key is [API_KEY], email [EMAIL]"
    assert [f.kind for f in withheld] == ["api_key", "email"]


def test_only_the_value_is_replaced() -> None:
    text = "Use my card: 4929 5512 0087 3316, exp 09/28, CVV 771, name on card Maren Halvorsen."
    redacted, _ = redact(text)
    assert redacted == "Use my card: [CARD], exp 09/28, CVV [CVV], name on card Maren Halvorsen."


def test_chinese_text_with_a_mobile_number() -> None:
    text = "订吧，用我的手机号 138 0013 8000 联系我。"
    redacted, withheld = redact(text)
    assert redacted == "订吧，用我的手机号 [PHONE] 联系我。"
    assert [(f.kind, f.detector) for f in withheld] == [("phone", "phonenumbers")]


def test_offsets_are_characters_not_bytes() -> None:
    text = "电话 138 0013 8000"
    (finding,) = detect(text)
    assert (finding.start, finding.end) == (3, 16)
    assert len(text.encode("utf-8")) > len(text)  # byte offsets would differ
    emoji = "🙂🙂 write to dana@example.org"
    (finding,) = detect(emoji)
    assert emoji[finding.start : finding.end] == "dana@example.org"
    assert finding.start == 12


def test_redaction_keeps_everything_else_byte_for_byte() -> None:
    text = "Ünïcödé 👋 — mail dana@example.org\tor call +44 20 7946 0958\r\n(ok)  密码是Abc12345，谢谢 "
    redacted, withheld = redact(text)
    kept = []
    cursor = 0
    for f in withheld:
        kept.append(text[cursor : f.start])
        cursor = f.end
    kept.append(text[cursor:])
    rebuilt = "".join(k + f.placeholder for k, f in zip(kept, withheld, strict=False)) + kept[-1]
    assert rebuilt == redacted
    assert redacted.encode("utf-8") == (
        "Ünïcödé 👋 — mail [EMAIL]\tor call [PHONE]\r\n(ok)  密码是[PASSWORD]，谢谢 ".encode()
    )


_PLAIN = st.text(alphabet=st.sampled_from("abc XYZ 汉字，。！ éü\n\t-"), max_size=40)


@settings(max_examples=60, deadline=None)
@given(prefix=_PLAIN, suffix=_PLAIN)
def test_an_address_anywhere_is_withheld_and_the_rest_kept(prefix: str, suffix: str) -> None:
    text = f"{prefix} dana@example.org {suffix}"
    redacted, withheld = redact(text)
    assert redacted == f"{prefix} [EMAIL] {suffix}"
    assert [text[f.start : f.end] for f in withheld] == ["dana@example.org"]


@settings(max_examples=100, deadline=None)
@given(text=st.text(max_size=80))
def test_redaction_of_any_text_round_trips_outside_the_findings(text: str) -> None:
    redacted, withheld = redact(text)
    assert withheld == detect(text)
    assert contains_sensitive(text) == bool(withheld)
    pieces, cursor = [], 0
    for f in withheld:
        assert cursor <= f.start < f.end <= len(text)
        pieces += [text[cursor : f.start], f.placeholder]
        cursor = f.end
    assert "".join([*pieces, text[cursor:]]) == redacted


def test_findings_are_sorted_and_do_not_overlap() -> None:
    text = "card 4111 1111 1111 1111, mail a@b.io, key sk-test-ABC123, ip 8.8.8.8, 身份证 360426199101010071"
    findings = detect(text)
    assert findings == sorted(findings, key=lambda f: f.start)
    assert all(a.end <= b.start for a, b in itertools.pairwise(findings))
    assert {f.kind for f in findings} == {"card", "email", "api_key", "ip", "national_id"}


def test_longest_overlapping_finding_wins() -> None:
    text = "x" * 20
    short = Finding("phone", 2, 6, "test")
    long = Finding("secret", 4, 15, "test")
    redacted, withheld = redact(text, findings=[short, long])
    assert withheld == [long]
    assert redacted == "xxxx[SECRET]xxxxx"


def test_redact_with_given_findings_and_unknown_kind() -> None:
    text = "order for Maren Halvorsen"
    name = Finding("person", 10, 25, "caller")
    assert redact(text, findings=[name]) == ("order for [PERSON]", [name])


def test_bad_input_is_refused() -> None:
    with pytest.raises(InvalidInput, match="text"):
        detect(b"dana@example.org")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="findings"):
        redact("short", findings=[Finding("email", 2, 50, "caller")])


def test_no_network_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    text = "sk_live_" + "a1B2c3D4e5F6g7H8i9J0k1L2" + " ghp_abcdefghijklmnopqrstuvwxyz0123456789 AKIAIOSFODNN7EXAMPLE"
    assert {f.kind for f in detect(text)} == {"api_key"}


def test_import_loads_no_detector_library() -> None:
    code = (
        "import sys, retain.text.privacy as p\n"
        "heavy = [m for m in sys.modules if m.split('.')[0] in ('phonenumbers', 'stdnum', 'detect_secrets')]\n"
        "assert not heavy, heavy\n"
        "assert p.contains_sensitive('mail dana@example.org')\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("联系我 ｄａｎａ＠ｅｘａｍｐｌｅ．ｏｒｇ 谢谢", "email"),
        ("key: ｓｋ－ｔｅｓｔ－ＡＢＣ１２３４５６７８９０", "api_key"),
        ("card ４１１１ １１１１ １１１１ １１１１ thanks", "card"),
    ],
)
def test_full_width_forms_are_detected_on_their_nfkc_form(text: str, kind: str) -> None:
    redacted, found = redact(text)
    assert [f.kind for f in found] == [kind]
    assert redacted == text[: found[0].start] + f"[{kind.upper()}]" + text[found[0].end :]
    assert not any(ch in redacted for ch in "＠１４") and contains_sensitive(text)


def test_circled_enumeration_numbers_are_not_a_phone_number() -> None:
    for text in ("手順①②③④⑤⑥⑦⑧⑨⑩を実行します。", "⓪①②③④⑤⑥⑦⑧⑨"):
        assert detect(text) == [], text
    (found,) = detect("電話番号は０３－１２３４－５６７８です。")  # full-width digits are still folded
    assert found.kind == "phone"


@pytest.mark.parametrize(
    ("text", "secret", "kind"),
    [
        ("キーはsk-live-1234567890abcdefghijです", "sk-live-1234567890abcdefghij", "api_key"),
        ("サーバーのIPは10.20.30.40です", "10.20.30.40", "ip"),
        ("服务器地址是10.20.30.40，端口", "10.20.30.40", "ip"),
        ("サーバーのIPは１０．２０．３０．４０です", "１０．２０．３０．４０", "ip"),
    ],
)
def test_secrets_next_to_cjk_characters_are_found(text: str, secret: str, kind: str) -> None:
    assert [(f.kind, text[f.start : f.end]) for f in detect(text)] == [(kind, secret)]
    assert detect("バージョン10.20.30.40をリリースしました") == []  # a version number, as "version 10.20.30.40"


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("Le code wifi du bureau est Lavande_44.", "Lavande_44"),
        ("le code d'accès de la résidence est 7Y31", "7Y31"),
        ("la clave del router es Tortuga#58", "Tortuga#58"),
        ("El código de la puerta: 4491", "4491"),
        ("Il codice del cancello è 8830.", "8830"),
        ("A chave do wifi é Mangue2023", "Mangue2023"),
        ("Der WLAN-Schlüssel lautet Birke-9917", "Birke-9917"),
        ("The wifi key is Otter9Pond", "Otter9Pond"),
        ("clé WPA : Goeland2020", "Goeland2020"),
    ],
)
def test_a_code_or_key_named_by_what_it_opens_is_a_password(text: str, secret: str) -> None:
    """Noun-first (Romance: "code wifi", "código de la puerta") and qualifier-first ("wifi key",
    "WLAN-Schlüssel") names of a credential; "clave" is Spanish for a password."""
    redacted, findings = redact(text)
    assert secret not in redacted
    assert [f.kind for f in findings] == ["password"]


@pytest.mark.parametrize(
    "text",
    [
        "La clave es practicar todos los días.",  # "clave": the key (to success), not a password
        "la clave del éxito es la constancia",
        "Le code de la route interdit de doubler ici.",  # the highway code
        "Il codice della strada è cambiato nel 2024.",
        "The network key point is latency.",
    ],
)
def test_everyday_uses_of_the_same_words_stay(text: str) -> None:
    assert redact(text)[0] == text


@pytest.mark.parametrize(
    ("text", "secret", "kind"),
    [
        ("pw for the NAS: Quokka!731", "Quokka!731", "password"),
        ("She reset her Spotify login to Maple#4410 last night.", "Maple#4410", "password"),
        ("Dad's PIN's 6203", "6203", "password"),
        ("Meine Geheimnummer ist 8846.", "8846", "password"),
        ("Der Code für das Hoftor ist 5510.", "5510", "password"),
        ("Le digicode, c'est 12A45.", "12A45", "password"),
        ("The combination for the bike lock is 4-19-32.", "4-19-32", "password"),
        ("Key in 8812# at the gate and walk up.", "8812#", "password"),
        ("우리 집 비번은 tkfkd0912 야", "tkfkd0912", "password"),
        ("현관 비밀번호: 4321*", "4321*", "password"),
        ("Der API-Token lautet 9b2c4d6e8f0a1b3c5d7e9f", "9b2c4d6e8f0a1b3c5d7e9f", "api_key"),
        ("four digits on the back: 7781", "7781", "cvv"),
        ("卡背面的3位数是 552", "552", "cvv"),
        ("CPF do cliente 529.982.247-25", "529.982.247-25", "national_id"),
        ("BSN: 111222333", "111222333", "national_id"),
        ("個人番号は 1234 5678 9012", "1234 5678 9012", "national_id"),
        ("Deliver to 9 Quarry Lane, Bath.", "9 Quarry Lane", "address"),
        ("Wir wohnen in der Lindenstraße 7b.", "Lindenstraße 7b", "address"),
        ("寄到北京市海淀区中关村大街27号", "北京市海淀区中关村大街27号", "address"),
    ],
)
def test_held_out_3_causes_are_found(text: str, secret: str, kind: str) -> None:
    """The general causes of the held-out-3 misses, on sentences of their own: cues outside the
    lists, codes with no name (typed on a keypad), national numbers of more countries, street lines."""
    redacted, findings = redact(text)
    assert secret not in redacted
    assert kind in {f.kind for f in findings}


@pytest.mark.parametrize(
    "text",
    [
        "The combination of rest and exercise is key.",
        "Enter 2024 into the year field.",
        "The token is stored in the vault.",
        "API key rotation happens every 90 days.",
        "Baker Street is closed on Sunday.",
        "We drove 300 miles on Route 66.",
        "NIF and CPF are tax numbers.",
    ],
)
def test_held_out_3_look_alikes_stay(text: str) -> None:
    assert redact(text)[0] == text


_PHONE_CASES = [
    "call +354 1234567 or +49 30 1234",
    "Berlin office 030 12345, Paris 01 42 68 53 00, London 020 7946 0958",
    "US (202) 555-0143 ext. 12 and 555-0143",
    "JP 090-1234-5678, KR 010-1234-5678, IT 347 123 4567, ES 612 345 678",
    "part 0424-072, date 06/2026, order 123456 and 7654321 in 2026-03-17",
    "CN 010 1234 5678 or 138 0013 8000; +86 138 0013 8000",
    "note 123456 about the budget; ref 00123; +1 415 555 2671",
    "call 011 43 1111 now, dial 011 98 9602 today, or 011 49 1641; from Paris 00 43 1111",
]


@pytest.mark.parametrize("text", _PHONE_CASES)
def test_skipping_regions_by_digit_count_finds_what_every_region_finds(
    text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The per-region digit bound (``_least_digits``) only saves matcher runs: the spans found are
    those of every region's matcher run on every window."""
    from retain.text import phones

    phones.window_phones.cache_clear()
    bounded = {(f.start, f.end) for f in phones.find_phones(text)}
    monkeypatch.setattr(phones, "_least_digits", lambda: dict.fromkeys(phones.PHONE_REGIONS, 0))
    phones.window_phones.cache_clear()
    every = {(f.start, f.end) for f in phones.find_phones(text)}
    phones.window_phones.cache_clear()
    assert bounded == every
    assert phones._least_digits()["US"] == 0  # the patch took: the comparison ran unbounded
