"""Everyday friction (issue 17, parts 4 and 6): what a person meets in daily use says what
is true, keeps identifiers whole at 80 columns, and takes the input a person has."""

from __future__ import annotations

from pathlib import Path

from wiki.doctor import LOCAL_MODEL_INSTALL, check_optional

ROOT = Path(__file__).resolve().parent.parent


def _words(text: str) -> str:
    return " ".join(text.split())


# -- doctor and README give the same install advice for the local model ----------------------

def test_doctor_and_readme_agree_on_installing_the_local_model() -> None:
    fixes = {check.name: check.fix for check in check_optional()}
    readme = _words((ROOT / "README.md").read_text(encoding="utf-8"))
    assert "make setup-llm" in LOCAL_MODEL_INSTALL and "wiki-kb[local]" in LOCAL_MODEL_INSTALL
    assert "after `make setup-llm`, or `pip install 'wiki-kb[local]'` outside a checkout" in readme
    if fixes["llama_cpp"]:  # not installed here: the fix shown is the README's
        assert fixes["llama_cpp"] == LOCAL_MODEL_INSTALL
