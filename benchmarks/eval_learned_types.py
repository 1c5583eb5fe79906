"""``retain eval ...`` with the learned type classifier in the scenario runner.

The scenario runner builds ``MemoryConfig(retrieval=...)`` and the agent loop ``Memory(...)`` with
the default config, whose ``type_classifier`` is the rule cascade; this wrapper makes both use
``type_classifier="learned"`` and passes every argument to the ``retain`` command line, so the same
figures can be compared rules vs learned.

Usage::

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/eval_learned_types.py eval scenarios --data scenarios/dev \\
        --retriever state,content --no-per-scenario
"""

from __future__ import annotations

import functools

import retain.config
import retain.eval.agent_loop as agent_loop
import retain.eval.scenario_runner as runner
from retain import Memory

runner.MemoryConfig = functools.partial(retain.config.MemoryConfig, type_classifier="learned")  # type: ignore[misc]
agent_loop.Memory = functools.partial(  # type: ignore[misc]
    Memory, config=retain.config.MemoryConfig(type_classifier="learned")
)

if __name__ == "__main__":
    from retain.cli.app import app

    app()
