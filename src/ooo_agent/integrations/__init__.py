"""Drop-in integrations, each behind its own extra so ``import ooo_agent`` stays light.

- :mod:`ooo_agent.integrations.langchain` — ``OoOChatModel`` (a LangChain ``BaseChatModel``)
  and ``toolset_from_langchain``; extra ``langchain``.
- :mod:`ooo_agent.integrations.server` — an OpenAI-compatible HTTP server (``create_app``,
  ``serve``, ``ooo-agent serve``); extra ``server``.

The agent loop itself needs no extra: :class:`ooo_agent.agent.Agent`.
"""

from __future__ import annotations

__all__: list[str] = []
