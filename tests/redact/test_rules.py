"""The ruleset as data: every rule checked against its own examples, and broken rulesets
refused with a typed error naming the problem."""

from __future__ import annotations

from importlib import resources

import pytest

from conftest import raises_code
from sessionquery.errors import ErrorCode
from sessionquery.redact import RULES_VERSION, default_redactor, default_ruleset, load_ruleset
from sessionquery.redact._rules import rule_spans

RULES = default_ruleset().rules
ISSUE_RULES = {
    "aws-access-key-id", "aws-secret-access-key", "anthropic-api-key", "openai-api-key",
    "openai-legacy-key", "github-token", "github-fine-grained-token", "gitlab-token",
    "slack-token", "stripe-live-key", "google-api-key", "npm-token", "pypi-token",
    "huggingface-token", "sendgrid-api-key", "twilio-auth-token", "private-key", "jwt",
    "url-credentials", "authorization-header", "bearer-token", "secret-assignment",
}  # fmt: skip
"""One rule for every format issue 26 lists."""

_ONE_RULE = """
version = 3
[[rules]]
name = "demo-token"
description = "a demo token"
keywords = ["demo_"]
pattern = '''demo_[0-9]{8}'''
example = "use demo_12345678 here"
counterexample = "demo_1234 is too short"
"""


def test_the_bundled_ruleset_has_every_rule_the_issue_lists() -> None:
    assert {rule.name for rule in RULES} == ISSUE_RULES
    assert default_ruleset().version == RULES_VERSION


@pytest.mark.parametrize("rule", RULES, ids=[rule.name for rule in RULES])
def test_rule_finds_its_example_and_not_its_counterexample(rule: object) -> None:
    from sessionquery.redact import Rule

    assert isinstance(rule, Rule)
    assert rule_spans(rule, rule.example)
    assert rule_spans(rule, rule.counterexample) == []
    redactor = default_redactor()
    masked = redactor.redact(rule.example)
    assert masked != rule.example and "[REDACTED:" in masked
    start, end = rule_spans(rule, rule.example)[0]
    assert rule.example[start:end] not in masked


@pytest.mark.parametrize("rule", RULES, ids=[rule.name for rule in RULES])
def test_every_match_of_a_rule_is_at_least_eight_characters(rule: object) -> None:
    from sessionquery.redact import MIN_SECRET_LENGTH, Rule

    assert isinstance(rule, Rule)
    lowered = rule.example.lower()
    starts = [at for at in range(len(lowered)) if lowered.startswith(rule.keywords, at)]
    matches = [rule.pattern.match(rule.example, start) for start in starts]
    assert any(matches)
    for match in matches:
        assert match is None or len(match.group(0)) >= MIN_SECRET_LENGTH


def test_a_ruleset_file_loads_with_its_version_and_lower_case_keywords() -> None:
    ruleset = load_ruleset(_ONE_RULE.replace('["demo_"]', '["DEMO_"]'))
    assert ruleset.version == 3
    (rule,) = ruleset.rules
    assert rule.keywords == ("demo_",)
    assert rule.name == "demo-token"


def test_any_edit_of_a_rule_changes_the_digest() -> None:
    first = load_ruleset(_ONE_RULE)
    second = load_ruleset(_ONE_RULE.replace("a demo token", "a demo token, described anew"))
    assert first.digest != second.digest
    assert load_ruleset(_ONE_RULE).digest == first.digest


def test_the_bundled_file_is_the_bundled_ruleset() -> None:
    text = resources.files("sessionquery.redact").joinpath("rules.toml").read_text("utf-8")
    assert load_ruleset(text).digest == default_ruleset().digest


@pytest.mark.parametrize(
    ("change", "replacement"),
    [
        ("version = 3", "version = 0"),
        ("version = 3", 'version = "3"'),
        ("[[rules]]", "[[rule]]"),
        ('name = "demo-token"', 'name = "Demo Token"'),
        ('name = "demo-token"', 'name = "known-value"'),
        ('keywords = ["demo_"]', "keywords = []"),
        ("pattern = '''demo_[0-9]{8}'''", "pattern = '''demo_[0-9'''"),
        ('example = "use demo_12345678 here"', 'example = "no demo here"'),
        ('counterexample = "demo_1234 is too short"', 'counterexample = "demo_87654321"'),
        ('description = "a demo token"', 'description = "x"\ncolour = "red"'),
        ('description = "a demo token"', "description = 5"),
        ("version = 3", "version = 3\n[[rules]"),
    ],
)
def test_a_broken_ruleset_is_refused_with_invalid_config(change: str, replacement: str) -> None:
    assert change in _ONE_RULE
    with raises_code(ErrorCode.INVALID_CONFIG):
        load_ruleset(_ONE_RULE.replace(change, replacement))


def test_two_rules_with_one_name_are_refused() -> None:
    twice = _ONE_RULE + _ONE_RULE.split("version = 3", 1)[1]
    with raises_code(ErrorCode.INVALID_CONFIG):
        load_ruleset(twice)


def test_a_pattern_tried_only_where_a_keyword_occurs() -> None:
    (rule,) = load_ruleset(_ONE_RULE).rules
    assert rule_spans(rule, "DEMO_12345678 x demo_11112222") == [(16, 29)]
