"""Vision-language models on the same stimuli as people: backends, prompts, parsers, cache, runs.

Nothing here imports torch at import time; backends are imported when picked
(:func:`analysis.vlm.backends.load_backend`).
"""
