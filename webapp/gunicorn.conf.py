"""Production gunicorn settings: ``gunicorn -c webapp/gunicorn.conf.py "webapp:create_app()"``,
with the environment of webapp/deploy/chronoscope.env, behind the nginx site of
webapp/deploy/nginx (which holds back floods before they reach these workers).

Why 4 sync workers: participant requests are short (a trial is one SELECT, then an INSERT and
an UPDATE) and, on SQLite, every write serialises on the one database write lock, so more
workers only queue on that lock; gunicorn's rule of thumb (2 x cores + 1) gives 5 on the
2-core machines this runs on, and 4 leaves a core's worth of headroom for exports and the OS.
Sync workers keep the model simple (one request per process, no shared state), and a worker
that dies — even by SIGKILL — loses only the request it was serving, which the browser
retries with the same client UUID.  Override with GUNICORN_CMD_ARGS or ``-w`` on larger
machines (PostgreSQL).
"""
import os

bind = os.environ.get("CHRONOSCOPE_BIND", "127.0.0.1:8000")
workers = int(os.environ.get("CHRONOSCOPE_WORKERS", "4"))
worker_class = "sync"
# A request that waits out SQLite's busy timeout (5 s) must finish well inside this.
timeout = 30
graceful_timeout = 20
# Heartbeat files in RAM: a disk stall must not make the master kill healthy workers.
worker_tmp_dir = "/dev/shm" if os.path.isdir("/dev/shm") else None
# Preload: the app is imported once in the master and workers are forked from it, so a worker
# that dies is replaced in milliseconds instead of re-importing the app (~3 s of CPU here).
preload_app = True
# Our own control socket would clash between several servers on one machine (the benchmarks).
control_socket_disable = True
accesslog = os.environ.get("CHRONOSCOPE_ACCESS_LOG")  # None: no per-request log line


def post_fork(server, worker):
    """Drop any database connection inherited from the master: a pooled connection must never
    be shared between processes (SQLAlchemy's documented fork recipe)."""
    app = server.app.wsgi()
    if "sqlalchemy" in getattr(app, "extensions", {}):  # any Flask-SQLAlchemy app
        with app.app_context():
            app.extensions["sqlalchemy"].engine.dispose(close=False)
