r"""Image references as the kubelet parses them before it pulls anything.

The kubelet applies a default tag to every container's image before it looks for it on the node
(``applyDefaultImageTag``), and that starts by parsing the image with the docker reference grammar
(``ParseNormalizedNamed`` of the distribution reference library):

.. code-block:: text

    reference        := name [ ":" tag ] [ "@" digest ]
    name             := [domain "/"] path-component ["/" path-component]*
    domain           := host [":" port-number]
    host             := domain-name | "[" IPv6address "]"
    domain-name      := domain-component ["." domain-component]*
    domain-component := /([a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])/
    path-component   := /[a-z0-9]+/ [separator /[a-z0-9]+/]*
    separator        := /[_.]|__|[-]+/
    tag              := /[\w][\w.-]{0,127}/
    digest           := algorithm ":" /[0-9a-fA-F]{32,}/

A first path element with a ``.`` or a ``:``, ``localhost``, or upper-case letters is the domain;
otherwise the domain is ``docker.io`` (and a one-element path gets ``library/``). The path is at
most 255 characters and lower case; a digest's algorithm must be one the kubelet links
(sha256, sha384, sha512) with the hex length it implies; 64 hex characters alone are an image id,
not a name. An image that does not parse (an empty one included) never reaches the runtime: the
container waits with ``InvalidImageName`` and the message :func:`default_tag_problem` gives,
word for word the kubelet's, and no registry is asked.

Invariant: :func:`parse` accepts exactly what the grammar accepts, and each refusal carries the
library's own error text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from etctl._gostrings import go_quote

__all__ = ["ImageReference", "InvalidReference", "default_tag_problem", "parse"]

_ALPHANUMERIC = r"[a-z0-9]+"
_SEPARATOR = r"(?:[._]|__|[-]+)"
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN_NAME = rf"{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*"
_IPV6 = r"\[(?:[a-fA-F0-9:]+)\]"
_DOMAIN = rf"(?:{_DOMAIN_NAME}|{_IPV6})(?::[0-9]+)?"
_PATH_COMPONENT = rf"{_ALPHANUMERIC}(?:{_SEPARATOR}{_ALPHANUMERIC})*"
_REMOTE_NAME = rf"{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*"
_NAME = rf"(?:{_DOMAIN}/)?{_REMOTE_NAME}"
_TAG = r"[\w][\w.-]{0,127}"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*[:][0-9A-Fa-f]{32,}"

# Go's regexp is ASCII-only for \w and has no trailing-newline '$': fullmatch and re.ASCII.
_REFERENCE = re.compile(rf"({_NAME})(?::({_TAG}))?(?:@({_DIGEST}))?", re.ASCII)
_ANCHORED_NAME = re.compile(rf"(?:({_DOMAIN})/)?({_REMOTE_NAME})", re.ASCII)
_IDENTIFIER = re.compile(r"[a-f0-9]{64}", re.ASCII)
# go-digest: the algorithms the kubelet links, and the form an unknown algorithm must have.
_ENCODED_LENGTH = {"sha256": 64, "sha384": 96, "sha512": 128}
_ENCODED = re.compile(r"[a-f0-9]+", re.ASCII)
_DIGEST_FORM = re.compile(r"[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]+", re.ASCII)

_DEFAULT_DOMAIN = "docker.io"
_LEGACY_DEFAULT_DOMAIN = "index.docker.io"
_OFFICIAL_PREFIX = "library/"
_NAME_MAX_LENGTH = 255

_INVALID_FORMAT = "invalid reference format"
_UPPERCASE = "repository name must be lowercase"
_TOO_LONG = f"repository name must not be more than {_NAME_MAX_LENGTH} characters"
_DIGEST_INVALID = "invalid checksum digest format"
_DIGEST_UNSUPPORTED = "unsupported digest algorithm"


class InvalidReference(ValueError):
    """An image the reference grammar refuses; ``str()`` is the library's error text."""


@dataclass(frozen=True, slots=True)
class ImageReference:
    """A parsed, normalized image reference.

    Attributes:
        domain: the registry (``docker.io`` when the image names none).
        path: the repository path (``library/busybox``).
        tag: the tag, or ``""``.
        digest: the digest (``sha256:...``), or ``""``.
    """

    domain: str
    path: str
    tag: str = ""
    digest: str = ""

    @property
    def name(self) -> str:
        """``<domain>/<path>``."""
        return f"{self.domain}/{self.path}"

    def __str__(self) -> str:
        """The reference in full (``docker.io/library/busybox:1.36``)."""
        tag = f":{self.tag}" if self.tag else ""
        digest = f"@{self.digest}" if self.digest else ""
        return f"{self.name}{tag}{digest}"


def _split_domain(image: str) -> tuple[str, str]:
    """``splitDockerDomain``: the domain an image names (or Docker Hub's) and the rest."""
    first, slash, rest = image.partition("/")
    if not slash:
        return _DEFAULT_DOMAIN, _OFFICIAL_PREFIX + image
    if first == "localhost":
        domain, remainder = first, rest
    elif first == _LEGACY_DEFAULT_DOMAIN:
        domain, remainder = _DEFAULT_DOMAIN, rest
    elif "." in first or ":" in first or first.lower() != first:
        domain, remainder = first, rest
    else:
        domain, remainder = _DEFAULT_DOMAIN, image
    if domain == _DEFAULT_DOMAIN and "/" not in remainder:
        remainder = _OFFICIAL_PREFIX + remainder
    return domain, remainder


def _check_digest(digest: str) -> None:
    """go-digest's ``Parse`` of a digest the grammar matched."""
    algorithm, _, encoded = digest.partition(":")
    length = _ENCODED_LENGTH.get(algorithm)
    if length is None:
        problem = _DIGEST_UNSUPPORTED if _DIGEST_FORM.fullmatch(digest) else _DIGEST_INVALID
        raise InvalidReference(problem)
    if len(encoded) != length or not _ENCODED.fullmatch(encoded):
        raise InvalidReference(_DIGEST_INVALID)


def _parse_full(text: str) -> ImageReference:
    """``Parse`` of a string that names its domain."""
    match = _REFERENCE.fullmatch(text)
    if match is None:
        lower = text.lower()
        if lower != text and _REFERENCE.fullmatch(lower) is not None:
            raise InvalidReference(_UPPERCASE)
        raise InvalidReference(_INVALID_FORMAT)
    name, tag, digest = match.group(1), match.group(2) or "", match.group(3) or ""
    parts = _ANCHORED_NAME.fullmatch(name)
    domain, path = (parts.group(1) or "", parts.group(2)) if parts is not None else ("", name)
    if len(path) > _NAME_MAX_LENGTH:
        raise InvalidReference(_TOO_LONG)
    if digest:
        _check_digest(digest)
    return ImageReference(domain=domain, path=path, tag=tag, digest=digest)


def parse(image: str) -> ImageReference:
    """The image as the kubelet reads it (``ParseNormalizedNamed``).

    Raises:
        InvalidReference: the image is not a reference; its text is the library's error.
    """
    if _IDENTIFIER.fullmatch(image):
        msg = f"invalid repository name ({image}), cannot specify 64-byte hexadecimal strings"
        raise InvalidReference(msg)
    domain, remainder = _split_domain(image)
    remote = remainder.split(":", 1)[0]
    if remote.lower() != remote:
        msg = f"{_INVALID_FORMAT}: repository name ({remote}) must be lowercase"
        raise InvalidReference(msg)
    return _parse_full(f"{domain}/{remainder}")


def default_tag_problem(image: str) -> str | None:
    """The kubelet's message when it cannot apply a default tag to ``image``; None if it can.

    ``Failed to apply default image tag "<image>": couldn't parse image name "<image>": <why>``,
    the container's waiting message (reason ``InvalidImageName``) and its ``InspectFailed`` Event.
    """
    try:
        parse(image)
    except InvalidReference as exc:
        quoted = go_quote(image)
        why = f"couldn't parse image name {quoted}: {exc}"
        return f"Failed to apply default image tag {quoted}: {why}"
    return None
