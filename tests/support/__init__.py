"""Helpers shared by more than one test folder; each module is real plumbing, never a fake.

- :mod:`support.procenv`: the environment a child process of a test runs with.
- :mod:`support.proc`: ``/proc`` probes, among them the scan for processes carrying a test's tag.
- :mod:`support.polling`: waiting for a condition (a hang guard bounds a bug, never a verdict).
- :mod:`support.lines`: reading a child's output a line at a time, hang-guarded.
- :mod:`support.glossary`: the terms docs/glossary.md must define.
- :mod:`support.harness_settings`: the budgets and the seed of the harness tests.
- :mod:`support.harness_report`: the plugin that prints the harness figures (xdist-aware).
"""
