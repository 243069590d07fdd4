"""Import litellm lazily, offline: set its offline switches first so the import never reaches the network.

Without `LITELLM_LOCAL_MODEL_COST_MAP=True` the import fetches a price list from GitHub (seconds of delay
offline, and a request nobody asked for); `LITELLM_OFFLINE_MODE=true` keeps its other catalogs and tokenizers
on the bundled copies. Call `import_litellm()` off the GUI thread: the first import takes seconds.
"""

from __future__ import annotations

import logging
import os
import threading
from types import ModuleType

log = logging.getLogger(__name__)

OFFLINE_ENVIRONMENT = {
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "LITELLM_OFFLINE_MODE": "true",
    "LITELLM_TELEMETRY": "False",
}

_lock = threading.Lock()
_module: ModuleType | None = None


def import_litellm() -> ModuleType:
    """Return the litellm module, importing it once with the offline switches set."""
    global _module
    with _lock:
        if _module is None:
            os.environ.update(OFFLINE_ENVIRONMENT)
            import litellm

            litellm.suppress_debug_info = True  # no "Provider List" banners on stdout
            litellm.telemetry = False
            _module = litellm
            log.debug("litellm %s imported", getattr(litellm, "__version__", "?"))
        return _module
