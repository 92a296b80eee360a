"""The person's answers to a form, typed as the form's schema asks: shared by the Python
peers that answer elicitations (py_mcp_client.py, fastmcp_tasks_client.py)."""

from typing import Any


def typed(value: str, prop: dict) -> Any:
    """`value` as the JSON type `prop` names (an array from comma-separated values)."""
    kind = prop.get("type")
    if kind == "integer":
        return int(value)
    if kind == "number":
        return float(value)
    if kind == "boolean":
        return value.lower() in ("true", "yes", "y", "1")
    if kind == "array":
        return [v for v in value.split(",") if v]
    return value
