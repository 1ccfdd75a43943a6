"""A labelled corpus for the credentials gate: realistic FAKE secrets and clean look-alikes.

Every secret is random characters in a real vendor's shape (nothing here was ever a live
credential), set in the kinds of text people hand a memory store: notes, shell lines, config
snippets, JSON, chat prose. The clean half is what a naive detector trips on: placeholders in
vendor shapes, hashes and commit SHAs, UUIDs, public keys, prose about passwords, references to
where a secret lives.

The corpus is generated (seeded, so every run sees the same texts) instead of committed, so no
secret scanner mistakes the repository for a leak. ``python tests/data/credentials_corpus.py
out.jsonl`` writes it out for reading: one ``{"text", "secret", "kind"}`` object per line.
"""

from __future__ import annotations

import base64
import json
import random
import string
import sys
from collections.abc import Callable

SEED = 20261201
PER_KIND = 12

UPPER, LOWER, DIGITS = string.ascii_uppercase, string.ascii_lowercase, string.digits
ALNUM = UPPER + LOWER + DIGITS
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"


class Gen:
    def __init__(self, rng: random.Random):
        self.rng = rng

    def s(self, alphabet: str, n: int) -> str:
        """n random characters; mixed letter/digit alphabets always get both (as real keys do)."""
        while True:
            out = "".join(self.rng.choice(alphabet) for _ in range(n))
            if n < 8 or not (set(alphabet) & set(DIGITS)) or not (set(alphabet) & set(LOWER + UPPER)):
                return out
            if any(c.isdigit() for c in out) and any(c.isalpha() for c in out):
                return out

    def pick(self, items):
        return self.rng.choice(items)


def _b64url(obj: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj, separators=(",", ":")).encode()).decode().rstrip("=")


# ---------------------------------------------------------------------------------- secrets
# Each returns the bare secret; CONTEXTS set it in text.

def _jwt(g: Gen) -> str:
    header = _b64url({"alg": g.pick(["HS256", "RS256", "ES256"]), "typ": "JWT"})
    body = _b64url({"sub": g.s(DIGITS, 6), "iat": 1700000000 + g.rng.randrange(10**7), "role": g.pick(["admin", "user"])})
    return f"{header}.{body}.{g.s(URLSAFE, 43)}"


def _pem(g: Gen) -> str:
    kind = g.pick(["RSA PRIVATE KEY", "PRIVATE KEY", "EC PRIVATE KEY", "OPENSSH PRIVATE KEY", "ENCRYPTED PRIVATE KEY"])
    lines = "\n".join(g.s(B64, 64) for _ in range(g.rng.randrange(3, 8)))
    return f"-----BEGIN {kind}-----\n{lines}\n-----END {kind}-----"


def _gcp_service_account(g: Gen) -> str:
    key = "-----BEGIN PRIVATE KEY-----\n" + "\n".join(g.s(B64, 64) for _ in range(4)) + "\n-----END PRIVATE KEY-----\n"
    return json.dumps({"type": "service_account", "project_id": f"proj-{g.s(LOWER, 6)}",
                       "private_key_id": g.s(HEX, 40), "private_key": key,
                       "client_email": f"ci@proj-{g.s(LOWER, 6)}.iam.gserviceaccount.com"})


VENDOR: dict[str, Callable[[Gen], str]] = {
    "aws_access_key_id": lambda g: g.pick(["AKIA", "ASIA"]) + g.s(UPPER + "234567", 16),
    "aws_secret_access_key": lambda g: "aws_secret_access_key = " + g.s(B64, 40),
    "github_classic": lambda g: g.pick(["ghp_", "gho_", "ghs_", "ghu_", "ghr_"]) + g.s(ALNUM, 36),
    "github_fine_grained": lambda g: "github_pat_" + g.s(ALNUM, 22) + "_" + g.s(ALNUM, 59),
    "gitlab": lambda g: "glpat-" + g.s(URLSAFE, 20),
    "slack_token": lambda g: g.pick(["xoxb-", "xoxp-", "xoxa-"]) + g.s(DIGITS, 12) + "-" + g.s(DIGITS, 13) + "-" + g.s(ALNUM, 24),
    "slack_webhook": lambda g: f"https://hooks.slack.com/services/T{g.s(UPPER + DIGITS, 8)}/B{g.s(UPPER + DIGITS, 10)}/{g.s(ALNUM, 24)}",
    "stripe_secret": lambda g: g.pick(["sk_live_", "sk_test_", "rk_live_", "rk_test_"]) + g.s(ALNUM, g.pick([24, 34, 99])),
    "stripe_webhook": lambda g: "whsec_" + g.s(ALNUM, 32),
    "openai": lambda g: g.pick(["sk-", "sk-proj-", "sk-svcacct-"]) + g.s(URLSAFE, 48),
    "anthropic": lambda g: "sk-ant-api03-" + g.s(URLSAFE, 93) + "AA",
    "google_api_key": lambda g: "AIza" + g.s(URLSAFE, 35),
    "gcp_service_account": _gcp_service_account,
    "azure_storage": lambda g: (f"DefaultEndpointsProtocol=https;AccountName={g.s(LOWER, 10)};AccountKey="
                                f"{g.s(B64, 86)}==;EndpointSuffix=core.windows.net"),
    "azure_sas": lambda g: f"https://{g.s(LOWER, 8)}.blob.core.windows.net/c?sv=2022-11-02&ss=b&sp=rl&sig={g.s(B64, 43)}%3D",
    "sendgrid": lambda g: "SG." + g.s(URLSAFE, 22) + "." + g.s(URLSAFE, 43),
    "huggingface": lambda g: "hf_" + g.s(UPPER + LOWER, 34),
    "npm": lambda g: "npm_" + g.s(ALNUM, 36),
    "pypi": lambda g: "pypi-AgEIcHlwaS5vcmc" + g.s(URLSAFE, 60),
    "twilio": lambda g: "SK" + g.s(HEX, 32),
    "mailgun": lambda g: "key-" + g.s(HEX, 32),
    "mailchimp": lambda g: g.s(HEX, 32) + "-us" + str(g.rng.randrange(1, 20)),
    "shopify": lambda g: g.pick(["shpat_", "shpss_", "shpca_"]) + g.s(HEX, 32),
    "digitalocean": lambda g: "dop_v1_" + g.s(HEX, 64),
    "square": lambda g: g.pick(["sq0atp-", "sq0csp-"]) + g.s(URLSAFE, 22),
    "databricks": lambda g: "dapi" + g.s(HEX, 32),
    "atlassian": lambda g: "ATATT3xFfGF0" + g.s(URLSAFE, 180) + "=" + g.s(HEX.upper(), 8),
    "telegram_bot": lambda g: f"{g.rng.randrange(10**8, 10**10)}:AA{g.s(URLSAFE, 33)}",
    "discord_webhook": lambda g: f"https://discord.com/api/webhooks/{g.s(DIGITS, 18)}/{g.s(URLSAFE, 68)}",
    "docker_hub": lambda g: "dckr_pat_" + g.s(URLSAFE, 27),
    "vault": lambda g: "hvs." + g.s(URLSAFE, 24),
    "doppler": lambda g: "dp.st." + g.s(LOWER, 4) + "." + g.s(ALNUM, 40),
    "newrelic": lambda g: "NRAK-" + g.s(UPPER + DIGITS, 27),
    "linear": lambda g: "lin_api_" + g.s(ALNUM, 40),
    "terraform_cloud": lambda g: g.s(ALNUM, 14) + ".atlasv1." + g.s(URLSAFE, 67),
    "jwt": _jwt,
    "private_key": _pem,
    "database_url": lambda g: (f"{g.pick(['postgres', 'mysql', 'mongodb+srv', 'redis', 'amqp'])}://"
                               f"{g.pick(['app', 'admin', 'svc_api', ''])}:{g.s(ALNUM + '!#%', 14)}@"
                               f"{g.pick(['db01', 'cache', 'mq'])}.internal:5432/app"),
    "bearer": lambda g: "Authorization: Bearer " + g.s(URLSAFE + ".", 40),
}

# Prose, assignments with word-like values, license keys: returned whole (they carry their own words).
WORDS = ["sunshine", "dragon", "letmein", "monkey", "shadow", "princess", "football", "baseball",
         "trustno1", "qwerty", "iloveyou", "starwars", "whatever", "freedom", "master", "lighthouse",
         "marmalade", "pineapple", "bluebird", "snowflake"]
HOSTS = ["db01", "the staging box", "the router", "jenkins", "the NAS", "prod-mysql", "the vpn", "bastion"]


def _strong(g: Gen) -> str:
    return g.s(UPPER, 1) + g.s(LOWER, 2) + g.s(DIGITS, 1) + g.s("#!@$%&*", 1) + g.s(ALNUM, g.rng.randrange(4, 9))


PROSE: dict[str, Callable[[Gen], str]] = {
    "prose_password": lambda g: g.pick([
        "my password is {p}", "the wifi password is {p}", "root password for {h} is {p}",
        "The password for {h} is {p} (rotate it next week)", "password for {h}: {p}",
        "btw the admin password is now {p}", "new password is {p}, old one revoked",
        "SSH passphrase is {p}", "the passcode for {h} is {p}", "use pw {p} to log in to {h}",
    ]).format(p=g.pick([_strong(g), g.pick(WORDS) + g.s(DIGITS, 2), "hunter2", "Sunflower2024!", "Zx9#kLm2pQ"]),
              h=g.pick(HOSTS)),
    "login_pair": lambda g: g.pick([
        "login for {h}: admin / {p}", "creds: root / {p}", "{h} login is admin/{p}",
        "user: deploy pass: {p}", "username admin password {p}", "credentials are ops:{p}",
    ]).format(p=_strong(g), h=g.pick(HOSTS)),
    "word_password_assignment": lambda g: g.pick([
        "PG_PASSWORD={w}", "DB_PASS={w}", "export MYSQL_ROOT_PASSWORD={w}", "redis_password: {w}",
        "password = \"{w}\"", "ADMIN_PASSWORD='{w}'", "smtp_pass={w}", "  password: {w}",
    ]).format(w=g.pick(WORDS)),
    "license_key": lambda g: g.pick([
        "license key: {k}", "The license key for the IDE is {k}", "activation key {k}",
        "LICENSE_KEY={k}", "serial number for the plugin: {k}", "product key {k} (team seat)",
    ]).format(k=g.pick([g.s(HEX, 32), g.s(HEX.upper(), 32), "-".join(g.s(UPPER + DIGITS, 5) for _ in range(5))])),
    "generic_token_prose": lambda g: g.pick([
        "the api token for {h} is {t}", "deploy token: {t}", "webhook secret is {t}",
        "the client secret for the OAuth app is {t}", "API key for the weather service: {t}",
    ]).format(t=g.s(ALNUM, g.rng.randrange(24, 41)), h=g.pick(HOSTS)),
}

CONTEXTS = [
    "{s}",
    "note to self: {s}",
    "export TOKEN={s}",
    "Use this one for CI: {s} (expires in 90 days)",
    '{{"key": "{s}", "env": "prod"}}',
    "config:\n  auth: {s}\n  region: eu-west-1",
    "If the deploy fails again, retry with\n{s}\nand ping #ops.",
    "curl -s https://api.example.org/v1/items -H 'X-Api-Key: {s}'",
]


def secrets(g: Gen) -> list[dict]:
    out = []
    for kind, make in VENDOR.items():
        for i in range(PER_KIND):
            secret = make(g)
            context = CONTEXTS[i % len(CONTEXTS)] if "\n" not in secret and '"' not in secret else "{s}"
            out.append({"text": context.format(s=secret), "secret": True, "kind": kind})
    for kind, make in PROSE.items():
        for _ in range(PER_KIND * 2):
            out.append({"text": make(g), "secret": True, "kind": kind})
    return out


# ---------------------------------------------------------------------------------- clean
def clean(g: Gen) -> list[dict]:
    def x(n: int, ch: str = "x") -> str:
        return ch * n

    makers: dict[str, Callable[[], str]] = {
        "placeholder_vendor": lambda: g.pick([
            "sk_live_" + x(24), "sk_test_" + x(24, "X"), "ghp_" + x(36, "X"), "glpat-" + x(20),
            "xoxb-" + x(10, "0") + "-" + x(24, "x"), "AKIA" + x(16, "X"), "AKIAIOSFODNN7EXAMPLE",
            "hf_" + x(34, "x"), "SG." + x(22, "x") + "." + x(43, "x"), "npm_" + x(36, "0"),
            "sk-" + "..." , "sk-proj-" + x(20, "*"), "ghp_<your token>", "AIza" + x(35, "X"),
        ]) + g.pick(["", " is the format of the key", " (placeholder)", " <- replace me"]),
        "placeholder_assignment": lambda: g.pick([
            "api_key=YOUR_API_KEY", "password=changeme", "password: <redacted>", "token = os.environ['TOKEN']",
            "DB_PASSWORD=${DB_PASSWORD}", "password: ${{ secrets.DB_PASSWORD }}", "api_key: settings.api_key",
            "PG_PASSWORD=", "SECRET_KEY=<generate with openssl rand -hex 32>", "token: ****",
            "password = getpass.getpass()", "export GITHUB_TOKEN=$(gh auth token)", "client_secret: REPLACE_ME",
            "password=%DB_PASSWORD%", "AccountKey=<storage account key>", "Authorization: Bearer <token>",
            "Authorization: Bearer $TOKEN", "password: !vault |", "api_key = None", "password: null",
        ]),
        "hash_in_prose": lambda: g.pick([
            "md5 of the tarball is {h32}", "checksum {h32} matches upstream", "the ETag was \"{h32}\"",
            "sha256: {h64}", "image digest sha256:{h64}", "sha1sum {h40}  release.tar.gz",
            "cache key {h32} rebuilt", "the file hash {h64} differs from the manifest",
        ]).format(h32=g.s(HEX, 32), h40=g.s(HEX, 40), h64=g.s(HEX, 64)),
        "commit_sha": lambda: g.pick([
            "fixed in {c}", "git checkout {c}", "reverted {s} because it broke the build",
            "bisect points at {c}", "cherry-pick {s} onto release/2.3", "the regression came in with {s}",
        ]).format(c=g.s(HEX, 40), s=g.s(HEX, 7)),
        "uuid": lambda: g.pick([
            "request id {u} timed out", "trace {u} shows the slow span", "tenant {u} was migrated",
            "the job {u} is stuck in pending", "correlation-id: {u}",
        ]).format(u="-".join(g.s(HEX, n) for n in (8, 4, 4, 4, 12))),
        "password_prose": lambda: g.pick([
            "the password policy requires 12 characters", "reset your password via the self-service portal",
            "password: see the vault at ops/db", "the root password for {h} is rotated monthly",
            "my password is in 1Password under {h}", "the wifi password is on the fridge",
            "the admin password is stored in Vault", "password for {h} is managed by the platform team",
            "PASSWORD_MIN_LENGTH=12", "password_policy: strict", "the password is expired, ask IT",
            "we never store the password; it's in the keychain", "my password is too weak, per the audit",
            "passwords must be rotated every 90 days", "password reset emails go to ops@example.org",
            "the token expires after 1 hour", "max_tokens=4096", "token_type=bearer", "tokens per minute: 90000",
            "the secret is stored in Vault under kv/prod/db", "the API key lives in the team vault under ci/github",
            "rotate the deploy token before Friday", "secret_santa: alice", "ask Sam for the password",
        ]).format(h=g.pick(HOSTS)),
        "path_and_nav": lambda: g.pick([
            "Settings / Admin / Users", "read / write access", "input / output errors", "admin / settings page",
            "root / home / docs", "go to Admin / Security / Tokens to create one", "user / group permissions",
        ]),
        "technical": lambda: g.pick([
            "python 3.12.1 broke the build on {h}", "postgres://localhost:5432/app", "https://user@github.com/org/repo.git",
            "redis://cache:6379/0", "ssh deploy@{h} -p 2222", "the account id is 123456789012", "region eu-west-1",
            "arn:aws:iam::123456789012:role/deploy", "archive.tar.gz", "com.example.app.module.Service",
            "node v20.11.0 and npm 10.2.4", "docker pull ghcr.io/org/app:1.4.2", "https://app.slack.com/client/T0123/C0456",
            "k8s namespace payments-prod", "scikit-learn (sk-learn) 1.4", "task-force-2024-results.pdf",
            "sha512-" + g.s(B64, 86) + "== is the npm integrity field", "version: 2.{n}.{n}",
        ]).format(h=g.pick(HOSTS), n=g.rng.randrange(0, 20)),
        "public_material": lambda: g.pick([
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" + g.s(B64, 43) + " me@laptop",
            "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ" + g.s(B64, 80) + " ci@runner",
            "-----BEGIN PUBLIC KEY-----\n" + g.s(B64, 64) + "\n-----END PUBLIC KEY-----",
            "-----BEGIN CERTIFICATE-----\n" + g.s(B64, 64) + "\n-----END CERTIFICATE-----",
            "pk_live_ keys are publishable and safe in the browser",
            "the BEGIN RSA PRIVATE KEY header marks a private key file",
        ]),
        "base64_data": lambda: g.pick([
            "icon: data:image/png;base64," + g.s(B64, 60), "the fixture payload is " + g.s(B64, 44) + "==",
            "grpc trailer grpc-status-details-bin: " + g.s(B64, 32),
        ]),
        "ids_and_numbers": lambda: g.pick([
            "ticket JIRA-{n} blocks the release", "PR #{n} merged", "order {d} shipped",
            "build {d} passed in 12m", "invoice INV-{d}", "the pin in the pinout is GPIO{n}",
            "port {n} is open", "account SID AC{h}", "the model id is {m}",
        ]).format(n=g.rng.randrange(1, 9999), d=g.s(DIGITS, 10), h=g.s(HEX, 32),
                  m=g.pick(["sentence-transformers/all-MiniLM-L6-v2", "gpt-4o-mini", "claude-3-5-sonnet"])),
        "chat_prose": lambda: g.pick([
            "we decided to keep the token bucket rate limiter", "the key insight is to batch writes",
            "the secret to fast imports is one transaction per batch", "our key customers are in the EU",
            "the password field should be masked in the UI", "admin users can rotate API keys",
            "the token count was 3,400 for that prompt", "Alice said the deploy key needs write access",
            "the license is Apache-2.0", "license key management moved to the billing service",
            "login page: /admin/settings?tab=2", "the account: acme-corp/billing-v2", "token: 3 retries left",
            "the password for db01 is in the vault (kv/db01)", "secret: see README section 4.2",
            "the api token for jenkins is rotated by cron", "user admin / group wheel", "creds are in ~/.aws/credentials",
            "credentials: ~/.config/gcloud/application_default_credentials.json", "admin / Settings2 tab",
            "the serial console is on ttyS0", "product key rotation happens yearly", "pw reset link expired",
            "the webhook secret is stored as WEBHOOK_SECRET in the CI settings", "client secret: set in the portal",
        ]),
    }
    makers.update({
        "uuid_labelled": lambda: g.pick(["session id: {u}", "the build id is {u}", "node_id={u}", "run {u} finished"]).format(
            u="-".join(g.s(HEX, n) for n in (8, 4, 4, 4, 12))),
        "hex_ids": lambda: g.pick(["object {h} not found in the bucket", "etag: {h}", "blob {h} is 4 KiB",
                                   "container {h12} restarted 3 times", "span_id={h16}", "trace_id={h}"]).format(
            h=g.s(HEX, 32), h12=g.s(HEX, 12), h16=g.s(HEX, 16)),
        "numbers_prose": lambda: g.pick(["p95 latency went from {a} ms to {b} ms", "we have {a} users and {b} sessions",
                                         "the batch size of {a} keeps memory under {b} MB",
                                         "retry after {a} seconds, at most {b} times"]).format(
            a=g.rng.randrange(10, 5000), b=g.rng.randrange(10, 5000)),
    })
    out, seen = [], set()
    for kind, make in makers.items():
        for _ in range(200):  # draw until 40 distinct texts (fixed-list kinds stop at their list's size)
            text = make()
            if text not in seen:
                seen.add(text)
                out.append({"text": text, "secret": False, "kind": kind})
            if sum(1 for o in out if o["kind"] == kind) >= 40:
                break
    return out


def corpus(seed: int = SEED) -> list[dict]:
    g = Gen(random.Random(seed))
    return secrets(g) + clean(g)


if __name__ == "__main__":
    target = open(sys.argv[1], "w") if len(sys.argv) > 1 else sys.stdout
    for item in corpus():
        target.write(json.dumps(item) + "\n")
