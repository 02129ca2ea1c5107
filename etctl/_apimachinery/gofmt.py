"""Go's ``fmt`` renderings of JSON values, so error messages read exactly as kube-apiserver's.

The API server's messages embed values the way Go prints them: ``%q`` for strings in field errors,
``%v`` for maps and slices in patch errors (``map[name:c]``), and ``encoding/json`` for values in
schema errors. These helpers produce those renderings from decoded JSON (``dict``, ``list``,
``str``, ``int``, ``float``, ``bool``, ``None``); they never raise.
"""

from __future__ import annotations

import json
import math
from typing import Any

# One implementation of %q for the whole tree, below every layer.
from etctl._gostrings import go_quote

__all__ = ["go_json", "go_quote", "go_sharp_v", "go_type_name", "go_v"]


def _go_float(number: float) -> str:
    """Go's ``%v`` of a float64 (``strconv`` ``'g'``, shortest): exponent below 1e-4 or from 1e6."""
    if not math.isfinite(number):
        return "NaN" if math.isnan(number) else ("+Inf" if number > 0 else "-Inf")
    sign = "-" if math.copysign(1.0, number) < 0 else ""
    # The shortest digits that round-trip (as repr finds them) and their decimal exponent.
    digits_text, _, exp_part = repr(abs(number)).lower().partition("e")
    whole, _, frac = digits_text.partition(".")
    if whole.lstrip("0"):
        exponent = int(exp_part or 0) + len(whole.lstrip("0")) - 1
    else:
        exponent = int(exp_part or 0) - (len(frac) - len(frac.lstrip("0"))) - 1
    digits = (whole + frac).strip("0")
    if not digits:
        text = "0"
    elif exponent < -4 or exponent >= 6:
        body = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        text = f"{body}e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"
    elif exponent < 0:
        text = f"0.{'0' * (-exponent - 1)}{digits}"
    elif len(digits) <= exponent + 1:
        text = digits + "0" * (exponent + 1 - len(digits))
    else:
        text = f"{digits[: exponent + 1]}.{digits[exponent + 1 :]}"
    return sign + text


def go_v(value: Any) -> str:
    """Render a decoded JSON value as Go's ``%v`` prints the ``interface{}`` it decodes to."""
    if value is None or isinstance(value, bool):
        return {None: "<nil>", True: "true", False: "false"}[value]
    if isinstance(value, float):
        return _go_float(value)
    if isinstance(value, dict):
        inner = " ".join(f"{k}:{go_v(value[k])}" for k in sorted(value))
        return f"map[{inner}]"
    if isinstance(value, list | tuple):
        return "[" + " ".join(go_v(v) for v in value) + "]"
    return str(value)


def go_sharp_v(value: Any) -> str:
    """Render a decoded JSON value as Go's ``%#v`` prints the ``interface{}`` it decodes to."""
    if value is None:
        return "interface {}(nil)"
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, dict):
        inner = ", ".join(f"{go_quote(k)}:{go_sharp_v(value[k])}" for k in sorted(value))
        return "map[string]interface {}{" + inner + "}"
    if isinstance(value, list | tuple):
        return "[]interface {}{" + ", ".join(go_sharp_v(v) for v in value) + "}"
    return go_v(value)


def go_json(value: Any) -> str:
    """Render a value as Go's ``encoding/json`` does (compact, keys sorted, HTML-safe)."""
    text = json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def go_type_name(value: Any) -> str:
    """The JSON type word Go's decoder uses in ``cannot unmarshal X into ...`` errors."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    return "object"
