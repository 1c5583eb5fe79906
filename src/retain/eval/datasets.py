"""Loaders for evaluation data. Data is read from a path given by the user, from the shared folder
next to the repository, or downloaded once by URL and checked against its sha256; it is never
bundled with retain (the licences forbid redistribution).
"""

from __future__ import annotations

import hashlib
import json
import re
import urllib.request
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from retain.config import Settings
from retain.errors import DatasetUnavailable

__all__ = [
    "LOCOMO_SHA256",
    "LOCOMO_URL",
    "LocomoConversation",
    "LocomoQuestion",
    "LocomoTurn",
    "load_locomo",
    "parse_evidence",
    "parse_locomo_date",
    "resolve_locomo",
]

LOCOMO_URL = "https://github.com/snap-research/locomo/raw/main/data/locomo10.json"
LOCOMO_SHA256 = "79fa87e90f04081343b8c8debecb80a9a6842b76a7aa537dc9fdf651ea698ff4"
_SHARED_DEV = Path("shared/data/locomo/locomo_dev.json")
_EVIDENCE = re.compile(r"D(\d+):(\d+)")
_SESSION_KEY = re.compile(r"^session_(\d+)$")


@dataclass(frozen=True, slots=True)
class LocomoTurn:
    """One dialogue turn. ``dia_id`` like "D3:7"; ``caption`` is the BLIP caption of a shared image."""

    dia_id: str
    speaker: str
    text: str
    session: int
    session_time: datetime | None
    caption: str | None = None


@dataclass(frozen=True, slots=True)
class LocomoQuestion:
    """A question with its category (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop,
    5 adversarial) and evidence turn ids (normalised "D<session>:<turn>", resolvable ones only)."""

    question: str
    category: int
    evidence: tuple[str, ...]
    answer: str | None
    unresolved_evidence: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class LocomoConversation:
    """One LoCoMo conversation: turns in session order and its questions."""

    sample_id: str
    speakers: tuple[str, ...]
    turns: tuple[LocomoTurn, ...]
    questions: tuple[LocomoQuestion, ...] = field(default=())


def _repo_root() -> Path:
    return Path(__file__).resolve().parents[3]


def resolve_locomo(data: str | Path | None = None, *, settings: Settings | None = None, download: bool = True) -> Path:
    """Find a LoCoMo file.

    Order: ``data``; ``settings.locomo_path`` (``$RETAIN_LOCOMO``);
    ``../shared/data/locomo/locomo_dev.json`` (from the current directory or the repository root);
    the cached download in ``settings.cache_dir``; a fresh download of the public locomo10.json
    (the only network call retain makes, and only here), checked against its sha256.

    Raises:
        DatasetUnavailable: ``data`` does not exist, or nothing was found and the download failed.
    """
    settings = settings if settings is not None else Settings.from_env()
    if data is not None:
        path = Path(data).expanduser()
        if not path.is_file():
            raise DatasetUnavailable(f"--data {path}: no such file")
        return path
    if settings.locomo_path is not None:
        path = settings.locomo_path.expanduser()
        if not path.is_file():
            raise DatasetUnavailable(f"RETAIN_LOCOMO={path}: no such file")
        return path
    for base in (Path.cwd().parent, _repo_root().parent):
        candidate = base / _SHARED_DEV
        if candidate.is_file():
            return candidate
    cached = settings.cache_dir / "locomo10.json"
    if cached.is_file() and _sha256(cached) == LOCOMO_SHA256:
        return cached
    if not download:
        raise DatasetUnavailable("LoCoMo not found: pass --data PATH or set RETAIN_LOCOMO")
    return _download(LOCOMO_URL, cached, LOCOMO_SHA256)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _download(url: str, target: Path, sha256: str) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".part")
    try:
        with urllib.request.urlopen(url, timeout=60) as response, partial.open("wb") as fh:
            while chunk := response.read(1 << 20):
                fh.write(chunk)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise DatasetUnavailable(
            f"LoCoMo is not on disk (looked for ../shared/data/locomo/locomo_dev.json next to the current "
            f"folder and the repository, and in {target.parent}) and the download of {url} failed ({exc}). "
            "Pass --data PATH to a locomo10.json-format file, or set RETAIN_LOCOMO."
        ) from exc
    actual = _sha256(partial)
    if actual != sha256:
        partial.unlink(missing_ok=True)
        raise DatasetUnavailable(f"download of {url}: sha256 {actual} does not match {sha256}; file discarded")
    partial.replace(target)
    return target


def parse_locomo_date(text: str | None) -> datetime | None:
    """Parse "1:56 pm on 8 May, 2023" as UTC (LoCoMo gives no zone). None when absent or unparseable."""
    if not text or not isinstance(text, str):
        return None
    cleaned = " ".join(text.replace(",", " ").split())
    for fmt in ("%I:%M %p on %d %B %Y", "%I:%M %p on %d %b %Y", "%d %B %Y"):
        try:
            return datetime.strptime(cleaned, fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    return None


def parse_evidence(items: Any) -> list[str]:
    """Normalise LoCoMo evidence strings to "D<s>:<t>" ids.

    Handles the known quirks: several ids in one string ("D8:6; D9:17", space-joined lists),
    zero-padded turn numbers ("D30:05" -> "D30:5"); strings with no id ("D", "D:11:26") yield none.
    """
    if isinstance(items, str):
        items = [items]
    out: list[str] = []
    for item in items or []:
        for session, turn in _EVIDENCE.findall(str(item)):
            out.append(f"D{int(session)}:{int(turn)}")
    return list(dict.fromkeys(out))


def load_locomo(path: str | Path) -> list[LocomoConversation]:
    """Read a file in the locomo10.json format (a JSON list of conversation objects).

    Sessions are ordered by number; ``session_N_date_time`` keys without a session are ignored;
    evidence ids that do not resolve to a turn are kept apart in ``unresolved_evidence``.

    Raises:
        DatasetUnavailable: the file is not a JSON list of conversations.
    """
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DatasetUnavailable(f"{path}: not readable as JSON ({exc})") from exc
    if not isinstance(raw, list):
        raise DatasetUnavailable(f"{path}: expected a JSON list of conversations")
    conversations = []
    for index, item in enumerate(raw):
        try:
            conv = item["conversation"]
            sample_id = str(item.get("sample_id", f"conv-{index}"))
        except (TypeError, KeyError) as exc:
            raise DatasetUnavailable(f"{path}: item {index} has no 'conversation'") from exc
        numbers = sorted(int(m.group(1)) for key in conv if (m := _SESSION_KEY.match(key)))
        turns: list[LocomoTurn] = []
        for number in numbers:
            when = parse_locomo_date(conv.get(f"session_{number}_date_time"))
            for turn in conv.get(f"session_{number}") or []:
                text = str(turn.get("text") or "").strip()
                caption = turn.get("blip_caption")
                if not text and not caption:
                    continue
                dia = parse_evidence(turn.get("dia_id", ""))
                turns.append(
                    LocomoTurn(
                        dia_id=dia[0] if dia else f"D{number}:{len(turns)}",
                        speaker=str(turn.get("speaker") or "unknown"),
                        text=text or f"[shares an image: {caption}]",
                        session=number,
                        session_time=when,
                        caption=str(caption) if caption else None,
                    )
                )
        known = {t.dia_id for t in turns}
        questions = []
        for qa in item.get("qa", []):
            evidence = parse_evidence(qa.get("evidence", []))
            answer = qa.get("answer", qa.get("adversarial_answer"))
            questions.append(
                LocomoQuestion(
                    question=str(qa.get("question", "")),
                    category=int(qa.get("category", 0)),
                    evidence=tuple(e for e in evidence if e in known),
                    answer=None if answer is None else str(answer),
                    unresolved_evidence=tuple(e for e in evidence if e not in known),
                )
            )
        speakers = tuple(str(conv[k]) for k in ("speaker_a", "speaker_b") if conv.get(k))
        conversations.append(LocomoConversation(sample_id, speakers, tuple(turns), tuple(questions)))
    return conversations
