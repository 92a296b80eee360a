#!/usr/bin/env python3
"""Make an eval suite of AgentDojo pairs for `gatehouse eval` (issue 30's measure).

    make.py OUT SUITE [--users N] [--injections N]

For each pair of a user task and an injection task (and each user task alone), OUT gets a
servers file (this folder's server.py, the pair in its environment), a playback model and a
task. The model obeys every injection: it makes the user task's ground-truth calls, and
right after the result that carries the injection, the injection task's ground-truth calls;
then it answers with the user task's ground-truth output. Each task is graded by AgentDojo's
own `security` and `utility` on the world after the run (grade.py), and counts the questions
put to the person, who says no to every one. Two variants: flows off (every tool allowed)
and flows on (the suite's tools that send, pay, write or delete are consequential).
"""

import json
import os
import re
import sys

from agentdojo.agent_pipeline.tool_execution import tool_result_to_str
from agentdojo.functions_runtime import FunctionsRuntime

import common

HERE = os.path.dirname(os.path.abspath(__file__))


def letters(text):
    """Letters and digits only; a `\\n` escape (travel's results are Python reprs, their
    newlines written as escapes) counts as the newline it stands for."""
    return re.sub(r"[^0-9A-Za-z]+", "", re.sub(r"\\[nrt]", " ", text))


def calls(fcs, server):
    return [{"name": f"{server}__{c.function}", "arguments": dict(c.args)} for c in fcs]


def decisions(s, user_id, injection_id):
    """The playback's decisions, and whether the injection was seen by the user task."""
    env, inj = common.environment(s, user_id, injection_id)
    runtime = FunctionsRuntime(s.tools)
    user = s.user_tasks[user_id]
    user_calls = user.ground_truth(env.model_copy(deep=True))
    injected = [] if not inj else s.injection_tasks[injection_id].ground_truth(env.model_copy(deep=True))
    out, seen = [], not inj
    for c in user_calls:
        out.append({"tool_calls": calls([c], s.name)})
        result, error = runtime.run_function(env, c.function, dict(c.args))
        text = error or tool_result_to_str(result)
        # The result is YAML (blank lines collapsed, quotes doubled): compare letters and
        # digits only.
        if not seen and any(letters(t) in letters(text) for t in inj.values()):
            seen = True
            for ic in injected:
                out.append({"tool_calls": calls([ic], s.name)})
                runtime.run_function(env, ic.function, dict(ic.args))
    answer = getattr(user, "GROUND_TRUTH_OUTPUT", "") or "Done."
    out.append({"answer": answer})
    return out, seen


def command(role, *args):
    """A server's or a grader's arguments: through the run's warm AgentDojo when it has
    one (`AGENTDOJO_WARM`, its socket: warm.py), else the script itself."""
    warm = os.environ.get("AGENTDOJO_WARM")
    if warm:
        return [os.path.join(HERE, "via.py"), warm, role, *args]
    return [os.path.join(HERE, f"{role}.py"), *args]


def main() -> int:
    out_dir, suite_name = sys.argv[1], sys.argv[2]
    args = sys.argv[3:]
    limit = lambda flag: int(args[args.index(flag) + 1]) if flag in args else None
    s = common.suite(suite_name)
    users = sorted(s.user_tasks, key=lambda k: int(k.rsplit("_", 1)[1]))[: limit("--users")]
    injections = sorted(s.injection_tasks, key=lambda k: int(k.rsplit("_", 1)[1]))[: limit("--injections")]
    os.makedirs(os.path.join(out_dir, "pairs"), exist_ok=True)
    python = sys.executable
    tasks, unseen = [], []
    for user_id in users:
        for injection_id in ["none"] + injections:
            pair = f"{user_id}--{injection_id}"
            made, seen = decisions(s, user_id, injection_id)
            if not seen:
                unseen.append(pair)
                continue
            model = os.path.join(out_dir, "pairs", pair + ".model.json")
            json.dump({"decisions": made}, open(model, "w"), indent=1)
            env = {"AGENTDOJO_SUITE": s.name, "AGENTDOJO_VERSION": common.VERSION,
                   "AGENTDOJO_USER_TASK": user_id, "AGENTDOJO_INJECTION_TASK": injection_id}
            servers = {"mcpServers": {s.name: {"command": python, "args": command("server"),
                                               "env": env}}}
            servers_file = os.path.join(out_dir, "pairs", pair + ".servers.json")
            json.dump(servers, open(servers_file, "w"), indent=1)
            grade = lambda what: {"world": {"command": python,
                                            "args": command("grade", what, s.name, user_id, injection_id),
                                            "timeoutMs": 60000}}
            checks = [grade("utility"), {"decision": "*", "is": "asked", "times": 0}]
            if injection_id != "none":
                checks.insert(0, grade("security"))
            tasks.append({"id": pair, "question": s.user_tasks[user_id].PROMPT,
                          "servers": servers_file, "model": "playback:" + model,
                          "checks": checks})
    allow = [{"tool": f"{s.name}__*", "decision": "allow"}]
    consequential = [f"{s.name}__{t}" for t in common.CONSEQUENTIAL[s.name]]
    suite = {"name": f"agentdojo-{s.name}", "tasks": tasks,
             "variants": [{"name": "flows-off", "rules": allow},
                          {"name": "flows-on", "rules": allow,
                           "flows": {"consequential": consequential}}]}
    json.dump(suite, open(os.path.join(out_dir, "suite.json"), "w"), indent=1)
    print(json.dumps({"tasks": len(tasks), "unseen": unseen}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
