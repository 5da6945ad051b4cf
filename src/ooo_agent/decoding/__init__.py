"""Lossless tree speculative decoding for Hugging Face causal LMs (needs the ``hf`` extra).

Stages of one step, one module each: drafting (:mod:`.drafts`), merging drafts into a token
tree (:mod:`.tree`, :mod:`.planner`), one verification forward and the acceptance walk
(:mod:`.verify`), KV compaction (:mod:`.kv`); :mod:`.loop` runs them. Importing this package
does not import torch; its submodules do.
"""

from __future__ import annotations

__all__: list[str] = []
