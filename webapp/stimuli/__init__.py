"""Stimulus sets: the catalog, files on disk, imported benchmarks, the media view."""
