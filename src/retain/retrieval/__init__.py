"""Retrieval: the candidate pool, fusion (RRF or learned), graph expansion, MMR and thresholds."""
