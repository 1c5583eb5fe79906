"""Every frozen configuration of retain, and the settings read from the environment.

:class:`MemoryConfig` holds the limits and switches of a :class:`~retain.Memory`; its fields
:class:`GraphConfig` (the memory graph), :class:`RetrievalConfig` (pool sizes, state parts, time
boost weights) and :class:`~retain.ingest.conflict.ConflictPolicy` (supersede / merge thresholds)
group the knobs of one stage each. Every config validates itself at construction and raises
:class:`~retain.errors.InvalidInput` naming the field and its limit. :class:`Settings` is read from
the environment in this one place only (:meth:`Settings.from_env`, never at import).
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from retain.errors import InvalidInput
from retain.ingest.conflict import DEFAULT_POLICY, ConflictJudge, ConflictPolicy
from retain.ingest.conflict_model import ConflictModel, default_conflict_model
from retain.record import caller_time
from retain.store.audit_chain import check_key

__all__ = [
    "DEFAULT_DB_PATH",
    "DEFAULT_GRAPH_CONFIG",
    "DEFAULT_MEMORY_CONFIG",
    "DEFAULT_RETRIEVAL_CONFIG",
    "DEFAULT_TRUSTED_ACTORS",
    "MAX_POOL_SETTING",
    "MIN_RECORD_CHARS",
    "STATE_VECTOR_PARTS",
    "GraphConfig",
    "MemoryConfig",
    "RetrievalConfig",
    "Settings",
]

DEFAULT_DB_PATH = Path("retain.db")
DEFAULT_TRUSTED_ACTORS = frozenset({"admin", "user"})
"""Actors allowed to change protected records by default (:mod:`retain.safety.integrity`)."""
MIN_RECORD_CHARS = 16
"""Smallest ``max_record_chars`` / ``max_text_chars`` a :class:`MemoryConfig` accepts (characters)."""
MAX_POOL_SETTING = 1_000_000
"""Largest value the pool sizes of a :class:`RetrievalConfig` may take (records)."""
STATE_VECTOR_PARTS: tuple[str, ...] = ("whole", "goal", "result", "phase")
"""The names :attr:`RetrievalConfig.state_parts` may hold: the :class:`~retain.state.agent.EncodedState`
fields that are one (dim,) vector (``constraints`` and ``open`` are matrices, ``omitted`` and ``texts``
no vectors)."""


@dataclass(frozen=True, slots=True)
class GraphConfig:
    """Switches of the memory graph (``MemoryConfig(graph=...)``, :mod:`retain.retrieval.graph`).

    Attributes:
        edges_on_write: create ``next``, ``supersedes``, ``same_entity`` edges on add / update
            (``derived_from`` and :meth:`retain.Memory.link` edges are always written: the caller
            asked for them).
        same_entity_limit: most ``same_entity`` edges per new record (to the most recent matches).
        same_entity_candidates: lexical matches examined per entity (BM25 top-N, then checked with
            :func:`~retain.text.entities.extract_entities`).
        decay: score multiplier per hop in search expansion, in (0, 1].

    Raises:
        InvalidInput: a negative or non-int limit, or ``decay`` outside (0, 1].
    """

    edges_on_write: bool = True
    same_entity_limit: int = 5
    same_entity_candidates: int = 20
    decay: float = 0.5

    def __post_init__(self) -> None:
        for name in ("same_entity_limit", "same_entity_candidates"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InvalidInput(f"{name}: must be an int >= 0, got {value!r}")
        if not isinstance(self.decay, int | float) or not 0.0 < self.decay <= 1.0:
            raise InvalidInput(f"decay: must be in (0, 1], got {self.decay!r}")


DEFAULT_GRAPH_CONFIG = GraphConfig()


@dataclass(frozen=True, slots=True)
class RetrievalConfig:
    """Knobs of the search pool and the post-fusion time boost (``MemoryConfig(retrieval=...)``).

    Attributes:
        state_pool: records a state brings into a search pool per state vector (``state_parts``).
        core_pool: most core-tier records (newest first) a state-adaptive search considers.
        recent_pool: newest records a state-adaptive search considers.
        state_parts: the parts of an encoded state (:class:`~retain.state.agent.EncodedState` fields,
            names from :data:`STATE_VECTOR_PARTS`) whose nearest records join a state-adaptive
            search's pool; each costs a scan of the namespace's embeddings when the state is new.
            Default: the whole state only (the mean of subgoal, result and constraints), one scan
            per new state; ``benchmarks/sam_scale.py`` compares settings. () = none.
        when_weight: post-fusion boost added to the learned-fusion score (higher = more relevant)
            of dated records on "When ..." questions (:func:`retain.text.temporal.time_boost`);
            0 = off.
        range_weight: post-fusion boost added to the learned-fusion score of records dated in the
            range a query names (:func:`retain.text.temporal.time_boost`). Both chosen in-sample
            on LoCoMo dev with ``benchmarks/temporal_boost.py``.

    Raises:
        InvalidInput: a pool size that is not an int from 0 to :data:`MAX_POOL_SETTING`, a
            ``state_parts`` that is not a tuple of names from :data:`STATE_VECTOR_PARTS`, or a weight
            that is not a finite number.
    """

    state_pool: int = 20
    core_pool: int = 50
    recent_pool: int = 8
    state_parts: tuple[str, ...] = ("whole",)
    when_weight: float = 0.0
    range_weight: float = 0.1

    def __post_init__(self) -> None:
        for name in ("state_pool", "core_pool", "recent_pool"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_POOL_SETTING:
                raise InvalidInput(f"{name}: must be an int from 0 to {MAX_POOL_SETTING:,} (records), got {value!r}")
        parts = self.state_parts
        if not isinstance(parts, tuple | list):
            raise InvalidInput(f"state_parts: must be a tuple of part names, got {parts!r}")
        for name in parts:
            if name not in STATE_VECTOR_PARTS:
                close = difflib.get_close_matches(str(name), STATE_VECTOR_PARTS, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise InvalidInput(
                    f"state_parts: {name!r} is not one of {', '.join(STATE_VECTOR_PARTS)} "
                    f"(the state parts that are one vector){hint}"
                )
        object.__setattr__(self, "state_parts", tuple(parts))
        for name in ("when_weight", "range_weight"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
                raise InvalidInput(f"{name}: must be a number, got {value!r}")


DEFAULT_RETRIEVAL_CONFIG = RetrievalConfig()


TYPE_CLASSIFIERS = frozenset({"learned", "rules"})
"""The values :attr:`MemoryConfig.type_classifier` accepts."""


@dataclass(frozen=True, slots=True)
class MemoryConfig:
    """Limits and switches of a :class:`~retain.Memory`.

    Attributes:
        max_record_chars: longest content of one record (characters); longer texts are split
            into linked parts when ``split_long`` is on, else refused with :class:`~retain.errors.TextTooLong`.
        max_text_chars: longest text accepted by ``add`` at all (characters), split or not.
        split_long: split long texts at sentence boundaries instead of refusing them.
        dedupe: adding the exact content already current in the namespace returns the first id
            (checked in the write transaction: concurrent writers of one file store it once).
        classify: infer ``type`` when the caller gives none (else ``fact``).
        type_classifier: how an inferred type is chosen: ``"learned"`` (the shipped logistic model of
            :mod:`retain.text.typemodel` over the rule cues, character n-grams and, when the store's
            encoder is the one it was fitted with, the record's embedding) or ``"rules"`` (the rule
            cascade of :mod:`retain.text.classify` alone).
        merge_paraphrases: a new record that says what a current record already says (cosine
            >= ``conflict_policy.paraphrase_cos``, same numbers, no correction cue;
            :func:`retain.ingest.conflict.decide`) is merged into it instead of stored: the existing
            record keeps its id and gains the newcomer's source, role, time and text under
            ``metadata["merged"]`` (audited as "merge").
        trusted_actors: actor names allowed to pin, unpin, update or delete protected records
            (current hard constraints, pinned records); every other actor ("tool", "retrieved",
            "agent", ...) is refused (:mod:`retain.safety.integrity`).
        supersede: a new record that corrects or updates a current record of its namespace
            (:func:`retain.ingest.detect.find_updates`: correction cues, aligned value changes,
            negation flips) supersedes it in the same transaction: the old one keeps its content
            as history, leaves the core tier unless pinned, and is audited as "supersede" with the
            reason and scores. A hard constraint yields only to an explicit correction
            (:func:`retain.text.cues.explicit_cues`); other proposals against one are audited as
            refused. Figures: ``benchmarks/supersede_detection.py``
            (``docs/benchmarks.md#corrections-supersede-detection``).
        conflict_judge: optional second opinion (e.g. an LLM) that may veto each proposed
            supersede or merge (:class:`retain.ingest.conflict.ConflictJudge`); None = rules only.
        conflict_policy: the thresholds of supersede and paraphrase detection
            (:class:`~retain.ingest.conflict.ConflictPolicy`).
        conflict_model: the learned conflict model that decides supersedes and open conflicts
            (:class:`~retain.ingest.conflict_model.ConflictModel`; :func:`retain.ingest.conflict.decide_all`):
            ``"auto"`` = the shipped model (``retain/models/conflict.json``, read on first
            use) for records of the encoder it was fitted on (MiniLM), the rules for any other
            encoder's records (:meth:`~retain.ingest.conflict_model.ConflictModel.fits`: another
            encoder's cosines have another scale); ``"shipped"`` = the shipped model whatever the
            encoder; None (default) = the rules alone (:func:`retain.ingest.conflict.decide`). The
            model finds more corrections (held-out recall 0.52 against 0.06) but on the dev
            scenarios it retired valid hard constraints (integrity 0.989), which the rules never
            did: it stays opt-in until it never does (docs/benchmarks.md).
        resolve_times: store the time expressions of each new record, resolved against its
            ``event_time``, as ``metadata["time_refs"]`` (:func:`retain.text.temporal.resolve_times`;
            unresolved, granularity "unknown", when the event time is unknown). A caller's own
            ``time_refs`` are kept as given.
        graph: the memory graph's switches (:class:`GraphConfig`): edges on write, same-entity
            fan-out, expansion decay.
        retrieval: the search pool sizes, state parts and time boost weights (:class:`RetrievalConfig`).
        naive_timezone: the IANA time zone a time without an offset is read in (``event_time``,
            ``start``, ``end``, ``now``: "2026-03-14T09:30:00" is 09:30 there), and a plain date
            ("2026-03-14") is a whole day in (:func:`retain.record.caller_time`); default "UTC".
        audit_key: HMAC key (bytes, >= 16) of the keyed audit chain, kept by the user outside the
            database (e.g. read with :func:`retain.safety.audit_key.read_key_file`): every audit
            entry this memory writes is chained by HMAC-SHA256 under it, so a row forged or
            rewritten by someone without the key fails ``retain audit verify --key-file``
            (docs/design/safety.md#keyed-audit-chain). None (default) = the unkeyed sha256 chain.
            Never shown in ``repr``.

    Raises:
        InvalidInput: ``trusted_actors`` is not a set of names, or a character limit is not an int
            >= :data:`MIN_RECORD_CHARS`, or ``audit_key`` is not bytes of >= 16.
    """

    max_record_chars: int = 2_000
    max_text_chars: int = 1_000_000
    split_long: bool = True
    dedupe: bool = True
    classify: bool = True
    type_classifier: str = "rules"
    merge_paraphrases: bool = False
    trusted_actors: frozenset[str] = DEFAULT_TRUSTED_ACTORS
    supersede: bool = True
    conflict_judge: ConflictJudge | None = None
    conflict_policy: ConflictPolicy = DEFAULT_POLICY
    conflict_model: ConflictModel | Literal["auto", "shipped"] | None = None
    resolve_times: bool = True
    graph: GraphConfig = DEFAULT_GRAPH_CONFIG
    retrieval: RetrievalConfig = field(default=DEFAULT_RETRIEVAL_CONFIG)
    naive_timezone: str = "UTC"
    audit_key: bytes | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.audit_key is not None:
            object.__setattr__(self, "audit_key", check_key(self.audit_key))
        if not isinstance(self.naive_timezone, str):
            raise InvalidInput(f"naive_timezone: an IANA time zone name, got {type(self.naive_timezone).__name__}")
        caller_time("2000-01-01", field_name="naive_timezone", naive_zone=self.naive_timezone)  # a known zone
        if isinstance(self.trusted_actors, str) or not all(isinstance(a, str) for a in self.trusted_actors):
            raise InvalidInput(f"trusted_actors: must be a set of actor names, got {self.trusted_actors!r}")
        object.__setattr__(self, "trusted_actors", frozenset(self.trusted_actors))
        for name in ("max_record_chars", "max_text_chars"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < MIN_RECORD_CHARS:
                raise InvalidInput(f"{name}: must be an int >= {MIN_RECORD_CHARS}, got {value!r}")
        if self.type_classifier not in TYPE_CLASSIFIERS:
            raise InvalidInput(f"type_classifier: one of {sorted(TYPE_CLASSIFIERS)}, got {self.type_classifier!r}")
        model = self.conflict_model
        if model is not None and model not in ("auto", "shipped") and not isinstance(model, ConflictModel):
            raise InvalidInput(
                f"conflict_model: a ConflictModel, 'auto', 'shipped' or None, got {self.conflict_model!r}"
            )

    def resolved_conflict_model(self, encoder: str | None = None) -> ConflictModel | None:
        """The conflict model in use for records embedded by ``encoder`` (a name): the shipped one for
        ``"shipped"`` (read once), and for ``"auto"`` when it fits ``encoder``; else as set."""
        if self.conflict_model == "shipped":
            return default_conflict_model()
        if self.conflict_model == "auto":
            model = default_conflict_model()
            return model if model.fits(encoder) else None
        return self.conflict_model if isinstance(self.conflict_model, ConflictModel) else None


DEFAULT_MEMORY_CONFIG = MemoryConfig()


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
