"""Extra studies on the live site (tests/live_site.py) for tests that need a design the
shipped ones do not give, opened once per test session next to the site's own."""
from tests.live_site import open_study, tiny_designs

# Long enough to order the frames by hand, short enough to wait out in a test.
QUICK_ORDERING_MS = 4000


def open_quick_ordering(site) -> str:
    """A frame-ordering study whose trials time out after QUICK_ORDERING_MS (the shipped
    design waits 120 s); returns its kind for ``enter``.  Opened once per site, opting in
    webkit like the site's own studies (tests/engines runs it in WebKitGTK)."""
    kind = "frame_order_quick"
    if kind in site.slugs:
        return kind
    design = tiny_designs()["frame_order"].with_changes(max_ordering_ms=QUICK_ORDERING_MS)
    slug = "tiny-frame-order-quick"
    open_study(site.app, slug, design)
    site.slugs[kind] = slug
    return kind
