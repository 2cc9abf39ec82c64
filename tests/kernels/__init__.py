"""Tests of attnbook.kernels: the Triton kernels against attention."""
