"""Probes of video models that need no prompting (Temporal Reversal Asymmetry).

Nothing here imports torch at import time.
"""
