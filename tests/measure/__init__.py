"""Tests of attnbook.measure: timing, memory, cache sizes, comparisons and head
scores.
"""
