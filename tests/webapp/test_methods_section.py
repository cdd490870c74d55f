"""`manage.py report` writes a methods section whose every number comes from the export."""
import pytest

from analysis.report.methods import _BROWSERS, _SYSTEMS, family

CHROME_WIN = ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
              "Chrome/131.0.0.0 Safari/537.36")
FIREFOX_MAC = "Mozilla/5.0 (Macintosh; Intel Mac OS X 14.5; rv:133.0) Gecko/20100101 Firefox/133.0"
SAFARI_IOS = ("Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 "
              "(KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1")
EDGE = CHROME_WIN + " Edg/131.0.0.0"


def _device(agent, hz):
    return {"device": {"user_agent": agent, "refresh_hz": hz, "screen_w": 1920, "screen_h": 1080}}


@pytest.fixture
def study(factory):
    study = factory.study(slug="pilot")
    clip = factory.clip(clip_key="fall-0")
    forward = factory.stimulus(clip, direction="forward")
    for n, (agent, hz) in enumerate([(CHROME_WIN, 60.0), (CHROME_WIN, 120.0)]):
        session = factory.session(study, subject_id=f"P{n}", status="completed",
                                  device_info=_device(agent, hz))
        factory.trial(session, forward, dropped_frames=n)
        factory.trial(session, forward, onset_method="rvfc")
    return study


def _methods(app, tmp_path):
    result = app.test_cli_runner().invoke(args=["report", "pilot", "--out", str(tmp_path),
                                                "--n-boot", "10"])
    assert result.exit_code == 0, result.output
    assert "methods.md" in result.output
    return (tmp_path / "methods.md").read_text()


def test_the_methods_section_reports_the_export(app, study, tmp_path):
    text = _methods(app, tmp_path)
    assert "2 participant(s) opened the study and 2 completed" in text
    assert "ended as: completed 2." in text
    assert "the browsers were Chrome 2 (100%) and the operating systems Windows 2 (100%)" in text
    assert "median of 90.0 Hz (range 60.0-120.0 Hz, 2 session(s))" in text
    assert "4 participant trial(s) were stored" in text and "rvfc 4 (100%)" in text
    assert "25.0% of the 4 trial(s) with a frame count dropped at least one frame" in text
    assert "0 participant(s) were excluded" in text
    for package in ("numpy", "scipy", "pandas", "statsmodels"):
        assert f"{package} " in text
    assert "https://doi.org/10.1038/s41586-020-2649-2" in text and "CITATION.cff" in text
    html = (tmp_path / "report.html").read_text()
    assert '<section id="methods">' in html and "<h2>Methods</h2>" in html


def test_changing_the_data_changes_the_numbers(app, factory, study, tmp_path):
    before = _methods(app, tmp_path / "before")
    late = factory.session(study, subject_id="P-late", status="failed_attention", excluded=True,
                           exclusion_reasons=["catch_failed"],
                           device_info=_device(FIREFOX_MAC, 144.0))
    factory.trial(late, factory.stimulus(factory.clip(clip_key="c2"), direction="backward"),
                  dropped_frames=3, onset_method="raf", excluded=True,
                  exclusion_reasons=["too_fast"])
    after = _methods(app, tmp_path / "after")
    assert after != before
    assert "3 participant(s) opened the study and 2 completed" in after
    assert "completed 2, failed_attention 1" in after
    assert "Chrome 2 (67%), Firefox 1 (33%)" in after and "macOS 1 (33%)" in after
    assert "median of 120.0 Hz (range 60.0-144.0 Hz, 3 session(s))" in after
    assert "5 participant trial(s)" in after and "raf 1 (20%)" in after
    assert "1 participant(s) were excluded (sessions by reason: catch_failed 1)" in after
    assert "too_fast 1" in after


def test_a_model_name_is_text_in_the_html(app, factory, study, tmp_path):
    model = factory.session(study, subject_id="<script>alert(1)</script>", kind="model",
                            status="completed")
    factory.trial(model, factory.stimulus(factory.clip(clip_key="c3"), direction="forward"))
    _methods(app, tmp_path)
    html = (tmp_path / "report.html").read_text()
    methods = html[html.index('<section id="methods">'):]
    assert "<script>alert(1)" not in methods and "&lt;script&gt;alert(1)" in methods


@pytest.mark.parametrize("agent, browser, system", [
    (CHROME_WIN, "Chrome", "Windows"), (FIREFOX_MAC, "Firefox", "macOS"),
    (SAFARI_IOS, "Safari", "iOS"), (EDGE, "Edge", "Windows"), ("", "other", "other")])
def test_browser_and_system_families(agent, browser, system):
    assert family(agent, _BROWSERS) == browser and family(agent, _SYSTEMS) == system
