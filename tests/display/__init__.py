"""Tests of attnbook.display: the figures, diagrams and listings the chapters
draw.
"""
