"""retain inside agent frameworks: ``langgraph`` (:class:`~retain.integrations.langgraph.RetainStore`,
a LangGraph ``BaseStore``; the ``langgraph`` extra). This package's ``__init__`` imports no extra.
"""
