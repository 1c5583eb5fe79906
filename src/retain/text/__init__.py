"""Text analysis without a model: lexical index terms, values and their canonical forms, cue words,
type classification, time resolution, personal-data detectors.
"""
