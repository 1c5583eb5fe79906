"""Serving retain to other processes, each a thin layer over one :class:`~retain.memory.Memory`.

The REST service (``retain serve``): the ``Memory`` operations as a versioned HTTP API under /v1, over
one :class:`~retain.facade.aio.AsyncMemory`: ``app`` builds the FastAPI
application (:func:`~retain.service.app.create_app`), ``routes`` the /v1 endpoints, ``schemas``
their request bodies, ``auth`` the API-key dependency (each key is a
:class:`~retain.safety.access.Principal`, checked by ``Memory.as_actor``), ``keys`` the hashed keys
file, ``errors`` the mapping of retain's errors to JSON bodies and status codes, ``limits`` the
request size limit. Every module but ``keys`` needs the ``server`` extra (fastapi, uvicorn).

The MCP server (``mcp``, ``retain mcp``): tools over one Memory with the official MCP SDK; needs the
``mcp`` extra. This package's ``__init__`` imports no extra. docs/integrations.md is the reference.
"""
