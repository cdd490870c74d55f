"""The dashboard's study form refuses what the study file refuses (400, never a 500)."""
import html

from webapp.researcher import studies

FORM = {"slug": "pilot", "design": "arrow-of-time", "stimulus_set": "synthetic"}


def test_keys_the_stored_catch_set_lacks_are_refused_with_the_fix(app, logged_in, factory):
    # A catch set generated before it held every key (F and J only; issue 15).
    factory.stimulus_set()
    factory.catch_set()
    response = logged_in.post("/researcher/studies", data={**FORM, "keys": "d, k"})
    assert response.status_code == 400
    page = html.unescape(response.get_data(as_text=True))
    assert ("the catch set 'catch' has no video for response key 'd' or 'k' (it holds f, j): "
            "run `python manage.py stimuli generate`") in page
    with app.app_context():
        assert studies.get_study("pilot") is None
    factory.catch_set(keys=("d", "k"))
    response = logged_in.post("/researcher/studies", data={**FORM, "keys": "d, k"})
    assert response.status_code == 303, response.get_data(as_text=True)


def test_past_a_sane_bound_is_a_field_error(app, logged_in, factory):
    factory.stimulus_set()
    response = logged_in.post("/researcher/studies", data={**FORM, "practice_trials": "100000000"})
    assert response.status_code == 400
    assert "practice.trials: expected a non-negative integer of at most 200, got 100000000" in \
        response.get_data(as_text=True)



def test_a_number_of_thousands_of_digits_is_a_field_error(app, logged_in, factory):
    # int() of 5,000 digits raised a ValueError (a 500); the file's limit applies instead.
    factory.stimulus_set()
    for name, setting in (("places", "participants.places"), ("gap_hours", "sessions.gap_hours")):
        response = logged_in.post("/researcher/studies", data={**FORM, name: "1" * 5000})
        assert response.status_code == 400
        assert f'{setting}: expected a ' in response.get_data(as_text=True)
    with app.app_context():
        assert studies.get_study("pilot") is None

def test_the_keys_field_does_not_say_the_first_key_means_forward(logged_in, factory):
    # The label read "Response keys (forward, backward; e.g. f, j)", while which key means
    # forward is counterbalanced between participants by default (a German participant saw
    # "F = Rückwärts").
    factory.stimulus_set()  # the form shows once there is a set to run on
    page = logged_in.get("/researcher/").get_data(as_text=True)
    assert "Response keys (two letters or digits" in page and "counterbalanced" in page
    assert "(forward, backward" not in page


def test_the_form_takes_a_time_zone_and_refuses_an_unknown_one(app, logged_in, factory):
    factory.stimulus_set()
    response = logged_in.post("/researcher/studies", data={**FORM, "time_zone": "Asia/Tokio"})
    assert response.status_code == 400
    assert 'study.time_zone: expected an IANA time zone name such as "Asia/Tokyo"' in \
        html.unescape(response.get_data(as_text=True))
    response = logged_in.post("/researcher/studies", data={**FORM, "time_zone": "Asia/Tokyo"})
    assert response.status_code == 303, response.get_data(as_text=True)
    with app.app_context():
        assert studies.time_zone(studies.get_study("pilot")) == "Asia/Tokyo"
