"""Parsing the project's source in tests."""

from __future__ import annotations

import ast
import threading


def parse(text: str, filename: str = "<unknown>") -> ast.Module:
    """``ast.parse`` in a thread of its own. CPython 3.11's parser keeps a per-thread recursion count
    that an earlier failed parse or compile in the same thread can leave off; the next ``ast.parse``
    there then raises ``SystemError: AST constructor recursion depth mismatch`` (seen once in the
    suite, on 3.11.7). A new thread starts the count at zero; a real syntax error still raises."""
    out: dict = {}

    def run():
        try:
            out["tree"] = ast.parse(text, filename)
        except BaseException as exc:  # raised again in the caller's thread
            out["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if "error" in out:
        raise out["error"]
    return out["tree"]
