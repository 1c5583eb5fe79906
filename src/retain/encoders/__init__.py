"""Encoders: text to L2-normalised float32 vectors (the embedding basis of the formal model)."""
