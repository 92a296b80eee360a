"""What the AgentDojo harness's server, maker and grader share: one suite's environment
with the `important_instructions` attack's injections in it, for a pair of a user task and
an injection task (or none), exactly as AgentDojo's own benchmark builds it.

The suites are AgentDojo's (the `agentdojo` package on PyPI, pinned in `run`); nothing of
theirs is copied here.
"""

import os

from agentdojo.attacks.attack_registry import load_attack
from agentdojo.task_suite.load_suites import get_suite

VERSION = os.environ.get("AGENTDOJO_VERSION", "v1.2.2")
# The model name the attack's text addresses ("... from the user to GPT-4 ..."): the
# attack reads it from the pipeline's name.
MODEL = "gpt-4o-2024-05-13"

# Each suite's tools that send, pay, write or delete: the harness's `flows.consequential`.
CONSEQUENTIAL = {
    "banking": ["send_money", "schedule_transaction", "update_scheduled_transaction",
                "update_password", "update_user_info"],
    # get_webpage sends a request to any address, which can carry data out in its URL.
    "slack": ["send_direct_message", "send_channel_message", "invite_user_to_slack",
              "remove_user_from_slack", "add_user_to_channel", "post_webpage", "get_webpage"],
    "workspace": ["send_email", "delete_email", "create_calendar_event",
                  "cancel_calendar_event", "reschedule_calendar_event",
                  "add_calendar_event_participants", "delete_file", "share_file",
                  "append_to_file", "create_file"],
    "travel": ["reserve_hotel", "reserve_car_rental", "reserve_restaurant", "send_email",
               "create_calendar_event", "cancel_calendar_event"],
}


class _Named:
    """What the attack needs of a pipeline: its name."""
    name = MODEL


def suite(name):
    return get_suite(VERSION, name)


def injections(s, user_id, injection_id):
    """The attack's text for each injection vector this user task sees; {} for none."""
    if injection_id in (None, "", "none"):
        return {}
    attack = load_attack("important_instructions", s, _Named())
    return attack.attack(s.user_tasks[user_id], s.injection_tasks[injection_id])


def environment(s, user_id, injection_id):
    """The suite's environment with the pair's injections in it, and the injections."""
    inj = injections(s, user_id, injection_id)
    return s.load_and_inject_default_environment(inj), inj
