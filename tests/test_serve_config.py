"""``wiki serve``'s config file (hashed tokens, scopes, rights: each mistake a one-line
error naming the field), ``wiki serve token``, and fetching the wiki branch from its remote
(fast-forward only; never a push), in real repositories."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
import pytest
from conftest import BOB, git, ingest_and_land, write
from serve_helpers import READ_TOKEN, running, write_config
from typer.testing import CliRunner

from wiki.errors import ConfigError
from wiki.serve.config import load_config, token_hash
from wiki.serve.fetch import fetch_wiki
from wiki.store.workspace import Wiki
from wiki_cli.app import app

HASH = token_hash("wk_x")


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "serve.toml"
    path.write_text(f'[repos.handbook]\npath = "{tmp_path}"\n' + text, encoding="utf-8")
    return path


@pytest.mark.parametrize(("text", "words"), [
    ('[[tokens]]\nname = "a"\nhash = "wk_plaintexttoken"\nrepos = ["*"]\n',
     "hash must be 'sha256:"),
    (f'[[tokens]]\nname = "a"\nhash = "{HASH}"\nrepos = ["nowhere"]\n',
     "repos names 'nowhere'"),
    (f'[[tokens]]\nname = "a"\nhash = "{HASH}"\nrepos = ["*"]\nrights = "approve"\n',
     "rights 'approve' is not one of read, propose"),
    (f'[[tokens]]\nname = "a"\nhash = "{HASH}"\nrepos = ["*"]\nrights = "propose"\n',
     "needs author"),
    (f'[[tokens]]\nname = "a"\nhash = "{HASH}"\nrepos = ["*"]\nrights = "propose"\n'
     'author = "just a name"\n', "is not 'Name <email>'"),
    (f'[[tokens]]\nname = "a"\nhash = "{HASH}"\nrepos = ["*"]\ntoken = "x"\n',
     "unknown key 'token'"),
    ('[server]\nport = 70000\n', "not a TCP port"),
    ('[server]\nmax_body_bytes = "big"\n', "max_body_bytes = 'big'"),
    ('[repos."../x"]\npath = "."\n', "the name may hold"),
    ("[server\n", "not valid TOML"),
])
def test_config_mistakes_are_named(tmp_path: Path, text: str, words: str) -> None:
    with pytest.raises(ConfigError) as error:
        load_config(_config(tmp_path, text))
    assert words in str(error.value) and "serve.toml" in str(error.value)


def test_config_reads_repos_tokens_and_limits(tmp_path: Path) -> None:
    path = _config(tmp_path, f'[server]\nport = 9000\nrequest_timeout = 5\n'
                   f'[repos.ops]\npath = "ops"\nbranch = "kb"\nremote = "origin"\n'
                   f'[[tokens]]\nname = "bot"\nhash = "{HASH}"\nrepos = ["ops"]\n'
                   f'rights = "propose"\nauthor = "Bot <bot@example.com>"\n')
    config = load_config(path)
    assert (config.host, config.port, config.limits.request_timeout) == ("127.0.0.1", 9000, 5)
    assert config.repos["ops"].path == tmp_path / "ops"
    assert (config.repos["ops"].branch, config.repos["ops"].remote) == ("kb", "origin")
    token = config.authenticate("wk_x")
    assert token is not None and token.may_propose and token.may_use("ops")
    assert not token.may_use("handbook") and str(token.author) == "Bot <bot@example.com>"
    assert config.authenticate("wk_y") is None and config.authenticate(None) is None


def test_token_command_prints_a_token_whose_hash_it_configures(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["serve", "token", "ci bot", "--repo", "handbook",
                                      "--rights", "propose", "--author",
                                      "CI Bot <ci@example.com>", "--json"])
    assert result.exit_code == 0, result.output
    made = json.loads(result.stdout)
    path = _config(tmp_path, made["config"] + "\n")
    token = load_config(path).authenticate(made["token"])
    assert token is not None and token.name == "ci bot" and token.rights == "propose"
    assert made["token"] not in path.read_text()
    refused = CliRunner().invoke(app, ["serve", "token", "x", "--repo", "h", "--rights",
                                       "approve"])
    assert refused.exit_code == 2 and "nothing can approve" in refused.output


def test_serve_refuses_to_start_without_a_usable_config(tmp_path: Path) -> None:
    runner = CliRunner()
    none = runner.invoke(app, ["serve"], env={"WIKI_SERVE_CONFIG": ""})
    assert none.exit_code == 2 and "--config" in none.output
    missing = runner.invoke(app, ["serve", "--config", str(tmp_path / "nope.toml")])
    assert missing.exit_code == 2 and "no such config file" in missing.output
    (tmp_path / "plain").mkdir()
    path = tmp_path / "serve.toml"
    path.write_text(f'[repos.plain]\npath = "{tmp_path / "plain"}"\n', encoding="utf-8")
    not_repo = runner.invoke(app, ["serve", "--config", str(path)])
    assert not_repo.exit_code == 2 and "repository 'plain'" in not_repo.output


@pytest.fixture
def remote_and_clone(wiki: Wiki, repo: Path, tmp_path: Path) -> tuple[Wiki, Path]:
    """``repo`` as the team's remote (a wiki with one entry), and a clone of it."""
    write(repo / "docs" / "leave.md", "# Leave\n\nAnnual leave is requested in HR Links.\n")
    ingest_and_land(wiki, repo / "docs")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    git(clone, "fetch", "-q", "origin", "wiki:wiki")
    return wiki, clone


def test_fetch_fast_forwards_and_never_pushes(remote_and_clone, repo: Path) -> None:
    remote, clone = remote_and_clone
    served = Wiki(clone)
    assert fetch_wiki(served, "origin").action == "up-to-date"
    write(repo / "docs" / "tock.md", "# Tock\n\nTock line #670 is for time out of office.\n")
    ingest_and_land(remote, repo / "docs")
    done = fetch_wiki(served, "origin")
    assert (done.action, done.after) == ("fast-forward", remote.head())
    assert served.head() == remote.head()
    # a commit landed only on the server's copy: left alone, and not pushed
    write(clone / "notes" / "x.md", "# Local\n\nA change landed only on the server.\n")
    ingest_and_land(served, clone / "notes")
    before = remote.head()
    done = fetch_wiki(served, "origin")
    assert done.action == "ahead" and remote.head() == before
    assert served.head() != before
    with pytest.raises(ConfigError, match="no git remote named 'upstream'"):
        fetch_wiki(served, "upstream")


def test_the_server_fetches_at_start_and_reports_it(remote_and_clone, repo: Path,
                                                    tmp_path: Path) -> None:
    remote, clone = remote_and_clone
    write(repo / "docs" / "tock.md", "# Tock\n\nTock line #670 is for time out of office.\n")
    ingest_and_land(remote, repo / "docs")
    config = write_config(tmp_path / "serve.toml", {"handbook": clone})
    text = config.read_text().replace("fetch_interval = 0", "fetch_interval = 3600").replace(
        f"path = {str(clone)!r}", f"path = {str(clone)!r}\nremote = \"origin\"")
    config.write_text(text)
    with running(config) as base:
        for _ in range(600):  # until the first fetch is reported (no time is asserted)
            listed = httpx.get(f"{base}/v1/repos", headers={
                "Authorization": f"Bearer {READ_TOKEN}"}).json()["repositories"][0]
            if listed["fetch"]:
                break
            time.sleep(0.05)
        found = httpx.post(f"{base}/v1/repos/handbook/search", json={"query": "tock #670"},
                           headers={"Authorization": f"Bearer {READ_TOKEN}"}).json()
    assert listed["fetch"]["action"] == "fast-forward" and listed["head"] == remote.head()
    assert found["commit"] == remote.head() and found["hits"][0]["title"] == "Tock"
    assert BOB.name not in json.dumps(listed)
