"""retain: a memory layer for long-horizon LLM agents.

Keeps what matters under a hard budget, retrieves by the agent's task state, and makes every
keep/forget decision explainable. Start with :class:`Memory`.
"""

from retain.config import GraphConfig, MemoryConfig, RetrievalConfig, Settings
from retain.core import Core
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
from retain.ingest.conflict import ConflictJudge, ConflictPolicy
from retain.ingest.conflict_model import ConflictModel, ConflictTree
from retain.ingest.draft import NewMemory
from retain.ingest.judge import OpenAIJudge
from retain.memory import Memory
from retain.record import MemoryRecord, MemoryType, Tier
from retain.retention.budget import Budget, BudgetUnit
from retain.retention.utility import UtilityModel
from retain.retrieval.fusion import Fusion, Hit, LinearFusion, SearchConfig, SearchMode, SearchOrder
from retain.safety.canary import CanaryReport, CanaryStatus
from retain.safety.conflicts import Conflict
from retain.safety.context import Context, ContextItem, LeftOut, Provenance
from retain.safety.handoff import Handoff, WithheldItem
from retain.safety.integrity import ForgetReport, RetentionReport
from retain.sequence.segments import Summariser
from retain.state.agent import AgentState, StateEncoder, StatePerceiver
from retain.state.scorer import StateScorer
from retain.store import Edge, EdgeType, RecordFilter, SQLiteStore, Store
from retain.text.classify import classify, classify_with_reason
from retain.text.temporal import TimeRef, parse_query_time, resolve_times

__all__ = [
    "AgentState",
    "Budget",
    "BudgetInfeasible",
    "BudgetUnit",
    "CanaryReport",
    "CanaryStatus",
    "Conflict",
    "ConflictJudge",
    "ConflictModel",
    "ConflictPolicy",
    "ConflictTree",
    "Context",
    "ContextItem",
    "Core",
    "DatasetUnavailable",
    "DuplicateContent",
    "Edge",
    "EdgeType",
    "Encoder",
    "EncoderMismatch",
    "Forbidden",
    "ForgetReport",
    "Fusion",
    "GraphConfig",
    "Handoff",
    "HashingEncoder",
    "Hit",
    "InvalidInput",
    "InvalidUtility",
    "LeftOut",
    "LinearFusion",
    "Memory",
    "MemoryConfig",
    "MemoryRecord",
    "MemoryType",
    "MiniLMEncoder",
    "NewMemory",
    "OpenAIJudge",
    "Provenance",
    "RecordFilter",
    "RecordNotFound",
    "RetainError",
    "RetentionReport",
    "RetrievalConfig",
    "SQLiteStore",
    "SchemaError",
    "SearchConfig",
    "SearchMode",
    "SearchOrder",
    "Settings",
    "StateEncoder",
    "StatePerceiver",
    "StateScorer",
    "Store",
    "Summariser",
    "TextTooLong",
    "Tier",
    "TimeRef",
    "UtilityModel",
    "WithheldItem",
    "WriteConflict",
    "classify",
    "classify_with_reason",
    "parse_query_time",
    "resolve_times",
]
__version__ = "0.1.0"
