"""``python -m ooo_agent.train target|sidecar --data rows.jsonl|DATA_DIR --out DIR [--recipe R]``."""

from __future__ import annotations

import sys

from ooo_agent.train.run import main

sys.exit(main())
