"""MkDocs hooks: the pages that would go stale as copies are made when the site is built.

ARCHITECTURE.md and SECURITY.md stay at the top of the repository and are read from there;
the reference pages are written from the declarations the code runs on (the study settings,
the report's registry of tables, the export codebook), so a renamed setting,
table or column changes the site with the code.
"""
from __future__ import annotations

from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parent.parent
TOP_LEVEL = {"architecture.md": "ARCHITECTURE.md", "security.md": "SECURITY.md"}


def study_settings() -> str:
    """Every key of a study file, from its one declaration (experiments.study_settings)."""
    from experiments.study_settings import reference_markdown

    return reference_markdown() + ("\n\nHow a study file is written: "
                                   "[Researcher's guide](../researcher-guide.md#study-files).\n")


def report_tables() -> str:
    """Every report table and column, from the report's registry (analysis.report.registry)."""
    from analysis.report.codebook import codebook_markdown

    return codebook_markdown() + ("\n\nHow the report is made: "
                                  "[Analysis and reports](../analysis.md).\n")


def export_columns() -> str:
    """The codebook shipped with every export (webapp.researcher.codebook.codebook_markdown)."""
    from webapp.researcher.codebook import codebook_markdown

    text = codebook_markdown().decode()
    return text.replace("# Codebook", "# Export files and columns", 1)


GENERATED = {"reference/study-settings.md": study_settings,
             "reference/report-tables.md": report_tables,
             "reference/export-columns.md": export_columns}


def on_files(files, config):
    for uri, name in TOP_LEVEL.items():
        files.append(File.generated(config, uri, abs_src_path=str(ROOT / name)))
    for uri, make in GENERATED.items():
        files.append(File.generated(config, uri, content=make()))
    return files
