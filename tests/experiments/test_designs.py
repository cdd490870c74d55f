from dataclasses import dataclass

import pytest

from experiments.designs import DESIGNS, STUDY_CONFIG_KEY, Design, OrderingCondition, get_design
from experiments.exclusions import ExclusionRules


def test_every_design_is_registered_under_its_name_with_a_title():
    for name, design in DESIGNS.items():
        assert design.name == name and design.title


def test_arrow_of_time_is_two_sessions_with_benchmark_filter():
    design = DESIGNS["arrow-of-time"]
    assert design.task == "aot" and design.sessions == 2 and design.session_gap_hours > 0
    assert design.benchmark_subset_excludes == ("Reciprocal",)
    assert design.counterbalance_keys and design.response_window_ms_after_clip == 2000


def test_frame_ordering_has_ego_flight_nine_conditions():
    conditions = DESIGNS["frame-ordering"].conditions
    # EGO-FLIGHT Appendix E, Table 8: nine experiments, baseline 4 frames/medium/brief/no hints.
    assert len(conditions) == 9
    assert sorted({c.n_frames for c in conditions}) == [2, 4, 8]
    assert {c.span for c in conditions} == {"short", "medium", "long"}
    assert {c.annotation for c in conditions} == {"none", "brief", "comprehensive"}
    assert {c.hint_positions for c in conditions} == {(), (0, 2), (1, 3)}
    assert len({c.name for c in conditions}) == 9


@pytest.mark.parametrize("name", sorted(DESIGNS))
def test_to_dict_round_trips(name):
    design = DESIGNS[name]
    snapshot = design.to_dict()
    assert snapshot["name"] == name and snapshot["exclusions"]["version"]
    assert Design.from_dict(snapshot) == design
    assert Design.from_snapshot(_Stored(name, snapshot)) == design
    assert Design.from_snapshot(_Stored(name, {})) == design
    assert Design.from_snapshot(_Stored(name, None)) == design


def test_snapshot_with_changes_is_used():
    pilot = DESIGNS["arrow-of-time"].with_changes(max_clips=4, main_blocks=2)
    stored = _Stored("arrow-of-time", pilot.to_dict() | {STUDY_CONFIG_KEY: {"title": "x"}})
    assert Design.from_snapshot(stored) == pilot


@dataclass
class _Stored:
    """A study as the design reads it: the shipped design's name and a snapshot."""

    design: str
    design_snapshot: dict | None


def test_bad_designs_are_refused():
    with pytest.raises(ValueError, match="unknown design"):
        get_design("nope")
    with pytest.raises(ValueError, match="unknown design fields"):
        Design.from_dict({**DESIGNS["arrow-of-time"].to_dict(), "colour": "red"})
    with pytest.raises(ValueError, match="task"):
        Design(name="x", title="x", task="dance")
    with pytest.raises(ValueError, match="conditions"):
        Design(name="x", title="x", task="frame_order")
    with pytest.raises(ValueError, match="two"):
        Design(name="x", title="x", task="aot", sessions=3)
    with pytest.raises(ValueError, match="hints"):
        OrderingCondition("bad", n_frames=4, hint_positions=(0, 5))
    with pytest.raises(ValueError, match="span"):
        OrderingCondition("bad", span="huge")
    with pytest.raises(ValueError, match="unknown exclusion"):
        ExclusionRules.from_dict({"min_rt": 1})
