"""Progress bars for long calls: tqdm on a terminal or in a notebook, quiet
otherwise. The Rust call runs on a thread of its own (it releases the GIL)
and counts its steps in a ``Counter``; this thread polls it for the bar."""

from __future__ import annotations

import os
import sys
import threading
from typing import Any, Callable, TypeVar

from . import _native

T = TypeVar("T")


def _in_notebook() -> bool:
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    try:
        shell = ipython.get_ipython()  # type: ignore[attr-defined]
    except Exception:
        return False
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


def enabled(progress: bool | None = None) -> bool:
    """Whether to show a bar: ``progress`` when given, else $STORLAB_PROGRESS
    (0 or 1) when set, else on a terminal (stderr) or in a notebook."""
    if progress is not None:
        return progress
    env = os.environ.get("STORLAB_PROGRESS")
    if env is not None:
        return env not in ("", "0", "false", "no")
    try:
        tty = sys.stderr.isatty()
    except (AttributeError, ValueError):
        tty = False
    return tty or _in_notebook()


def bar_class() -> Any:
    """tqdm's notebook bar in a notebook with ipywidgets, else its text bar."""
    if _in_notebook():
        try:
            import ipywidgets  # noqa: F401

            from tqdm.notebook import tqdm as nb

            return nb
        except ImportError:
            pass
    from tqdm import tqdm as text

    return text


def run(call: Callable[[Any], T], desc: str, unit: str, progress: bool | None = None) -> T:
    """``call(counter)``, with a bar of the counter's steps when enabled."""
    if not enabled(progress):
        return call(None)
    tqdm = bar_class()
    counter = _native.Counter()
    out: dict[str, Any] = {}

    def target() -> None:
        try:
            out["value"] = call(counter)
        except BaseException as e:  # handed to the caller's thread below
            out["error"] = e

    t = threading.Thread(target=target, name=f"storlab {desc}", daemon=True)
    t.start()
    # a notebook keeps every redraw of a text bar: redraw seldom there
    every = 1.0 if _in_notebook() else 0.1
    with tqdm(desc=desc, unit=unit, leave=False, mininterval=every) as bar:
        while t.is_alive():
            t.join(0.1)
            total = counter.total()
            if total and bar.total != total:
                bar.total = total
                bar.refresh()
            step = counter.done() - bar.n
            if step > 0:
                bar.update(step)
    if "error" in out:
        raise out["error"]
    return out["value"]
