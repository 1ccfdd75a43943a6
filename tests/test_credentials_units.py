"""The credentials gate's helpers one rule at a time (tests/test_gate_credentials.py and the labelled
corpus test the gate as a whole): what is a placeholder, what looks secret, when a plain word is a
password, prose and login pairs, JWT headers, masking, line numbers, overlaps, the findings cap, and
the refusal's exact text."""

import base64
import json

import pytest

from kenning.memory.gates import credentials as cr

GH = "ghp_" + "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF1hJ4"  # 36 mixed characters after the prefix


def kinds(text):
    return [(f.kind, f.masked, f.line) for f in cr.find_credentials(text)]


@pytest.mark.parametrize("value", ["ab", "changeme", "CHANGEME", "  <token>  ", "{{ secret }}", "${VAR}", "$VAR",
                                   "(x)", "[redacted]", "...", "…abc", "%VAR%", "!vault", "***", "aab",
                                   "my_example_key", "YOUR_TOKEN_HERE", "os.environ", "getenv(X)",
                                   "settings.db_password"])
def test_placeholders(value):
    assert cr.is_placeholder(value)


@pytest.mark.parametrize("value", ["a1!", "abc", "hunter2", "Zx9#kLm2pQ", "settings.DB_PASSWORD", "percent%"])
def test_not_placeholders(value):
    assert not cr.is_placeholder(value)


def test_placeholder_keys_are_filler_after_the_public_prefix():
    assert cr._placeholder_key("AKIAIOSFODNN7EXAMPLE", 4)
    assert cr._placeholder_key("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", 0)  # AWS's documented secret key
    assert cr._placeholder_key("sk_test_example_51Hq0987", 8)  # "example" as a word of its own
    # "example" inside a random body is chance, not a documented example: still a secret
    assert not cr._placeholder_key("sk_live_51HqTESTexampleqweRTY0987zxcvbnm", 8)
    assert cr._placeholder_key("zyxwabab", 4)  # the body has two distinct characters
    assert not cr._placeholder_key("zyxwabab", 0)
    assert cr._placeholder_key("zyxwabca", 4) and not cr._placeholder_key("zyxwabcd", 4)  # three is filler, four not
    assert cr._placeholder_key("ghp_XXXXq1w2e3r4", 4)
    assert not cr._placeholder_key(GH, 4)


@pytest.mark.parametrize("value,secret", [
    ("hunter2", True), ("P@ssword", True), ("abcde1", True), ("abcd1", False), ("Kubernetes", False),
    ("ab-cd_ef", False), ("averyveryveryverylongword", False), ("averyveryveryverylongWord", True),
    ("alpha-beta_gamma.delta-epsilon", False), ("ABCDEFGHIJKLMNOPQRST", True), ("ABCDEFGHIJKLMNOPQRS", False),
    ("Überprüfungsverfahren", False), ("Averyveryveryverylongword", False), ("AveryveryveryverylongworD", True),
    ("changeme1", False),
    # letters without capitals in any script: a Japanese sentence has no spaces to end the value
    ("秘密保持契約の書類は共有ドライブのリーガルフォルダにあります", False), ("очень_длинное_слово_для_проверки", False),
    ("ОченьДлинноеСловоДляПроверки", True),
])
def test_looks_secret(value, secret):
    assert cr.looks_secret(value) is secret


@pytest.mark.parametrize("text,found", [
    ("PG_PASSWORD=sunshine", True),
    ("db_pass=sunshine", True),
    ("password: sunshine", True),             # a name: value that ends the line
    ("password: sunshine, then more", True),  # ... or the clause
    ("password: 'sunshine' is it", True),     # quoted
    ("password: sunshine and more", False),   # prose after a colon
    ("token=sunshine", False),                # a plain word is a password only under a password name
    ("password=sun", False),                  # too short
    ("password=sun-shine", False),            # not one word
    ("password=changeme", False),             # a placeholder
    ("PG_PASSWORD=Sonnenblümchen", True),     # a word in letters of any script
    ("DB_PASSWORD=Привет", True),
    ("secret: 秘密保持契約の書類は共有ドライブのリーガルフォルダにあります", False),  # a sentence, not a value
])
def test_a_plain_word_is_a_password_only_when_assigned_to_one(text, found):
    assert bool(cr.find_credentials(text)) is found, text


@pytest.mark.parametrize("text,label", [
    ("Passwort: hunter2", "Passwort"), ("mot de passe : hunter2", "mot de passe"), ("contraseña: hunter2", "contraseña"),
    ("пароль: hunter2", "пароль"), ("密码：hunter2", "密码"), ("パスワード: hunter2", "パスワード"), ("비밀번호: hunter2", "비밀번호"),
    ("Das WLAN-Kennwort: Sonnenschein", "Kennwort"),  # a plain word ending the line, as after password:
    ("我的密码：hunter2，请勿外传", "密码"),  # no space before a Chinese label; a full-width comma ends the value
    ("ПАРОЛЬ = hunter2", "ПАРОЛЬ"), ("Clé API = 9f8e7d6c5b4a", "Clé API"), ("senha: 'hunter22'", "senha"),
    ("API-Schlüssel: a8f9b7c6d5e4", "API-Schlüssel"), ("トークン：abc123def", "トークン"), ("секрет: Zx9#kLm2pQ", "секрет"),
])
def test_the_labels_of_other_languages_are_refused_as_password_is(text, label):
    """Only the English names were known: 'Passwort: hunter2' or '密码：hunter2' was stored as written."""
    assert [f[:2] for f in kinds(text)] == [("secret assignment", f"{label}=***")]


@pytest.mark.parametrize("text", [
    "das Passwort: Sonnenschein und mehr",  # prose after a colon, as in English
    "Geheimnis: Sonnenschein",              # a plain word is a password only under a password label
    "Passwortänderung: morgen1", "xпароль: hunter2",  # a label inside a longer word
    "mot de passe : <votre mot de passe>",  # a placeholder
])
def test_the_labels_of_other_languages_ask_of_the_value_what_english_ones_do(text):
    assert kinds(text) == []


def test_every_listed_label_is_found_in_the_cases_it_is_written_in():
    from kenning.memory.gates.secret_labels import labels

    for label in labels():
        for spelled in {label, label.lower(), label.upper(), label[0].upper() + label[1:]}:
            assert [f[1] for f in kinds(f"{spelled}: hunter2")] == [f"{spelled}=***"], spelled
            assert len(cr.find_credentials(f"{spelled}: hunter2 " * 40)) == 40  # screened, as a long text is


@pytest.mark.parametrize("text", [
    "the password: Überprüfungsverfahren procedure", "secret: Zugangsdatenverwaltungssystem ist neu",
    "the password: Verificationprocedures apply",
])
def test_a_long_capitalised_word_after_a_label_is_prose(text):
    """A 20+ letter word with a capital was 'not plain lower-case words', so secret: the German noun
    Überprüfungsverfahren was refused as a password where 'verification' was not."""
    assert kinds(text) == []


def test_a_rejected_assignment_does_not_hide_one_inside_its_value():
    assert kinds("export TOKEN=aws_secret_access_key = Zx9kLm2pQw8") == [
        ("secret assignment", "aws_secret_access_key=***", 1)]


@pytest.mark.parametrize("text,found", [
    ("my password is hunter2.", True), ("the token is Abc#def", True), ("the token is Abcdef!", False), ("the password is abcde1", True),
    ("the password is abcd1", False), ("the password is expired", False),
    ("the password is https://x.example/z1", False), ("the password is /etc/pass1", False),
])
def test_a_secret_in_prose_needs_a_letter_and_a_digit_or_symbol(text, found):
    got = kinds(text)
    assert bool(got) is found, text
    if found:
        assert got[0][0] == "secret in prose" and got[0][1].endswith(" ***")


@pytest.mark.parametrize("text,found", [
    ("login for db01: admin / Adm1n!24", True),
    ("credentials are ops:pa55w0rd!", True),
    ("account: admin / Settings2", True),         # mixed case and a digit, ending the clause
    ("account: admin / Settings2 tab", False),    # ... not when a word follows: a label
    ("account: admin / settings2", False),        # not mixed case
    ("root / Hunter22", True),
    ("root / hunter22", False),
    ("login: admin / Adm1n!24.", True),
])
def test_login_pairs(text, found):
    got = kinds(text)
    assert bool(got) is found, text
    if found:
        assert got == [("login and password", "user / ***", 1)]


def _b64(obj) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj, separators=(",", ":")).encode()).decode().rstrip("=")


def test_a_jwt_needs_a_header_that_decodes_to_json_with_alg():
    header = _b64({"alg": "none"})
    assert len(header) % 4 != 0  # the padding has to be restored to decode it
    token = f"{header}.{_b64({'sub': '1234567890'})}.dozjgNryP4J3jVmNHl0w5N"
    assert kinds(f"auth with {token} today") == [("JWT", f"{token[:3]}…[{len(token)} chars]", 1)]
    assert kinds(f"{_b64({'typ': 'JWT'})}.{_b64({'sub': '1234567890'})}.abc") == []
    assert kinds(f"{_b64(['alg'])}.{_b64({'sub': '1234567890'})}.abc") == []
    assert kinds("abcdefghijk.abcdefghijk.abc") == []


def test_findings_are_masked_ordered_by_position_on_their_lines_and_never_overlap():
    text = f"first line\nPG_PASSWORD={GH}\nsecond: my password is hunter2"
    assert kinds(text) == [("GitHub token", "ghp_…[40 chars]", 2), ("secret in prose", "password ***", 3)]


def test_findings_are_capped():
    text = "\n".join(f"key{i}: password is Zx9kLm{i:03d}" for i in range(60))
    assert len(cr.find_credentials(text)) == cr.MAX_FINDINGS == 50


def test_the_refusal_names_the_kinds_and_where_never_the_secret():
    refusal = cr.check(f"PG_PASSWORD=sunshine\n{GH}")
    assert refusal.reason == ("the text contains what looks like a secret (GitHub token, secret assignment); "
                              "secrets must not be stored in memory")
    assert refusal.matched == ["secret assignment on line 1: PG_PASSWORD=***", "GitHub token on line 2: ghp_…[40 chars]"]
    assert (refusal.gate, refusal.status, refusal.override) == ("credentials", "credential_warning", None)
    assert "sunshine" not in refusal.model_dump_json() and GH not in refusal.model_dump_json()
    assert cr.check("the deploy token is in the team vault") is None


def test_a_field_is_refused_under_its_own_name():
    assert cr.check_field(None, "note") is None and cr.check_field("", "note") is None
    assert cr.check_field("nothing secret", "note") is None
    refusal = cr.check_field(f"rotated PG_PASSWORD=sunshine and {GH}", "removal reason")
    assert refusal.reason == ("removal reason contains what looks like a secret (GitHub token, secret assignment); "
                              "secrets must not be stored")
    assert refusal.status == "credential_warning"


def test_mask_replaces_each_secret_where_it_was():
    assert cr.mask(f"a PG_PASSWORD=sunshine b {GH} c") == "a [secret assignment removed] b [GitHub token removed] c"
    assert cr.mask(None) is None and cr.mask("") == "" and cr.mask("plain") == "plain"


def test_pem_url_bearer_and_license_findings_are_masked_in_place():
    pem_body = "MIIEowIBAAKCAQEA7sZ2" * 3
    text = ("line one\nfetch with Authorization: Bearer Zx9kLmQ2vB7nW4tR8yP3\n"
            f"-----BEGIN RSA PRIVATE KEY-----\n{pem_body}\n-----END RSA PRIVATE KEY-----\n"
            "mirror at https://deploy:Zx9kLm42Qp@git.example.com/repo\nlicense key: ABCD1-EFGH2-IJKL3-MNOP4-QRST5")
    assert kinds(text) == [("bearer token", "Bearer ***", 2),
                           ("PEM private key", "-----BEGIN RSA PRIVATE KEY-----…", 3),
                           ("password in URL", "https://deploy:***@git.example.com", 6),
                           ("license key", "…[29 chars]", 7)]
    assert cr.mask(text) == ("line one\nfetch with Authorization: [bearer token removed]\n[PEM private key removed]\n"
                             "-----END RSA PRIVATE KEY-----\nmirror at [password in URL removed]/repo\n"
                             "license key: [license key removed]")
    assert cr.check(text).hint == ("Remove the secret and store where it lives instead (e.g. 'the deploy token is in "
                                   "the team vault under ci/github'), or replace it with a placeholder such as <token>.")
