"""Which kernel containment a call's processes get, and how a command is wrapped for it.

Implements spec/tools.md §10. Two containments, recorded in each call's ``tool/spawned``:

- ``pid-namespace``: the command runs in a PID namespace of its own, made by bubblewrap
  (``bwrap --unshare-pid --die-with-parent``; through an unprivileged user namespace when the
  runtime is not root). No process can leave a PID namespace, killing its init ends every
  process in it, and the init dies with the runtime (a parent-death signal), so the kernel,
  not a scan, is what stops the tree.
- ``process-group``: the fallback where the kernel refuses a namespace (no bubblewrap, user
  namespaces disabled): the call's process group plus every process found carrying its marker.

The policy (``best``, ``required``, ``process-group``) says which one a tool wants; the
probe that decides whether a namespace can be made runs once per process and is cached.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Sequence
from typing import Final, Literal

from ..log.events import Containment

__all__ = ["Containment", "ContainmentPolicy", "ContainmentUnavailable", "choose"]
#: What a tool asks for: the namespace when the kernel allows one, else the group (``best``);
#: the namespace or no run at all (``required``); the group only (``process-group``).
ContainmentPolicy = Literal["best", "required", "process-group"]
POLICIES: Final[tuple[ContainmentPolicy, ...]] = ("best", "required", "process-group")

#: Overrides the default policy of every tool of a process (spec/tools.md §10), e.g. to force
#: the fallback where a namespace would otherwise be used.
POLICY_VAR: Final = "TRIO_AGENT_CONTAINMENT"


class ContainmentUnavailable(OSError):
    """The containment asked for cannot be had: ``required``, and the kernel (or the system)
    cannot provide it; or ``$TRIO_AGENT_CONTAINMENT`` names no policy."""


def default_policy() -> ContainmentPolicy:
    """The policy a tool uses unless it names one: ``$TRIO_AGENT_CONTAINMENT`` or ``best``."""
    value = os.environ.get(POLICY_VAR, "best")
    for policy in POLICIES:
        if value == policy:
            return policy
    raise ContainmentUnavailable(
        f"{POLICY_VAR}={value!r} is not a containment policy: use one of {', '.join(POLICIES)}"
    )


def _bwrap_options() -> list[str]:
    # The whole filesystem as it is (devices too), a new PID namespace with its own /proc (so
    # ps inside sees only the call), and the parent-death signal. bwrap drops every
    # capability of a root command unless told otherwise; a root runtime's tools keep theirs.
    options = ["--dev-bind", "/", "/", "--unshare-pid", "--die-with-parent", "--proc", "/proc"]
    options.append("--new-session")
    if os.geteuid() == 0:
        options += ["--cap-add", "ALL"]
    return options


@functools.cache
def namespace_refusal() -> str | None:
    """Why this process cannot run a command in a PID namespace, or ``None`` if it can.

    Asked of the system once (one ``bwrap ... true``, a few milliseconds) and cached: a
    missing ``bwrap``, or one that fails (user namespaces disabled, a seccomp filter), is
    the reason, in words, that ``required`` containment gives."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "bubblewrap (bwrap) is not installed"
    try:
        probe = subprocess.run(
            [bwrap, *_bwrap_options(), "--", "true"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap could not be run: {exc}"
    if probe.returncode != 0:
        said = probe.stderr.decode("utf-8", "replace").strip().splitlines()
        detail = said[-1] if said else f"exit status {probe.returncode}"
        return f"bwrap could not create a PID namespace: {detail}"
    return None


def choose(policy: ContainmentPolicy) -> Containment:
    """The containment a call gets under ``policy``; raises :class:`ContainmentUnavailable`
    naming why when ``required`` cannot be met."""
    if policy == "process-group":
        return "process-group"
    refusal = namespace_refusal()
    if refusal is None:
        return "pid-namespace"
    if policy == "required":
        raise ContainmentUnavailable(f"kernel containment is required, but {refusal}")
    return "process-group"


def in_namespace(argv: Sequence[str], info_fd: int) -> list[str]:
    """``argv`` wrapped to run in a new PID namespace; bwrap writes ``{"child-pid": N}`` (the
    namespace's init, as this namespace sees it) to ``info_fd`` once the namespace exists."""
    bwrap = shutil.which("bwrap") or "bwrap"
    return [bwrap, *_bwrap_options(), "--info-fd", str(info_fd), "--", *argv]
