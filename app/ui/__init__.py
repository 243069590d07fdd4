"""Desktop window (the only package that imports PySide6)."""

from app.ui.refcount_guard import install as _install_refcount_guard

_install_refcount_guard()  # PySide6 6.12.0 on Python 3.11 loses references to None/True; see refcount_guard.py
