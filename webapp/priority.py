"""Researcher reads run at a lower CPU priority than participants' requests.

An export or a dashboard panel of a large study takes seconds of CPU in a gunicorn worker,
beside the workers that serve participants, whose reaction-time trials must not wait.  Linux
keeps niceness per thread, so the view runs in a short-lived thread at nice +10 (about a tenth
of a participant request's CPU share when both want a core); the worker's own thread, which
serves participants next, keeps its priority.  Elsewhere the view runs as it is.
"""
from __future__ import annotations

import os
import sys
import threading
from functools import wraps

from flask import copy_current_request_context

NICENESS = 10


def low_priority(view):
    """Decorate a view so that it runs at nice +``NICENESS`` (on Linux)."""
    if not sys.platform.startswith("linux"):
        return view

    @wraps(view)
    def wrapper(*args, **kwargs):
        outcome = {}

        @copy_current_request_context
        def work():
            thread = threading.get_native_id()
            # A new thread inherits its creator's niceness; raising it needs no privilege.
            os.setpriority(os.PRIO_PROCESS, thread,
                           min(19, os.getpriority(os.PRIO_PROCESS, thread) + NICENESS))
            try:
                outcome["value"] = view(*args, **kwargs)
            except BaseException as error:  # re-raised in the request's thread below
                outcome["error"] = error

        worker = threading.Thread(target=work, name=f"low-priority {view.__name__}")
        worker.start()
        worker.join()
        if "error" in outcome:
            raise outcome["error"]
        return outcome["value"]

    return wrapper
