"""The ``ooo-agent`` command line (``python -m ooo_agent.cli`` runs it too).

:mod:`~ooo_agent.cli.main` builds the parser and runs a subcommand; :mod:`~ooo_agent.cli.common`
holds what the subcommands share (:class:`CliError`, :func:`load_object`), and
:mod:`~ooo_agent.cli.options` the decoding options of every command that decodes with an
``HFTarget`` (``--rules``, ``--constrain-*``, ``--decline-below``). A subcommand with
many options declares them next to what it runs (``bench.command``, ``integrations._serve``,
``train.run``, ``train.eval_sidecar``, ``sidecar.server``).
"""

from __future__ import annotations

from ooo_agent.cli.common import CliError, load_object
from ooo_agent.cli.main import SUBCOMMANDS, build_parser, main

__all__ = ["SUBCOMMANDS", "CliError", "build_parser", "load_object", "main"]
