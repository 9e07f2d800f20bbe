"""Installs the storage guard in every Python process the test suite starts
(tests/support/storage_guard.py says what it guards)."""

import os

if os.environ.get("SEALDESK_STORAGE_GUARD_LOG"):
    try:
        from tests.support.storage_guard import install
    except ImportError:  # a process started without the checkout on its path
        pass
    else:
        install(log_offences=True)
