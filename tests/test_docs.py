"""The docs' lists of kinds and claims about the tree, checked against the registry and the tree.

What the docs enumerate goes stale as kinds are added: each list here is compared with what it
lists (the registered job kinds, their CRDs, the RBAC their plugins declare, the examples), so a
new kind or a changed example fails this test until the docs say so too.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from etctl.cli._registry import discover

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
REGISTRY = discover()
KINDS = [entry.name for entry in REGISTRY.plugins()]


def text(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def section(doc: str, title: str) -> str:
    """The body of the ``## title`` section of a Markdown document."""
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", doc, re.MULTILINE | re.DOTALL)
    assert match is not None, f"no section {title!r}"
    return match.group(1)


def crd_kinds() -> list[str]:
    """The kinds of every registered CRD, in the order the sandbox lists them."""
    return list(dict.fromkeys(r.kind for entry in REGISTRY.plugins() for r in entry.resources))


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_has_its_page_in_the_nav(kind: str) -> None:
    assert (DOCS / "jobs" / f"{kind}.md").is_file()
    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))["nav"]
    pages = [
        page
        for item in nav
        if isinstance(item, dict)
        for group in item.values()
        if isinstance(group, list)
        for entry in group
        for page in entry.values()
    ]
    assert f"jobs/{kind}.md" in pages


@pytest.mark.parametrize("kind", KINDS)
def test_the_home_page_names_every_kind(kind: str) -> None:
    index = text("index.md")
    (layers_row,) = [line for line in index.splitlines() if line.startswith("| `etctl.jobs` |")]
    assert f"(jobs/{kind}.md)" in layers_row, "the layers table"
    assert f"(jobs/{kind}.md)" in section(index, "Where to read on")


def test_the_sandbox_page_lists_every_crd_and_the_operator_as_the_sandbox_prints_them() -> None:
    sandbox = text("sandbox.md")
    crds = ", ".join(crd_kinds())
    assert f"serving the CRDs of every\n  installed job kind ({crds});" in sandbox
    # usage_lines: the plugins' names, then every CRD kind they bring.
    operator = f"  operator:    {', '.join(KINDS)} ({crds})"
    assert operator in sandbox.splitlines()


def test_the_rbac_table_names_the_kinds_that_declare_pods_exec() -> None:
    declaring = sorted(
        entry.resources[0].kind
        for entry in REGISTRY.plugins()
        if entry.capabilities.rbac is not None
        and any("pods/exec" in rule.resources for rule in entry.capabilities.rbac.rbac_rules())
    )
    (row,) = [
        line for line in text("operations.md").splitlines() if line.startswith("| `pods/exec`")
    ]
    named = re.match(r"\| `pods/exec` \(([^)]*)\)", row)
    assert named is not None, row
    assert sorted(named.group(1).split(", ")) == declaring


def test_every_namespace_the_docs_say_an_example_names_is_in_one() -> None:
    examples = "\n".join(
        path.read_text(encoding="utf-8") for path in (ROOT / "examples").glob("*/*.yaml")
    )
    pages = [*DOCS.glob("**/*.md"), ROOT / "README.md", ROOT / "examples" / "README.md"]
    for page in pages:
        for claim in re.findall(r"`(namespace: [^`]+)`", page.read_text(encoding="utf-8")):
            assert claim in examples, f"{page.name} speaks of `{claim}`; no example has it"
