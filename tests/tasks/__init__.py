"""Tests of attnbook.tasks: the data of each task, its held-out sets and the
shipped models.
"""
