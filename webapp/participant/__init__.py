"""What participants use: entry and sessions, trials, the JSON API and pages."""
