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
    HotSetChanged,
    InvalidInput,
    InvalidUtility,
    PayloadTooLarge,
    RecordNotFound,
    RetainError,
    SchemaError,
    StoreUnavailable,
    TextTooLong,
    Unauthorized,
    WriteConflict,
)
from retain.facade.actor import ActorMemory
from retain.facade.aio import AsyncMemory
from retain.ingest.conflict import ConflictJudge, ConflictPolicy
from retain.ingest.conflict_model import ConflictModel, ConflictTree
from retain.ingest.draft import NewMemory
from retain.ingest.judge import OpenAIJudge
from retain.memory import Memory
from retain.record import MemoryRecord, MemoryType, Tier
from retain.retention.budget import Budget, BudgetUnit
from retain.retention.utility import UtilityModel
from retain.retrieval.fusion import Fusion, Hit, LinearFusion, SearchConfig, SearchMode, SearchOrder
from retain.safety.access import Grant, Principal, Role
from retain.safety.audit import VerifyReport
from retain.safety.canary import CanaryReport, CanaryStatus
from retain.safety.conflicts import Conflict
from retain.safety.context import Context, ContextItem, LeftOut, Provenance
from retain.safety.handoff import Handoff, WithheldItem
from retain.safety.integrity import ForgetReport, RetentionReport
from retain.sequence.procedures import Procedure, ProcedureTracker
from retain.sequence.segments import Summariser
from retain.state.agent import AgentState, StateEncoder, StatePerceiver
from retain.state.prefetch import Prefetch
from retain.state.scorer import StateScorer
from retain.store import Edge, EdgeType, RecordFilter, SQLiteStore, Store
from retain.store.where import MetadataCondition
from retain.text.classify import classify, classify_with_reason
from retain.text.temporal import TimeRef, parse_query_time, resolve_times

__all__ = [
    "ActorMemory",
    "AgentState",
    "AsyncMemory",
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
    "Grant",
    "GraphConfig",
    "Handoff",
    "HashingEncoder",
    "Hit",
    "HotSetChanged",
    "InvalidInput",
    "InvalidUtility",
    "LeftOut",
    "LinearFusion",
    "Memory",
    "MemoryConfig",
    "MemoryRecord",
    "MemoryType",
    "MetadataCondition",
    "MiniLMEncoder",
    "NewMemory",
    "OpenAIJudge",
    "PayloadTooLarge",
    "Prefetch",
    "Principal",
    "Procedure",
    "ProcedureTracker",
    "Provenance",
    "RecordFilter",
    "RecordNotFound",
    "RetainError",
    "RetentionReport",
    "RetrievalConfig",
    "Role",
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
    "StoreUnavailable",
    "Summariser",
    "TextTooLong",
    "Tier",
    "TimeRef",
    "Unauthorized",
    "UtilityModel",
    "VerifyReport",
    "WithheldItem",
    "WriteConflict",
    "classify",
    "classify_with_reason",
    "parse_query_time",
    "resolve_times",
]
__version__ = "0.1.0"
