#!/usr/bin/env python3
"""client/probe.py: the command of the package shardgate (client/shardgate/probe.py), run from the
source tree without installing it (docs/tools.md §14)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from shardgate.probe import console  # noqa: E402

if __name__ == "__main__":
    sys.exit(console("probe.py"))
