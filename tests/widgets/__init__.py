"""Tests of attnbook.widgets: the explorers, their views, figures and builders."""
