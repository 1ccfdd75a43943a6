"""Credentials gate: vendor keys, PEM keys, JWTs, secret assignments and URL passwords are refused,
masked; placeholders and look-alikes pass. Secrets are assembled at run time so that no scanner
mistakes this file for a leak."""

from __future__ import annotations

import base64
import json

import pytest

from kenning.memory.gates import credentials, run_content_gates


def b64url(obj: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")


RANDOM36 = "Zq7" + "x9Lm2Pw4Rt6Yu8Io0Pa1Sd3Fg5Hj7Kl9Z"  # 36 mixed characters
JWT = b64url({"alg": "HS256", "typ": "JWT"}) + "." + b64url({"sub": "42", "name": "n"}) + "." + "sig" + RANDOM36[:20]
PEM = "-----BEGIN RSA PRIVATE KEY-----\n" + "MIIEowIBAAKCAQEA" + RANDOM36 * 2 + "\n-----END RSA PRIVATE KEY-----"

SECRETS = {
    "AWS access key id": "aws key " + "AKIA" + "Q3ZR7XKD2MPLW4NB",
    "GitHub token": "use " + "ghp_" + RANDOM36 + " for the API",
    "GitHub fine-grained token": "github_pat_" + "11ABCDEFG0" + RANDOM36,
    "Slack token": "bot token " + "xoxb-" + "1234567890-0987654321-" + RANDOM36[:24],
    "Slack webhook URL": "alerts go to " + "https://hooks.slack.com/" + "services/T0ABC1DEF/B0GH2IJK3/" + RANDOM36[:24],
    "Stripe key": "sk_live_" + RANDOM36[:24],
    "Anthropic API key": "ANTHROPIC_API_KEY is " + "sk-ant-api03-" + RANDOM36 + RANDOM36,
    "OpenAI API key": "key " + "sk-proj-" + RANDOM36 + "T3BlbkFJ",
    "Google API key": "maps key " + "AIza" + "SyD4" + RANDOM36[:31],
    "PEM private key": "deploy key:\n" + PEM,
    "JWT": "session cookie " + JWT,
    "secret assignment": "DB_PASSWORD=hunter2x",
    "password in URL": "connect with postgres://app:S3cretPw!@db.internal:5432/app",
    "bearer token": "curl -H 'Authorization: Bearer " + "a1b2c3d4e5f6" + RANDOM36[:12] + "'",
}


@pytest.mark.parametrize("kind", sorted(SECRETS))
def test_each_secret_kind_is_refused_and_named(kind):
    refusal = credentials.check(SECRETS[kind])
    assert refusal is not None
    assert refusal.gate == "credentials" and refusal.status == "credential_warning"
    assert refusal.override is None  # a secret has no override
    assert any(m.startswith(kind) for m in refusal.matched), refusal.matched


def test_example_inside_a_random_key_is_no_documented_example():
    """A documented example key says so at its end or as a word of its own (AKIAIOSFODNN7EXAMPLE);
    "example" inside a random body is chance, and the key is still refused."""
    refusal = credentials.check("the api key is sk_live_51HqTESTexampleqweRTY0987zxcvbnm")
    assert refusal is not None and any(m.startswith("Stripe key") for m in refusal.matched), refusal


@pytest.mark.parametrize(
    "text",
    [
        "password: 'S3cr3t!pass'",  # YAML, quoted
        '{"api_key": "9f8e7d6c5b4a39281706"}',  # JSON
        "export GITHUB_TOKEN=abc123def456ghi",  # shell
        "aws_secret_access_key = wJalrXUtnFEMIK7MDENGbPxRfiCYzzKEYq9",  # ends in 'key'
        "client_secret: 8d9f0a1b2c3d",
        "redis://:pa55word99@cache:6379/0",  # URL with an empty user
    ],
)
def test_secret_assignments_in_common_syntaxes(text):
    assert credentials.find_credentials(text), text


@pytest.mark.parametrize("kind", sorted(SECRETS))
def test_the_secret_itself_is_never_echoed(kind):
    refusal = credentials.check(SECRETS[kind])
    rendered = refusal.model_dump_json()
    for secret_part in (RANDOM36[:12], "hunter2x", "S3cretPw!", "Q3ZR7XKD2MPLW4NB"):
        assert secret_part not in rendered


@pytest.mark.parametrize(
    "text",
    [
        # placeholders and references to where the secret lives
        "password=<password>",
        "token: <token>",
        "api_key=xxx",
        "API_KEY=xxxxxxxxxxxxxxxx",
        "secret=changeme",
        "DB_PASSWORD=${DB_PASSWORD}",
        "password: $PGPASSWORD",
        "token: ${{ secrets.GITHUB_TOKEN }}",
        "password: ***",
        "password: ********",
        "api_key = os.environ['OPENAI_API_KEY']",
        "token = settings.github_token",
        "password: your_password_here",
        "postgres://user:${PGPASSWORD}@db/app",
        "https://user:pass@example.invalid/",
        # labels and prose, not values
        "Secret: Kubernetes secrets are only base64-encoded, not encrypted.",
        "token: required",
        "Password: see the team vault entry for staging",
        "max_tokens: 4096",  # the name must END in the secret word
        "token_type: Bearer",
        "password_policy: 12+ characters",
        "Bearer token auth is used for the admin API",
        # look-alikes of vendor shapes
        "AKIAIOSFODNN7EXAMPLE is the documented example key",
        "AKIA is the prefix of AWS access key ids",
        "pip install scikit-learn (sk-learn)",
        "the risk-assessment-framework-v2 document",
        "ghp_ tokens are classic GitHub tokens",
        "-----BEGIN OPENSSH PRIVATE KEY----- starts the file ~/.ssh/id_ed25519",
        "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA" + "q" * 40,
        "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBa" + "q" * 40,
        # dotted identifiers that are not JWTs
        "com.example.application.MainActivity.onCreate",
        "eyJub3QiOiJqd3QifQ.eyJzdWIiOiIxIn0.c2lnbmF0dXJlLXBhcnQ",  # header JSON lacks "alg"
        # URLs without a password
        "ssh://git@github.com:22/org/repo.git",
        "git@github.com:org/repo.git",
        "http://localhost:8080/health",
        "postgres://postgres:postgres@localhost:5432/dev",  # the image's documented default
    ],
)
def test_near_misses_pass(text):
    assert credentials.find_credentials(text) == [], text
    assert credentials.check(text) is None


def test_findings_report_kind_and_line():
    findings = credentials.find_credentials("first line\nsecond line DB_PASSWORD=hunter2x\n")
    assert [(f.kind, f.line, f.masked) for f in findings] == [("secret assignment", 2, "DB_PASSWORD=***")]


def test_a_key_inside_an_assignment_is_reported_once_as_the_vendor_kind():
    findings = credentials.find_credentials("GITHUB_TOKEN=ghp_" + RANDOM36)
    assert [f.kind for f in findings] == ["GitHub token"]
    assert findings[0].masked == "ghp_…[40 chars]"


def test_placeholder_and_secret_helpers():
    assert credentials.is_placeholder("<token>") and credentials.is_placeholder("${VAR}")
    assert not credentials.is_placeholder("hunter2x")
    assert credentials.looks_secret("hunter2") and credentials.looks_secret("P@ssword")
    assert not credentials.looks_secret("Kubernetes") and not credentials.looks_secret("required")


def test_credentials_gate_runs_first_and_cannot_be_acknowledged():
    text = "The user prefers this branch, currently with DB_PASSWORD=hunter2x"
    refusal = run_content_gates(text, "fact", acknowledge_transient=True, acknowledge_user_claim=True)
    assert refusal is not None and refusal.gate == "credentials"
    assert run_content_gates(text, "fact").gate == "credentials"


def test_clean_text_passes_every_content_gate():
    assert run_content_gates("The auth service listens on port 8443 (see src/auth/server.py).", "fact") is None
