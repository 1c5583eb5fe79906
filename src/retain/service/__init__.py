"""Serving retain to other processes, thin layers over one ``Memory``.

The REST service (``retain serve``): the ``Memory`` operations as a versioned HTTP API under /v1,
over one :class:`~retain.facade.aio.AsyncMemory`: ``app`` builds the FastAPI application
(:func:`~retain.service.app.create_app`), ``routes`` the /v1 endpoints, ``schemas`` their request
bodies, ``auth`` the API-key dependency (each key is a :class:`~retain.safety.access.Principal`,
checked by ``Memory.as_actor``), ``keys`` the hashed keys file, ``errors`` the mapping of retain's
errors to JSON bodies and status codes, ``limits`` the request size limit; every module but ``keys``
needs the ``server`` extra (fastapi, uvicorn). The MCP server (``mcp``, ``retain mcp``) needs the
``mcp`` extra. This package's ``__init__`` imports no extra. docs/integrations.md is the reference.
"""
