"""Contracts across many functions: random state, callers' inputs, clean
errors.
"""
