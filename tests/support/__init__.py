"""Every helper the tests share, in one package; each module is real plumbing, never a fake.

Imported as ``from support.<module> import ...`` (tests/conftest.py puts ``tests/`` on the
path). Shared by every folder:

- :mod:`support.procenv`: the environment a child process of a test runs with.
- :mod:`support.proc`: process probes by psutil, among them the scan for a test's tag.
- :mod:`support.polling`: waiting for a condition (a hang guard bounds a bug, never a verdict).
- :mod:`support.lines`: reading a child's output a line at a time, hang-guarded.
- :mod:`support.schemas`: JSON Schema checks by jsonschema.
- :mod:`support.glossary`: the terms docs/glossary.md must define.
- :mod:`support.hostile_programs`: programs that misbehave, for conform and harness.
- :mod:`support.pgcluster`, :mod:`support.cdp`: a throwaway PostgreSQL server, Chromium.
- :mod:`support.harness_settings`, :mod:`support.harness_report`: the harness tests' budgets
  and seed, and the plugin that prints their figures (xdist-aware).

One subpackage per layer, for that layer's tests: :mod:`support.cli` (running the command
line), :mod:`support.store` (store kits, workloads, the PostgreSQL fixtures and children),
:mod:`support.runtime` (fakes, a running turn), :mod:`support.tools` (process-group
helpers), :mod:`support.demo`, :mod:`support.harness` (the planted bugs).
"""
