"""The write path: drafting records from new memories, and conflict (supersede) detection on add."""
