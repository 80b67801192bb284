# Two commands do all the set-up: `make run` and `make test` (see README.md).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# The CPU build of PyTorch, used only when no torch is importable already (a GPU box keeps its own).
TORCH_SPEC ?= torch==2.13.0
# A local Ray listens on loopback only.
export RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER = 0
export RAY_USAGE_STATS_ENABLED = 0

.PHONY: setup sandbox browser run test test-fast clean wheelhouse

setup: $(VENV)/.installed sandbox browser

# Candidate kernels are scored only inside a bubblewrap sandbox (fitness/processes/jail.py).
sandbox:
	@if ! command -v bwrap >/dev/null 2>&1 && [ -z "$$KERNELEVO_BWRAP" ]; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			echo "installing bubblewrap (the candidate sandbox)"; \
			apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null; \
		else \
			echo "bubblewrap is missing: install it (sudo apt-get install bubblewrap; dnf install bubblewrap; \
pacman -S bubblewrap) or point KERNELEVO_BWRAP at a bwrap binary"; exit 1; \
		fi; \
	fi

# The browser tests open the HTML page in headless Chromium (tests/test_view_browser.py); without
# it they fail and say how to install it.
browser:
	@if { ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; } \
			&& [ -z "$$KERNELEVO_CHROMIUM" ]; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			echo "installing chromium and chromium-driver (the browser tests)"; \
			apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null; \
		else \
			echo "chromium is missing: the browser tests will fail until it is installed (sudo apt-get install \
chromium chromium-driver) or KERNELEVO_CHROMIUM and KERNELEVO_CHROMEDRIVER name a browser and its driver"; \
		fi; \
	fi

$(VENV)/.installed: pyproject.toml
	@if $(PYTHON) -c "import torch" 2>/dev/null; then \
		echo "set-up: creating $(VENV) (keeping the torch already installed: $$($(PYTHON) -c 'import torch; print(torch.__version__)')) and installing Triton, Ray, pandas, pyarrow, matplotlib and KernelEvo into it: about 1-2 minutes, once"; \
		$(PYTHON) -m venv --system-site-packages $(VENV); \
	else \
		echo "set-up: creating $(VENV) and installing PyTorch (CPU build, $(TORCH_SPEC)), Triton, Ray, pandas, pyarrow, matplotlib and KernelEvo into it: about 2-4 minutes, once"; \
		$(PYTHON) -m venv $(VENV) && $(BIN)/pip install -q --upgrade pip && $(BIN)/pip install -q "$(TORCH_SPEC)"; \
	fi
	$(BIN)/pip install -q -e '.[test,external]'
	@touch $@
	@echo "set-up: done ($(VENV); \`source $(BIN)/activate\` puts evo on your PATH)"

# The quickstart's results folder (`make run OUT=DIR` for another); RUN_ARGS: more `evo run`
# options (`make run RUN_ARGS="--set search.generations=1"`).
ifndef OUT
OUT := results/quickstart-$(shell date +%Y%m%d-%H%M%S)
endif
RUN_ARGS ?=

# The campaign needs no browser: chromium is set up by `make test` only.
run: $(VENV)/.installed sandbox
	$(BIN)/evo run experiments/quickstart.toml --out "$(OUT)" $(RUN_ARGS)
	@echo "next: evo report $(OUT)   (tables and figures)"
	@echo "      evo view $(OUT)     (the page in your browser, live while a campaign runs)"
	@echo "      (evo is in $(BIN): \`source $(BIN)/activate\` first)"

test: setup
	$(BIN)/python -m pytest -q --durations=40

# Campaign-level and sweep tests (marked slow, the browser's among them) left out: about 2.5
# minutes on 2 cores (`test`: 30-75, by the machine); CI runs `test`. No Chromium: only `test` sets it up.
test-fast: $(VENV)/.installed sandbox
	$(BIN)/python -m pytest -q -m "not slow"

# The offline install for a GPU box without network, built on a machine with network:
# `make wheelhouse DIR=path` (default .wheelhouse; README.md, "Running on a GPU").
DIR ?= .wheelhouse
wheelhouse:
	$(PYTHON) tools/wheelhouse.py "$(DIR)"

clean:
	rm -rf $(VENV) *.egg-info
