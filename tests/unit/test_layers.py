"""The one-way layers (docs/architecture.md) are checked, not hoped for: the import-linter contract in
pyproject.toml passes on this tree, and the same contract fails on a copy of it with one upward import added.

No database: `lint-imports` reads the source files, it imports none of them.
"""
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("config", "api", "console", "governance", "formation", "notifications", "memory", "core")
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def lint_imports(cwd):
    return subprocess.run([str(LINT_IMPORTS), "--no-cache"], cwd=cwd, capture_output=True, text=True, timeout=300)


def test_the_layers_contract_is_kept():
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 1 kept, 0 broken." in result.stdout


def test_an_upward_import_breaks_the_layers_contract(tmp_path):
    for package in PACKAGES:
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    # memory sits below api: one module of memory importing api is the violation the contract exists for.
    (tmp_path / "memory" / "upward_probe.py").write_text('"""An upward import."""\nfrom api import errors  # noqa: F401\n')
    result = lint_imports(tmp_path)
    assert result.returncode != 0, result.stdout + result.stderr
    assert "Contracts: 0 kept, 1 broken." in result.stdout
    assert "memory.upward_probe -> api.errors" in result.stdout
