"""The study report: its table registry, builders, figures and output (see registry.py)."""
