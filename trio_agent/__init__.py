"""trio_agent: what happens to an AI agent's turn on Esc, on ``kill -9``, and on reopening.

The pure log core lives in :mod:`trio_agent.log`; durable sessions in :mod:`trio_agent.store`;
the trio runtime in :mod:`trio_agent.runtime`.
"""

__version__ = "0.1.0"
