"""Claude Code's `Elicitation` hook for the tests (crates/cli/tests/end_to_end/claude_code.rs):
it keeps every form an MCP server asked Claude Code to show, and answers it as a person
at the dialog would.

    python3 claude_elicitation_hook.py LOG accept|decline

Claude Code runs it with the event as JSON on stdin (the server's name, the form's
message and its requested schema). The event is appended to LOG as one line. With
`accept`, every field of the form is filled in (a boolean true, a choice its first value,
a number its minimum or 1, a text "yes"); with `decline`, the form is declined. The
answer goes back on stdout as the hook's `hookSpecificOutput`.
"""

import json
import sys

# The largest event read from stdin (a form's message and schema are a few KiB).
MAX_EVENT_BYTES = 1 << 20


def filled(schema: dict) -> dict:
    """A value for every property of a form's schema, as a person accepting it would."""
    content = {}
    for name, prop in (schema.get("properties") or {}).items():
        kind = prop.get("type")
        choices = prop.get("enum") or [c.get("const") for c in prop.get("oneOf") or []]
        if choices:
            content[name] = choices[0]
        elif kind == "boolean":
            content[name] = True
        elif kind in ("number", "integer"):
            content[name] = prop.get("minimum", 1)
        else:
            content[name] = "yes"
    return content


def main() -> int:
    log, answer = sys.argv[1], sys.argv[2]
    event = json.loads(sys.stdin.read(MAX_EVENT_BYTES))
    with open(log, "a", encoding="utf-8") as f:
        f.write(json.dumps(event) + "\n")
    output = {"hookEventName": "Elicitation", "action": answer}
    if answer == "accept":
        output["content"] = filled(event.get("requested_schema") or {})
    print(json.dumps({"hookSpecificOutput": output}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
