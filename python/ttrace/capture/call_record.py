"""Call templates as JSON, so that a relaunch from the bundles (`ttrace serve`) calls each
module as the captured job did.

A live replay keeps the non-tensor arguments of a call as the live objects. A relaunch has
no such objects, so the capture records each argument as a value where it is one (None,
numbers, strings, dtypes, enums, tuples/lists/dicts of these), as a reference to an
attribute of the called module where it is that very object (a config, a process group the
module keeps), and otherwise as opaque: such a call is not replayable from the bundles, and
the agent says which argument made it so.
"""

from __future__ import annotations

import enum
import importlib
import math
from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import nn

from .call_template import CallTemplate, Slot
from .dtensor_spec import decode_spec

_DEPTH = 6


def _attr_of(module: nn.Module | None, value: Any) -> str | None:
    if module is None:
        return None
    for name, attr in vars(module).items():
        if attr is value and not name.startswith("_"):
            return name
    return None


def encode_value(value: Any, module: nn.Module | None = None, depth: int = 0) -> Any:
    if isinstance(value, Slot):
        slot = {
            "slot": value.index,
            "requires_grad": value.requires_grad,
            "is_float": value.is_float,
            "dtype": str(value.dtype).removeprefix("torch."),
            "shape": list(value.shape),
        }
        if value.dtensor is not None:
            slot["dtensor"] = value.dtensor.encode()
        return slot
    if value is None or isinstance(value, bool | int | str):
        return {"value": value}
    if isinstance(value, float):
        return {"value": value} if math.isfinite(value) else {"float": repr(value)}
    if isinstance(value, torch.dtype):
        return {"torch_dtype": str(value).removeprefix("torch.")}
    if isinstance(value, enum.Enum):
        cls = type(value)
        return {"enum": f"{cls.__module__}:{cls.__qualname__}", "name": value.name}
    if depth < _DEPTH and isinstance(value, tuple | list):
        kind = "list" if isinstance(value, list) else "tuple"
        return {kind: [encode_value(v, module, depth + 1) for v in value]}
    if depth < _DEPTH and isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"dict": {k: encode_value(v, module, depth + 1) for k, v in value.items()}}
    attr = _attr_of(module, value)
    if attr is not None:
        return {"attr": attr}
    return {"opaque": f"{type(value).__module__}.{type(value).__qualname__}"}


def encode_template(template: CallTemplate, module: nn.Module | None) -> dict[str, Any]:
    return {
        "args": [encode_value(a, module) for a in template.args],
        "kwargs": {k: encode_value(v, module) for k, v in template.kwargs.items()},
        "calls": template.calls,
        "stochastic": template.stochastic,
        "problems": list(template.problems),
    }


class _Opaque:
    """Stands for an argument the bundle could not hold (never passed to a module)."""

    def __init__(self, type_name: str) -> None:
        self.type_name = type_name


def _enum(spec: str, name: str) -> Any:
    module_name, _, qualname = spec.partition(":")
    obj: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj[name]


class _NoMesh:
    """A DTensor argument whose device mesh the relaunch does not hold."""

    def __init__(self, spec: Mapping[str, Any]) -> None:
        self.text = f"ranks {spec['mesh']} ({', '.join(spec['dims']) or 'unnamed'})"


def _decode_slot(data: Mapping[str, Any], meshes: Sequence[Any]) -> Slot | _NoMesh:
    spec = None
    if "dtensor" in data:
        spec = decode_spec(data["dtensor"], meshes)
        if spec is None:
            return _NoMesh(data["dtensor"])
    return Slot(
        str(data["slot"]),
        bool(data["requires_grad"]),
        bool(data["is_float"]),
        getattr(torch, str(data["dtype"])),
        tuple(int(n) for n in data["shape"]),
        spec,
    )


def decode_value(data: Mapping[str, Any], module: nn.Module, meshes: Sequence[Any] = ()) -> Any:
    if "slot" in data:
        return _decode_slot(data, meshes)
    if "value" in data:
        return data["value"]
    if "float" in data:
        return float(data["float"])
    if "torch_dtype" in data:
        return getattr(torch, str(data["torch_dtype"]))
    if "enum" in data:
        return _enum(str(data["enum"]), str(data["name"]))
    if "tuple" in data or "list" in data:
        items = [decode_value(v, module) for v in data.get("tuple", data.get("list", []))]
        return items if "list" in data else tuple(items)
    if "dict" in data:
        return {k: decode_value(v, module) for k, v in data["dict"].items()}
    if "attr" in data and hasattr(module, str(data["attr"])):
        return getattr(module, str(data["attr"]))
    return _Opaque(str(data.get("opaque", data.get("attr", "unknown"))))


def _opaque_in(value: Any) -> _Opaque | None:
    if isinstance(value, _Opaque):
        return value
    items = value.values() if isinstance(value, dict) else value
    if isinstance(value, tuple | list | dict):
        return next((o for o in map(_opaque_in, items) if o is not None), None)
    return None


def decode_template(
    data: Mapping[str, Any], module: nn.Module, meshes: Sequence[Any] = ()
) -> CallTemplate:
    """`meshes`: the relaunched job's device meshes (`dtensor_spec.job_meshes`), where a
    DTensor argument finds its mesh again."""
    args = tuple(decode_value(a, module, meshes) for a in data["args"])
    kwargs = {k: decode_value(v, module, meshes) for k, v in data["kwargs"].items()}
    problems = list(data.get("problems", []))
    for index, value in [*enumerate(args), *kwargs.items()]:
        if isinstance(value, _NoMesh):
            problems.append(
                f"argument {index} was a DTensor on the device mesh of {value.text}, which "
                "this relaunch does not hold: replay it in the live job (docs/localize.md)"
            )
            continue
        opaque = _opaque_in(value)
        if opaque is not None:
            problems.append(
                f"argument {index} holds a {opaque.type_name} object that the bundle cannot "
                "hold: replay it in the live job (docs/localize.md)"
            )
    template = CallTemplate(args, kwargs, problems=problems)
    template.calls = int(data.get("calls", 1))
    template.stochastic = bool(data.get("stochastic", False))
    return template
