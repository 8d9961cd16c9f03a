"""Which kernel containment a call's processes get, and how a command is wrapped for it.

Implements spec/tools.md §10. Two containments, recorded in each call's ``tool/spawned``:

- ``pid-namespace``: the command runs in a PID namespace of its own, made by bubblewrap
  (``bwrap --unshare-pid --die-with-parent``; through an unprivileged user namespace when the
  runtime is not root). No process can leave a PID namespace, killing its init ends every
  process in it, and the init dies with the runtime (a parent-death signal), so the kernel,
  not a scan, is what stops the tree.
  bwrap's init sets that signal only after it has started the command, so the command is
  held behind the spawn gate until the init is seen waiting, which it does only once the
  signal is set (:func:`init_binding`).
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
from .census import EXITED_STATES

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


#: The kernel functions a process blocked in wait(2) sleeps in, as ``/proc/<pid>/wchan``
#: names them (``do_wait``; the others where a kernel build inlines it; a compiler's copy
#: of one, ``do_wait.constprop.0``, counts as the function). An exact set: a process held
#: before its wait sleeps in other functions, some with "wait" in their names
#: (``wait_for_partner``: opening a FIFO; ``folio_wait_bit_common``: a page fault).
WAIT_CHANNELS: Final = frozenset({"do_wait", "kernel_wait4", "kernel_waitid", "__do_sys_wait4"})

#: What the init of a call's namespace is seen doing (:func:`init_binding`).
InitBinding = Literal["bound", "not yet", "unseen", "gone"]


def init_binding(state: str | None, wchan: str | None) -> InitBinding:
    """Whether the init of a call's PID namespace has set its parent-death signal, from its
    ``/proc/<init>/stat`` state and ``/proc/<init>/wchan`` (spec/tools.md §10, "It dies with
    the runtime").

    bwrap's init forks the command first, then sets the signal, then waits for its children
    and never returns from that wait while the command lives: seen blocked in wait(2), it is
    ``bound``. ``not yet`` while it runs or sleeps elsewhere on the way; ``unseen`` when it
    sleeps and the kernel names no channel (``0``: the runtime may not read it, as a plain
    user's runtime may not for a moment while bwrap sets up the user namespace); ``gone``
    once it has exited (``None``: nothing to read)."""
    if state is None or wchan is None or state in EXITED_STATES:
        return "gone"
    # A compiler's copy of a function keeps its name before a dot (``do_wait.constprop.0``).
    if wchan.partition(".")[0] in WAIT_CHANNELS:
        return "bound"
    if wchan == "0" and state in ("S", "D"):
        return "unseen"
    return "not yet"


@functools.cache
def namespace_refusal() -> str | None:
    """Why this process cannot run a command in a PID namespace, or ``None`` if it can.

    Asked of the system once (one ``bwrap ... true``, a few milliseconds) and cached: a
    missing ``bwrap``, one that fails (user namespaces disabled, a seccomp filter), or a
    kernel that does not show where a process waits (:func:`init_binding` could never say
    ``bound``) is the reason, in words, that ``required`` containment gives."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "bubblewrap (bwrap) is not installed"
    if not os.path.exists("/proc/self/wchan"):  # a kernel built without CONFIG_KALLSYMS
        return "this kernel shows no /proc/PID/wchan, so bwrap's init cannot be seen bound"
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
