"""Budgeted evidence retention (EMBER): budgets, predicted utility, retention policies (greedy,
knapsack, incremental, Lagrangian) and their constraints.
"""
