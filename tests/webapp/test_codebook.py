"""The codebook's descriptions of the exclusion rules and technical events."""
from experiments.exclusions import TRIAL_REASONS
from webapp.researcher.codebook_columns import trial_codebook


def _description(column: str) -> str:
    return next(text for name, _, text in trial_codebook() if name == column)


def test_every_trial_reason_is_listed_and_reoffered_is_explained():
    reasons = _description("exclusion_reasons")
    assert all(reason in reasons for reason in TRIAL_REASONS)
    assert "'reoffered'" in reasons and "exclude_reoffered, true by default" in reasons
    assert "only ignored clicks before the answer count" in reasons


def test_re_offers_are_said_to_count_across_reloads():
    assert "counted across reloads of the page" in _description("extra")
