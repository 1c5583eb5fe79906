"""Settings read from the environment, in this one place only (never at import)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = ["DEFAULT_DB_PATH", "Settings"]

DEFAULT_DB_PATH = Path("retain.db")


@dataclass(frozen=True, slots=True)
class Settings:
    """Process-level settings.

    Attributes:
        db_path: the CLI's default store file (``RETAIN_DB``, default ``./retain.db``).
        locomo_path: a LoCoMo file to evaluate on (``RETAIN_LOCOMO``), or None.
        cache_dir: where downloaded evaluation data is cached (``RETAIN_CACHE``, default
            ``$XDG_CACHE_HOME/retain`` or ``~/.cache/retain``).
        encoder: encoder for new CLI stores (``RETAIN_ENCODER``: "minilm" or "hashing-<dim>").
        scenarios_path: a scenario file or folder for ``retain eval scenarios`` (``RETAIN_SCENARIOS``),
            or None.
        log: the CLI's structured log (``RETAIN_LOG``: "json" or "console"; None = off).
    """

    db_path: Path = DEFAULT_DB_PATH
    locomo_path: Path | None = None
    cache_dir: Path = Path.home() / ".cache" / "retain"
    encoder: str = "minilm"
    scenarios_path: Path | None = None
    log: str | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Build settings from ``environ`` (default ``os.environ``)."""
        env = os.environ if environ is None else environ
        xdg = env.get("XDG_CACHE_HOME")
        cache = (
            Path(env["RETAIN_CACHE"])
            if env.get("RETAIN_CACHE")
            else (Path(xdg) / "retain" if xdg else Path.home() / ".cache" / "retain")
        )
        return cls(
            db_path=Path(env.get("RETAIN_DB") or DEFAULT_DB_PATH),
            locomo_path=Path(env["RETAIN_LOCOMO"]) if env.get("RETAIN_LOCOMO") else None,
            cache_dir=cache,
            encoder=env.get("RETAIN_ENCODER") or "minilm",
            scenarios_path=Path(env["RETAIN_SCENARIOS"]) if env.get("RETAIN_SCENARIOS") else None,
            log=env.get("RETAIN_LOG") or None,
        )
