# The two commands: `make run` (set up, prepare the built-in stimuli, serve) and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 5000
PG_URL ?= postgresql+psycopg://postgres@127.0.0.1:5432/test

.PHONY: run test setup browser postgres schema

# Development mode: a random secret key kept in instance/secret_key, simulated participants allowed.
run: export CHRONOSCOPE_DEVELOPMENT = true
run: setup
	$(BIN)/python manage.py init-db
	$(BIN)/python manage.py stimuli generate
	$(BIN)/python manage.py study demo
	$(BIN)/python manage.py run --host $(HOST) --port $(PORT)

test: setup browser postgres
	CHRONOSCOPE_TEST_POSTGRES_URL=$(PG_URL) $(BIN)/python -m pytest -n 2 --dist loadfile

setup: $(VENV)/.installed static/vendor/.installed

$(VENV)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check -e ".[models,dev]"
	touch $@

# Browser libraries come from npm at install time and are never committed.
static/vendor/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --silent
	mkdir -p static/vendor
	cp node_modules/sortablejs/Sortable.min.js static/vendor/
	touch $@

# The browsers of the whole-session tests, from Debian (no browser download at test time):
# Chromium for Playwright (tests/browser), Firefox ESR for puppeteer-core and WebKitGTK's
# WebKitWebDriver with MiniBrowser for Selenium (tests/engines), and Xvfb for their windows.
# gstreamer1.0-libav (and the libavcodec it pulls in) decodes the H.264 clips in WebKitGTK and
# Firefox; both only recommend it, and recommends may be switched off.
BROWSER_PACKAGES := chromium firefox-esr webkit2gtk-driver xvfb gstreamer1.0-libav
browser:
	@missing=$$(for p in $(BROWSER_PACKAGES); do \
	  dpkg-query -W -f '$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || echo $$p; done); \
	  test -z "$$missing" || (apt-get update -q && apt-get install -y -q $$missing)

# The database tests also run against a real PostgreSQL server; start the local one if it is down.
postgres:
	@pg_isready -q -h 127.0.0.1 -p 5432 || \
	  (pg_ctlcluster --skip-systemctl-redirect $$(ls /etc/postgresql) main start && sleep 2) || \
	  echo "PostgreSQL is not available; its tests will fail under CI=true"

# Regenerate the single initial migration from the models (before the first release only).
schema: setup
	rm -f webapp/migrations/versions/*.py
	d=$$(mktemp -d) && CHRONOSCOPE_INSTANCE_PATH=$$d $(BIN)/python manage.py db migrate -m "initial schema" && rm -rf $$d
