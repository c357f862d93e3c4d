#!/usr/bin/env python3
"""client/post_batch.py: the command of the package shardgate (client/shardgate/post_batch.py), run from the
source tree without installing it (docs/tools.md §14)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from shardgate.post_batch import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
