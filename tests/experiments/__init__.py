"""Tests of attnbook.experiments: each chapter experiment and its pinned
results.
"""
