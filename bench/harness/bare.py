"""The yardstick for L2: a bare Flask endpoint that parses a JSON body and stores nothing.

Served by the same gunicorn settings as the app, it measures what this machine's HTTP stack,
JSON parsing and client harness cost, so the app's throughput is reported as a ratio to it.
"""
import uuid

from flask import Flask, jsonify, request


def create_bare_app() -> Flask:
    app = Flask(__name__)

    @app.get("/api/openapi.json")
    def ready():
        return jsonify(ok=True)

    @app.get("/p/<slug>")
    def entry(slug):
        return "", 303, {"Location": f"/run/{uuid.uuid4().hex}"}

    @app.get("/api/session/<token>")
    def state(token):
        trials = [{"trial_index": i, "trial_type": "aot", "block": "main-1", "params": {}}
                  for i in range(14)]
        return jsonify(status="in_progress", trials=trials, stored_indices=[])

    @app.post("/api/session/<token>/<action>")
    def write(token, action):
        body = request.get_json(force=True, silent=True)
        if not isinstance(body, dict):
            return jsonify(error="wrong_type"), 400
        if action == "trials":
            return jsonify(stored=True, trial_index=body.get("trial_index")), 201
        return jsonify(ok=True, status="completed"), 200

    return app
