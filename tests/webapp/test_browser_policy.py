"""The browser policy: the engines a study accepts by default (WebKit refused: its measured
onset error misses the goal, docs/measurements.md "Onset timing per engine"), and a study file's opt-in."""
from experiments import study_file
from webapp.researcher import lifecycle, studies


def test_a_study_without_a_study_file_accepts_chromium_and_firefox(app, factory, client):
    factory.stimulus_set()
    with app.app_context():
        studies.create_study("pilot", "arrow-of-time", "synthetic")
        lifecycle.transition("pilot", "open")
        assert studies.study_config(studies.get_study("pilot")).browsers == ("chromium",
                                                                               "firefox")
    token = client.get("/p/pilot?participant=P1").location.rstrip("/").rsplit("/", 1)[1]
    state = client.get(f"/api/session/{token}").get_json()
    assert state["requirements"]["browsers"] == ["chromium", "firefox"]
    assert "Safari" not in state["texts"]["device_problem_browser"]


def test_a_study_file_may_opt_in_webkit_and_validate_says_what_it_costs(app, runner, factory,
                                                                         client, tmp_path):
    factory.stimulus_set()
    source = tmp_path / "study.toml"
    source.write_text('[study]\ndesign = "arrow-of-time"\nstimulus_set = "synthetic"\n'
                      '[responses]\nkeys = ["d", "k"]\n'  # WebKitGTK keeps f
                      '[participants]\nbrowsers = ["chromium", "firefox", "webkit"]\n')
    result = runner.invoke(args=["study", "validate", str(source)])
    assert result.exit_code == 0, result.output
    assert "Warning: study.toml:7: participants.browsers: webkit (Safari) is allowed, but its " \
           "measured onset error (mean 9.2 ms, SD 4.0 ms" in result.output
    with app.app_context():
        studies.create_study_from_config("pilot", study_file.load(source))
        lifecycle.transition("pilot", "open")
    token = client.get("/p/pilot?participant=P1").location.rstrip("/").rsplit("/", 1)[1]
    state = client.get(f"/api/session/{token}").get_json()
    assert state["requirements"]["browsers"] == ["chromium", "firefox", "webkit"]
