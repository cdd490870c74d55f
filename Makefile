# The two commands: `make run` (set up, prepare the built-in stimuli, serve) and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 5000
PG_URL ?= postgresql+psycopg://postgres@127.0.0.1:5432/test

.PHONY: run test lint docs screenshots setup lock debian postgres migration

# Development mode: a random secret key kept in instance/secret_key, simulated participants allowed.
# Printed links follow HOST and PORT (`make run PORT=8080`); a server on 0.0.0.0 is reached
# on 127.0.0.1 from this machine.  With no researcher account yet, a local admin is created and
# its password printed once.
run: export CHRONOSCOPE_DEVELOPMENT = true
run: export CHRONOSCOPE_PUBLIC_URL ?= http://$(if $(filter 0.0.0.0,$(HOST)),127.0.0.1,$(HOST)):$(PORT)
run: setup
	$(BIN)/python manage.py init-db
	$(BIN)/python manage.py stimuli generate
	$(BIN)/python manage.py study demo --local-admin
	$(BIN)/python manage.py run --host $(HOST) --port $(PORT)

# Three workers on two cores: the browser tests mostly wait on the page's own clock, and a
# third worker's tests fill those waits (docs/measurements.md, The test suite).
test: setup debian postgres lint docs
	CHRONOSCOPE_TEST_POSTGRES_URL=$(PG_URL) $(BIN)/python -m pytest -n 3 --dist loadfile

# ruff over the whole tree (rules in pyproject.toml); mypy over every product package, no module
# exempt, with --ignore-missing-imports (torch, av, plotly, statsmodels ship no stubs).
lint: setup
	$(BIN)/ruff check .
	$(BIN)/mypy --ignore-missing-imports experiments analysis webapp

# The documentation site (mkdocs.yml), built strictly into a temporary folder: a broken link, a
# missing screenshot or a reference page the code no longer builds fails.
docs: setup
	d=$$(mktemp -d) && $(BIN)/python -m mkdocs build --strict --quiet --site-dir $$d; \
	  status=$$?; rm -rf $$d; exit $$status

# Retake docs/walkthrough.md's screenshots (then commit docs/img/walkthrough/).
screenshots: setup debian
	CHRONOSCOPE_SCREENSHOTS=docs $(BIN)/python -m pytest -q -n 0 tests/browser/test_walkthrough_screenshots.py

setup: $(VENV)/.installed static/vendor/.installed

# Exact versions from requirements.txt, then the project itself without resolving again.
# torch and torchvision come from the machine's local package index (pip's configuration).
$(VENV)/.installed: pyproject.toml requirements.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check -r requirements.txt
	$(BIN)/python -m pip install -q --disable-pip-version-check --no-deps -e .
	touch $@

# Re-resolve requirements.txt from pyproject.toml's ranges (after changing them), keeping
# every pin that still fits. pip-compile resolves with pip, so it sees the same local index;
# LOCK_PINS holds the torch pair that imports together (a newer torchvision is a CUDA download
# that may not). setuptools is locked for tests/test_packaging.py, which builds offline.
LOCK_PINS := torch==2.14.1 torchvision==0.29.1
lock: $(VENV)/.installed
	CUSTOM_COMPILE_COMMAND="make lock" $(BIN)/pip-compile -q --extra postgres,openai,models,dev \
	  --strip-extras --no-emit-index-url --no-emit-find-links --no-emit-trusted-host \
	  --unsafe-package pip $(addprefix --upgrade-package ,$(LOCK_PINS)) \
	  --output-file requirements.txt pyproject.toml

# Browser libraries come from npm at install time and are never committed.
static/vendor/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --silent
	mkdir -p static/vendor
	cp node_modules/sortablejs/Sortable.min.js static/vendor/
	touch $@

# What the tests run from Debian, installed once (no download at test time):
# - the browsers of the whole-session tests: Chromium for Playwright (tests/browser), Firefox
#   ESR for puppeteer-core and WebKitGTK's WebKitWebDriver with MiniBrowser for Selenium
#   (tests/engines), and Xvfb for their windows. gstreamer1.0-libav (and the libavcodec it
#   pulls in) decodes the H.264 clips in WebKitGTK and Firefox; both only recommend it, and
#   recommends may be switched off;
# - R and lme4, the gold standard the crossed GLMM is tested against (tests/analysis/
#   test_crossed.py runs glmer through Rscript; bench/glmm_vs_lme4.py the grid);
# - nginx, the production stack's proxy (tests/webapp/test_deploy.py starts it on loopback).
DEBIAN_PACKAGES := chromium firefox-esr webkit2gtk-driver xvfb gstreamer1.0-libav \
  r-base-core r-cran-lme4 nginx
debian:
	@missing=$$(for p in $(DEBIAN_PACKAGES); do \
	  dpkg-query -W -f '$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || echo $$p; done); \
	  test -z "$$missing" || (apt-get update -q && apt-get install -y -q $$missing)

# The database tests also run against a real PostgreSQL server; start the local one if it is down.
postgres:
	@pg_isready -q -h 127.0.0.1 -p 5432 || \
	  (pg_ctlcluster --skip-systemctl-redirect $$(ls /etc/postgresql) main start && sleep 2) || \
	  echo "PostgreSQL is not available; its tests will fail under CI=true"

# A new migration from the changes to the models: migrations are append-only, never rewritten
# (the released ones have run on real databases, and some move data). The models are compared
# against a scratch database upgraded to the current head; review the file before committing.
migration: setup
	@test -n "$(MESSAGE)" || { echo 'usage: make migration MESSAGE="what changed"'; exit 2; }
	d=$$(mktemp -d) && export CHRONOSCOPE_INSTANCE_PATH=$$d CHRONOSCOPE_DEVELOPMENT=true && \
	  $(BIN)/python manage.py db upgrade && $(BIN)/python manage.py db migrate -m "$(MESSAGE)"; \
	  status=$$?; rm -rf $$d; exit $$status
