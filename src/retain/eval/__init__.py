"""Evaluation: data loaders (LoCoMo, BEAM, LongMemEval, scenario files), the runners that replay them into
memory, metrics and reports (``retain eval ...``; needs the ``eval`` extra).
"""
