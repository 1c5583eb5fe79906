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
