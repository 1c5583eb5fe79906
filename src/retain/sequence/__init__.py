"""Sequential memory: timelines, episodes and segments with summaries."""
