# longhaul: `make demo` runs the main job, `make test` runs every check CI runs.
.DEFAULT_GOAL := help
SHELL := /bin/bash

# uv from PATH, or the copy pip installed as a module when ~/.local/bin is not on PATH.
UV := $(shell command -v uv 2>/dev/null || echo python3 -m uv)
RUN := $(UV) run --locked --quiet
CARGO_TEST_EXCLUDE := --exclude longhaul-schedule-py

.PHONY: help setup setup-test demo test lint test-rust test-python bench sim-validate ns3-answers fuzz clean

help:
	@echo "make setup   install what longhaul needs (uv, Python packages, the Rust extension)"
	@echo "make demo    the main job: reserve the four USN loops, measure TCP on them, simulate the 2008 study, write the report (root)"
	@echo "make test    every check: rustfmt, clippy, cargo test, ruff, mypy, pytest"
	@echo "make lint    formatting and static checks only"
	@echo "make bench   the benchmarks, as JSON (bench wan needs root)"
	@echo "make sim-validate  longhaul-sim against ns-3, the kernel and USN's profiles (JSON)"
	@echo "make ns3-answers   run ns-3 on the validation's cases again and record its answers"
	@echo "make fuzz    fuzz the network parsers, FUZZ_SECONDS each (nightly Rust and cargo-fuzz)"

setup:
	@scripts/setup.sh
	$(UV) sync --locked

setup-test: setup
	@scripts/setup.sh --test

# Needs root (namespaces); about 4 minutes on two cores. Prints the report's path.
demo: setup
	$(RUN) longhaul demo

lint: setup
	cargo fmt --all --check
	cargo clippy --locked --workspace --all-targets -- -D warnings
	$(RUN) ruff check src tests
	$(RUN) ruff format --check src tests
	$(RUN) mypy

test-rust: setup-test
	cargo test --locked --workspace $(CARGO_TEST_EXCLUDE)

test-python: setup-test
	$(RUN) pytest

test: lint test-rust test-python

# bench sim times ns-3 beside the simulator (vs_ns3_speedup): ns-3 is installed first (as
# root; without it bench sim says it skipped that comparison, and the rest runs).
bench: setup
	-@scripts/setup.sh --ns3
	$(RUN) longhaul bench paths --json
	$(RUN) longhaul bench api --json
	$(RUN) longhaul bench wan --json
	$(RUN) longhaul bench sim --json

# Coverage-guided fuzzing of what reads bytes from a network (fuzz/fuzz_targets): needs
# the nightly toolchain and cargo-fuzz (rustup toolchain install nightly; cargo install
# cargo-fuzz). Not part of `make test`: proptest covers the same parsers there.
FUZZ_SECONDS ?= 60
fuzz:
	@for target in accel_frames encryptor_open; do \
		cargo +nightly fuzz run $$target -- -max_total_time=$(FUZZ_SECONDS) || exit 1; \
	done

# Against ns-3's recorded answers (data/ns3/answers.json): ns-3 itself is not needed.
sim-validate: setup
	$(RUN) longhaul sim validate --json

# Measure ns-3's answers again (three and a half hours or so of two cores) and record them for everyone.
ns3-answers: setup
	@scripts/setup.sh --ns3
	$(RUN) longhaul sim validate --parts ns3 --rerun-ns3 --json > /dev/null
	$(RUN) python -m longhaul.sim.validation

clean:
	rm -rf .venv target .pytest_cache .mypy_cache .ruff_cache .hypothesis src/longhaul/*.so
