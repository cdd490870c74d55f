"""A toy trial type written the way the recipe says (ARCHITECTURE.md, "Adding a trial type:
the recipe"): ``still.py`` and its texts ``still.toml``, the browser module ``still.js`` and
the shipped study file ``still-frames.toml``.  tests/test_add_trial_type.py adds them."""
