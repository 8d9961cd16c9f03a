"""Raw log lines (no header, no newline) that open a step and dispatch one call, for tests
that write a chunk or an output line at the place it is valid, in whatever form."""

from __future__ import annotations

from typing import Final

#: seq 0-4: a message queued and claimed, turn 1 and its step 1 open, the user message in.
OPEN_STEP: Final = [
    b'{"seq":0,"time":1,"type":"agent/inbox/spliced","data":{"target":"next-turn","start":0,'
    b'"inserted":[{"id":"m1","text":"go","source":"user"}]}}',
    b'{"seq":1,"time":1,"type":"turn/start","data":{"turn":1}}',
    b'{"seq":2,"time":1,"type":"agent/inbox/spliced","data":{"target":"next-turn","start":0,'
    b'"removedCount":1,"inserted":[]}}',
    b'{"seq":3,"time":1,"type":"step/start","data":{"turn":1,"step":1}}',
    b'{"seq":4,"time":1,"type":"user/message","data":{"turn":1,"step":1,'
    b'"message":{"id":"m1","text":"go","source":"user"}}}',
]
#: seq 5-6, after OPEN_STEP: the assistant asks for bash call c1 and it is dispatched.
CALL_DISPATCHED: Final = [
    b'{"seq":5,"time":1,"type":"assistant/message","data":{"turn":1,"step":1,"message":{"id":"a",'
    b'"content":[{"type":"tool-call","id":"c1","name":"bash","arguments":{}}]}}}',
    b'{"seq":6,"time":1,"type":"tool/call","data":{"turn":1,"step":1,"callId":"c1",'
    b'"name":"bash","arguments":{}}}',
]
