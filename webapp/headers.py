"""Security headers on every response of the app.

The Content-Security-Policy allows scripts, styles, images, media and fetches from this origin
only: no inline script, no ``eval``, no plugins, no inline styles, and no page of this app
inside a frame (``frame-ancestors 'none'``, and ``X-Frame-Options`` for browsers without CSP
2), so a researcher's lifecycle buttons cannot be clickjacked.  Data for scripts travels in
``<script type="application/json">`` blocks and ``data-`` attributes.  Two exceptions:

- ``blob:`` images and media: the runner fetches a block's clips and frames once and plays
  them from blob URLs (static/js/preload.js).
- inline ``<style>`` elements on pages that draw plotly figures: plotly.js puts its layout
  rules (e.g. ``.main-svg {position: absolute}``, which stacks a figure's layers) into a
  ``<style>`` element it creates, so figures fall apart without it.  Inline ``style``
  attributes stay refused there too.

The static scripts also say ``Cross-Origin-Embedder-Policy: require-corp``: the clip
presenter's worker (static/js/present_worker.js) starts in the cross-origin isolated runner
page only so.
"""
from flask import Flask, Response, request

_DIRECTIVES = ("default-src 'self'", "script-src 'self'", "style-src 'self'",
               "img-src 'self' blob:", "media-src 'self' blob:", "object-src 'none'",
               "base-uri 'none'", "frame-ancestors 'none'", "form-action 'self'")
CONTENT_SECURITY_POLICY = "; ".join(_DIRECTIVES)
PLOTLY_PAGES = ("researcher.study",)
PLOTLY_POLICY = f"{CONTENT_SECURITY_POLICY}; style-src-elem 'self' 'unsafe-inline'"


def register_security_headers(app: Flask) -> None:
    app.after_request(_add_security_headers)


def _add_security_headers(response: Response) -> Response:
    policy = PLOTLY_POLICY if request.endpoint in PLOTLY_PAGES else CONTENT_SECURITY_POLICY
    response.headers["Content-Security-Policy"] = policy
    response.headers["X-Frame-Options"] = "DENY"
    response.headers["X-Content-Type-Options"] = "nosniff"
    # App-wide after_request functions run after the blueprints' own: participant pages and
    # the participant API set no-referrer (their URLs hold the session token); keep it.
    response.headers.setdefault("Referrer-Policy", "same-origin")
    if request.endpoint == "static" and request.path.endswith(".js"):
        # The runner page is cross-origin isolated (COEP require-corp), and Chromium loads a
        # dedicated worker's script (static/js/present_worker.js) there only if it says the
        # same; for a script imported by a page the header changes nothing.
        response.headers["Cross-Origin-Embedder-Policy"] = "require-corp"
    return response
