"""State-adaptive memory (SAM): the agent state, its encoder and the state-conditioned scorer."""
