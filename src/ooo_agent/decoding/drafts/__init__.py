"""Drafters: schema skeleton, n-gram lookup, retrieval memory, token recycling, sidecar hint."""

from __future__ import annotations

from ooo_agent.decoding.drafts.base import DraftContext, Drafter, TextCodec, TokenDraft

__all__ = ["DraftContext", "Drafter", "TextCodec", "TokenDraft"]
