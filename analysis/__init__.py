"""Chronoscope analysis: trial tables in, metrics, statistics and reports out.

Importing this package stays cheap: no torch, no plotly, no statsmodels. Submodules are
imported where they are used (``from analysis import aot``).
"""
