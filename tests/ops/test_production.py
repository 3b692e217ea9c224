"""The production path (issue 14): config.settings.production passes `check --deploy` with the documented
variables, refuses to start without them, and every variable the code reads is in docs/operating.md; the
API documentation page and the version string."""
import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from config import __version__

ROOT = Path(__file__).resolve().parent.parent.parent


def production_env(**extra):
    from django.conf import settings

    db = settings.DATABASES["default"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "MEMOIR_"))}
    env.update({
        "DJANGO_SETTINGS_MODULE": "config.settings.production",
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(48),
        "DJANGO_ALLOWED_HOSTS": "memoir.example.org",
        "DJANGO_CSRF_TRUSTED_ORIGINS": "https://memoir.example.org",
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        "REDIS_URL": "redis://127.0.0.1:6399/0",
    })
    env.update(extra)
    return env


def manage(*args, env):
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)


def test_check_deploy_is_clean_under_the_production_settings():
    done = manage("check", "--deploy", "--fail-level", "WARNING", env=production_env())
    assert done.returncode == 0, done.stdout + done.stderr
    assert "System check identified no issues" in done.stdout


@pytest.mark.parametrize("missing", ["DJANGO_SECRET_KEY", "DJANGO_ALLOWED_HOSTS", "DATABASE_URL", "REDIS_URL"])
def test_production_refuses_to_start_without_a_required_variable(missing):
    env = production_env()
    env.pop(missing)
    done = manage("check", env=env)
    assert done.returncode != 0 and f"{missing} must be set" in done.stderr


def code_variables():
    """Every environment variable named in settings, config, the apps and scripts."""
    found = set()
    pattern = re.compile(r"""(?:env(?:\.\w+)?\(|os\.environ(?:\.get|\.setdefault)?[\[(]|getenv\()\s*["']([A-Z][A-Z0-9_]+)["']""")
    for folder in ("config", "governance", "memory", "formation", "api", "scripts"):
        for path in (ROOT / folder).rglob("*.py"):
            found |= set(pattern.findall(path.read_text()))
    for path in (ROOT / "scripts").glob("*.sh"):
        found |= set(re.findall(r"\$\{((?:MEMOIR_|DJANGO_)[A-Z0-9_]+|DATABASE_URL|REDIS_URL)", path.read_text()))
    return found - {"PATH"}


def test_every_environment_variable_is_documented():
    documented = set(re.findall(r"`([A-Z][A-Z0-9_]+)`", (ROOT / "docs" / "operating.md").read_text()))
    variables = code_variables()
    assert {"DATABASE_URL", "MEMOIR_METRICS_TOKEN", "MEMOIR_LOG_FORMAT", "DJANGO_SECRET_KEY"} <= variables
    missing = sorted(variables - documented - {"DJANGO_ALLOW_ASYNC_UNSAFE"})
    assert missing == [], f"add these to docs/operating.md: {missing}"


@pytest.mark.live
def test_the_api_documentation_page_serves_its_assets_locally(live_server_url):
    page = httpx.get(live_server_url + "/v1/docs", timeout=30)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assets = re.findall(r"""(?:src|href)=["']([^"']+)["']""", page.text)
    assert assets and not [a for a in assets if re.match(r"^(https?:)?//", a)], assets
    for asset in assets:
        assert httpx.get(live_server_url + asset, timeout=30).status_code == 200, asset
    assert "/v1/schema" in page.text
    schema = httpx.get(live_server_url + "/v1/schema", timeout=30).json()
    assert schema["info"]["version"] == __version__
