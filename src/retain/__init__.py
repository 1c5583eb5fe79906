"""retain: a memory layer for long-horizon LLM agents.

Keeps what matters under a hard budget, retrieves by the agent's task state, and makes every
keep/forget decision explainable. Start with :class:`Memory`.
"""

from retain.config import MemoryConfig, Settings
from retain.encoders.basis import Encoder, HashingEncoder, MiniLMEncoder
from retain.errors import (
    BudgetInfeasible,
    DatasetUnavailable,
    DuplicateContent,
    EncoderMismatch,
    Forbidden,
    InvalidInput,
    InvalidUtility,
    RecordNotFound,
    RetainError,
    SchemaError,
    TextTooLong,
    WriteConflict,
)
from retain.ingest.draft import NewMemory
from retain.memory import Memory
from retain.record import MemoryRecord, MemoryType, Tier
from retain.retention.budget import Budget
from retain.retrieval.fusion import Fusion, Hit, SearchConfig, SearchMode
from retain.safety.canary import CanaryReport
from retain.safety.context import Context, Provenance
from retain.state.agent import AgentState, StatePerceiver
from retain.store import RecordFilter, SQLiteStore, Store
from retain.text.classify import classify, classify_with_reason
from retain.text.temporal import TimeRef, parse_query_time, resolve_times

__all__ = [
    "AgentState",
    "Budget",
    "BudgetInfeasible",
    "CanaryReport",
    "Context",
    "DatasetUnavailable",
    "DuplicateContent",
    "Encoder",
    "EncoderMismatch",
    "Forbidden",
    "Fusion",
    "HashingEncoder",
    "Hit",
    "InvalidInput",
    "InvalidUtility",
    "Memory",
    "MemoryConfig",
    "MemoryRecord",
    "MemoryType",
    "MiniLMEncoder",
    "NewMemory",
    "Provenance",
    "RecordFilter",
    "RecordNotFound",
    "RetainError",
    "SQLiteStore",
    "SchemaError",
    "SearchConfig",
    "SearchMode",
    "Settings",
    "StatePerceiver",
    "Store",
    "TextTooLong",
    "Tier",
    "TimeRef",
    "WriteConflict",
    "classify",
    "classify_with_reason",
    "parse_query_time",
    "resolve_times",
]
__version__ = "0.1.0"
