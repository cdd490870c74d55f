"""MkDocs hooks: the pages that would go stale as copies are made when the site is built.

ARCHITECTURE.md and SECURITY.md stay at the top of the repository and are read from there;
the reference pages are written from the declarations the code runs on (the study file's
schema, the report's sections and codebook, the export codebook), so a renamed setting,
table or column changes the site with the code.
"""
from __future__ import annotations

from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parent.parent
TOP_LEVEL = {"architecture.md": "ARCHITECTURE.md", "security.md": "SECURITY.md"}


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def study_settings() -> str:
    """Every key of a study file (experiments.study_format.SCHEMA), with the value each
    shipped design (experiments.designs.DESIGNS) writes for it (study_format.to_toml)."""
    import tomllib

    from experiments.designs import DESIGNS
    from experiments.study_config import StudyConfig
    from experiments.study_format import SCHEMA, to_toml, toml_value

    written = {name: tomllib.loads(to_toml(StudyConfig(design, ""))) for name, design in DESIGNS.items()}
    lines = ["# Study settings", "",
             "Every key a study file may set, generated from `experiments.study_format.SCHEMA` "
             "when this site is built, with the value a study made from each shipped design "
             "has (— where the design leaves it to the study file or the stimulus set). "
             "Unknown keys are errors. How a study file is written: "
             "[Researcher's guide](../researcher-guide.md#study-files).", ""]
    for section, settings in SCHEMA.items():
        lines += [f"## [{section}]", "",
                  "| key | must be | " + " | ".join(f"`{n}`" for n in written) + " |",
                  "|---|---|" + "---|" * len(written)]
        for key, setting in settings.items():
            must = setting.expected + setting.bound + (" (required)" if setting.required else "")
            values = [d.get(section, {}).get(key) for d in written.values()]
            shown = ["—" if v in (None, "") else f"`{_cell(toml_value(v))}`" for v in values]
            lines.append(f"| `{key}` | {_cell(must)} | " + " | ".join(shown) + " |")
        lines.append("")
    return "\n".join(lines)


def report_tables() -> str:
    """The report's tables by section (analysis.report_output.SECTIONS) with what their
    columns mean (analysis.report_codebook.codebook_table)."""
    from analysis.report_codebook import codebook_table
    from analysis.report_output import SECTIONS

    codebook = codebook_table()
    lines = ["# Report tables and columns", "",
             "Generated from `analysis.report_output.SECTIONS` (the HTML report's sections, "
             "in reading order) and `analysis.report_codebook` (the `codebook.md` written "
             "beside every report) when this site is built. Each table is also written as "
             "`tables/<name>.csv`; a table the codebook does not describe yet has its "
             "columns named only in that file's header. How the report is made: "
             "[Analysis and reports](../analysis.md).", ""]
    shared = codebook[codebook["tables"] == "*"]
    lines += ["## Columns of any table", "", "| columns | meaning |", "|---|---|"]
    lines += [f"| `{_cell(row.columns)}` | {_cell(row.description)} |" for row in shared.itertuples()]
    lines.append("")
    for _, title, figures, tables in SECTIONS:
        lines += [f"## {title}", ""]
        if figures:
            lines += ["Figures: " + ", ".join(f"`{f}`" for f in figures) + ".", ""]
        for table in tables:
            entries = codebook[codebook["tables"].map(
                lambda names: table in [n.strip() for n in names.split(",")])]
            lines += [f"### `{table}`", ""]
            if entries.empty:
                lines += ["No column of its own in the codebook yet.", ""]
                continue
            lines += ["| columns | meaning |", "|---|---|"]
            lines += [f"| `{_cell(row.columns)}` | {_cell(row.description)} |"
                      for row in entries.itertuples()]
            lines.append("")
    return "\n".join(lines)


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
