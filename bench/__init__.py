"""Benchmarks (not tests): ratios measured side by side in one run."""
