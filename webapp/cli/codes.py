"""`manage.py study codes`: which of the codes a platform lists this study issued."""
import click
from flask.cli import with_appcontext

from experiments.study_format import visible
from webapp.researcher import codes, studies

MAX_PASTE_CHARS = codes.MAX_CODES * (codes.MAX_CODE_CHARS + 1)


@click.command("codes")
@click.argument("slug")
@click.argument("codes_file", metavar="FILE", type=click.File("r", encoding="utf-8"),
                default="-")
@with_appcontext
def check_codes(slug, codes_file):
    """Check the codes participants submitted on the platform (FILE, or standard input: one
    per line, or separated by commas or spaces) against those study SLUG issued. Exits with
    status 1 when any is not valid."""
    text = codes_file.read(MAX_PASTE_CHARS + 1)
    if len(text) > MAX_PASTE_CHARS:  # read no further: a list this long is no platform's
        raise click.ClickException(f"expected at most {codes.MAX_CODES} codes, got a longer "
                                   "file")
    try:
        study = studies.require_study(slug)
        found = codes.check_codes(study, codes.parse_codes(text))
    except (studies.StudyError, codes.CodeListError) as error:
        raise click.ClickException(str(error)) from error
    for row in found.itertuples():
        whom = f"participant {row.participant}, " if row.participant else ""
        where = f"{whom}session {row.session_number}, {row.status}" if row.status else ""
        said = "; ".join(part for part in (where, row.note) if part)
        click.echo(f"{visible(row.code)}\t{'valid' if row.valid else 'NOT VALID'}\t{said}")
    valid = int(found["valid"].sum())
    # A valid code was issued by the study, whatever the outcome: declining consent or a
    # screen-out ends with a code too, and what to pay for is the outcome's, not the code's.
    unfinished = found[found["valid"] & (found["status"] != "completed")
                       & (found["status"] != "")]["status"].value_counts()
    outcomes = "; ".join(f"{status}: {n}" for status, n in sorted(unfinished.items()))
    click.echo(f"{valid} of {len(found)} code(s) valid for {slug!r}."
               + (f" Of these, {int(unfinished.sum())} ended without completing ({outcomes}):"
                  " pay by the outcome." if outcomes else ""), err=True)
    if valid < len(found):
        raise SystemExit(1)
