"""The numbered invariants of the log (spec/invariants.md), as data.

Rule ids are stable: ports and vectors refer to them. When one event breaks several rules the
checker reports the most basic one: format, then seq, then turn/step structure, then tool and
inbox rules. The exact per-type order of checks is spelled out in spec/invariants.md.
"""

from __future__ import annotations

from typing import Final

RULES: Final[dict[str, str]] = {
    "I0": "every line after the header is a well-formed event of a known type",
    "I1": "seq equals the event's index, contiguous from 0",
    "I2": "turn/start only when no turn is open",
    "I3": "turns are numbered 1, 2, ... across the whole log",
    "I4": "turn/end names the open turn",
    "I5": "turn/end only when no step is open (step closes before turn)",
    "I6": "step/start names the open turn, no step is open, steps are numbered 1, 2, ... per turn",
    "I7": "nothing of a turn follows its turn/end (no zombie writes)",
    "I8": "a step-scoped event names the open turn and the open step",
    "I9": "within a step: input, then model output, then at most one assistant/message; "
    "an interrupted message carries no tool calls",
    "I10": "tool-call ids are unique in the log",
    "I11": "tool/call answers a requested call of this step once, repeating its name and arguments",
    "I12": "an approval bracket precedes its call's tool/call; a refused call is never dispatched",
    "I13": "tool/spawned and tool/output only between a call's tool/call and its tool/result",
    "I14": "tool/result answers a requested call of this step, exactly once",
    "I15": "result codes are keyed to the dispatch marker",
    "I16": "at step/end every requested call of the step has its tool/result",
    "I17": "repair placeholders appear only as the closers of a turn that ends interrupted",
    "I18": "inbox splices apply to the inbox projection (bounds, unique ids, no no-ops)",
    "I19": "claims happen only inside an open turn, between steps, from the head of a queue",
}

#: Codes a tool/result may carry, and who may write them (spec/log.md, "tool/result").
NOT_DISPATCHED_CODES: Final = frozenset({"ABORTED_BEFORE_DISPATCH", "DENIED", "TOOL_NOT_STARTED"})
DISPATCHED_CODES: Final = frozenset({"ABORTED", "TOOL_FAILED", "TOOL_OUTCOME_UNKNOWN"})
REPAIR_ONLY_CODES: Final = frozenset({"TOOL_OUTCOME_UNKNOWN", "TOOL_NOT_STARTED"})
