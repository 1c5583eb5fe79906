"""The ``retain`` command line."""
