"""Every relative link and ``#anchor`` in README.md and docs/*.md resolves in any checkout.

Links are checked as GitHub renders them: a relative target is a path from the folder of
the file that holds the link and must exist; an ``#anchor`` into a markdown file must be
the slug of one of its headings (GitHub's rule: the heading's text, lower-cased, every
character that is not a letter, digit, ``_``, ``-`` or space dropped, spaces turned into
``-``, and ``-1``, ``-2``, ... appended to repeats) or an explicit ``<a name/id>``.
"""

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parents[1]
FILES = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])

_FENCE = re.compile(r"^\s*(```|~~~)")
_INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1")
_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_REF_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$")
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_HTML_ANCHOR = re.compile(r"<a\s+[^>]*(?:name|id)\s*=\s*\"([^\"]+)\"", re.IGNORECASE)
_EXTERNAL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")  # http:, https:, mailto:, ...


def _prose_lines(text):
    """The lines outside fenced code blocks, with inline code spans kept (headings need them)."""
    fenced = False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield line


def github_slug(heading):
    """GitHub's anchor for a heading's markdown text (see the module docstring)."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links: their text only
    text = re.sub(r"<[^>]+>", "", text)                         # inline HTML tags
    text = text.lower()
    text = "".join(ch for ch in text if ch.isalnum() or ch in "_- ")
    return text.replace(" ", "-")


def anchors(path):
    """Every anchor of a markdown file: heading slugs (with GitHub's -1, -2) and <a name>."""
    seen, out = {}, set()
    for line in _prose_lines(path.read_text(encoding="utf-8")):
        out.update(_HTML_ANCHOR.findall(line))
        m = _HEADING.match(line)
        if m:
            slug = github_slug(m.group(2))
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def links(path):
    """``(line number, target)`` of every link and image in the prose of ``path``."""
    out = []
    lines = path.read_text(encoding="utf-8").splitlines()
    fenced = False
    for i, line in enumerate(lines, 1):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        prose = _INLINE_CODE.sub("", line)
        out += [(i, m.group(1)) for m in _LINK.finditer(prose)]
        m = _REF_DEF.match(prose)
        if m:
            out.append((i, m.group(1)))
    return out


def broken_links(path, root=ROOT):
    """Human-readable descriptions of the links of ``path`` that do not resolve."""
    bad = []
    for line, target in links(path):
        if _EXTERNAL.match(target):
            continue
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / unquote(file_part)).resolve() if file_part else path
        where = f"{path.relative_to(root)}:{line}: {target}"
        if not dest.exists():
            bad.append(f"{where} (no such file)")
        elif anchor and dest.suffix == ".md" and unquote(anchor) not in anchors(dest):
            bad.append(f"{where} (no heading with anchor #{anchor} in "
                       f"{dest.relative_to(root) if dest.is_relative_to(root) else dest})")
    return bad


def test_github_slug_rule():
    assert github_slug("Wu et al. (2006), Table 1: SLMC vs. RS") == "wu-et-al-2006-table-1-slmc-vs-rs"
    assert github_slug("`sparsekm reproduce` — options") == "sparsekm-reproduce--options"
    assert github_slug("The [KernelExpansion](api.md) object") == "the-kernelexpansion-object"
    assert github_slug("fit_intercept & C") == "fit_intercept--c"


def test_anchors_number_repeated_headings(tmp_path):
    md = tmp_path / "a.md"
    md.write_text("# Notes\n\n```\n# not a heading\n```\n## Notes\n<a name=\"here\"></a>\n")
    assert anchors(md) == {"notes", "notes-1", "here"}


def test_broken_links_are_found(tmp_path):
    (tmp_path / "b.md").write_text("# Title here\n")
    (tmp_path / "figures").mkdir()
    (tmp_path / "figures" / "f.png").write_bytes(b"")
    md = tmp_path / "a.md"
    md.write_text("[ok](b.md#title-here) [no file](c.md) [no anchor](b.md#title)\n"
                  "`[in code](x.md)` [web](https://example.org/x.md) [self](#top)\n"
                  "![fig](figures/f.png) ![fig](../../main/docs/figures/f.png)\n# Top\n")
    bad = broken_links(md, root=tmp_path)
    assert len(bad) == 3, bad
    assert "c.md (no such file)" in bad[0] and "#title " in bad[1]
    assert "../../main/docs/figures/f.png (no such file)" in bad[2]


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(ROOT)) for p in FILES])
def test_relative_links_and_anchors_resolve(path):
    assert broken_links(path) == []
