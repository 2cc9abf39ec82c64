"""Tests of attnbook.core: attention, masks, scores, positions, chunked and
linear attention.
"""
