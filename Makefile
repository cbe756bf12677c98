# Two commands for a fresh machine (see README.md):
#   make lab    install, then open JupyterLab on the start notebook
#   make test   install (Python and Debian packages), then run every test: pytest on tests/
#               and pytest --nbval on notebooks/
VENV ?= .venv
PY := $(VENV)/bin/python
APT_PACKAGES := texlive-latex-base texlive-latex-recommended texlive-latex-extra \
                texlive-pictures dvisvgm chromium chromium-driver
NBVAL := --nbval --nbval-sanitize-with notebooks/sanitize.cfg --nbval-cell-timeout 300

.PHONY: install system lab test demo figures

install: $(VENV)/.installed

# torch==2.13.0 first: on this kind of machine it is the CPU build lying on disk; the project's
# torch range is then already satisfied, so pip never pulls a multi-GB CUDA build.
$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e ".[test]"
	touch $@

# TeX (figures/ and TikZ export) and Chromium (the browser test), from Debian's packages.
system:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing; \
	  else echo "please install:$$missing (sudo apt-get install ...)"; fi; fi

lab: install
	$(VENV)/bin/jupyter lab notebooks/00_start_here.ipynb

demo: install
	$(PY) -m pslab demo

figures: install
	$(PY) -m pslab figures --out out/figures

test: install system
	$(PY) -m pytest -q tests $(NBVAL) notebooks
