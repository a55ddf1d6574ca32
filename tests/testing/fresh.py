"""Code run in a fresh interpreter: what a new process imports and does, apart from the test's own."""

from __future__ import annotations

import subprocess
import sys

from .limits import PROCESS_HANG_S


def fresh_python(code: str, **kw) -> str:
    """``python -c code`` in a new interpreter (``kw``: subprocess.run's ``cwd``, ``env``); its stdout.
    It must exit 0: else the assertion shows its stderr's end."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=PROCESS_HANG_S, **kw)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout
