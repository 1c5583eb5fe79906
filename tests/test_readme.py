"""The README's Python example runs as written and does what its comments say."""

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_python_example_runs_and_updates_the_budget(tmp_path, monkeypatch, capsys):
    code = re.search(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S).group(1)
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {}
    exec(compile(code, "README.md", "exec"), namespace)
    out = capsys.readouterr().out
    assert "['The total budget must stay under 5000 EUR.', 'The total budget is now 6000 EUR.']" in out
    exported = out[out.index('"namespace"') - 4 :]
    assert "Brennick" in exported and "5000 EUR" not in exported  # the flight fact survives the delete


def test_both_python_blocks_run_in_sequence_as_a_newcomer_pastes_them(tmp_path, monkeypatch, capsys):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {}
    for block in blocks[:2]:
        exec(compile(block, "README.md", "exec"), namespace)
    out = capsys.readouterr().out
    assert "[constraint] The total budget must stay under 6000 EUR." in out  # the context carries the constraint
    assert out.rstrip().endswith("True")  # every canary held


def test_readme_is_a_two_minute_read():
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 250


def _anchors(path: Path) -> set[str]:
    """GitHub's heading anchors of a Markdown file: lower case, punctuation dropped, spaces to '-'."""
    heads = re.findall(r"^#+ (.+)$", path.read_text(encoding="utf-8"), re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in heads}


def test_links_of_the_readme_and_docs_resolve():
    root = README.parent
    pages = [README, *sorted((root / "docs").rglob("*.md"))]
    for page in pages:
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text(encoding="utf-8")):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            file, _, anchor = target.partition("#")
            path = (page.parent / file).resolve() if file else page
            assert path.exists(), f"{page.relative_to(root)}: link to missing {target}"
            if anchor and path.suffix == ".md":
                assert anchor in _anchors(path), f"{page.relative_to(root)}: no heading for {target}"
