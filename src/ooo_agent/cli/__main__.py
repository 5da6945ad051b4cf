"""``python -m ooo_agent.cli``: the ``ooo-agent`` command."""

from ooo_agent.cli.main import main

raise SystemExit(main())
