# Two commands for a fresh clone: `make serve` and `make test`. Everything else is plumbing.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml | sha1sum | cut -c1-12)
PORT   ?= 8000

.PHONY: serve test site dev bench chromium clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	rm -f $(VENV)/.installed-*
	touch $@

# Debian's Chromium for the browser tests (Playwright cannot download browsers here).
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing Debian's chromium for the browser tests"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq chromium >/dev/null; }

test: $(STAMP) chromium
	$(PY) -m pytest

site: $(STAMP)
	$(PY) build/make_site.py

serve: site
	$(PY) build/serve.py --port $(PORT)

# the page under `panel serve` with autoreload, for working on web/
dev: $(STAMP)
	$(VENV)/bin/panel serve web/app.py --dev --port $(PORT) --show

bench: $(STAMP)
	$(PY) benchmarks/bench_core.py

clean:
	rm -rf _site dist .pytest_cache
