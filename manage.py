#!/usr/bin/env python
"""Chronoscope's command line in a checkout: ``python manage.py --help`` (installed, the same
commands are ``chronoscope``)."""
from webapp.cli import main

if __name__ == "__main__":
    main()
