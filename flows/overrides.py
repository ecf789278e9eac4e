"""Any config model from its embedded defaults, a TOML file and ``--set key.path=value`` overrides, with
each mistake as one line naming the setting. Apart from the models (``flows.config``), whose modules are
heavy, so a command can refuse a bad setting before it imports what it runs."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from harness.config import ConfigError

M = TypeVar("M", bound=BaseModel)


def _parse_value(raw: str) -> Any:
    """TOML's own value syntax (numbers, booleans, quoted strings, arrays); bare words are strings."""
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        out[key] = _merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def apply_override(data: dict[str, Any], assignment: str) -> dict[str, Any]:
    if "=" not in assignment:
        raise ConfigError(f"override {assignment!r} is not key.path=value")
    path, raw = assignment.split("=", 1)
    nested: dict[str, Any] = {}
    cursor = nested
    keys = path.strip().split(".")
    for key in keys[:-1]:
        cursor = cursor.setdefault(key, {})
    cursor[keys[-1]] = _parse_value(raw.strip())
    return _merge(data, nested)


def load_model(model: type[M], path: Path | None = None, overrides: list[str] | None = None, **shortcuts: Any) -> M:
    """Any config model from embedded defaults, a TOML file, ``--set`` overrides and CLI shortcuts."""
    data: dict[str, Any] = {}
    if path is not None:
        try:
            data = tomllib.loads(Path(path).read_text())
        except (OSError, tomllib.TOMLDecodeError) as err:
            reason = err.strerror if isinstance(err, OSError) else err
            raise ConfigError(f"config file {path}: {reason}") from err
    for assignment in overrides or []:
        data = apply_override(data, assignment)
    for dotted, value in shortcuts.items():
        if value is not None:
            data = apply_override(data, f"{dotted.replace('__', '.')}={_toml(value)}")
    try:
        return model.model_validate(data)
    except ValidationError as err:
        raise ConfigError("; ".join(_problem(model, e, path, overrides or []) for e in err.errors())) from err


def _problem(model: type[BaseModel], error: Any, path: Path | None, overrides: list[str]) -> str:
    """One validation error as the user can act on it: the setting, where it was given, and what is
    allowed there (the known settings beside an unknown one)."""
    dotted = ".".join(map(str, error["loc"])) or "config"
    given = next((f" (--set {o})" for o in overrides if o.partition("=")[0].strip() == dotted), f" (in {path})" if path else "")
    if error["type"] != "extra_forbidden":
        return f"{dotted}{given}: {error['msg']}, got {error['input']!r}"
    owner: Any = model
    for key in error["loc"][:-1]:
        field = owner.model_fields.get(str(key)) if isinstance(owner, type) and issubclass(owner, BaseModel) else None
        owner = field.annotation if field else None
    known = sorted(owner.model_fields) if isinstance(owner, type) and issubclass(owner, BaseModel) else []
    return f"unknown setting {dotted}{given}" + (f"; known here: {', '.join(known)}" if known else "")


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'
