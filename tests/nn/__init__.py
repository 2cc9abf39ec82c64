"""Tests of attnbook.nn: the modules (multi-head attention, encoder, decoder,
pointer networks, language model).
"""
