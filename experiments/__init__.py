"""Designs, stimuli, synthetic clips, schedules and exclusion rules (no Flask)."""
