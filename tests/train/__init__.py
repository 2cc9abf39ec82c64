"""Tests of attnbook.train: the training scripts and the results they ship."""
