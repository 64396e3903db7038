"""Starts pytest with the sandbox's own plugin (rlvr_pytest) importable."""

import sys

sys.path.insert(0, "/opt/rlvr")

import pytest

raise SystemExit(pytest.main(sys.argv[1:]))
