"""Team workspaces: the same identity for one repository on every machine, computed from
``.git/config`` as text (git is never run)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sessionquery.team.workspace import (
    checkout_remote,
    normalise_remote,
    team_workspace,
    valid_machine,
)


@pytest.mark.parametrize(
    ("url", "identity"),
    [
        ("git@github.com:acme/app.git", "github.com/acme/app"),
        ("https://github.com/acme/app", "github.com/acme/app"),
        ("https://deploy:s3cr3t@GitHub.com/acme/app.git/", "github.com/acme/app"),
        ("ssh://git@github.com:22/acme/app.git", "github.com/acme/app"),
        ("git://example.org/group/sub/app", "example.org/group/sub/app"),
        ("gitlab.example.com:group/app", "gitlab.example.com/group/app"),
        ("  git@github.com:Acme/App.git  ", "github.com/Acme/App"),
    ],
)
def test_remote_urls_of_one_repository_normalise_to_one_identity(url: str, identity: str) -> None:
    assert normalise_remote(url) == identity


@pytest.mark.parametrize(
    "url", ["/srv/git/app.git", "../app", "file:///srv/git/app", "", "https://github.com/", "./x:y"]
)
def test_local_paths_and_empty_remotes_have_no_shared_identity(url: str) -> None:
    assert normalise_remote(url) is None


def test_credentials_in_a_remote_url_never_reach_the_identity() -> None:
    identity = normalise_remote("https://alice:ghp_TOKEN123@github.com/acme/app.git")
    assert identity == "github.com/acme/app"
    assert "TOKEN" not in str(identity) and "alice" not in str(identity)


def _checkout(path: Path, config: str) -> Path:
    (path / ".git").mkdir(parents=True)
    (path / ".git" / "config").write_text(config, encoding="utf-8")
    return path


ORIGIN = '[core]\n\tbare = false\n[remote "origin"]\n\turl = git@github.com:acme/app.git\n'


def test_a_checkout_top_is_the_remote_and_a_sub_folder_adds_its_path(tmp_path: Path) -> None:
    top = _checkout(tmp_path / "src" / "app", ORIGIN)
    assert team_workspace(str(top), "alpha") == "github.com/acme/app"
    assert team_workspace(str(top / "api" / "v2"), "alpha") == "github.com/acme/app#api/v2"


def test_the_same_repository_on_two_machines_at_two_paths_is_one_workspace(
    tmp_path: Path,
) -> None:
    one = _checkout(tmp_path / "a" / "app", ORIGIN)
    two = _checkout(
        tmp_path / "b" / "elsewhere",
        '[remote "origin"]\n  url = "https://GitHub.com/acme/app"\n',
    )
    assert team_workspace(str(one), "alpha") == team_workspace(str(two), "beta")


def test_origin_wins_over_other_remotes_and_the_first_remote_is_used_without_it(
    tmp_path: Path,
) -> None:
    both = _checkout(
        tmp_path / "both",
        '[remote "fork"]\n\turl = git@github.com:me/app.git\n'
        '[remote "origin"]\n\turl = git@github.com:acme/app.git\n',
    )
    fork = _checkout(tmp_path / "fork", '[remote "fork"]\n\turl = git@github.com:me/app.git\n')
    assert team_workspace(str(both), "m") == "github.com/acme/app"
    assert team_workspace(str(fork), "m") == "github.com/me/app"


def test_a_cwd_outside_any_checkout_or_without_a_remote_is_machine_qualified(
    tmp_path: Path,
) -> None:
    plain = tmp_path / "notes"
    plain.mkdir()
    local = _checkout(tmp_path / "local", "[core]\n\tbare = false\n")
    assert team_workspace(str(plain), "alpha") == f"alpha:{plain}"
    assert team_workspace(str(local / "x"), "alpha") == f"alpha:{local / 'x'}"
    assert team_workspace("/does/not/exist", "alpha") == "alpha:/does/not/exist"
    assert team_workspace(None, "alpha") is None
    assert team_workspace("relative/path", "alpha") == "alpha:relative/path"


def test_a_linked_worktree_reads_the_main_repository_config(tmp_path: Path) -> None:
    main = _checkout(tmp_path / "main", ORIGIN)
    gitdir = main / ".git" / "worktrees" / "feature"
    gitdir.mkdir(parents=True)
    (gitdir / "commondir").write_text("../..\n", encoding="utf-8")
    tree = tmp_path / "feature"
    tree.mkdir()
    (tree / ".git").write_text(f"gitdir: {gitdir}\n", encoding="utf-8")
    assert checkout_remote(str(tree / "src")) == ("github.com/acme/app", "src")


def test_reading_a_hostile_config_executes_nothing_and_includes_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    hostile = (
        f'[core]\n\tfsmonitor = "touch {marker}"\n\tsshCommand = touch {marker}\n'
        f"[include]\n\tpath = {tmp_path / 'other.config'}\n"
        f'[remote "origin"]\n\turl = ext::sh -c touch% {marker}\n'
    )
    (tmp_path / "other.config").write_text(
        '[remote "origin"]\n\turl = git@github.com:evil/app.git\n', encoding="utf-8"
    )
    repo = _checkout(tmp_path / "repo", hostile)
    found = team_workspace(str(repo), "alpha")
    assert not marker.exists()
    assert found == f"alpha:{repo}"  # "ext::..." is no remote host: no shared identity


def test_an_oversized_config_is_not_read(tmp_path: Path) -> None:
    repo = _checkout(tmp_path / "repo", ORIGIN + "#" * (300 * 1024))
    assert team_workspace(str(repo), "alpha") == f"alpha:{repo}"


@pytest.mark.parametrize("name", ["alpha", "dev-box.local", "m_1"])
def test_machine_names_of_letters_digits_dots_and_dashes_are_valid(name: str) -> None:
    assert valid_machine(name) == name


@pytest.mark.parametrize("name", ["", "a:b", "a/b", "-x", "x" * 129, "héllo"])
def test_machine_names_that_would_make_identities_ambiguous_are_refused(name: str) -> None:
    with pytest.raises(ValueError):
        valid_machine(name)
