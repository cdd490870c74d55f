"""Reliability harness: a site to test (server + database), simulated participants, faults, audit.

Used by ``bench/load.py`` (the full benchmark) and ``tests/reliability`` (its short CI form).
"""
