"""A screen-out is final: its texts never invite the participant to try again elsewhere
(experiments/texts/*.toml screen_out and the device problems that screen out)."""
import pytest

from experiments.texts import defaults, render

RETRY = ("open the link", "öffnen Sie den Link", "try again", "erneut versuchen")


@pytest.mark.parametrize("language", ["en", "de"])
def test_a_screen_out_says_this_device_cannot_take_part(language):
    texts = defaults(language)
    screen = render("screen_out", texts["screen_out"],
                    {"reasons": render("device_problem_browser", texts["device_problem_browser"],
                                       {"browsers": "Chrome"}), "code": "C0DE"})
    assert not any(phrase.lower() in screen.lower() for phrase in RETRY), screen
    assert ("cannot take part" if language == "en" else "nicht teilnehmen") in screen
