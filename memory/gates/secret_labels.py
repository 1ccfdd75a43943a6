"""The labels of a secret in languages other than English, for the credentials gate.

``Passwort: hunter2`` or ``密码：hunter2`` is the same secret as ``password: hunter2``; the English
names live in credentials.py as identifier patterns (``DB_PASSWORD``), these are the words a person
writes before a colon or an equals sign. The list is bounded on purpose: the four things the English
gate names (password, secret, token, API key) in the most spoken languages and those of the main
developer communities, each written as its speakers write it in a config note or a chat. A word that
English already has (Token, Secret, Password) is left to the English patterns, and so is one that
is also a common word for something else ("clave", "parola": key, word), since a plain word after a
password label at the end of a line counts as the password.
"""

from __future__ import annotations

# kind -> language -> labels, matched as whole words (the Chinese and Japanese ones also inside a run
# of their script, which puts no space between words: 我的密码：…): those in ASCII letters in any case,
# the rest as written, in lower or upper case, or with a capital first (credentials.py says why)
LABELS: dict[str, dict[str, tuple[str, ...]]] = {
    "password": {
        "de": ("Passwort", "Kennwort"),
        "fr": ("mot de passe", "mdp"),
        "es": ("contraseña",),
        "pt": ("senha", "palavra-passe"),
        "it": ("parola d'ordine",),
        "nl": ("wachtwoord",),
        "sv": ("lösenord",),
        "pl": ("hasło",),
        "cs": ("heslo",),
        "tr": ("şifre",),
        "ru/uk": ("пароль",),
        "el": ("κωδικός πρόσβασης",),
        "ar": ("كلمة المرور", "كلمة السر"),
        "hi": ("पासवर्ड",),
        "id": ("kata sandi",),
        "vi": ("mật khẩu",),
        "zh": ("密码", "密碼", "口令"),
        "ja": ("パスワード", "暗証番号"),
        "ko": ("비밀번호", "패스워드", "암호"),
    },
    "secret": {
        "de": ("Geheimnis",),
        "es": ("secreto",),
        "pt": ("segredo",),
        "it": ("segreto",),
        "nl": ("geheim",),
        "ru/uk": ("секрет",),
        "zh": ("密钥", "密鑰", "秘钥"),
        "ja": ("シークレット", "秘密鍵"),
        "ko": ("시크릿", "비밀 키", "비밀키"),
    },
    "token": {
        "fr": ("jeton",),
        "ru/uk": ("токен",),
        "zh": ("令牌",),
        "ja": ("トークン",),
        "ko": ("토큰",),
    },
    "API key": {
        "de": ("API-Schlüssel", "API Schlüssel"),
        "fr": ("clé API", "clé d'API", "clef API"),
        "es": ("clave API", "clave de API"),
        "pt": ("chave API", "chave de API", "chave da API"),
        "it": ("chiave API",),
        "nl": ("API-sleutel",),
        "pl": ("klucz API",),
        "ru/uk": ("ключ API", "API-ключ", "API ключ"),
        "ja": ("APIキー",),
        "ko": ("API 키", "API키"),
    },
}

# the separators after a label: ASCII, and the full-width forms CJK text uses (密码：…)
SEPARATORS = ":=\uff1a\uff1d"


def labels(kind: str | None = None) -> list[str]:
    """Every label (of one kind), longest first so a regex alternation takes the whole label."""
    kinds = [kind] if kind else list(LABELS)
    return sorted({label for k in kinds for words in LABELS[k].values() for label in words}, key=len, reverse=True)
