"""Measuring: agreement of two results within a tolerance (compare), wall time
(timing), bytes (memory), parameters (parameters), the bytes of a key-value
cache (kv_cache) and of a fixed-size state (state_bytes), what a head
attends to (head_scores: previous-token and induction scores), the
thread count a measurement runs with (threads) and how sure a count of
events out of n trials makes us of the rate (binomial: exact intervals,
chapter 10).

May import: only ``attnbook._checks`` (every other layer may use these).
"""
