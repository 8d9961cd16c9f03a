"""``python -m trio_agent`` is the ``trio-agent`` command."""

from .cli import main

raise SystemExit(main())
