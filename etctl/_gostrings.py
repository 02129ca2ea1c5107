"""Go's quoting of strings, shared by every layer whose messages must read as the API server's.

kube-apiserver and apimachinery print values with Go's ``%q`` (``strconv.Quote``); the selectors of
the runtime and the embedded API server's field errors both need it byte for byte, so it lives here,
below every layer.
"""

__all__ = ["go_quote"]

_GO_ESCAPES = {"\a": r"\a", "\b": r"\b", "\f": r"\f", "\n": r"\n", "\r": r"\r", "\t": r"\t"}
_GO_ESCAPES |= {"\v": r"\v", "\\": "\\\\", '"': '\\"'}


def go_quote(text: str) -> str:
    r"""Quote ``text`` as Go's ``%q`` (``strconv.Quote``) does: field errors print values so.

    A non-printable rune below U+0080 is written ``\x..``, any other one ``\u....`` or
    ``\U........``.
    """
    out = ['"']
    for ch in text:
        if ch in _GO_ESCAPES:
            out.append(_GO_ESCAPES[ch])
        elif ch.isprintable():
            out.append(ch)
        elif ord(ch) < 0x80:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) < 0x10000:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    out.append('"')
    return "".join(out)
