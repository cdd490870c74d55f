"""The dashboard's study form refuses what the study file refuses (400, never a 500)."""
from webapp.researcher import studies

FORM = {"slug": "pilot", "design": "arrow-of-time", "stimulus_set": "synthetic"}


def test_keys_the_catch_videos_do_not_instruct_are_a_field_error(app, logged_in, factory):
    factory.stimulus_set()
    response = logged_in.post("/researcher/studies", data={**FORM, "keys": "d, k"})
    assert response.status_code == 400
    assert ("responses.keys: the catch videos instruct f and j; with other keys set "
            "blocks.catch_per_block = 0 or use keys f and j") in response.get_data(as_text=True)
    with app.app_context():
        assert studies.get_study("pilot") is None


def test_past_a_sane_bound_is_a_field_error(app, logged_in, factory):
    factory.stimulus_set()
    response = logged_in.post("/researcher/studies", data={**FORM, "practice_trials": "100000000"})
    assert response.status_code == 400
    assert "practice.trials: expected a non-negative integer of at most 200, got 100000000" in \
        response.get_data(as_text=True)
