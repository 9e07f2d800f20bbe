"""Benchmarks behind ``sealdesk bench``: each runs the reference beside sealdesk."""
