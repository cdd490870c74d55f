"""Extra studies on the live site (tests/live_site.py) for tests that need a design the
shipped ones do not give, opened once per test session next to the site's own."""
from tests.live_site import STIMULUS_SET, tiny_designs

# Long enough to order the frames by hand, short enough to wait out in a test.
QUICK_ORDERING_MS = 4000


def open_quick_ordering(site) -> str:
    """A frame-ordering study whose trials time out after QUICK_ORDERING_MS (the shipped
    design waits 120 s); returns its kind for ``enter``.  Opened once per site."""
    from webapp.extensions import db
    from webapp.researcher import studies

    kind = "frame_order_quick"
    if kind in site.slugs:
        return kind
    design = tiny_designs()["frame_order"].with_changes(max_ordering_ms=QUICK_ORDERING_MS)
    slug = "tiny-frame-order-quick"
    with site.app.app_context():
        study = studies.create_study(slug, design.name, STIMULUS_SET)
        study.design_snapshot = design.to_dict()
        db.session.commit()
        studies.transition(slug, "open")
    site.slugs[kind] = slug
    return kind
