"""The dashboard: server-rendered HTML pages over a :class:`~retain.Memory` (``retain ui``, and
``/ui`` of ``retain serve``).

:func:`~retain.ui.app.create_app` builds the app from a memory and an authorisation hook that says
who the caller is and their :class:`~retain.ui.auth.Role` per namespace
(:class:`~retain.ui.auth.Principal`); ``retain ui`` passes :func:`~retain.ui.auth.local_admin`.
Needs the ``ui`` extra (jinja2, fastapi, uvicorn, python-multipart). Pages read through the
:class:`~retain.Memory` and :class:`~retain.store.Store` APIs only; charts are SVG drawn on the
server (:mod:`~retain.ui.charts`); no script runs in the browser and nothing is fetched from
elsewhere.
"""
