# Two commands for a fresh machine (see README.md):
#   make lab    install, then open JupyterLab at the repository root on the start notebook
#   make present  install, then the dashboards as an app (Voila), without the exercise cells
#   make test   install (Python and Debian packages), then run every test: pytest on tests/
#               and pytest --nbval on notebooks/
#   make docs   install, then build the documentation site into docs/_build/html (offline)
VENV ?= .venv
PY := $(VENV)/bin/python
APT_PACKAGES := texlive-latex-base texlive-latex-recommended texlive-latex-extra \
                texlive-pictures dvisvgm poppler-utils chromium chromium-driver
NBVAL := --nbval --nbval-sanitize-with notebooks/sanitize.cfg --nbval-cell-timeout 300

START := notebooks/00_start_here.ipynb
# JupyterLab refuses to run as root unless told: root is usual in a container or on a
# course server, so say it only there. LAB_ARGS adds options (--no-browser, --port=...).
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root)
LAB_ARGS ?=
export TORCH_INDEX  # a CUDA wheel index for tools/install_torch.py (see README)

.PHONY: install system lab present test demo figures screenshots docs

install: $(VENV)/.installed

# torch==2.13.0 first (tools/install_torch.py): without an NVIDIA GPU it is a CPU build (a
# local wheel where one exists, else PyTorch's CPU-only index); the project's torch range is
# then already satisfied, so pip never pulls a multi-GB CUDA build onto a CPU machine. The
# install also compiles the two inlined loops (setup.py); an edit to one compiles it again.
$(VENV)/.installed: pyproject.toml setup.py tools/install_torch.py pslab/fastloop.py pslab/fastduplex.py
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) tools/install_torch.py
	$(PY) -m pip install -q -e ".[test]"
	touch $@

# TeX (figures/ and TikZ export) and Chromium (the browser test), from Debian's packages.
system:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then apt-get -o DPkg::Lock::Timeout=600 update -q && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends $$missing; \
	  else echo "please install:$$missing (sudo apt-get install ...)"; fi; fi

# The root of the repository (README, library and notebooks in the file browser), opened on
# the start notebook, which is trusted first (its outputs show without a "not trusted" prompt).
lab: install
	$(VENV)/bin/jupyter trust notebooks/[0-9][0-9]_*.ipynb
	$(VENV)/bin/jupyter lab --ServerApp.root_dir="$(CURDIR)" \
	  --LabApp.default_url=/lab/tree/$(START) $(ROOT_FLAG) $(LAB_ARGS)

# Presenter view: each figure's dashboard and replay as an app, no code, no quiz cells;
# trusted first, as `make lab` does (no "not trusted" warning).
present: install
	$(VENV)/bin/jupyter trust notebooks/present.ipynb
	$(VENV)/bin/voila notebooks/present.ipynb $(LAB_ARGS)

# Each dashboard at 1024x768 with the file browser open, as the browser test sees it.
screenshots: install system
	rm -rf out/shots && PSLAB_BROWSER_SHOTS=out/shots $(PY) -m pytest -q tests/test_notebooks_browser.py tests/test_saved_and_presenter_browser.py
	mkdir -p docs/screenshots && cp out/shots/*_1024.png out/shots/*_1024_full.png docs/screenshots/

# The documentation site (docs/conf.py: Sphinx, MyST-NB, sphinx-book-theme): the teacher's guide,
# the notebooks with their saved outputs (not run), the API reference from the docstrings and the
# benchmark tables; offline, into docs/_build/html (git-ignored). tests/test_docs_site.py builds
# it with warnings as errors and opens every page in Chromium.
docs: install
	$(PY) -m sphinx -b html -q docs docs/_build/html
	@echo "the site: $(CURDIR)/docs/_build/html/index.html"

demo: install
	$(PY) -m pslab demo

# Every picture README.md and the notebooks embed, re-made in place (docs/figures from the
# replays, notebooks/img from the seeds in figures/); tests/test_docs_figures.py fails when a
# committed one differs from what the code draws. Screenshots: `make screenshots`.
figures: install system
	$(PY) -m pslab figures --docs

test: install system
	$(PY) -m pytest -q tests $(NBVAL) notebooks
