"""Observability-safe retention: the audit log, redaction, integrity rules, canaries, context
provenance, handoff and observability.
"""
