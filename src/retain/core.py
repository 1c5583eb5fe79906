"""The core behind the :class:`~retain.Memory` facade: one store, one encoder, one config and the caches.

:class:`Core` owns everything a memory keeps between calls: the store, the encoder, the
:class:`~retain.config.MemoryConfig`, the budget, the lazily loaded models (utility, fusion, state
scorer, state encoder) and the per-namespace hot-set cache (:class:`~retain.retention.budget.HotSet`).
The write path (:mod:`retain.ingest.write`), the search path (:mod:`retain.retrieval.search`) and the
feature modules (integrity, segments, context, canaries, graph, timeline) take a ``Core``; the
facade validates, delegates and returns.

The hot-set cache has one owner and one invalidation point, :meth:`Core.invalidate`: every code path
that changes a namespace's hot tiers other than through :meth:`Core.apply_budget` calls it, and the
next budgeted write rebuilds the set from the store (:meth:`Core.hotset`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from retain.config import MemoryConfig
from retain.encoders.basis import Encoder
from retain.errors import EncoderMismatch, InvalidInput, RecordNotFound
from retain.record import MemoryRecord, Tier, search_text, validate_namespace
from retain.retention.budget import Budget, BudgetDecision, HotSet, entry_order, eviction_entries, is_mandatory
from retain.retrieval.fusion import LinearFusion
from retain.safety.observe import observed, offered
from retain.state.agent import StateEncoder
from retain.state.candidates import CandidateMemo
from retain.state.scorer import StateScorer
from retain.store import ALL_RECORDS, RecordFilter, RequireHot, Store
from retain.store.sqlite import SQLiteStore
from retain.text.typemodel import TypeModel, load_type_model

if TYPE_CHECKING:
    from retain.retention.utility import UtilityModel

__all__ = ["Core", "reembed"]


class Core:
    """Store, encoder, config, budget, models and the hot-set cache of one memory.

    Args:
        store: a set-up :class:`~retain.store.Store` (its encoder is checked by :meth:`check_encoder`).
        encoder: the :class:`~retain.encoders.basis.Encoder` of every record and query.
        config: limits and switches (:class:`~retain.config.MemoryConfig`).
        budget: capacity of each namespace's hot memory; None = unbounded.
        utility: EMBER utility model; None = the shipped learned model when the budget needs one.
        fusion: learned fusion model; None = the shipped one, loaded on first use.
        state_scorer: the state-adaptive scorer; None = the shipped model (loaded on first use),
            False = never state-adaptive.
    """

    def __init__(
        self,
        store: Store,
        encoder: Encoder,
        config: MemoryConfig,
        *,
        budget: Budget | None = None,
        utility: UtilityModel | None = None,
        fusion: LinearFusion | None = None,
        state_scorer: StateScorer | bool | None = None,
    ) -> None:
        self.store = store
        if config.audit_key is not None:  # every entry this memory appends is chained under the key
            store.audit_key = config.audit_key
        self.encoder = encoder
        self.config = config
        self.budget = budget
        self._utility = utility
        self._fusion = fusion
        self._state_scorer: StateScorer | bool | None = None if state_scorer is True else state_scorer
        self._state_encoder: StateEncoder | None = None
        self.candidate_memo = CandidateMemo()
        """The state scorer's per-record inputs, memoised between searches."""
        self._hot: dict[str, HotSet] = {}

    # --- models (loaded on first use) ---------------------------------------------------------

    @property
    def utility(self) -> UtilityModel | None:
        """The utility model in use (the shipped learned model is loaded on first need; with an
        encoder other than the one it was fitted on, without its embedding block:
        :meth:`~retain.retention.utility.LearnedUtility.features_only`)."""
        if self._utility is None and self.budget is not None and self.budget.needs_utility:
            from retain.retention.agent_utility import AgentUtility
            from retain.retention.utility import LearnedUtility

            model = AgentUtility.load()  # agent streams; LearnedUtility for every other record
            base = model.base
            if isinstance(base, LearnedUtility) and base.encoder not in (None, self.encoder.name):
                # fitted on another encoder's embeddings: its encoder-free features alone (what it
                # gives a record without an embedding), instead of refusing every add
                model.base = base.features_only()
            self._utility = model
        return self._utility

    @property
    def fusion(self) -> LinearFusion:
        """The learned fusion model (loaded on first use)."""
        if self._fusion is None:
            self._fusion = LinearFusion.load()
        return self._fusion

    @property
    def state_scoring(self) -> bool:
        """False when state-adaptive scoring was switched off (``state_scorer=False``)."""
        return self._state_scorer is not False

    @property
    def state_scorer(self) -> StateScorer | None:
        """The state-adaptive scorer (the shipped model, loaded on first use; None when disabled)."""
        if self._state_scorer is None:
            self._state_scorer = StateScorer.load()
        return self._state_scorer if isinstance(self._state_scorer, StateScorer) else None

    @property
    def type_model(self) -> TypeModel | None:
        """The learned type classifier (the shipped model, read once per process), or None when the
        configuration asks for the rule classifier or for no classification."""
        if not self.config.classify or self.config.type_classifier != "learned":
            return None
        return load_type_model()

    @property
    def state_encoder(self) -> StateEncoder:
        """Embeds agent states with this core's encoder (memoised by text)."""
        if self._state_encoder is None:
            self._state_encoder = StateEncoder(self.encoder)
        return self._state_encoder

    # --- store ------------------------------------------------------------------------------

    def check_encoder(self) -> None:
        """Record the encoder in a new store, or check it against the one the store was built with.

        Raises:
            EncoderMismatch: the store was embedded with another encoder (name or dimension).
        """
        name, dim = self.store.get_meta("encoder_name"), self.store.get_meta("encoder_dim")
        if name is None:
            self.store.set_meta("encoder_name", self.encoder.name)
            self.store.set_meta("encoder_dim", str(self.encoder.dim))
            return
        if name != self.encoder.name or int(dim or 0) != self.encoder.dim:
            raise EncoderMismatch(
                f"{self.store.location} was embedded with {name} ({dim} dims); this Memory uses "
                f"{self.encoder.name} ({self.encoder.dim} dims). Open it with the same encoder, or "
                f"re-embed every record with Memory.reembed(path, encoder) "
                f"(CLI: retain reembed {self.store.location} --encoder {self.encoder.name})."
            )

    def get(self, id: str, *, namespace: str) -> MemoryRecord:
        """The record ``id`` of ``namespace`` (current or superseded), as stored.

        Raises:
            InvalidInput: bad namespace.
            RecordNotFound: no such record in that namespace.
        """
        validate_namespace(namespace)
        found = self.store.get(namespace, [id])
        if not found:
            raise RecordNotFound(f"no record {id!r} in namespace {namespace!r}")
        return found[0]

    def embed(self, records: Sequence[MemoryRecord]) -> list[MemoryRecord]:
        """``records`` with their embedding ((dim,) float32, of :func:`~retain.record.search_text`),
        encoder name and token count (of the content, encoder tokenizer) set."""
        texts = [search_text(r) for r in records]
        vectors = self.encoder.encode(texts)
        tokens = self.encoder.count_tokens([r.content for r in records])
        return [
            r.evolve(embedding=v, encoder=self.encoder.name, token_count=int(t))
            for r, v, t in zip(records, vectors, tokens, strict=True)
        ]

    def info(self) -> dict[str, Any]:
        """Store location, backend, encoder, dimension, and record counts per namespace and tier
        (plus ``superseded``: versions kept as history)."""
        store = self.store
        counts: dict[str, dict[str, int]] = {}
        for namespace in store.namespaces():
            counts[namespace] = {tier.value: store.count(namespace, RecordFilter(tiers=(tier,))) for tier in Tier}
            counts[namespace]["superseded"] = store.count(namespace, ALL_RECORDS) - store.count(
                namespace, RecordFilter(tiers=None)
            )
        return {
            "location": store.location,
            "backend": type(store).__name__,
            "encoder": store.get_meta("encoder_name"),
            "dim": int(store.get_meta("encoder_dim") or 0),
            "namespaces": counts,
        }

    # --- the hot-set cache --------------------------------------------------------------------

    def hot(self, namespace: str) -> HotSet | None:
        """The cached hot set of ``namespace``, or None when none is cached (never rebuilds)."""
        return self._hot.get(namespace)

    def invalidate(self, namespace: str) -> None:
        """Drop the cached hot set of ``namespace``; the next budgeted write rebuilds it from the store.
        Called by every write that changes the namespace's tiers outside :meth:`apply_budget`, and
        when a write fails after the cache was updated."""
        self._hot.pop(namespace, None)

    def hotset(self, namespace: str, exclude: frozenset[str] = frozenset()) -> tuple[HotSet, list[int], frozenset[str]]:
        """The namespace's retention state, rebuilt from the store when missing, stale (another
        process changed the hot set) or when ``exclude`` names records leaving it.

        Returns the state, the indices (into ``state.ids``) a rebuild evicted (the budget may have
        shrunk since, or another writer overfilled it), and the ids of the hot records the state
        stands for as committed in the store: the guard (:class:`~retain.store.RequireHot`) the
        decision is written under.
        """
        assert self.budget is not None
        hot = self._hot.get(namespace)
        if not exclude and hot is not None and len(hot.hot) == self.store.count(namespace, RecordFilter()):
            return hot, [], frozenset(hot.hot)
        hot = HotSet(self.budget, self.encoder.dim)
        evicted: list[int] = []
        listed = self.store.list_records(namespace, RecordFilter(), order="created")
        current = entry_order(self.store, namespace, [r for r in listed if r.id not in exclude])
        for i, rec in enumerate(current):
            evicted.extend(hot.offer(rec, at=float(i)))
        self._hot[namespace] = hot
        return hot, evicted, frozenset(r.id for r in listed)

    @observed("evict", result=offered)
    def apply_budget(
        self,
        namespace: str,
        fresh: list[MemoryRecord],
        *,
        actor: str,
        trigger: str,
        exclude: frozenset[str] = frozenset(),
    ) -> BudgetDecision:
        """Offer ``fresh`` to the namespace's hot set (EMBER budget, :mod:`retain.retention.budget`);
        returns a :class:`~retain.retention.budget.BudgetDecision`: fresh with tiers set, existing
        records moved to the archive, their eviction audit entries (policy, utility, capacity, reason)
        and the :class:`~retain.store.RequireHot` guard the caller must write them under, so that the
        decision is committed only against the hot memory it was made on. The cache is invalidated
        when the offer fails."""
        try:
            hot, rebuilt_out, committed = self.hotset(namespace, exclude)
            start = len(hot.ids)
            fresh = [r.evolve(tier=Tier.CORE) if is_mandatory(r) else r for r in fresh]
            victims: list[int] = []
            for offset, rec in enumerate(fresh):
                victims.extend(hot.offer(rec, at=float(start + offset)))
        except BaseException:
            self.invalidate(namespace)
            raise
        fresh_ids = {r.id for r in fresh}
        out = [r if r.id in hot.hot else r.evolve(tier=Tier.ARCHIVE) for r in fresh]
        leaving_at = [j for j in victims if hot.ids[j] not in fresh_ids] + rebuilt_out
        moved = [r.evolve(tier=Tier.ARCHIVE) for r in self.store.get(namespace, [hot.ids[j] for j in leaving_at])]
        entries = eviction_entries(hot, namespace, victims, actor=actor, trigger=trigger)
        entries += eviction_entries(
            hot, namespace, rebuilt_out, actor=actor, trigger=f"{trigger} (rebuilt over capacity)"
        )
        return BudgetDecision(out, moved, entries, RequireHot(namespace, committed))


def reembed(path: str | Path, encoder: Encoder, *, batch_size: int = 256) -> int:
    """Re-encode every record of the SQLite store at ``path`` with ``encoder`` (in batches of
    ``batch_size``) and record it as the store's encoder. Returns the number of records re-embedded.

    Raises:
        InvalidInput: no file at ``path`` (nothing is created).
        SchemaError: ``path`` is not an SQLite database, or has a newer schema than this retain.
    """
    if str(path) == ":memory:" or not Path(path).is_file():
        raise InvalidInput(f"path: no store at {path}")
    store = SQLiteStore(path)
    store.setup()
    try:
        total = 0
        for namespace in store.namespaces():
            records = store.list_records(namespace, ALL_RECORDS)
            for start in range(0, len(records), batch_size):
                chunk = records[start : start + batch_size]
                vectors = encoder.encode([search_text(r) for r in chunk])
                store.put([r.evolve(embedding=v, encoder=encoder.name) for r, v in zip(chunk, vectors, strict=True)])
                total += len(chunk)
        store.set_meta("encoder_name", encoder.name)
        store.set_meta("encoder_dim", str(encoder.dim))
        return total
    finally:
        store.close()
