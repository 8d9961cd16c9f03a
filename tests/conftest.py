"""Root of the test tree. Its presence puts ``tests/`` on ``sys.path`` (pytest's rootdir-relative
``prepend`` import mode), so every test folder can import the shared helpers of
``tests/support/`` as ``from support.<module> import ...``.

It also loads the Hypothesis profile every property runs under: no deadline. Hypothesis's
default fails an example that takes longer than 200 ms, a wall-clock figure that would decide
a verdict on a loaded host; a ``@settings(...)`` that names no deadline inherits this one.

And it loads :mod:`support.harness_report`, which prints the harness figures at the end."""

from hypothesis import settings

pytest_plugins = ["support.harness_report"]

settings.register_profile("trio_agent", deadline=None)
settings.load_profile("trio_agent")
