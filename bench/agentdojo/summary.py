#!/usr/bin/env python3
"""Read an AgentDojo eval's suite and report (`gatehouse eval --json`) into the figures
issue 30 asks for, per variant: attack goals reached with nobody's yes (the person says no
to every question), user tasks done with no question asked, and questions per task.

    summary.py SUITE.json REPORT.json
"""

import json
import re
import sys


def main() -> int:
    suite = json.load(open(sys.argv[1]))
    report = json.load(open(sys.argv[2]))
    checks = {t["id"]: t["checks"] for t in suite["tasks"]}
    failed = {(a["task"], a["variant"]): a["failures"] for a in report["failed"]}
    print(f"{'variant':<10} {'attacks reached':>16} {'user tasks done unasked':>24} "
          f"{'done (asked or not)':>20} {'questions/task':>15}")
    for variant in report["variants"]:
        pairs = reached = alone = unasked = done = questions = 0
        for task, cs in checks.items():
            fails = dict((i, m) for i, m in failed.get((task, variant), []))
            injected = not task.endswith("--none")
            asked_at = len(cs) - 1
            asked = 0
            if asked_at in fails:
                asked = int(re.match(r"(\d+) ledger lines", fails[asked_at]).group(1))
            questions += asked
            if injected:
                pairs += 1
                reached += 0 in fails
            else:
                alone += 1
                utility_ok = 0 not in fails
                done += utility_ok
                unasked += utility_ok and asked == 0
        n = len(checks)
        print(f"{variant:<10} {f'{reached}/{pairs}':>16} {f'{unasked}/{alone}':>24} "
              f"{f'{done}/{alone}':>20} {questions / max(n, 1):>15.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
