"""What the Python client peers (py_mcp_client.py, py_url_client.py,
fastmcp_tasks_client.py) share: the person's answers to a form, typed as the form's
schema asks, SDK models as JSON, and a failure as one line."""

from typing import Any


def dump(model: Any, *, drop: str = "unset") -> Any:
    """The model as JSON, without the fields left unset (as it was on the wire: no SDK
    defaults added) or, with `drop="none"`, without those that are None."""
    if model is None:
        return None
    if hasattr(model, "model_dump"):
        return model.model_dump(mode="json", by_alias=True, exclude_unset=drop == "unset", exclude_none=drop == "none")
    return model


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


def innermost(e: BaseException) -> str:
    """A failure as one line: the first of an exception group's, as deep as it goes."""
    inner = e
    while isinstance(inner, BaseExceptionGroup) and inner.exceptions:
        inner = inner.exceptions[0]
    return f"{type(inner).__name__}: {inner}"
