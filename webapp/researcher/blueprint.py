"""The researcher blueprint.  Every route of it requires a signed-in researcher, and every
route of one study (a ``slug`` in its URL) a member whose role allows the request; both are
enforced once, in ``before_request``, so a route added later (in any module) cannot forget them.
"""
from flask import Blueprint, abort, request
from flask_login import current_user

from webapp.extensions import login_manager
from webapp.models import access
from webapp.researcher import studies

bp = Blueprint("researcher", __name__, url_prefix="/researcher")


@bp.before_request
def _require_login_and_access():
    """A non-member gets 404 for a study, as for one that does not exist, so a study's existence
    is not revealed; a member whose role lacks what the request needs gets 403."""
    if not current_user.is_authenticated:
        return login_manager.unauthorized()
    view_args = request.view_args or {}
    slug = view_args.get("slug")
    if slug is not None:
        study = studies.get_study(slug)
        allowed = access.permissions_of(current_user, study) if study else frozenset()
        if not allowed:
            abort(404, description=f"No study {slug!r}.")
        if _permission_needed(view_args) not in allowed:
            abort(403, description="Your role in this study does not allow this.")
    return None


def _permission_needed(view_args: dict) -> str:
    """Reads need "view", lifecycle actions what their action needs, running the study day to
    day "run", its configuration "configure"; every other write (members, and any route
    added later) is for owners."""
    if request.endpoint == "researcher.change_status":
        return access.action_permission(view_args["action"])
    if request.endpoint in ("researcher.preview", "researcher.manual_rule",
                            "researcher.resume_link", "researcher.check_codes"):
        return "run"  # reviewing and helping participants is running a study: editors, owners
    if request.endpoint == "researcher.update_study":
        return "configure"
    return "view" if request.method in ("GET", "HEAD") else "manage"
