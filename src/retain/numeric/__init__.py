"""Numerical building blocks shared by the store, retrieval and retention: matrix kernels and the
logistic regression of the learned scorers.
"""
